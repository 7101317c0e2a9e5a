"""Who may use the media plane: only callers presenting the shared secret (runtime.media_auth).

Checked in a server interceptor, before any servicer code runs, so no RPC added later can
forget it: a refused call never reaches a call's playback, segments or reply text.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias

import grpc
import structlog

from runtime.media_auth import presents

log = structlog.get_logger("baton.gateway")

REFUSAL = "media plane credential missing or wrong: give gateway and workers one BATON_MEDIA_SECRET"

# Generic in the type stubs only, so the alias stays a string at run time.
Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"


class BearerAuth(grpc.aio.ServerInterceptor):
    """Refuses, UNAUTHENTICATED, every RPC whose metadata lacks the bearer secret."""

    def __init__(self, secret: str) -> None:
        self._secret = secret

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Handler | None:
        handler = await continuation(handler_call_details)
        verdict = presents(handler_call_details.invocation_metadata or (), self._secret)
        if handler is None or verdict:
            return handler
        reason = "no credential" if verdict is None else "wrong credential"
        return _refusing(handler, handler_call_details.method, reason)


def _refusing(handler: Handler, method: str, reason: str) -> Handler:
    """A handler of the same shape as `handler` that aborts without reading the request."""

    async def refuse(_request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        # One line per refusal, naming who and what but never what was presented.
        log.warning("media plane call refused", method=method, reason=reason, peer=context.peer())
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, REFUSAL)

    kinds: dict[tuple[bool, bool], Callable[..., Handler]] = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }
    make = kinds[(handler.request_streaming, handler.response_streaming)]
    return make(
        refuse,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


def is_loopback(address: str) -> bool:
    """Whether a `host:port` listen address is reachable from this machine only."""
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name, or "" (every interface)
