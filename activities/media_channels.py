"""gRPC channels from workers to media gateways, and what a failed media-plane call means.

Speech workers (audio) and LLM workers (reply text as it is written) both talk to the gateway
holding a call; its address travels with the call, so several gateways can serve one cluster.
Every call carries the media plane's shared secret (`runtime.media_auth`): as gRPC call
credentials on a TLS channel, or as the same `authorization` metadata added by an interceptor
on a plaintext one, since gRPC refuses call credentials without TLS.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Awaitable, Callable, Iterable
from typing import Any

import grpc
from temporalio.exceptions import ApplicationError

from contracts.proto import media_pb2_grpc
from runtime.media_auth import METADATA_KEY, bearer, client_tls, media_secret

#: Statuses that mean the gateway may answer on a later attempt.
_RETRYABLE = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL}
)

#: A gateway that restarts (or blinks) is dialled again within a second, not after gRPC's
#: default backoff of up to two minutes: the speech activity's retries (workflows.policies.TTS)
#: span that second, so the reply right after a restart is still played.
CHANNEL_OPTIONS: tuple[tuple[str, Any], ...] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 1000),
)

Details = grpc.aio.ClientCallDetails
Requests = AsyncIterable[Any] | Iterable[Any]


class MediaChannels:
    """One gRPC channel per gateway address, shared by every call on that gateway.

    The secret and TLS files are read once, here, so a worker with a bad setting fails as it
    starts rather than on a caller's first reply.
    """

    def __init__(self) -> None:
        self._channels: dict[str, grpc.aio.Channel] = {}
        self._secret = media_secret()
        self._tls = client_tls()

    def stub(self, address: str) -> media_pb2_grpc.MediaPlaneStub:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = self._open(address)
        return media_pb2_grpc.MediaPlaneStub(channel)  # type: ignore[no-untyped-call]

    def _open(self, address: str) -> grpc.aio.Channel:
        if self._tls is None:
            shapes = (_UnaryUnary, _UnaryStream, _StreamUnary, _StreamStream)
            interceptors = [shape(self._secret) for shape in shapes]
            return grpc.aio.insecure_channel(address, CHANNEL_OPTIONS, interceptors=interceptors)
        credentials = grpc.composite_channel_credentials(
            self._tls.credentials, grpc.access_token_call_credentials(self._secret)
        )
        options = (*CHANNEL_OPTIONS, *self._tls.options)
        return grpc.aio.secure_channel(address, credentials, options=options)

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()


class _WithSecret:
    """Adds `authorization: Bearer <secret>` to a call on a plaintext channel.

    One subclass per RPC shape: a channel files each interceptor under the first shape it
    implements only, so a single class implementing all four would guard unary calls alone.
    """

    def __init__(self, secret: str) -> None:
        self._header = (METADATA_KEY, bearer(secret))

    def _details(self, details: Details) -> Details:
        metadata = grpc.aio.Metadata(*(details.metadata or ()), self._header)
        return Details(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        )


class _UnaryUnary(_WithSecret, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(
        self, continuation: Callable[[Details, Any], Awaitable[Any]], details: Details, request: Any
    ) -> Any:
        return await continuation(self._details(details), request)


class _UnaryStream(_WithSecret, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(
        self, continuation: Callable[[Details, Any], Awaitable[Any]], details: Details, request: Any
    ) -> Any:
        return await continuation(self._details(details), request)


class _StreamUnary(_WithSecret, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(
        self,
        continuation: Callable[[Details, Requests], Awaitable[Any]],
        details: Details,
        requests: Requests,
    ) -> Any:
        return await continuation(self._details(details), requests)


class _StreamStream(_WithSecret, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(
        self,
        continuation: Callable[[Details, Requests], Awaitable[Any]],
        details: Details,
        requests: Requests,
    ) -> Any:
        return await continuation(self._details(details), requests)


def media_error(error: grpc.aio.AioRpcError, what: str) -> ApplicationError:
    code = error.code()
    if code == grpc.StatusCode.UNAUTHENTICATED:
        # A configuration mistake, not a passing fault: retrying cannot fix it.
        return ApplicationError(
            f"{what}: the gateway refused this worker's media plane credential; set the same "
            "BATON_MEDIA_SECRET on the gateway and every worker",
            type="MediaPlaneUnauthenticated",
            non_retryable=True,
        )
    return ApplicationError(
        f"{what}: gateway answered {code.name}: {error.details()}",
        type="MediaPlane" + code.name.title().replace("_", ""),
        non_retryable=code not in _RETRYABLE,
    )
