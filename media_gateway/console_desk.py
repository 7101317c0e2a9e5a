"""The human-agent console's queue: browser calls transferred to a person wait here on hold.

A call arrives by the media plane's `OfferToConsole` (its workflow filed a ticket and runs the
transfer). It waits with hold audio until a person claims it (one claim per call: a second
person is refused) and opens the console's audio line; the workflow is then told
(`transfer_settled`) and ends `transferred`, while the gateway keeps the caller bridged to the
person until either of them hangs up. If the workflow ends first (nobody took the call in time)
its apology has been played, and the line closes as any ended call's does.

Tickets hold caller data: they stay in memory, reach only the authenticated console, and no log
line here carries more than call ids, ticket ids and operator ids.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from contracts.calls import CallStatus
from contracts.escalation import EscalationTicket
from contracts.gateway_events import EndedEvent
from contracts.transfer import TransferSettled, TransferTarget
from media_gateway.background import BackgroundTasks
from media_gateway.calls import CallMedia
from media_gateway.hold_audio import HoldMusic

log = structlog.get_logger("baton.gateway")

#: A claimed call whose person has not opened the audio line by then is back in the queue.
CLAIM_SECONDS = 15.0
#: Caller audio held for a console that is not reading (5 s of 20 ms frames), then dropped.
MAX_QUEUED_FRAMES = 250
#: How soon the outcome watcher asks again after Temporal did not answer.
WATCH_RETRY_SECONDS = 1.0


class ConsoleRefused(Exception):  # noqa: N818 - a refusal the console shows, not a fault
    """A claim or line the console may not have; `status` is the HTTP status to answer."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class ConsoleLine(Protocol):
    """The person's side of a taken call: the console page's audio socket."""

    def send_audio(self, pcm16_16k: bytes) -> None: ...
    async def close(self, reason: str) -> None: ...


@dataclass
class WaitingCall:
    """One call on the console: on hold, claimed, or bridged to a person."""

    call: CallMedia
    ticket: EscalationTicket
    target: TransferTarget
    hold: HoldMusic
    desk: ConsoleDesk
    since: float = field(default_factory=time.monotonic)
    taken_by: str = ""
    claim_token: str = ""
    claim_expires: float = 0.0
    line: ConsoleLine | None = None
    watcher: asyncio.Task[None] | None = None

    @property
    def call_id(self) -> str:
        return self.call.call_id

    def claimed(self, now: float) -> bool:
        return self.line is not None or (bool(self.taken_by) and now < self.claim_expires)

    # -- ConsoleHold (calls.CallMedia talks to the console through these) -------------------

    def caller_audio(self, pcm16_16k: bytes) -> None:
        if self.line is not None:
            self.line.send_audio(pcm16_16k)

    def call_ended(self, reason: str) -> None:
        self.desk.forget(self, reason)

    def make_way(self) -> None:
        self.hold.make_way()

    def detach(self) -> None:
        """Nothing: the desk closes its calls itself (`ConsoleDesk.close`)."""


