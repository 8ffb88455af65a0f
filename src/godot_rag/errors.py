"""Typed errors: one hierarchy. Stages raise these; the bus and gRPC edges map them, each in one place.

- bus (``godot_rag.infra.bus``): RetryableError -> nak(delay); PoisonError, or
  any failure on the last allowed delivery -> term() + dead letter.
- gRPC (``godot_rag.infra.grpc_edge.STATUS_BY_ERROR``): each class below to one status code.
"""

from __future__ import annotations


class GodotRagError(Exception):
    """Base of the project's own errors."""


class RetryableError(GodotRagError):
    """Worth another try later (a dependency is down, a timeout). Bus: nak(delay). gRPC: UNAVAILABLE."""

    def __init__(self, message: str, delay_s: float = 2.0):
        super().__init__(message)
        self.delay_s = delay_s


class OutageError(RetryableError):
    """A dependency (PostgreSQL, NATS) is unreachable right now.

    Bus: the message is held and its work retried in place until the dependency
    is back (up to the outage patience), so an outage never counts as a failed
    delivery towards the dead letter.
    """


class StoreError(OutageError):
    """The store cannot serve the request now (unreachable, connection lost, out of space)."""


class BusError(OutageError):
    """NATS did not take a publish (disconnected, no JetStream response in time)."""


class PoisonError(GodotRagError):
    """Will fail the same way every time (bad payload, missing record). Bus: term() + dead letter. gRPC: FAILED_PRECONDITION."""


class HandlingTimeout(GodotRagError):
    """A handler ran past its stage's overall cap and was cancelled. Bus: nak with backoff, dead letter on the last delivery."""


class LLMRequestError(GodotRagError):
    """The LLM server rejected the request itself (4xx): retrying cannot help. gRPC: FAILED_PRECONDITION."""


class NotFoundError(GodotRagError):
    """The requested analysis/chunk/file does not exist. gRPC: NOT_FOUND."""


class NotReadyError(GodotRagError):
    """The thing asked for exists but is not there yet (a verdict of a running analysis). gRPC: FAILED_PRECONDITION."""


class InvalidInputError(GodotRagError):
    """The caller's input is unusable. gRPC: INVALID_ARGUMENT."""


class AccessDeniedError(GodotRagError):
    """The caller may not have this (a server-side path outside the allowed roots, a local repository
    named by a remote caller). gRPC: PERMISSION_DENIED; web: 403."""


class OverloadedError(GodotRagError):
    """The caller already has as many requests running as it may. gRPC: RESOURCE_EXHAUSTED; web: 429."""


class RowShapeError(GodotRagError):
    """A query's columns and the typed row built from them disagree (a column missing or unexpected):
    the code and the schema are out of step, a bug that no retry fixes. gRPC: INTERNAL."""


class ContractViolation(GodotRagError):
    """A judgment (from a model or the rules) that breaks the judgment contract; ``errors`` lists every problem."""

    def __init__(self, errors: list[str]):
        super().__init__("; ".join(errors))
        self.errors = errors
