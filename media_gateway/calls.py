"""One call this gateway serves: its playback, segments, endpointer and control link.

A call outlives its WebSocket: a caller whose connection drops and comes back with the same call
id gets the same `CallMedia` (same workflow, same segments, playback carrying on). A call whose
connection stays away longer than the grace period is hung up, so no workflow waits forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import structlog
from temporalio.client import WorkflowUpdateHandle

from contracts.calls import CallStatus, HangUp, TurnReply, Utterance
from contracts.gateway_events import (
    BargeInEvent,
    EndedEvent,
    GatewayEvent,
    SpeakingEvent,
    UtteranceEvent,
)
from media_gateway.admission import TokenBucket
from media_gateway.background import BackgroundTasks
from media_gateway.barge_in import BargeIn
from media_gateway.control import CallControl, turn_reply
from media_gateway.gateway_config import GatewayConfig
from media_gateway.lease_keeper import LeaseKeeper
from media_gateway.observability import TurnClock, count_dropped_utterance
from media_gateway.page_timeline import PageTimeline
from media_gateway.peer import ConsoleHold, LineBusyError, Peer
from media_gateway.playback import Chunk, Heard, Playback, PlaybackResult, Sink
from media_gateway.reply_text import ReplyTexts
from media_gateway.segments import Segment, SegmentStore
from media_gateway.unserved import SLOW_ACCEPT_S, ServiceNotices, UnservedWatch
from media_gateway.vad import (
    BYTES_PER_MS,
    NoiseIgnored,
    SpeechEnded,
    SpeechPaused,
    SpeechStarted,
    VadEvent,
)

log = structlog.get_logger("baton.gateway")


#: A person presses at most a few keys a second; a burst covers a fast-typed account number.
KEYPAD_PRESSES_PER_SECOND = 5.0
KEYPAD_BURST = 12
#: Utterances handed over but not yet accepted by the workflow.
MAX_WAITING_UTTERANCES = 8
#: An utterance takes at least 200 ms of speech and 400 ms of quiet to end (media_gateway/vad),
#: so a caller speaking in real time makes fewer than two a second and never empties the bucket;
#: the burst covers audio a page sends at once after a stall. Only a stream that produces
#: utterances faster than real time is refused: each one would queue a turn on the workflow.
UTTERANCES_PER_SECOND = 2.0
UTTERANCE_BURST = 10


class CallMedia:
    """Everything the gateway holds for one call."""

    def __init__(
        self,
        config: GatewayConfig,
        control: CallControl,
        on_gone: Callable[[str], None],
        notices: Callable[[], ServiceNotices],
    ) -> None:
        self.config = config
        self.control = control
        self.call_id = control.call.call_id
        self.sink = Sink()
        self.playback = Playback(self.sink)
        self.segments = SegmentStore()
        self.reply_texts = ReplyTexts()
        self.endpointer = config.new_endpointer()
        self.peer: Peer | None = None
        self._on_gone = on_gone
        self._provisional: Segment | None = None
        self._grace: asyncio.Task[None] | None = None
        self._submissions: asyncio.Queue[Utterance | HangUp] = asyncio.Queue()
        #: Delivers what the caller said, in order; done once the hang-up is delivered.
        self.submitter = asyncio.create_task(self._submit_in_order())
        #: When the caller's current connection began: the lease's newest holder wins.
        self.connected_at = datetime.now(UTC)
        self.lease = LeaseKeeper(
            control,
            config.media_address,
            line=lambda: (self.connected_at, self.peer is not None),
            closed=self._workflow_closed,
        )
        self._keypad = TokenBucket(rate=KEYPAD_PRESSES_PER_SECOND, burst=KEYPAD_BURST)
        self._speaking_rate = TokenBucket(rate=UTTERANCES_PER_SECOND, burst=UTTERANCE_BURST)
        #: Utterances refused for their rate, not yet counted as bad frames by the connection.
        self._refused_utterances = 0
        self._refused_refs: set[str] = set()
        self._background = BackgroundTasks("call control failed", call_id=self.call_id)
        self.ended = False
        self.turns = TurnClock(control.call.channel)
        self.barge = BargeIn(
            self.playback, config, cut=self._barge_in_heard, not_a_turn=self.turns.not_a_turn
        )
        #: Being handed back by a draining gateway: no new replies start here (media_gateway.drain).
        self.leaving = False
        self.timeline = PageTimeline(control, self.send_event)
        #: Set once the call waits for (or talks to) a person: on this gateway's console, or
        #: on its platform's transfer (media_gateway.platform_hold).
        self.console: ConsoleHold | None = None
        #: Tells the caller when no worker runs the call's workflow (media_gateway.unserved).
        self.unserved = UnservedWatch(
            config, notices, self.playback, control, tell=self.send_event, give_up=self._give_up
        )
        self.unserved.watch()  # until a worker takes the call's first task

    # -- connections -----------------------------------------------------------------------

    async def connect(self, peer: Peer) -> None:
        """Attach a connection: the first, or a reconnect once the previous one has dropped.

        A live connection is never displaced: whoever holds the line keeps it, so a replayed
        token cannot take a call over (`LineBusyError`)."""
        if self.peer is not None and self.peer is not peer and self.peer.live:
            raise LineBusyError("this call is already connected")
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        self.peer = peer
        self.connected_at = datetime.now(UTC)
        self.lease.renew_now()
        self._settle_provisional()
        self.endpointer = self.config.new_endpointer()
        self.barge.reconnected()
        self.sink.send_audio, self.sink.clear = peer.send_audio, peer.clear_audio
        self.sink.end, self.sink.frame_ms = peer.end_audio, peer.playback_frame_ms
        self.sink.mark = peer.playback_marker
        self.timeline.new_page()
        await self.refresh_timeline()

    def disconnect(self, peer: Peer, *, caller_hung_up: bool) -> None:
        if self.peer is not peer:
            return  # an older connection closing after its replacement arrived
        self.peer = None
        self.lease.renew_now()
        self.sink.send_audio = self.sink.clear = self.sink.end = self.sink.mark = None
        if caller_hung_up:
            self._end("caller hung up")
        elif not self.leaving:  # a call handed back waits for its caller elsewhere
            self._grace = asyncio.create_task(self._hang_up_unless_back())

    async def _hang_up_unless_back(self) -> None:
        await asyncio.sleep(self.config.reconnect_grace_s)
        if self.peer is None:
            self._end("connection lost")

    def _end(self, reason: str) -> None:
        if self.ended:
            return
        self.ended = True
        self.barge.close()
        if self.console is not None:
            self.console.call_ended(reason)
        self.lease.stop()
        self._background.spawn(self.unserved.close())
        self._settle_provisional()
        self.playback.cancel()
        self.turns.close()
        # Queued behind any utterance not yet delivered: what the caller said still counts.
        self._submissions.put_nowait(HangUp(reason=reason))
        self._on_gone(self.call_id)

    async def _give_up(self, reason: str) -> None:
        """No worker took the call (media_gateway.unserved, which signalled the hang-up): the
        one queued here could wait forever behind an utterance the workflow never accepted."""
        self.submitter.cancel()
        await self.release(reason)

    def _workflow_closed(self) -> None:
        """The call ended without this gateway (a turn, a transfer, a supervisor)."""
        if self.console is not None:
            return  # the console keeps the line until a side hangs up
        if self.peer is not None:  # let the caller (how it ended, as a turn would) and a drain know
            self._background.spawn(self._ended_elsewhere(self.peer))
        self._end("call ended")

    async def _ended_elsewhere(self, peer: Peer) -> None:
        await self._close_ended(peer, await self.control.final_status())

    async def _close_ended(self, peer: Peer, status: CallStatus | None) -> None:
        """Tell the caller how the call ended (when that is known), then close the line."""
        if status is not None:
            peer.send_event(EndedEvent(status=status))
        await peer.close(f"call {status or 'ended'}")

    # -- caller audio ----------------------------------------------------------------------

    def caller_audio(self, pcm16_16k: bytes) -> None:
        if self.console is not None:  # on hold or with a person: no one to barge in on
            self.console.caller_audio(pcm16_16k)
            return
        self._vad_events(self.endpointer.feed(pcm16_16k))
        # A hum or buzz that starts under a reply holds a level speech never holds: it pauses
        # the reply at onset but only real speech (enough of it, rising and falling) cuts in.
        self.barge.check(self.endpointer, self._provisional.ref if self._provisional else None)

    def _vad_events(self, events: list[VadEvent]) -> None:
        for event in events:
            if isinstance(event, SpeechStarted):
                self.barge.speech_started()
            elif isinstance(event, NoiseIgnored):
                self.barge.noise()
            elif isinstance(event, SpeechPaused):
                self.barge.confirm()
                if self._provisional is not None:  # the caller went on and paused again
                    self.segments.revise(self._provisional, event.audio)
                    continue
                self._provisional = self.segments.open(event.audio)
                self._submit(self._provisional)
            elif isinstance(event, SpeechEnded):
                self.barge.confirm()
                self._utterance(event)

    def words_heard(
        self, segment_ref: str, *, backchannel: bool, final: bool, ending: str, revision: int
    ) -> bool:
        """The speech worker's answer on a segment's words (media plane `ReportWords`); True
        when the reply paused under the segment was resumed as a backchannel."""
        segment = self.segments.get(segment_ref)
        # Words of provisional audio a later pause has revised are of part of it only.
        latest = segment is not None and revision == segment.revision
        is_open = self._provisional is not None and self._provisional.ref == segment_ref
        if is_open and not final and latest:
            self._vad_events(self.endpointer.words_end(ending))
        # Have the words heard everything? Not if the caller went on after the pause.
        unchanged = latest and (
            self.endpointer.awaiting_words if is_open else bool(segment and segment.unchanged)
        )
        return self.barge.words(segment_ref, backchannel=backchannel, covers_all=final or unchanged)

    def _barge_in_heard(self, heard: Heard) -> None:
        self._background.spawn(self.control.barge_in(heard))
        self.send_event(BargeInEvent(heard_chars=heard.chars, played_ms=heard.played_ms))

    def _utterance(self, ended: SpeechEnded) -> None:
        if self._provisional is not None:
            # Already submitted at the pause: the speech worker is waiting for the final audio.
            segment, self._provisional = self._provisional, None
            self.segments.finalize(segment, ended.audio, ended.duration_ms)
        else:
            segment = self.segments.add(ended.audio, ended.duration_ms)
            self._submit(segment)
        if segment.ref in self._refused_refs:
            self._refused_refs.discard(segment.ref)
            return  # the page shows no utterance that will never have a turn
        self.send_event(UtteranceEvent(segment=segment.ref, ms=ended.duration_ms))

    def take_refused_utterances(self) -> int:
        """Utterances refused for their rate since the last look (the connection counts each
        as a bad frame, as it does a keypad press over the keypad's rate)."""
        refused, self._refused_utterances = self._refused_utterances, 0
        return refused

    def _submit(self, segment: Segment) -> None:
        if not self._speaking_rate.take(time.monotonic()):
            self._refused_utterances += 1
            self._refused_refs.add(segment.ref)
            count_dropped_utterance()
            return
        if self._submissions.qsize() >= MAX_WAITING_UTTERANCES:
            # Never reached by a person talking (the workflow takes each within milliseconds);
            # a stream that produces utterances faster than Temporal accepts them is refused.
            log.warning("utterance refused: too many waiting", call_id=self.call_id)
            count_dropped_utterance()
            return
        utterance_id = f"{self.call_id}:{segment.ref}"
        held = self.barge.words_due(segment.ref, utterance_id)
        utterance = Utterance(utterance_id=utterance_id, segment_ref=segment.ref, paused_reply=held)
        self._submissions.put_nowait(utterance)
        self.turns.speech_ended(utterance.utterance_id)

    def _settle_provisional(self) -> None:
        """The stream stopped mid-pause: what was heard so far is the utterance."""
        if self._provisional is not None:
            segment, self._provisional = self._provisional, None
            duration_ms = len(segment.pcm16_16k) // BYTES_PER_MS
            self.segments.finalize(segment, segment.pcm16_16k, duration_ms)

    def mark_played(self, name: str) -> bool:
        """The peer echoed a playback mark; False (refused, logged) for one never sent."""
        return self.playback.mark_played(name)

    def dtmf(self, digits: str) -> bool:
        """Forward keypad digits; False (refused, logged) beyond the call's keypad rate."""
        if not self._keypad.take(time.monotonic()):
            return False  # the connection logs it as a refused frame
        self._background.spawn(self.control.dtmf(digits))
        return True

    # -- turns -----------------------------------------------------------------------------

    async def _submit_in_order(self) -> None:
        while True:
            utterance = await self._submissions.get()
            try:
                if isinstance(utterance, HangUp):
                    await self._background.spawn(self.control.hang_up(utterance.reason))
                    return
                # Not accepted at once: is a worker running the workflow at all?
                slow = asyncio.get_running_loop().call_later(SLOW_ACCEPT_S, self.unserved.watch)
                with self.turns.delivering(utterance.utterance_id):
                    handle = await self.control.submit(utterance)
                slow.cancel()
                if handle is not None:
                    self._background.spawn(self._await_turn(handle))
            except Exception:
                log.exception("utterance not delivered", call_id=self.call_id)
            finally:
                self._submissions.task_done()

    async def settled(self) -> None:
        """Until every utterance handed over is with the workflow and every turn in flight has
        its answer (its segments fetched, its reply played or refused)."""
        self._settle_provisional()
        await self._submissions.join()
        await self._background.wait()

    async def _await_turn(self, handle: WorkflowUpdateHandle[TurnReply]) -> None:
        reply = await turn_reply(handle)
        self.turns.answered(reply.utterance_id)
        await self.refresh_timeline()
        if reply.status != "active" and self.peer is not None and self.console is None:
            await self._close_ended(self.peer, reply.status)

    # -- replies (from the media plane) ----------------------------------------------------

    async def play(
        self, reply_id: str, text: str, agent: str, chunks: AsyncIterator[Chunk]
    ) -> PlaybackResult:
        spoken = text
        await self.unserved.served()

        async def showing_text() -> AsyncIterator[Chunk]:
            nonlocal spoken
            async for chunk in chunks:
                if chunk.text_more:  # a reply still being written: the page shows it grow
                    spoken += chunk.text_more
                    self.send_event(SpeakingEvent(agent=agent, text=spoken, reply_id=reply_id))
                yield chunk

        self.send_event(SpeakingEvent(agent=agent, text=text, reply_id=reply_id))
        # A handoff or tool call just before this reply shows on the page as it starts.
        self._background.spawn(self.refresh_timeline())
        result = await self.playback.play(reply_id, text, showing_text())
        self._background.spawn(self.refresh_timeline(until_spoken=True))
        return result

    # -- the page's live timeline ----------------------------------------------------------

    def send_event(self, event: GatewayEvent) -> None:
        if self.peer is not None:
            self.peer.send_event(event)

    async def refresh_timeline(self, *, until_spoken: bool = False) -> None:
        """Send the page where the call stands and the transcript items it has not seen."""
        if self.peer is not None and self.peer.channel == "browser":
            await self.timeline.refresh(until_spoken=until_spoken)

    async def release(self, reason: str) -> None:
        """End the call from this side (the console's person hung up) and close the line."""
        peer = self.peer
        self._end(reason)
        if peer is not None:
            await peer.close(reason)

    async def aclose(self) -> None:
        """The gateway is shutting down: the workflow carries on; a new gateway may re-attach."""
        if self._grace is not None:
            self._grace.cancel()
        self.lease.stop()
        await self.unserved.close()
        self.submitter.cancel()
        if self.console is not None:
            self.console.detach()
        self._background.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.submitter
