"""Speaking to the caller inside the workflow, and what a barge-in leaves behind."""

from __future__ import annotations

from typing import Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError

with workflow.unsafe.imports_passed_through():
    from contracts.calls import BargeIn, SpokenLine
    from contracts.speech import SYNTHESIZE_SPEECH, SynthesisRequest, SynthesisResult
    from contracts.temporal import SPEECH_QUEUE
    from contracts.transcript import AgentTurn, BargeInItem, GreetingItem
    from workflows import policies, summaries
    from workflows.failures import went_unserved
    from workflows.lease import holder_key
    from workflows.live_call import LiveCall
    from workflows.state import UnheardReply

#: Speech requests name the fallback providers of the agent (or scenario). Asked once at the
#: start of each run, before any activity, like the other run-start patches: a reply can follow a
#: local activity's result, and a result that landed in a later workflow task comes back at once
#: on replay, so a patch asked after it would be asked in another task than it was recorded in.
SPEECH_FALLBACK_PATCH = "speech-fallback-per-agent"
#: Typical speaking rate, for estimating what was heard when the gateway did not say.
HEARD_CHARS_PER_SECOND = 15
SpokenKind = Literal["greeting", "reply"]


def was_cancelled(error: ActivityError) -> bool:
    return isinstance(error.cause, CancelledError)


