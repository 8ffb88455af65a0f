"""The bearer token of the gRPC APIs and the web screen.

When ``Settings.auth_token`` is set, every RPC but the health checks must carry
``authorization: Bearer <token>`` metadata; a service that listens beyond
loopback refuses to start without a token (``Settings.check_listen_security``).
Health checks stay open: the supervisor, Kubernetes probes and load balancers
ask them without credentials, and they reveal nothing but "serving".
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

# Methods anyone may call: grpc.health.v1.Health/Check and /Watch.
OPEN_METHOD_PREFIXES = ("/grpc.health.v1.Health/",)
COOKIE_NAME = "godot_rag_token"


def token_matches(given: str, expected: str) -> bool:
    """Constant-time comparison; an empty expected token accepts nothing."""
    return bool(expected) and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def bearer_of(header: str) -> str:
    """'Bearer abc' -> 'abc'; anything else -> ''."""
    scheme, _, value = header.strip().partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def auth_metadata(token: str) -> tuple[tuple[str, str], ...]:
    """The call metadata a client sends (nothing when no token is configured)."""
    return (("authorization", f"Bearer {token}"),) if token else ()


def _refusing(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """A handler of the same shape as ``handler`` that answers UNAUTHENTICATED."""

    async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token (authorization metadata)")

    async def streaming(request: Any, context: grpc.aio.ServicerContext):
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token (authorization metadata)")
        yield  # pragma: no cover - abort raises

    deser, ser = handler.request_deserializer, handler.response_serializer
    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(streaming, deser, ser)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(unary, deser, ser)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(streaming, deser, ser)
    return grpc.unary_unary_rpc_method_handler(unary, deser, ser)


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses every call without the configured token, except the health checks."""

    def __init__(self, token: str):
        if not token:
            raise ValueError("BearerTokenInterceptor needs a token")
        self.token = token

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(OPEN_METHOD_PREFIXES):
            return handler
        given = ""
        for key, value in handler_call_details.invocation_metadata or ():
            if key.lower() == "authorization":
                given = bearer_of(value if isinstance(value, str) else value.decode("utf-8", "replace"))
        if token_matches(given, self.token):
            return handler
        return _refusing(handler)


def server_interceptors(token: str) -> list[grpc.aio.ServerInterceptor]:
    return [BearerTokenInterceptor(token)] if token else []


class _MetadataInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds the bearer token to every call of a channel (plain-text channels cannot carry call credentials)."""

    def __init__(self, token: str):
        self.metadata = auth_metadata(token)

    def _with_token(self, details: Any) -> Any:
        return details._replace(metadata=[*(details.metadata or ()), *self.metadata])

    def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(self._with_token(client_call_details), request)

    def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return continuation(self._with_token(client_call_details), request)


def client_channel(addr: str, token: str, options: Any = None) -> grpc.Channel:
    """A channel to a gateway that sends the token (when one is configured) with every call."""
    channel = grpc.insecure_channel(addr, options=options)
    return grpc.intercept_channel(channel, _MetadataInterceptor(token)) if token else channel
