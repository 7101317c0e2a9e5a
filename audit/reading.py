"""What the parts of the timeline reader share while they read one call: the call so far, its
items and turns, the active agent, and the activities still open."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from audit.bundle import CallBundle
from audit.payloads import PayloadReader
from audit.timeline_model import CallInfo, Kind, TimelineItem
from audit.turns import Turns

#: Kinds of item an agent speaks to the caller.
SPOKEN = ("greeting", "reply")


@dataclass
class Scheduled:
    """An activity the workflow scheduled, until it closes."""

    activity: str
    at: datetime
    request: Any
    turn: int
    agent: str
    attempt: int = 1
    #: For speech: the spoken item (None: the reply the model is still writing).
    item: TimelineItem | None = None


class Reading:
    def __init__(self, bundle: CallBundle, reader: PayloadReader) -> None:
        self.bundle = bundle
        self.decode = reader
        self.snapshot = bundle.call_snapshot()
        self.call = CallInfo(
            call_id=bundle.call_id,
            workflow_id=bundle.workflow_id,
            snapshot_hash=bundle.snapshot_hash,
            baton_version=bundle.baton_version,
            patch_ids=list(bundle.patch_ids),
        )
        self.items: list[TimelineItem] = []
        #: The spoken items of each (run, turn), in order: a turn's end looks up its own lines
        #: instead of reading every item of the call (which made a long call quadratic).
        self.spoken: dict[tuple[int, int], list[TimelineItem]] = {}
        self.turns = Turns()
        self.run = 0
        self.agent: str = (self.snapshot.scenario.start_agent or "") if self.snapshot else ""
        self.voice = False
        self.scheduled: dict[int, Scheduled] = {}
        #: Local activities run inside a workflow task: their time is counted from its start.
        self.task_started_at: datetime | None = None

    def add(
        self, at: datetime, speaker: str, kind: Kind, text: str = "", **fields: Any
    ) -> TimelineItem:
        item = TimelineItem(
            at=at, run=self.run, turn=self.turns.number, speaker=speaker, kind=kind, text=text
        )
        for name, value in fields.items():
            setattr(item, name, value)
        self.items.append(item)
        if kind in SPOKEN:  # an item's kind, run and turn never change once added
            self.spoken.setdefault((item.run, item.turn), []).append(item)
        return item

    def remove(self, item: TimelineItem) -> None:
        """Take an item back out of the timeline (first equal one, as `list.remove` does)."""
        self.items.remove(item)
        if item.kind in SPOKEN:
            self.spoken[(item.run, item.turn)].remove(item)
