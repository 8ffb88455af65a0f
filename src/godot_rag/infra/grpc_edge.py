"""The gRPC edge: the project's typed errors mapped to status codes, in one place.

Servicer methods raise ``godot_rag.errors`` classes; ``grpc_errors`` turns
each into an abort with its status code and message. Anything else is a bug
and reaches gRPC as INTERNAL (logged with its traceback by grpc itself).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from godot_rag.errors import (
    AccessDeniedError,
    ContractViolation,
    GodotRagError,
    InvalidInputError,
    LLMRequestError,
    NotFoundError,
    NotReadyError,
    OverloadedError,
    PoisonError,
    RetryableError,
)

# Most specific first: the first class an error is an instance of decides.
STATUS_BY_ERROR: tuple[tuple[type[GodotRagError], grpc.StatusCode], ...] = (
    (NotFoundError, grpc.StatusCode.NOT_FOUND),
    (AccessDeniedError, grpc.StatusCode.PERMISSION_DENIED),
    (OverloadedError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (InvalidInputError, grpc.StatusCode.INVALID_ARGUMENT),
    (NotReadyError, grpc.StatusCode.FAILED_PRECONDITION),
    (LLMRequestError, grpc.StatusCode.FAILED_PRECONDITION),
    (PoisonError, grpc.StatusCode.FAILED_PRECONDITION),
    (RetryableError, grpc.StatusCode.UNAVAILABLE),
    (ContractViolation, grpc.StatusCode.INTERNAL),
)


def status_for(exc: GodotRagError) -> grpc.StatusCode:
    for cls, code in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.INTERNAL


F = TypeVar("F", bound=Callable[..., Any])


def grpc_errors(method: F) -> F:
    """Decorate a servicer method (unary or server-streaming) so typed errors become status codes."""
    if inspect.isasyncgenfunction(method):

        @functools.wraps(method)
        async def stream(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            try:
                async for item in method(self, request, context):
                    yield item
            except GodotRagError as exc:
                await context.abort(status_for(exc), str(exc))

        return stream  # type: ignore[return-value]

    @functools.wraps(method)
    async def unary(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Awaitable[Any]:
        try:
            return await method(self, request, context)
        except GodotRagError as exc:
            await context.abort(status_for(exc), str(exc))
            raise  # abort raises; this line only tells the type checker the call does not return

    return unary  # type: ignore[return-value]


# The same errors over HTTP (the web screen's JSON API and forms).
HTTP_STATUS_BY_ERROR: tuple[tuple[type[GodotRagError], int], ...] = (
    (NotFoundError, 404),
    (AccessDeniedError, 403),
    (OverloadedError, 429),
    (InvalidInputError, 400),
    (NotReadyError, 409),
    (LLMRequestError, 409),
    (PoisonError, 409),
    (RetryableError, 503),
)


def http_status_for(exc: GodotRagError) -> int:
    for cls, code in HTTP_STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return code
    return 500
