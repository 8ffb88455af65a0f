"""Thin service wiring: entrypoint, gRPC servicer and bus consumer per stage."""
