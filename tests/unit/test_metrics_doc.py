"""docs/METRICS.md names every value a Baton metric's fixed labels can take, so an on-call
reading an alert finds what each one means."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from contracts.metrics import BargeInOutcome, EscalationReason, HandoffOutcome, Stage
from contracts.temporal import QUEUES

DOC = (Path(__file__).parents[2] / "docs" / "METRICS.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("labels", [EscalationReason, BargeInOutcome, HandoffOutcome, Stage])
def test_every_label_value_is_explained(labels: object) -> None:
    assert [value for value in get_args(labels) if f"`{value}`" not in DOC] == []


def test_the_no_poller_alert_names_every_task_queue() -> None:
    """A queue whose workers are all gone reports no poller series at all: only an `absent()`
    per queue notices, so the alert must name each one."""
    missing = [
        q for q in QUEUES.values() if f'absent(temporal_num_pollers{{task_queue="{q}"}})' not in DOC
    ]
    assert missing == []


def test_no_alert_adds_bare_rates_of_different_metrics() -> None:
    """`rate(a) + rate(b)` matches only series with identical labels; Baton's counters share
    none, so such an alert never fires. Each side must be aggregated first."""
    assert re.findall(r"rate\([^()]*\[\w+\]\)\s*[-+/*]\s*rate\(", DOC) == []
