"""godot-rag: is a Godot project Godot 3 or Godot 4, and what converts it."""

import os

# gRPC's fork handlers break a child that is fork()ed (not vfork()ed) while gRPC threads run:
# the child aborts or segfaults before its exec. pgserver starts PostgreSQL under another user,
# which makes subprocess use fork(), and the supervisor holds gRPC channels when it restarts
# PostgreSQL. Measured: 1 to 4 dead children in 300 such forks with the handlers, none in 1,200
# without. No process here forks to go on using gRPC in the child, so the handlers are never
# wanted; gRPC reads this once, when it is first imported (an explicit value is kept).
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")
