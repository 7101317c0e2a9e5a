"""Bookkeeping of the timeline reader: caller turns (which utterance each answers, where its
time went) and per-agent token use, all from event timestamps."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from datetime import datetime

from audit.timeline_model import AgentTokens, TimelineItem, TurnTiming

#: Timing field of each stage.
STAGES = ("stt", "model", "tool", "tts", "handoff")


def millis(start: datetime, end: datetime) -> int:
    return max(0, round((end - start).total_seconds() * 1000))


@dataclass
class QueuedUtterance:
    """An utterance the workflow accepted and will answer in its turn."""

    utterance_id: str
    text: str
    segment_ref: str
    item: TimelineItem


class Turns:
    """The caller's turns in order: each utterance waits in a queue until the workflow starts
    answering it (its first transcription or model call), as the workflow's own queue does."""

    def __init__(self) -> None:
        self.number = 0
        self.queue: deque[QueuedUtterance] = deque()
        self.current: QueuedUtterance | None = None
        #: False once the current turn's reply went back (its Update completed).
        self.open = False
        self.timings: dict[int, TurnTiming] = {}
        self.tokens: dict[str, AgentTokens] = {}
        self.seen_ids: set[str] = set()

    def queue_utterance(self, utterance: QueuedUtterance) -> bool:
        """Queue an utterance; False for a duplicate id (the workflow answers it once)."""
        if utterance.utterance_id in self.seen_ids:
            return False
        self.seen_ids.add(utterance.utterance_id)
        self.queue.append(utterance)
        return True

    def take_queued(self, segment_ref: str) -> QueuedUtterance | None:
        """Remove the queued utterance of `segment_ref`: it will never be a turn."""
        for queued in self.queue:
            if queued.segment_ref == segment_ref:
                self.queue.remove(queued)
                return queued
        return None

    def begin_if_due(self, run: int, *, text: str | None = None, segment: str = "") -> None:
        """Start the next queued turn when the current one is over, or when the work being
        scheduled (a model call whose last user message is `text`, a transcription of
        `segment`) is plainly for the next queued utterance."""
        if not self.queue:
            return
        head = self.queue[0]
        answers_head = (segment and head.segment_ref == segment) or (
            text is not None
            and text == head.text
            and (self.current is None or self.current.text != text)
        )
        if self.open and not answers_head:
            return
        self.queue.popleft()
        self.number += 1
        self.current, self.open = head, True
        head.item.turn = self.number
        self.timings[self.number] = TurnTiming(
            turn=self.number,
            run=run,
            utterance_id=head.utterance_id,
            started_at=head.item.at,
        )

    def close(self, utterance_id: str, at: datetime) -> None:
        if self.current is not None and self.current.utterance_id == utterance_id:
            self.open = False
            self.touch(self.number, at)

    def touch(self, turn: int, at: datetime, agent: str = "") -> TurnTiming | None:
        """Note that the turn still did something at `at` (and by whom)."""
        timing = self.timings.get(turn)
        if timing is None:
            return None
        if timing.started_at is not None:
            timing.total_ms = max(timing.total_ms, millis(timing.started_at, at))
        if agent and agent not in timing.agents:
            timing.agents.append(agent)
        return timing

    def add_stage(self, turn: int, stage: str, start: datetime, end: datetime, agent: str) -> None:
        timing = self.touch(turn, end, agent)
        if timing is None:
            return
        field = f"{stage}_ms"
        setattr(timing, field, getattr(timing, field) + millis(start, end))
        if stage == "model":
            timing.model_calls += 1

    def add_tokens(self, agent: str, prompt: int, completion: int) -> None:
        tokens = self.tokens.setdefault(agent, AgentTokens())
        tokens.prompt_tokens += prompt
        tokens.completion_tokens += completion
        tokens.model_calls += 1
