"""What a call must show after a fault, read from its transcript and from the demo bank.

* Every utterance the caller said is in the transcript exactly once (none lost, none taken in
  twice), and each got an audible answer (an agent turn or a greeting) before the next one,
  or was honestly marked unanswered because the call had ended.
* Every mutating tool call applied its effect once: one idempotency record per tool call in
  the demo bank, and the tool's result in the transcript is the first application's result.
* The caller's silence after a fault: from the kill to the next audible step, read from the
  transcript's timestamps (the workflow's clock, which is this machine's), printed by the
  tests and benches, never asserted.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.faults.processes import Fault

#: Transcript items the caller hears.
AUDIBLE = frozenset({"agent_turn", "greeting"})

Transcript = list[dict[str, Any]]


@dataclass
class TranscriptAudit:
    """Utterance ids by what became of them; `clean` when nothing went wrong."""

    #: Said by the caller but in no user turn.
    lost: list[str] = field(default_factory=list)
    #: In more than one user turn (taken in, so answered, twice).
    duplicated: list[str] = field(default_factory=list)
    #: In a user turn marked answered, with nothing audible after it before the next one.
    silent: list[str] = field(default_factory=list)
    #: Marked unanswered: the call ended first (honest, not an error).
    unanswered: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.lost or self.duplicated or self.silent)


def audit_transcript(transcript: Transcript, said: Iterable[str]) -> TranscriptAudit:
    """Check `transcript` against the utterance ids the caller `said` (see the module doc)."""
    turns = [(n, item) for n, item in enumerate(transcript) if item["type"] == "user_turn"]
    counts = Counter(item["utterance_id"] for _, item in turns)
    audit = TranscriptAudit(
        lost=[uid for uid in said if counts[uid] == 0],
        duplicated=sorted(uid for uid, count in counts.items() if count > 1),
    )
    ends = [n for n, _ in turns[1:]] + [len(transcript)]
    for (start, item), end in zip(turns, ends, strict=True):
        if not item.get("answered", True):
            audit.unanswered.append(item["utterance_id"])
        elif not any(other["type"] in AUDIBLE for other in transcript[start + 1 : end]):
            audit.silent.append(item["utterance_id"])
    return audit


def timestamp(item: dict[str, Any]) -> float:
    """A transcript item's time (`workflow.now()` when it was recorded) as a Unix time."""
    at = item["at"]
    when = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
    return when.timestamp()


def first_audible_after(transcript: Transcript, wall_time: float) -> float | None:
    """Unix time of the first audible item recorded at or after `wall_time`, if any."""
    times = [timestamp(i) for i in transcript if i["type"] in AUDIBLE]
    return min((t for t in times if t >= wall_time), default=None)


def silence_line(label: str, fault: Fault, transcript: Transcript, since: float | None) -> str:
    """One printable line: the replacement's start-up and the caller's silence.

    `since` is the Unix time from which the call could go on (the kill, or the moment the
    test let the slow tool finish, whichever came last).
    """
    start = max(fault.killed_at, since or fault.killed_at)
    heard = first_audible_after(transcript, start)
    line = f"{label}: replacement up {fault.outage:.2f} s after the kill"
    if heard is None:
        return line + "; nothing audible after it"
    return (
        f"{line}; caller's silence {heard - start:.2f} s (to the next audible step), "
        f"{heard - fault.up_at:.2f} s after the replacement was up"
    )


def tool_effects(db_path: Path, tool: str, call_id: str | None = None) -> list[dict[str, Any]]:
    """The idempotency records of `tool` in the demo bank (of one call when `call_id` given:
    keys carry the call id), each the stored result of the one application it guards."""
    with closing(sqlite3.connect(db_path)) as db:
        rows = db.execute(
            "SELECT idempotency_key, result_json FROM tool_effects WHERE tool = ?", (tool,)
        ).fetchall()
    return [
        {"key": key, **json.loads(result)}
        for key, result in rows
        if call_id is None or call_id in key
    ]


def card_status(db_path: Path, last4: str) -> str:
    with closing(sqlite3.connect(db_path)) as db:
        row = db.execute("SELECT status FROM cards WHERE last4 = ?", (last4,)).fetchone()
    return str(row[0])


def tool_results(transcript: Transcript, tool: str) -> list[dict[str, Any]]:
    """The results the transcript recorded for `tool`, parsed."""
    return [
        json.loads(item["content"])
        for item in transcript
        if item["type"] == "tool_result" and item["tool"] == tool
    ]


def tool_calls(transcript: Transcript, tool: str) -> list[dict[str, Any]]:
    return [item for item in transcript if item["type"] == "tool_call" and item["tool"] == tool]
