"""The transfer on the call's telephony platform, for the `start_transfer` activity.

Twilio calls are moved by updating the live call with TwiML (`twilio_transfer`), ACS calls by
Call Automation's transfer to a participant (`acs_transfer`). Either answers `connected` once
the platform has the caller, `failed` (with a detail safe for logs) when it refused or is not
configured, and raises a retryable `ApplicationError` while the platform is unreachable.
"""

from __future__ import annotations

from activities.transfer.acs_transfer import transfer_on_acs
from activities.transfer.twilio_transfer import transfer_on_twilio
from contracts.transfer import TransferOutcome, TransferRequest


async def transfer_on_platform(request: TransferRequest) -> TransferOutcome:
    """Move the caller to `request.target` through the platform of `request.channel`."""
    if request.channel == "twilio":
        return await transfer_on_twilio(request)
    if request.channel == "acs":
        return await transfer_on_acs(request)
    return TransferOutcome(
        status="failed", detail=f"the {request.channel} channel has no telephony platform"
    )
