"""What the audit docs promise stays true: docs/AUDIT.md documents every field and item kind of
the JSON report, and the README's samples are what the commands print today."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from audit import timeline_model
from audit.bundle import load_call
from audit.verify import report_lines, verify_call
from tests.audit.goldens import GOLDENS, HISTORIES, golden_name

ROOT = Path(__file__).resolve().parents[2]
AUDIT_DOC = (ROOT / "docs" / "AUDIT.md").read_text(encoding="utf-8")
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The text under a Markdown heading, up to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    same_or_higher = re.compile(f"^#{{1,{len(level)}}} ", re.M)
    ends = [m.start() for m in same_or_higher.finditer(text[start:])]
    return text[start : start + ends[0]] if ends else text[start:]


def table_row(text: str, name: str) -> str:
    """The table row of a Markdown table that documents `name` (its first cell)."""
    rows = [line for line in text.splitlines() if line.startswith(f"| `{name}` |")]
    assert len(rows) == 1, f"one row for `{name}` expected, found {len(rows)}"
    return rows[0]


REPORT = section(AUDIT_DOC, "## The report (`audit report --format json`)")
#: `items[]` holds two tables: the item's fields, then one row per kind.
ITEMS, KINDS = section(REPORT, "### `items[]`").split("Kinds and their `details`:")
TOP = section(REPORT, "### Top level")
#: Where docs/AUDIT.md documents each model of the JSON report.
WHERE: dict[type[BaseModel], str] = {
    timeline_model.CallTimeline: TOP,
    timeline_model.RunInfo: table_row(TOP, "runs"),
    timeline_model.AgentTokens: table_row(TOP, "tokens"),
    timeline_model.CallInfo: section(REPORT, "### `call`"),
    timeline_model.TimelineItem: ITEMS,
    timeline_model.ToolCallInfo: table_row(ITEMS, "tool"),
    timeline_model.HandoffInfo: table_row(ITEMS, "handoff"),
    timeline_model.TurnTiming: section(REPORT, "### `turns[]`"),
}


def test_every_model_of_the_report_has_its_place_in_the_doc() -> None:
    models = {
        value
        for value in vars(timeline_model).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == timeline_model.__name__
        and not value.__name__.startswith("_")
    }
    assert models == set(WHERE)


@pytest.mark.parametrize("model", list(WHERE), ids=lambda model: model.__name__)
def test_the_doc_names_every_field_and_literal_value_where_the_model_is_described(
    model: type[BaseModel],
) -> None:
    text = WHERE[model]
    missing = [name for name in model.model_fields if f"`{name}`" not in text]
    assert missing == [], f"docs/AUDIT.md does not describe {model.__name__}: {missing}"
    for name, field in model.model_fields.items():
        if typing.get_origin(field.annotation) is typing.Literal and name != "kind":
            values = [v for v in typing.get_args(field.annotation) if f"`{v}`" not in text]
            assert values == [], f"docs/AUDIT.md does not describe {name} values {values}"


def test_the_doc_describes_every_item_kind_in_its_own_row() -> None:
    undocumented = [
        kind
        for kind in typing.get_args(timeline_model.Kind)
        if not re.search(rf"^\| `{kind}` \|", KINDS, re.M)
    ]
    assert undocumented == []


AUDITING = section(README, "## Auditing a call")


def test_the_readme_report_excerpt_is_in_its_golden_in_order() -> None:
    found = re.search(
        r"Markdown report of\s+`(?P<history>tests/histories/[^`]+)`.*?```\n(?P<excerpt>.*?)```",
        AUDITING,
        re.S,
    )
    assert found is not None, "the README's 'Auditing a call' has no report excerpt"
    golden = GOLDENS / f"{golden_name(ROOT / found.group('history'))}.md"
    lines = golden.read_text(encoding="utf-8").splitlines()
    at = 0
    for line in found.group("excerpt").splitlines():
        assert line in lines[at:], f"README excerpt line not in {golden.name} (in order): {line}"
        at = lines.index(line, at) + 1


async def test_the_readme_verify_sample_is_what_verify_prints() -> None:
    found = re.search(r"```\n\$ baton audit verify (?P<file>\S+)\n(?P<out>.*?)```", AUDITING, re.S)
    assert found is not None, "the README's 'Auditing a call' has no verify sample"
    path = ROOT / found.group("file")
    assert path.parent == HISTORIES
    bundle = await load_call(str(path))
    printed = [f"call {bundle.call_id}", *report_lines(await verify_call(bundle))]
    assert found.group("out").splitlines() == printed
