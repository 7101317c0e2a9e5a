"""Hold audio for a Twilio or ACS transfer: the gateway holding the caller's stream is asked
(media plane `HoldForTransfer`) to play it before the platform is, on every attempt of the
transfer activity, so the caller hears it while a request is retried too.

Hold audio is a courtesy, never a reason not to transfer: a gateway that does not answer, or
no longer holds the stream, is logged and the platform is asked all the same (the caller is
the platform's, not the gateway's, and may still be on the line).
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
import structlog

from activities.media_channels import MediaChannels
from contracts.proto import media_pb2
from contracts.transfer import TransferRequest

log = structlog.get_logger("baton.transfer")

#: The gateway answers at once (it only starts a playback loop).
HOLD_TIMEOUT_SECONDS = 5.0


async def hold_for_transfer(request: TransferRequest, media: Callable[[], MediaChannels]) -> bool:
    """Ask the call's gateway to play hold audio until the platform takes the stream; True
    when it does."""
    if not request.gateway_address:
        return False
    try:
        stub = media().stub(request.gateway_address)
        answer = await stub.HoldForTransfer(
            media_pb2.HoldRequest(call_id=request.call_id), timeout=HOLD_TIMEOUT_SECONDS
        )
    except grpc.aio.AioRpcError as error:
        log.warning(
            "no hold audio for the transfer",
            call_id=request.call_id,
            code=error.code().name,
        )
        return False
    except Exception as error:  # a worker without media-plane settings still transfers
        log.warning("no hold audio for the transfer", call_id=request.call_id, error=str(error))
        return False
    if not answer.holding:
        log.info("no hold audio for the transfer", call_id=request.call_id, why=answer.detail)
    return bool(answer.holding)