class ConsoleDesk:
    """The calls waiting for (or talking to) a person on this gateway's console."""

    def __init__(self) -> None:
        self.calls: dict[str, WaitingCall] = {}
        self._tasks = BackgroundTasks("console work failed")

    # -- the workflow's offer --------------------------------------------------------------

    def offer(self, call: CallMedia, ticket: EscalationTicket, target: TransferTarget) -> str:
        """Queue `call` with hold audio; returns a detail safe for logs. A repeated offer (the
        transfer activity retried) finds the call already queued."""
        if call.call_id in self.calls:
            return "already queued on the console"
        entry = WaitingCall(call, ticket, target, HoldMusic(call.playback), self)
        self.calls[call.call_id] = entry
        call.console = entry
        entry.hold.start()
        entry.watcher = self._spawn(self._watch_outcome(entry))
        log.info("call queued on the console", call_id=call.call_id, ticket_id=ticket.ticket_id)
        return f"queued on the console ({len(self.calls)} waiting or taken)"

    async def _watch_outcome(self, entry: WaitingCall) -> None:
        """Once the workflow has closed, a call no person took ends here too; its last words
        (the apology) were played before the workflow could close."""
        status: CallStatus = "failed"  # terminated, cancelled or failed: no result to read
        while True:
            try:
                status = (await entry.call.control.outcome()).status
                break
            except WorkflowFailureError:
                break
            except RPCError as error:
                log.info("call outcome unavailable", call_id=entry.call_id, error=str(error))
                await asyncio.sleep(WATCH_RETRY_SECONDS)
        if entry.line is not None or self.calls.get(entry.call_id) is not entry:
            return  # a person has the caller: the line stays until one of them hangs up
        log.info("call left the console untaken", call_id=entry.call_id, status=status)
        self.forget(entry, f"call {status}")
        entry.call.send_event(EndedEvent(status=status))
        await entry.call.release(f"call {status}")

    # -- the person's side -----------------------------------------------------------------

    def waiting(self) -> list[WaitingCall]:
        return sorted(self.calls.values(), key=lambda entry: entry.since)

    def claim(self, call_id: str, operator: str) -> str:
        """Reserve the call for `operator`; returns the single-use token that opens its line."""
        entry = self.calls.get(call_id)
        if entry is None:
            raise ConsoleRefused(404, f"call {call_id} is not waiting on this console")
        now = time.monotonic()
        if entry.claimed(now) and entry.taken_by != operator:
            raise ConsoleRefused(409, f"call {call_id} was already taken by {entry.taken_by}")
        if entry.line is not None:
            raise ConsoleRefused(409, f"call {call_id} is already on your line")
        entry.taken_by = operator
        entry.claim_token = secrets.token_urlsafe(24)
        entry.claim_expires = now + CLAIM_SECONDS
        log.info("console call claimed", call_id=call_id, operator=operator)
        return entry.claim_token

    def claimed_by(self, token: str) -> WaitingCall:
        """The call a live claim token opens (raises `ConsoleRefused`); nothing changes."""
        entry = next(
            (
                e
                for e in self.calls.values()
                if e.claim_token and secrets.compare_digest(e.claim_token, token)
            ),
            None,
        )
        if entry is None or time.monotonic() >= entry.claim_expires or entry.line is not None:
            raise ConsoleRefused(403, "this take is unknown or expired: take the call again")
        return entry

    async def connect(self, token: str, line: ConsoleLine) -> WaitingCall:
        """Open the claimed call's line: the workflow is told a person took it, hold audio
        stops, and from here audio flows both ways (raises `ConsoleRefused`)."""
        entry = self.claimed_by(token)
        entry.claim_token = ""  # single use
        settled = TransferSettled(taken=True, taken_by=entry.taken_by, detail="browser console")
        if not await entry.call.control.transfer_settled(settled):
            self.forget(entry, "workflow closed before the take")
            raise ConsoleRefused(410, f"call {entry.call_id} is no longer waiting")
        entry.line = line
        await entry.hold.stop()
        log.info("console call taken", call_id=entry.call_id, operator=entry.taken_by)
        return entry

    def person_audio(self, entry: WaitingCall, pcm16_16k: bytes) -> None:
        """What the person says, straight to the caller (already real time: no pacing)."""
        send = entry.call.sink.send_audio
        if send is not None and entry.line is not None:
            send(pcm16_16k)

    async def hang_up(self, entry: WaitingCall, reason: str) -> None:
        """The person's line closed: the caller's closes too."""
        if self.calls.get(entry.call_id) is not entry:
            return
        self.forget(entry, reason)
        await entry.call.release(reason)

    def forget(self, entry: WaitingCall, reason: str) -> None:
        """Take the call off the console: hold stops, the person's line (if any) closes."""
        if self.calls.get(entry.call_id) is not entry:
            return
        del self.calls[entry.call_id]
        if entry.call.console is entry:
            entry.call.console = None
        self._spawn(entry.hold.stop())
        if entry.watcher is not None and entry.watcher is not asyncio.current_task():
            entry.watcher.cancel()
        if entry.line is not None:
            self._spawn(entry.line.close(reason))
        log.info("call off the console", call_id=entry.call_id, why=reason)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        return self._tasks.spawn(work)

    async def close(self) -> None:
        """The gateway is shutting down: every console line closes, nothing is signalled."""
        for entry in list(self.calls.values()):
            self.forget(entry, "gateway shutting down")
        self._tasks.cancel()
        await self._tasks.wait()
