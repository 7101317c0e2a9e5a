"""PII out of logs: a structlog processor that masks what a log line must never carry.

Callers' card numbers (only digit runs that pass the Luhn check, so ids and amounts survive),
social security numbers, SSN last fours where a label says so, dates of birth, phone numbers
and e-mail addresses. Hand-written because no maintained library does this for log events:
the PII scanners in the field (Presidio and the like) run NLP models, too heavy for every log
line. The patterns favour masking too much over too little.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_SSN = re.compile(r"\b\d{3}-\d{2}-\d{4}\b")
_SSN_LAST4 = re.compile(
    r"(?i)\b(ssn|social security(?: number)?|ssn_last4|last[ _]?(?:four|4))"
    r"(\W{1,12}(?:\w+\W{1,4}){0,3}?)(\d{4})\b"
)
_DATE = re.compile(
    r"\b(?:19|20)\d{2}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b(?!T\d)"
    r"|\b(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])/(?:19|20)\d{2}\b"
)
_PHONE = re.compile(
    r"(?<![\w.(])(?:\+?\d{1,3}[ .-]?)?(?:\(\d{3}\)|\d{3})[ .-]?\d{3}[ .-]?\d{4}(?![\w.])"
)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")

#: Keys Baton's own processors add; they never hold caller data (a timestamp is not a birthday).
_SAFE_KEYS = frozenset({"timestamp", "level", "logger", "logger_name"})


def _luhn(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group())
    return "[card]" if _luhn(digits) else match.group()


def redact(text: str) -> str:
    """`text` with PII masked."""
    text = _EMAIL.sub("[email]", text)
    text = _SSN.sub("[ssn]", text)
    text = _SSN_LAST4.sub(lambda m: f"{m.group(1)}{m.group(2)}[ssn4]", text)
    text = _CARD.sub(_card, text)
    text = _DATE.sub("[date]", text)
    return _PHONE.sub("[phone]", text)


def redact_value(value: Any) -> Any:
    """`value` with PII masked in every string inside it (dicts, lists and tuples walked)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {key: redact_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(redact_value(item) for item in value)
    return value


def redact_event(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """structlog processor: mask PII in every value of the event (rendered tracebacks too)."""
    for key, value in event.items():
        if key not in _SAFE_KEYS:
            event[key] = redact_value(value)
    return event
