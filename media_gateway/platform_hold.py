"""Hold audio on a Twilio or ACS stream while the call's platform transfers the caller.

The transfer activity asks for it (media plane `HoldForTransfer`) before its first request to
the platform, so the caller hears the same hold audio as a browser caller waiting on the
console (media_gateway.hold_audio) from the moment the transfer is decided: while the REST
request is sent, retried, or (an ACS queue) while Job Router looks for a person. A reply the
workflow sends meanwhile (the apology when the transfer failed) cuts in and the hold resumes
after it.

The stream is the platform's to end: Twilio ends it as the call leaves `<Connect><Stream>`
for the new TwiML, ACS as the call connection is transferred. So once the workflow ends
`transferred` the gateway keeps the stream and its hold audio until the platform ends it, and
closes it itself only if the platform has not within `TAKEOVER_SECONDS` (it never took the
caller, and a stream left open would hold the line forever). Any other ending (`escalated`:
the transfer failed and the caller was told) closes the stream at once, as for any call.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from contracts.calls import CallStatus
from contracts.gateway_events import EndedEvent
from media_gateway.calls import CallMedia
from media_gateway.hold_audio import HoldMusic

log = structlog.get_logger("baton.gateway")

#: After the workflow ended `transferred`, how long the platform has to end the stream.
TAKEOVER_SECONDS = 60.0
#: How soon the outcome watcher asks again after Temporal did not answer.
WATCH_RETRY_SECONDS = 1.0


class PlatformHold:
    """One call's hold while its platform transfers it (a `peer.ConsoleHold`: while set, the
    AI conversation is over and this decides when the stream closes)."""

    def __init__(self, call: CallMedia) -> None:
        self.call = call
        self.music = HoldMusic(call.playback)
        self._watcher: asyncio.Task[None] | None = None
        self._stopping: asyncio.Task[None] | None = None

    @classmethod
    def start(cls, call: CallMedia) -> tuple[bool, str]:
        """Put `call` on hold (once); returns whether it holds now and a detail safe for logs."""
        if isinstance(call.console, PlatformHold):
            return True, "already on hold for the transfer"
        if call.console is not None:
            return False, "the call is already with the console"
        hold = cls(call)
        call.console = hold
        hold.music.start()
        hold._watcher = asyncio.create_task(hold._watch_outcome())
        log.info("call on hold for a platform transfer", call_id=call.call_id)
        return True, "hold audio playing while the platform transfers the call"

    # -- ConsoleHold -----------------------------------------------------------------------

    def caller_audio(self, pcm16_16k: bytes) -> None:
        """The caller waits for a person: nothing they say starts a turn now."""

    def make_way(self) -> None:
        self.music.make_way()

    def call_ended(self, reason: str) -> None:
        """The stream ended (the platform took the caller, or the caller hung up)."""
        log.info("platform hold over", call_id=self.call.call_id, why=reason)
        self.detach()

    def detach(self) -> None:
        if self._stopping is None:
            self._stopping = asyncio.create_task(self.music.stop())
        if self._watcher is not None and self._watcher is not asyncio.current_task():
            self._watcher.cancel()

    # -- the workflow's end ----------------------------------------------------------------

    async def _watch_outcome(self) -> None:
        status: CallStatus = "failed"  # terminated, cancelled or failed: no result to read
        while True:
            try:
                status = (await self.call.control.outcome()).status
                break
            except WorkflowFailureError:
                break
            except RPCError as error:
                log.info("call outcome unavailable", call_id=self.call.call_id, error=str(error))
                await asyncio.sleep(WATCH_RETRY_SECONDS)
        if status == "transferred" and self.call.peer is not None:
            # The platform has the transfer: its end of the stream is the caller leaving us.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(TAKEOVER_SECONDS):
                    while self.call.peer is not None and not self.call.ended:
                        await asyncio.sleep(0.2)
            if self.call.ended:
                return
            log.warning(
                "platform did not take the stream after the transfer",
                call_id=self.call.call_id,
                seconds=TAKEOVER_SECONDS,
            )
        self.call.console = None
        await self.music.stop()
        self.call.send_event(EndedEvent(status=status))
        await self.call.release(f"call {status}")
