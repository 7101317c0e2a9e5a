"""Activity `start_transfer` (tools queue): ask the call's platform to move an escalated caller
to a person.

Browser calls are offered to the human-agent console of the gateway holding them (`pending`
until a person takes the call); Twilio and ACS calls are put on hold audio by their gateway
(activities.transfer.hold), then transferred by the platform's own API; a text call has no
line to hand over, so its transfer `failed` and the workflow keeps the ticket and tells the
caller.
"""

from __future__ import annotations

from temporalio import activity

from activities.escalation import redacted
from activities.media_channels import MediaChannels
from activities.transfer.console import offer_to_console
from activities.transfer.hold import hold_for_transfer
from activities.transfer.platforms import transfer_on_platform
from contracts.transfer import START_TRANSFER, TransferOutcome
from contracts.transfer_task import TransferTask


class TransferActivities:
    """Holds the gateway channels a browser transfer needs, opened on first use: a tools
    worker that never transfers a browser call needs no media-plane secret."""

    def __init__(self, channels: MediaChannels | None = None) -> None:
        self._channels = channels

    def _media(self) -> MediaChannels:
        if self._channels is None:
            self._channels = MediaChannels()
        return self._channels

    @activity.defn(name=START_TRANSFER)
    async def start_transfer(self, task: TransferTask) -> TransferOutcome:
        request = task.request
        if request.channel == "browser":
            # The console shows the ticket as the sink keeps it: the caller's data masked.
            return await offer_to_console(request, redacted(task.ticket), self._media())
        if request.channel in ("twilio", "acs"):
            # The caller hears hold audio from here until the platform takes the stream.
            await hold_for_transfer(request, self._media)
            return await transfer_on_platform(request)
        return TransferOutcome(status="failed", detail="no platform to transfer a text call")
