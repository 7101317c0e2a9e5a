"""The browser channel's transfer: offer the call to the human-agent console of the gateway
holding the caller (media plane RPC `OfferToConsole`).

The gateway queues the call with its ticket and plays hold audio; the answer is `pending`, and
the gateway later signals the workflow (`transfer_settled`) when a person takes the call. A
gateway that no longer holds the call answers NOT_FOUND: the transfer `failed`, and the
workflow says so to nobody (the caller is gone) and keeps the ticket.
"""

from __future__ import annotations

import grpc

from activities.media_channels import MediaChannels, media_error
from contracts.escalation import EscalationTicket
from contracts.proto import media_pb2
from contracts.transfer import TransferOutcome, TransferRequest

#: The gateway answers at once (it only queues the call); a slower answer is a sick gateway,
#: and the activity's retries reach it again.
OFFER_TIMEOUT_SECONDS = 10.0


async def offer_to_console(
    request: TransferRequest, ticket: EscalationTicket, channels: MediaChannels
) -> TransferOutcome:
    """Queue a browser call on its gateway's console: `pending` once queued, `failed` when the
    gateway no longer holds it. Other media-plane errors raise (retryable or not, as
    `media_error` says)."""
    if not request.gateway_address:
        return TransferOutcome(status="failed", detail="the call has no gateway address")
    offer = media_pb2.ConsoleOffer(
        call_id=request.call_id,
        ticket_json=ticket.model_dump_json(),
        target_label=request.target.label,
        target_address=request.target.address,
    )
    stub = channels.stub(request.gateway_address)
    try:
        answer = await stub.OfferToConsole(offer, timeout=OFFER_TIMEOUT_SECONDS)
    except grpc.aio.AioRpcError as error:
        if error.code() == grpc.StatusCode.NOT_FOUND:
            return TransferOutcome(status="failed", detail="the gateway no longer holds the call")
        raise media_error(error, "offer to the console") from error
    if not answer.queued:
        return TransferOutcome(status="failed", detail=answer.detail or "the console refused")
    return TransferOutcome(status="pending", detail=answer.detail or "queued on the console")
