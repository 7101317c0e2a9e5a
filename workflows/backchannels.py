"""Utterances said over a paused reply: heard at once, and recorded as backchannels when the
gateway resumed the reply for them.

The gateway pauses a reply when the caller speaks over it and holds it until the words say
whether that was a backchannel ("mm-hmm", "okay": resume) or an interruption (cut). Those words
cannot wait for the utterance's turn, which comes only after the reply's own turn ends, so an
utterance marked `paused_reply` is transcribed as soon as it arrives, with the scenario's
backchannel phrases; the speech worker tells the gateway, and the result says whether the reply
resumed. A resumed one becomes a `BackchannelItem` and its Update is answered with nothing said:
no user turn, no model call. Anything else is answered as a turn from the words already heard.

Behind the patch `backchannel-words`, asked when such an utterance arrives (before its
transcription starts); histories from before it hold no `paused_reply` utterance at all.
"""

from __future__ import annotations

import asyncio
import contextvars

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.calls import TurnReply, Utterance
    from contracts.speech import TranscriptionRequest, TranscriptionResult
    from contracts.transcript import BackchannelItem
    from workflows.listening import recognize
    from workflows.live_call import LiveCall

PATCH = "backchannel-words"
#: The utterance `_hear` is transcribing, set in that task alone: its activity joins that
#: utterance's trace (runtime.turn_traces), not the one of the reply still being answered.
HEARING: contextvars.ContextVar[str | None] = contextvars.ContextVar("hearing", default=None)


class HeldUtterances:
    """The call's utterances said over a paused reply, each heard as soon as it arrived."""

    def __init__(self, live: LiveCall, remembered_replies: int) -> None:
        self.live = live
        self.remembered_replies = remembered_replies
        self._hearing: dict[str, asyncio.Task[TranscriptionResult]] = {}

    def arrived(self, utterance: Utterance) -> None:
        """An utterance was queued: one said over a paused reply is transcribed now."""
        if not (utterance.paused_reply and utterance.segment_ref and self.live.has_voice):
            return
        if not workflow.patched(PATCH):
            return
        self._hearing[utterance.utterance_id] = asyncio.create_task(self._hear(utterance))

    async def heard(self, utterance: Utterance) -> Utterance | None:
        """At the utterance's turn: None when it was a backchannel (recorded, answered), else
        the utterance with its words when they were heard on arrival."""
        hearing = self._hearing.pop(utterance.utterance_id, None)
        if hearing is None:
            return utterance
        result = await hearing
        if result.backchannel:
            return None
        update = {"text": result.text.strip(), "confidence": result.confidence}
        return utterance.model_copy(update=update) if result.text.strip() else utterance

    async def _hear(self, utterance: Utterance) -> TranscriptionResult:
        HEARING.set(utterance.utterance_id)  # this task's own context: no reset needed
        state = self.live.state
        snapshot = state.snapshot
        phrases = list(snapshot.scenario.backchannels) if snapshot is not None else []
        brief = snapshot.agents.get(state.active_agent) if snapshot is not None else None
        call = state.call
        request = TranscriptionRequest(
            call_id=call.call_id,
            segment_ref=utterance.segment_ref or "",
            gateway_address=call.gateway_address or "",
            # The agent's language where agents have one (registries may predate it).
            locale=getattr(brief.config, "language", "en-US") if brief else "en-US",
            backchannels=phrases,
            fallback_provider=self.live.speech_fallback(state.active_agent).recognizer or "",
        )
        result = await recognize(self.live, request)
        if result is None:
            return TranscriptionResult(text="")  # its turn transcribes it again
        if result.backchannel:
            self._record(utterance, result.text.strip())
        return result

    def _record(self, utterance: Utterance, text: str) -> None:
        self._hearing.pop(utterance.utterance_id, None)
        state = self.live.state
        state.transcript.append(
            BackchannelItem(
                at=workflow.now(),
                turn=state.turn,
                utterance_id=utterance.utterance_id,
                text=text,
                agent=state.active_agent,
            )
        )
        if utterance in state.pending:  # not reached yet: it never becomes a turn
            state.pending.remove(utterance)
        replies = state.recent_replies
        replies[utterance.utterance_id] = TurnReply(
            utterance_id=utterance.utterance_id,
            agent=state.active_agent,
            text="",
            status=state.status,
        )
        while len(replies) > self.remembered_replies:
            replies.pop(next(iter(replies)))

    def cancel(self) -> None:
        """The call ended: stop hearing what will never be answered."""
        for hearing in self._hearing.values():
            hearing.cancel()
