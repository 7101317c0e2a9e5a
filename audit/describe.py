"""One line of words per timeline item, shared by the Markdown and HTML reports."""

from __future__ import annotations

import json
from typing import Any

from audit.timeline_model import TimelineItem

#: Long tool results are cut in the line (the JSON report keeps them whole).
MAX_VALUE_CHARS = 240


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def describe(item: TimelineItem) -> str:
    """What happened, in words: the text, then what was heard, the tool or handoff facts."""
    kind = item.kind.replace("_", " ")
    if item.tool is not None:
        tool = item.tool
        line = f"tool {tool.name} {tool.arguments} [{tool.handled_as}]"
        if tool.error:
            line += f" → error: {tool.error}"
        elif tool.result is not None:
            line += f" → {short(tool.result)}"
        if tool.idempotency_key:
            attempts = "attempt" if tool.attempts == 1 else "attempts"
            line += f" (key {tool.idempotency_key}, {tool.attempts} {attempts})"
        return line
    if item.handoff is not None:
        h = item.handoff
        if not h.success:
            targets = f"; valid targets: {', '.join(h.valid_targets)}" if h.valid_targets else ""
            target = h.target or "?"
            return f"handoff {h.source} → {target} refused ({h.trigger}): {h.refusal}{targets}"
        context = "" if h.share_context else ", private (context not shared)"
        return (
            f"handoff {h.source} → {h.target}, {h.handoff_type} ({h.trigger}, {h.rule}"
            f"{context}): {h.reason}"
        )
    if item.kind in ("greeting", "reply"):
        label = kind
        if item.kind == "greeting":
            label = f"greeting ({item.details.get('visit', 'first visit')})"
        line = f'{label}: "{item.text}"'
        if item.interrupted or item.heard is not None:
            cut = " (interrupted)" if item.interrupted else ""
            estimated = ", estimated" if item.details.get("heard_estimated") else ""
            line += f' — heard{cut}{estimated}: "{item.heard or ""}"'
        return line
    if item.kind == "utterance":
        return f'said: "{item.text}"'
    if item.kind == "barge_in" and "heard_chars" in item.details:
        return f"{item.text} after {item.details['heard_chars']} characters"
    return f"{kind}: {item.text}" if item.text else kind