class Speaker:
    """Says greetings and replies (through the TTS activity on voice channels) and records
    what the caller heard."""

    def __init__(self, call: LiveCall) -> None:
        self.call = call
        #: A reply lost with its gateway waits to be said again (workflows.resay sets this).
        self.resay_lost = False

    def decide(self) -> None:
        """Ask this run's speech patch (see SPEECH_FALLBACK_PATCH); call before any activity."""
        self.call.speech_fallbacks = workflow.patched(SPEECH_FALLBACK_PATCH)

    def start_speech(
        self,
        agent: str,
        text: str = "",
        kind: SpokenKind = "reply",
        *,
        follow_reply_id: str = "",
    ) -> workflow.ActivityHandle[SynthesisResult]:
        """Start the TTS activity for `text`, or for the reply the model is publishing under
        `follow_reply_id`; a barge-in or hang-up cancels it until it ends."""
        call = self.call.state.call
        snapshot = self.call.state.snapshot
        briefs = snapshot.agents if snapshot else {}
        config = briefs[agent].config if agent in briefs else None
        voice = config.voice if config else None
        handle = workflow.start_activity(
            SYNTHESIZE_SPEECH,
            SynthesisRequest(
                call_id=call.call_id,
                gateway_address=call.gateway_address or "",
                agent=agent,
                text=text,
                voice=voice.name if voice else "",
                rate=voice.rate if voice else "+0%",
                locale=config.language if config else "",
                follow_reply_id=follow_reply_id,
                fallback_provider=self.call.speech_fallback(agent).synthesizer or "",
            ),
            result_type=SynthesisResult,
            task_queue=SPEECH_QUEUE,
            start_to_close_timeout=policies.TTS.start_to_close,
            heartbeat_timeout=policies.TTS.heartbeat,
            schedule_to_start_timeout=policies.TTS.schedule_to_start,
            retry_policy=policies.TTS.retry,
            summary=summaries.speech(agent, text, kind, streamed=bool(follow_reply_id)),
        )
        inflight = self.call.inflight
        inflight.append(handle)
        handle.add_done_callback(lambda _: inflight.remove(handle))
        return handle

    async def speak(
        self, agent: str, text: str, kind: SpokenKind, *, is_return: bool = False
    ) -> None:
        """Say `text` to the caller (TTS on voice channels) and record what was said."""
        if text and self.call.has_voice:
            await self.finish_speech(
                self.start_speech(agent, text, kind), agent, text, kind, is_return
            )
        else:
            self.record_spoken(agent, text, kind, is_return)

    async def finish_speech(
        self,
        handle: workflow.ActivityHandle[SynthesisResult],
        agent: str,
        text: str,
        kind: SpokenKind = "reply",
        is_return: bool = False,
    ) -> None:
        """Wait for a reply to be spoken and record it, or what the caller heard of it."""
        live = self.call
        live.speaking_since = workflow.now()
        resay = kind == "reply" and self.resay_lost
        spoken_to = holder_key(live.state.lease_holder)
        try:
            result = await handle
        except ActivityError as error:
            if was_cancelled(error):
                self.record_barge_in(agent, text, self._heard(text), kind, is_return)
                return
            if went_unserved(error):
                live.unserved = "speech"
            # The reply stays in the record as not heard: the gateway or the synthesizer failed
            # (or died), and nothing says how much of it, if any, reached the caller.
            workflow.logger.warning("speech failed, reply kept as text: %s", error.cause)
            self.record_spoken(agent, text, kind, is_return, heard="")
            if resay:  # said again once the caller reconnects (workflows.resay)
                live.state.unheard = UnheardReply(agent=agent, text=text, holder=spoken_to)
            return
        finally:
            live.speaking_since = None
        if resay:
            live.state.unheard = None  # a newer reply was heard: an older lost one is moot
        if result.barged_in:
            # The gateway stopped the reply before the barge-in signal got here: the turn
            # ends just the same, with what the gateway says was heard.
            if live.barge_in is None:
                live.barge_in = BargeIn(heard_chars=result.chars_played, played_ms=result.played_ms)
            self.record_barge_in(agent, text, self._heard(text), kind, is_return)
            return
        # A followed reply whose model call was retried may have been spoken from the first
        # attempt's sentences: the record keeps what the caller actually heard.
        spoken = result.spoken_text
        heard = spoken if spoken and spoken.strip() != text.strip() else None
        self.record_spoken(agent, text, kind, is_return, heard=heard)

    def record_spoken(
        self,
        agent: str,
        text: str,
        kind: SpokenKind,
        is_return: bool,
        heard: str | None = None,
    ) -> None:
        item = self._spoken_item(agent, text, kind, is_return)
        if heard is not None:
            item.heard_text = heard
        self.call.state.transcript.append(item)
        said = heard if heard is not None else text
        self.call.turn_spoken.append(SpokenLine(agent=agent, text=said, kind=kind))

    def record_barge_in(
        self,
        agent: str,
        text: str,
        heard: str,
        kind: SpokenKind = "reply",
        is_return: bool = False,
    ) -> None:
        state = self.call.state
        now, turn = workflow.now(), state.turn
        if text:
            item = self._spoken_item(agent, text, kind, is_return)
            item.interrupted, item.heard_text = True, heard
            state.transcript.append(item)
            self.call.turn_spoken.append(SpokenLine(agent=agent, text=heard, kind=kind))
        if self.call.barge_in is not None:
            state.transcript.append(
                BargeInItem(at=now, turn=turn, agent=agent, heard_text=heard, interrupted_text=text)
            )

    def _spoken_item(
        self, agent: str, text: str, kind: SpokenKind, is_return: bool
    ) -> GreetingItem | AgentTurn:
        now, turn = workflow.now(), self.call.state.turn
        if kind == "greeting":
            return GreetingItem(at=now, turn=turn, agent=agent, text=text, is_return=is_return)
        return AgentTurn(at=now, turn=turn, agent=agent, text=text)

    def _heard(self, text: str) -> str:
        """What the caller heard: the gateway's count, else an estimate from elapsed time."""
        barge = self.call.barge_in
        if barge is not None and barge.heard_chars is not None:
            return text[: max(0, barge.heard_chars)]
        if self.call.speaking_since is None:
            return ""
        elapsed = (workflow.now() - self.call.speaking_since).total_seconds()
        return text[: int(elapsed * HEARD_CHARS_PER_SECOND)]
