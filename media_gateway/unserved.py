"""A call no workflow worker serves: the gateway tells the caller itself, never silence.

The gateway starts a call's workflow, but only a `calls` worker runs it. With none up (all
crashed, a bad deploy) the workflow's task waits on its queue, so nothing the workflow would
say (the greeting, an apology, an escalation) is ever said, while this gateway keeps the call's
lease alive: the caller heard silence for as long as they held on. So the gateway asks Temporal
about the call's own workflow task (DescribeWorkflowExecution's pending workflow task) while it
waits on the workflow: from the call's start until a worker has taken a task, and while an
utterance waits longer than a moment to be accepted. A served call costs one look.

The same task seen waiting, untaken, for `unserved_notice_s` means nobody serves the call (the
span is measured here between looks, so no clock is compared with the server's, and a loaded
queue that takes tasks late but takes them is not mistaken for an empty one). The caller then
hears an apology in the gateway's own voice, rendered once at start with no speech worker (it
may be down too), then the hold tone with a short update every `unserved_update_s`. A worker
that comes back takes the call on as if nothing happened: its first reply cuts the notice.
After `unserved_give_up_s` of notices the gateway says goodbye, signals the hang-up with its
reason (a signal is kept in the workflow's history: the workflow, whenever it runs, ends the
call as hung up and files its ticket) and closes the line. A contact center's queue does the
same: keep the caller informed for a bounded time, then end honestly rather than hold forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

import structlog

from contracts.gateway_events import EndedEvent, GatewayEvent, SpeakingEvent
from contracts.metrics import UNSERVED_CALLS, UnservedOutcome
from media_gateway.control import CallControl
from media_gateway.gateway_config import GatewayConfig
from media_gateway.hold_audio import HoldMusic, hold_cycle
from media_gateway.playback import Chunk, Playback
from runtime.baton_metrics import count

log = structlog.get_logger("baton.gateway")

APOLOGY = "We're sorry, our system is having trouble right now. Please stay on the line."
STILL_WAITING = "Thank you for waiting. We're still working on it."
GOODBYE = "We're sorry, we can't take your call right now. Please call back later. Goodbye."
#: Why the call ended, as the workflow's hang-up and the log record it.
END_REASON = "no workflow worker took the call"
#: Who speaks a notice, as the page's `speaking` event names it.
SPEAKER = "baton"
#: Between looks at the workflow task.
LOOK_EVERY_S = 1.0
#: An utterance not yet accepted after this long has the workflow task watched.
SLOW_ACCEPT_S = 2.0

#: Renders a line of text as PCM16 mono 16 kHz (the gateway's voice for service notices).
NoticeVoice = Callable[[str], Awaitable[bytes]]
Kind = Literal["apology", "update", "goodbye"]


@dataclass(frozen=True)
class ServiceNotices:
    """The three notices, rendered once (at gateway start) so saying one needs nothing else."""

    apology: bytes
    update: bytes
    goodbye: bytes

    @classmethod
    async def render(cls, voice: NoticeVoice) -> ServiceNotices:
        """Each notice in `voice`."""
        return cls(await voice(APOLOGY), await voice(STILL_WAITING), await voice(GOODBYE))

    @classmethod
    def chime(cls) -> ServiceNotices:
        """Without a voice (a gateway embedded with no synthesizer, or before its notices are
        rendered) the hold chime stands in, the words on the page: a tone, never silence."""
        return cls(hold_cycle(), hold_cycle(), hold_cycle())

    def line(self, kind: Kind) -> tuple[str, bytes]:
        if kind == "apology":
            return APOLOGY, self.apology
        if kind == "update":
            return STILL_WAITING, self.update
        return GOODBYE, self.goodbye


class UnservedWatch:
    """Watches one call's workflow for a worker while the gateway waits on it."""

    def __init__(
        self,
        config: GatewayConfig,
        notices: Callable[[], ServiceNotices],
        playback: Playback,
        control: CallControl,
        *,
        tell: Callable[[GatewayEvent], None],
        give_up: Callable[[str], Awaitable[None]],
    ) -> None:
        self.config = config
        self.notices = notices
        self.playback = playback
        self.control = control
        self._tell = tell  # the caller's page: what is said, and that the call ended
        self._give_up = give_up  # closes the call here once the workflow was told
        self.call_id = control.call.call_id
        self._watcher: asyncio.Task[None] | None = None
        self._hold: HoldMusic | None = None
        self._notices_said = 0
        self.closed = False

    def watch(self) -> None:
        """Look until a worker is seen taking the call's tasks (no-op while already looking)."""
        if self._watcher is None and not self.closed:
            self._watcher = asyncio.create_task(self._watch())

    @property
    def noticed(self) -> bool:
        """The caller is hearing notices now."""
        return self._hold is not None

    async def served(self) -> None:
        """The workflow spoke (a reply is about to play): notices and hold stop at once. A
        call given no notice keeps its watcher, which stops on its next look."""
        if self._hold is None:
            return
        await self._stop_watching()
        await self._recovered()

    async def close(self) -> None:
        """The call ended here: no more looks or notices."""
        self.closed = True
        await self._stop_watching()
        hold, self._hold = self._hold, None
        if hold is not None:
            await hold.stop()

    async def _stop_watching(self) -> None:
        watcher = self._watcher
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def _watch(self) -> None:
        try:
            await self._look_until_served()
        except asyncio.CancelledError:
            raise
        except Exception:  # a blind spot, not a failed call: the next wait looks again
            log.exception("workflow task not watched", call_id=self.call_id)
        finally:
            self._watcher = None

    async def _look_until_served(self) -> None:
        seen: str | None = None
        since = time.monotonic()
        noticed_at = 0.0
        while not self.closed:
            await asyncio.sleep(LOOK_EVERY_S)
            waiting = await self.control.task_waiting()
            now = time.monotonic()
            if waiting is None:
                await self._recovered()
                return
            if waiting != seen:  # another task (or the first look): its wait starts now
                seen, since = waiting, now
                continue
            if self._hold is None and now - since >= self.config.unserved_notice_s:
                log.warning("no workflow worker has taken the call", call_id=self.call_id)
                _count("apologized")
                self._hold = HoldMusic(self.playback)
                self._hold.start()
                noticed_at = now
                await self._say("apology")
            elif self._hold is not None and now - noticed_at >= self.config.unserved_give_up_s:
                await self._end()
                return
            elif self._hold is not None and self._update_due(now - noticed_at):
                await self._say("update")

    def _update_due(self, noticed_for: float) -> bool:
        return noticed_for >= self._notices_said * self.config.unserved_update_s

    async def _say(self, kind: Kind) -> None:
        """Queue a notice and cut the hold cycle playing so it starts at once."""
        self._notices_said += 1
        text, pcm = self.notices().line(kind)
        reply_id = f"notice-{self._notices_said}"
        self._tell(SpeakingEvent(agent=SPEAKER, text=text, reply_id=reply_id))
        said = asyncio.create_task(self.playback.play(reply_id, text, _once(pcm, len(text))))
        await asyncio.sleep(0)  # queued on the playback before the hold cycle is cut
        if self._hold is not None:
            self._hold.make_way()
        if kind == "goodbye":
            await said

    async def _recovered(self) -> None:
        hold, self._hold = self._hold, None
        if hold is None:
            return
        log.info("a workflow worker took the call", call_id=self.call_id)
        _count("recovered")
        await hold.stop()
        current = self.playback.current
        if current is not None and current.reply_id.startswith("notice-"):
            self.playback.cancel()

    async def _end(self) -> None:
        log.warning("call ended: no workflow worker took it", call_id=self.call_id)
        _count("ended")
        hold, self._hold = self._hold, None
        if hold is not None:
            await hold.stop()
        await self._say("goodbye")
        self.closed = True
        try:
            await self.control.hang_up(END_REASON)  # kept in its history until it runs
        except Exception:  # Temporal unreachable too: the line still closes honestly
            log.exception("hang-up not signalled", call_id=self.call_id)
        self._tell(EndedEvent(status="hung_up"))
        await self._give_up(END_REASON)


async def _once(pcm: bytes, text_end: int) -> AsyncIterator[Chunk]:
    yield Chunk(pcm, text_end)


def _count(outcome: UnservedOutcome) -> None:
    count(UNSERVED_CALLS, outcome=outcome)
