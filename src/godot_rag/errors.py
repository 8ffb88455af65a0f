"""Typed errors. Stages raise these; the bus and gRPC edges map them."""

from __future__ import annotations


class GodotRagError(Exception):
    """Base of the project's own errors."""


class RetryableError(GodotRagError):
    """Worth another try later (a dependency is down, a timeout). Bus: nak(delay)."""

    def __init__(self, message: str, delay_s: float = 2.0):
        super().__init__(message)
        self.delay_s = delay_s


class PoisonError(GodotRagError):
    """Will fail the same way every time (bad payload, missing record). Bus: term() + dead letter."""


class NotFoundError(GodotRagError):
    """The requested analysis/chunk/file does not exist. gRPC: NOT_FOUND."""


class InvalidInputError(GodotRagError):
    """The caller's input is unusable. gRPC: INVALID_ARGUMENT."""
