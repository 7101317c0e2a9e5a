"""What was said to the caller and what the caller actually heard: model replies, greetings,
speech activities (completed, cut by a barge-in, or cancelled), and the Update's reply for
lines a text channel speaks without any activity."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from audit.reading import SPOKEN
from audit.timeline_model import TimelineItem
from contracts.agent_reply import AgentTurnResult
from contracts.calls import BargeIn, TurnReply
from contracts.speech import SYNTHESIZE_SPEECH, SynthesisRequest, SynthesisResult
from contracts.speech import TranscriptionResult as Transcription
from workflows.call_ending import HANDOFF_TO_HUMAN, NO_TRANSFER_TARGET
from workflows.speech import HEARD_CHARS_PER_SECOND

if TYPE_CHECKING:
    from audit.reading import Reading, Scheduled


class SpeechReader:
    def __init__(self, timeline: Reading) -> None:
        self.t = timeline
        self.barge: BargeIn | None = None
        self.last_reply: TimelineItem | None = None
        #: A handoff's greeting, until the call shows it was spoken (the loop guard may
        #: escalate instead).
        self.pending_greeting: TimelineItem | None = None

    def agents_seen(self) -> list[str]:
        agents: list[str] = []
        for item in self.t.items:
            if item.kind in SPOKEN and item.speaker not in agents:
                agents.append(item.speaker)
        return agents

    def add_greeting(self, agent: str, text: str, at: datetime, *, is_return: bool) -> None:
        visit = "return visit" if is_return else "first visit"
        item = self.t.add(at, agent, "greeting", text, details={"visit": visit})
        self.pending_greeting = item

    def drop_unspoken_greeting(self) -> None:
        if self.pending_greeting is not None and self.pending_greeting in self.t.items:
            self.t.remove(self.pending_greeting)
        self.pending_greeting = None

    def on_model_reply(self, scheduled: Scheduled, result: AgentTurnResult, at: datetime) -> None:
        self.pending_greeting = None
        if not result.text:
            return
        details: dict[str, Any] = {"model": result.model, "provider": result.provider}
        if result.finish_reason:
            details["finish_reason"] = result.finish_reason
        self.last_reply = self.t.add(at, scheduled.agent, "reply", result.text, details=details)

    def on_speech_scheduled(self, request: SynthesisRequest, at: datetime) -> TimelineItem | None:
        """The item this speech activity speaks (None: the reply the model is still writing)."""
        if request.text in (HANDOFF_TO_HUMAN, NO_TRANSFER_TARGET):  # an escalation
            self.drop_unspoken_greeting()
        self.pending_greeting = None
        if request.follow_reply_id and not request.text:
            return None
        for item in reversed(self.t.items[-12:]):
            if (
                item.kind in SPOKEN
                and item.speaker == request.agent
                and item.text == request.text
                and "tts" not in item.details
            ):
                item.details["tts"] = {}
                return item
        # Words the workflow itself says (goodbye, apology, hand-over to a person).
        return self.t.add(at, request.agent, "reply", request.text, details={"tts": {}})

    def _item_of(self, scheduled: Scheduled) -> TimelineItem | None:
        if scheduled.item is not None:
            return scheduled.item
        last = self.last_reply
        return last if last is not None and last.speaker == scheduled.agent else None

    async def on_speech_result(self, scheduled: Scheduled, payloads: Any, at: datetime) -> None:
        result = await self.t.decode.value(payloads, SynthesisResult)
        item = self._item_of(scheduled)
        if item is None:
            if not result.spoken_text:
                return  # a followed reply the model wrote no words for
            item = self.t.add(at, scheduled.agent, "reply", result.spoken_text)
        item.details["tts"] = {
            "chars_played": result.chars_played,
            "played_ms": result.played_ms,
            "completed": result.completed,
        }
        if result.barged_in:
            item.interrupted, item.heard = True, item.text[: max(0, result.chars_played)]
        elif result.spoken_text and result.spoken_text.strip() != item.text.strip():
            item.heard = result.spoken_text

    def on_barge_in(self, barge: BargeIn, at: datetime) -> None:
        self.barge = barge
        details: dict[str, Any] = {}
        if barge.heard_chars is not None:
            details["heard_chars"] = barge.heard_chars
        if barge.played_ms is not None:
            details["played_ms"] = barge.played_ms
        self.t.add(at, "caller", "barge_in", "the caller spoke over the agent", details=details)

    def on_cancelled(self, scheduled: Scheduled, at: datetime) -> None:
        """A barge-in or hang-up cancelled the model or speech work of the turn."""
        barge = self.barge
        if scheduled.activity == SYNTHESIZE_SPEECH:
            item = self._item_of(scheduled)
            if item is None:
                return
            item.interrupted = True
            if barge is not None and barge.heard_chars is not None:
                item.heard = item.text[: max(0, barge.heard_chars)]
            elif barge is not None and barge.heard_text is not None:
                item.heard = barge.heard_text
            else:  # the workflow's own estimate from the time the reply had been playing
                elapsed = (at - scheduled.at).total_seconds()
                item.heard = item.text[: int(elapsed * HEARD_CHARS_PER_SECOND)]
                item.details["heard_estimated"] = True
        elif barge is not None and barge.heard_text:
            # Cut while the model was still writing: only the gateway knew the words heard.
            heard = barge.heard_text
            self.t.add(at, scheduled.agent, "reply", heard, heard=heard, interrupted=True)

    def on_transcribed(self, result: Transcription, at: datetime) -> None:
        current = self.t.turns.current
        if current is not None:
            current.item.text = result.text.strip() or "(nothing recognized)"
        self.t.add(
            at,
            "system",
            "transcription",
            result.text.strip(),
            details={"confidence": round(result.confidence, 3)},
        )

    def on_held(self, segment_ref: str, result: Transcription, at: datetime) -> None:
        """Words of speech over a paused reply, heard as it arrived: a backchannel (the reply
        resumed) turns its utterance into a `backchannel` item that is never a turn; other
        words are the queued utterance's, answered in its turn."""
        text = result.text.strip()
        queued = self.t.turns.take_queued(segment_ref) if result.backchannel else None
        if queued is not None:
            queued.item.kind, queued.item.text = "backchannel", text
            return
        waiting = next((q for q in self.t.turns.queue if q.segment_ref == segment_ref), None)
        if waiting is not None:
            waiting.item.text = text or "(nothing recognized)"
        self.t.add(
            at,
            "system",
            "transcription",
            text,
            details={"confidence": round(result.confidence, 3)},
        )

    def complete_from_reply(self, reply: TurnReply, at: datetime) -> None:
        """Lines the Update's reply says were spoken this turn but no activity showed (a text
        channel's goodbye, apology or hand-over), added where the turn ended."""
        said = list(self.t.spoken.get((self.t.run, self.t.turns.number), []))
        for line in reply.spoken:
            match = next(
                (i for i in said if i.speaker == line.agent and line.text in (i.text, i.heard)),
                None,
            )
            if match is None:  # cut short: the reply says how much of it was heard
                match = next(
                    (i for i in said if i.speaker == line.agent and i.text.startswith(line.text)),
                    None,
                )
                if match is not None:
                    match.heard, match.interrupted = line.text, True
            if match is not None:
                said.remove(match)
                continue
            self.t.add(at, line.agent, line.kind, line.text)
        self.barge = None
