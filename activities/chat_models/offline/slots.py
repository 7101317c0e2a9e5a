"""Filling tool arguments from what the caller said, for the offline policy.

Each parameter of a tool's JSON schema is filled by the first extractor that fits it: by name
(`last4`, `ssn_last4`, `dob`, `full_name`, `*_id`, `symbol`, `amount`, `days`, `limit`), by
`enum`, by examples in its description ("e.g. primary care, cardiology"), or, for free-text
parameters (`description`, `symptoms`, `reason`, ...), by the caller's own words. Values are
checked against the schema's `pattern` and `enum`. Only "specific" fills (digits, ids, dates,
names, enum words, amounts) count as evidence that the caller meant this tool.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from activities.chat_models.offline.extract import (
    clip,
    description_examples,
    find_amount,
    find_dates,
    find_full_name,
    find_id,
    find_int,
    find_last4,
    find_ticker,
    match_choice,
    short_reason,
    spoken_digits,
)
from activities.chat_models.offline.text import words

_ID_PREFIXES = {"policy_id": "POL", "claim_id": "CLM", "invoice_id": "INV", "appointment_id": "APT"}
# A JSON-schema pattern that accepts digits only: "^[0-9]{6,8}$", "^\\d{4}$".
_DIGITS_ONLY = re.compile(r"^\^?(?:\[0-9\]|\\d)(?:\{\d+(?:,\d+)?\}|\+)\$?$")
_FREE_TEXT = frozenset(
    ("description", "symptoms", "note", "notes", "summary", "reason", "topic", "details")
)


@dataclass
class Filled:
    """The arguments found for one tool and how strongly they point at it."""

    arguments: dict[str, Any] = field(default_factory=dict)
    #: Required parameters nothing could fill: the tool cannot be called yet.
    missing: list[str] = field(default_factory=list)
    #: Required / optional parameters a specific extractor (not free text) filled from the
    #: latest utterance; values found only in earlier utterances fill but are no evidence.
    specific_required: int = 0
    specific_optional: int = 0


def _specific(name: str, spec: Mapping[str, Any], text: str) -> Any:
    """A value from a specific extractor, or None."""
    kind = spec.get("type")
    desc = str(spec.get("description", ""))
    if isinstance(spec.get("enum"), list):
        return match_choice([str(v) for v in spec["enum"]], text)
    if "last4" in name or "last four" in desc.lower():
        return find_last4(text, ssn="ssn" in name or "social" in desc.lower())
    if name in {"dob", "date_of_birth", "birth_date"} or "date of birth" in desc.lower():
        dates = find_dates(text)
        return dates[0][0] if dates else None
    if name in {"full_name", "name", "caller_name"}:
        return find_full_name(text)
    if name.endswith("_id"):
        example = re.search(r"\b([A-Z]{2,5})-[A-Z0-9]", desc)
        return find_id(text, example.group(1) if example else _ID_PREFIXES.get(name))
    if name in {"symbol", "ticker"}:
        return find_ticker(text)
    if kind == "number" or name == "amount":
        return find_amount(text)
    pattern = spec.get("pattern")
    if isinstance(pattern, str) and _DIGITS_ONLY.match(pattern):
        # A number the schema spells out as digits (member number, PIN, postcode digits):
        # the first run of digits in the line that the pattern accepts.
        runs = re.findall(r"(?<![\d.,$])\d+(?![\d.,])", text)
        return next((run for run in runs if re.fullmatch(pattern.strip("^$"), run)), None)
    if kind == "integer":
        return find_int(name, text)
    # A documented example named by the caller ("complaint", "cardiology") is a specific fill,
    # even for a free-text parameter.
    examples = description_examples(desc)
    return match_choice(examples, text) if examples else None


def _free_text(name: str, spec: Mapping[str, Any], texts: Sequence[str]) -> str | None:
    desc = str(spec.get("description", "")).lower()
    wordy = any(cue in desc for cue in ("own words", "what happened", "describe", "why"))
    if spec.get("type", "string") != "string" or (name not in _FREE_TEXT and not wordy):
        return None
    if name == "reason":
        return short_reason(texts[0])
    if name == "topic":
        return clip(texts[0], 60)
    # A short answer ("about $2,000") completes the previous utterance rather than replacing it.
    said = texts[0]
    if len(words(said)) < 3 and len(texts) > 1:
        said = f"{texts[1]} {said}"
    return clip(said, 400)


def _valid(value: Any, spec: Mapping[str, Any]) -> bool:
    if value is None or value == "":
        return False
    pattern = spec.get("pattern")
    if isinstance(pattern, str) and isinstance(value, str) and not re.search(pattern, value):
        return False
    enum = spec.get("enum")
    return not (isinstance(enum, list) and value not in enum)


def fill_arguments(
    parameters: Mapping[str, Any],
    texts: Sequence[str],
    *,
    proposal: str = "",
    identity_digits: frozenset[str] = frozenset(),
) -> Filled:
    """Arguments for a tool from `texts` (the latest utterance first, then earlier ones).

    `proposal` is what the agent last said: a caller answering "yes, block it" to "shall I
    block the card ending in 8832?" means the digits the agent named, so specific values are
    looked for there right after the caller's own latest words. `identity_digits` (the last
    four of the SSN the caller gave to be verified) are never taken for a card's last four.
    """
    texts = [spoken_digits(t) for t in texts if t.strip()] or [""]
    # Where specific values are looked for, in order: the latest words, the agent's proposal,
    # then the caller's earlier words. Only the latest words count as evidence.
    sources = [texts[0], *([spoken_digits(proposal)] if proposal.strip() else []), *texts[1:]]
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    filled = Filled()
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        found = [
            (i, v)
            for i, t in enumerate(sources)
            if _valid(v := _specific(name, spec, t), spec)
            and not (_is_card_digits(name, spec) and v in identity_digits)
        ]
        value = found[0][1] if found else None
        specific = bool(found) and found[0][0] == 0
        if value is None:
            free = _free_text(name, spec, texts)
            value = free if _valid(free, spec) else None
        if value is None:
            if name in required:
                filled.missing.append(name)
            continue
        filled.arguments[name] = value
        if specific and name in required:
            filled.specific_required += 1
        elif specific:
            filled.specific_optional += 1
    return filled


def _is_card_digits(name: str, spec: Mapping[str, Any]) -> bool:
    """A "last four" parameter that is not the SSN's."""
    desc = str(spec.get("description", "")).lower()
    last_four = "last4" in name or "last four" in desc
    return last_four and "ssn" not in name and "social" not in desc


def ssn_digits_given(texts: Sequence[str], given: Sequence[str] = ()) -> frozenset[str]:
    """Digits the caller gave as their SSN's last four: said with an SSN cue, or passed as an
    SSN argument in a call already made (`given`)."""
    said = set()
    for text in (spoken_digits(t) for t in texts):
        said.add(find_last4(text, ssn=True, strict=True))
        if find_dates(text):  # "Alex Morgan, 1985-04-12, 4321" answers who the caller is
            said.add(find_last4(text, ssn=True))
    return frozenset(d for d in (*said, *given) if d)
