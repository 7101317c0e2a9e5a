"""What the offline policy says after a tool ran: the result, in one or two short sentences.

Tool results are JSON written for a language model. Known fields (balances, transactions,
cases, claims, slots, invoices, triage, ...) are summarised; a `message` is spoken; an `error`
is relayed politely. Text addressed to the model ("Ask the caller to ...", "Use list_policies")
is turned towards the caller or dropped, so nothing meant for the model is read out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from activities.chat_models.offline.summaries import generic_summary, spoken_list, summarize

APOLOGY = "I'm sorry, something went wrong on my side. Could you try that again?"
IDENTIFY = (
    "I need to verify your identity first. Could you tell me your full name, your date of "
    "birth and the last four digits of your social security number?"
)

_REWRITES: Sequence[tuple[str, str]] = (
    (r"\bthis caller's\b|\bthe caller's\b|\bcaller's\b", "your"),
    (r"\bthe caller is\b", "you are"),
    (r"\bthe caller has\b", "you have"),
    (r"\bthe caller\b", "you"),
    (r"\bthey will\b", "you will"),
    (r"\bthey can\b", "you can"),
    (r"\bthemselves\b", "yourself"),
)


def spoken_agent(name: str) -> str:
    """'FraudAgent' -> 'fraud agent'."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).lower()


def _piece_to_caller(piece: str) -> str | None:
    """One clause of model-facing text, addressed to the caller; None to drop it."""
    text = piece.strip()
    lowered = text.lower()
    if not text or re.search(r"\b[a-z]+_[a-z_]+\b", text):  # names a tool: meant for the model
        return None
    if re.search(r"\b(?:tools?|arguments|json)\b|\bfailed:", lowered):  # workflow plumbing
        return None
    if re.match(r"(?:do not|don't|never|use|search|offer|call|read|verify)\b", lowered):
        return None
    if m := re.match(r"(?:ask|tell) (?:the caller|them) to (.+?)[.;]?$", text, re.I):
        verb = "Could you please" if lowered.startswith("ask") else "Please"
        end = "?" if verb.startswith("Could") else "."
        text = f"{verb} {m.group(1)}{end}"
    elif m := re.match(r"ask (?:the caller |them )?for (.+?)[.;]?$", text, re.I):
        text = f"Could you tell me the {m.group(1)}?"
    elif re.match(r"tell the caller\b", lowered):
        return None
    return second_person(text)


def second_person(text: str) -> str:
    """Third person to second: tool text says "the caller's card", the caller hears "your card"."""
    for pattern, replacement in _REWRITES:
        text = re.sub(pattern, replacement, text, flags=re.I)
    return text


def to_caller(text: str) -> str:
    """Model-facing result text rewritten for the caller's ears (may return "")."""
    pieces = re.split(r"(?<=[.;!?])\s+", text.strip())
    kept: list[str] = []
    for piece in pieces:
        said = _piece_to_caller(piece)
        if not said:
            continue
        if not kept or kept[-1].endswith((".", "!", "?")):
            said = said[0].upper() + said[1:]
        kept.append(said)
    joined = " ".join(kept).strip()
    return joined[:-1] + "." if joined.endswith(";") else joined


def failed_handoff_reply(error: str, capabilities: str) -> str:
    """The caller asked for a desk this agent cannot reach: say so, and what is possible."""
    m = re.search(r"Valid targets:\s*(.+?)\.?\s*$", error)
    targets = [t.strip() for t in m.group(1).split(",")] if m else []
    targets = [spoken_agent(t) for t in targets if t and not t.startswith("none")]
    reach = f" I can connect you with the {spoken_list(targets)}" if targets else ""
    here = (
        f"{' or' if reach else ' I can'} help you here with {capabilities}" if capabilities else ""
    )
    tail = f"{reach}{here}." if reach or here else ""
    return f"I'm sorry, I can't transfer you there.{tail}"


def reply_from_tool_result(content: str, *, capabilities: str = "") -> str:
    """The spoken reply to one tool result (`content` is the tool message, usually JSON)."""
    if "Valid targets" in content:
        try:
            data = json.loads(content)
            error = str(data.get("error", content)) if isinstance(data, dict) else content
        except ValueError:
            error = content
        return failed_handoff_reply(error, capabilities)
    try:
        data = json.loads(content)
    except ValueError:
        return to_caller(content) or APOLOGY
    if not isinstance(data, dict):
        return APOLOGY
    if data.get("success") is True and data.get("target_agent"):
        return f"Let me connect you with the {spoken_agent(str(data['target_agent']))}."
    if "error" in data:
        error = str(data["error"])
        if re.search(r"verif\w* .*identity|identity first", error, re.I):
            return f"I'm sorry, {IDENTIFY}"
        said = to_caller(error)
        if not said:
            return APOLOGY
        keep_case = said.startswith(("I ", "I'"))  # "I couldn't read ..." keeps its capital
        return f"I'm sorry, {said if keep_case else said[0].lower() + said[1:]}"
    found = summarize(data)
    summary = second_person(found) if found else None
    message = to_caller(str(data["message"])) if isinstance(data.get("message"), str) else ""
    if summary and message and message not in summary:
        return f"{summary} {message}"
    return summary or message or generic_summary(data)
