"""gRPC channels from workers to media gateways, and what a failed media-plane call means.

Speech workers (audio) and LLM workers (reply text as it is written) both talk to the gateway
holding a call; its address travels with the call, so several gateways can serve one cluster.
"""

from __future__ import annotations

import grpc
from temporalio.exceptions import ApplicationError

from contracts.proto import media_pb2_grpc

#: Statuses that mean the gateway may answer on a later attempt.
_RETRYABLE = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL}
)


class MediaChannels:
    """One gRPC channel per gateway address, shared by every call on that gateway."""

    def __init__(self) -> None:
        self._channels: dict[str, grpc.aio.Channel] = {}

    def stub(self, address: str) -> media_pb2_grpc.MediaPlaneStub:
        channel = self._channels.get(address)
        if channel is None:
            channel = grpc.aio.insecure_channel(address)
            self._channels[address] = channel
        return media_pb2_grpc.MediaPlaneStub(channel)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()


def media_error(error: grpc.aio.AioRpcError, what: str) -> ApplicationError:
    code = error.code()
    return ApplicationError(
        f"{what}: gateway answered {code.name}: {error.details()}",
        type="MediaPlane" + code.name.title().replace("_", ""),
        non_retryable=code not in _RETRYABLE,
    )
