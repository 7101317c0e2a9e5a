"""A call's timeline as a report: Markdown for reading in a terminal or a ticket, one
self-contained HTML file (inline CSS, no network) for people, JSON for machines (stable, see
docs/AUDIT.md)."""

from __future__ import annotations

from typing import Literal

from jinja2 import Environment, PackageLoader, select_autoescape

from audit.describe import describe
from audit.timeline_model import CallTimeline, TimelineItem, TurnTiming

Format = Literal["md", "html", "json"]
FORMATS: tuple[Format, ...] = ("md", "html", "json")
TIMING_COLUMNS = ("total", "stt", "model", "tool", "tts", "handoff")


def render(timeline: CallTimeline, fmt: Format) -> str:
    if fmt == "json":
        return timeline.model_dump_json(indent=2) + "\n"
    if fmt == "html":
        return _html(timeline)
    return _markdown(timeline)


def _cell(text: object) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _timings(turn: TurnTiming) -> list[int]:
    return [int(getattr(turn, f"{column}_ms")) for column in TIMING_COLUMNS]


def facts(timeline: CallTimeline) -> list[tuple[str, str]]:
    """The call's summary rows, shared by both human formats."""
    call = timeline.call
    ended = call.ended_at.isoformat() if call.ended_at else "still running"
    return [
        ("call", call.call_id),
        ("scenario", f"{call.scenario} ({call.channel})"),
        ("outcome", f"{call.status}: {call.end_reason}" if call.end_reason else call.status),
        ("agents", " → ".join(call.visited)),
        ("started", call.started_at.isoformat() if call.started_at else ""),
        ("ended", ended),
        ("runs", str(len(timeline.runs))),
        ("snapshot", call.snapshot_hash[:16] or "none pinned"),
        ("patches", ", ".join(call.patch_ids) or "none"),
        ("escalation ticket", call.ticket_id or "none"),
    ]


def _markdown(timeline: CallTimeline) -> str:
    lines = [f"# Call {timeline.call.call_id}", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {_cell(value)} |" for name, value in facts(timeline)]
    lines += ["", "## Timeline", "", "| time | run | turn | who | what |", "|---|---|---|---|---|"]
    for item in timeline.items:
        row = (_at(item), item.run, item.turn, item.speaker, describe(item))
        lines.append("| " + " | ".join(_cell(value) for value in row) + " |")
    lines += ["", "## Turns (milliseconds)", ""]
    lines += ["| turn | agents | total | STT | model | tool | TTS | handoff |"]
    lines += ["|---|---|---|---|---|---|---|---|"]
    for turn in timeline.turns:
        cells = [turn.turn, ", ".join(turn.agents), *_timings(turn)]
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    lines += ["", "## Tokens", "", "| agent | prompt | completion | model calls |"]
    lines += ["|---|---|---|---|"]
    for agent, used in timeline.tokens.items():
        lines.append(
            f"| {_cell(agent)} | {used.prompt_tokens} | {used.completion_tokens} | "
            f"{used.model_calls} |"
        )
    return "\n".join(lines) + "\n"


_environment = Environment(
    loader=PackageLoader("audit", "templates"),
    autoescape=select_autoescape(["html", "j2"], default=True),
    trim_blocks=True,
    lstrip_blocks=True,
)


def _at(item: TimelineItem) -> str:
    return item.at.strftime("%H:%M:%S.%f")[:-3]


def _html_row(item: TimelineItem) -> tuple[str, str, int, str, bool, str]:
    """A timeline row's cells worked out here rather than in the template, where each
    attribute and test goes through Jinja's slower lookups (a long call has thousands of
    rows): row class, time, turn, speaker, whether it was cut, words."""
    speaker = item.speaker
    who = "caller" if speaker == "caller" else ""
    who += "system" if speaker == "system" else ""
    return (f"{item.kind} {who}", _at(item), item.turn, speaker, item.interrupted, describe(item))


def _html(timeline: CallTimeline) -> str:
    template = _environment.get_template("report.html.j2")
    return template.render(
        call=timeline.call,
        facts=facts(timeline),
        items=[_html_row(item) for item in timeline.items],
        turns=[(turn, _timings(turn)) for turn in timeline.turns],
        tokens=timeline.tokens,
    )
