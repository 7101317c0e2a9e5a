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
from datetime import date
from typing import Any

from activities.chat_models.offline_text import concepts, normalize, words

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
_MONTHS = {
    name: number
    for number, full in enumerate(_MONTH_NAMES.split(" "), start=1)
    for name in (full, full[:3], "sept" if full == "september" else full[:3])
}
_MONTH_RE = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DIGIT_WORDS = {
    "zero": "0", "oh": "0", "one": "1", "two": "2", "three": "3", "four": "4",
    "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9",
}  # fmt: skip
_DIGIT_RUN = re.compile(
    r"\b(?:(?:" + "|".join(_DIGIT_WORDS) + r")[\s-]+){2,}(?:" + "|".join(_DIGIT_WORDS) + r")\b",
    re.I,
)
_ID_PREFIXES = {"policy_id": "POL", "claim_id": "CLM", "invoice_id": "INV", "appointment_id": "APT"}
_FREE_TEXT = frozenset(
    ("description", "symptoms", "note", "notes", "summary", "reason", "topic", "details")
)
_NOT_TICKERS = frozenset(
    ("I", "A", "OK", "ID", "SSN", "DOB", "PIN", "ATM", "IRA", "USA", "US", "AM", "PM", "TV")
)
# Everyday words for enum values and description examples the shipped tools use.
_ALIASES: Mapping[str, tuple[str, ...]] = {
    "cashback": ("cash back", "cashback", "cash"),
    "travel": ("travel", "trip", "trips", "flight", "flights", "miles", "vacation"),
    "low_fee": ("low fee", "low fees", "no fee", "no annual fee", "cheap", "fees"),
    "build_credit": (
        "build credit",
        "building credit",
        "build my credit",
        "credit history",
        "rebuild",
        "secured",
        "bad credit",
        "no credit",
    ),
    "retirement": ("retirement", "401k", "ira"),
    "savings": ("savings", "saving"),
    "cardiology": ("cardiology", "heart", "cardiologist"),
    "dermatology": ("dermatology", "skin", "dermatologist"),
    "primary care": ("primary care", "family doctor", "gp", "general practitioner", "checkup"),
}


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


def clip(text: str, size: int) -> str:
    """`text` on one line, cut at a word boundary to at most `size` characters."""
    text = " ".join(text.split())
    if len(text) <= size:
        return text
    return text[:size].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def short_reason(text: str) -> str:
    """A few words saying why, from the caller's utterance (for `reason` arguments)."""
    lowered = normalize(text)
    if "fraud" in concepts(text):
        for word, label in (("stolen", "card reported stolen"), ("lost", "card reported lost")):
            if word in lowered.split():
                return label
        return "suspected fraud"
    return f"requested by the caller: {clip(text, 80)}"


def spoken_digits(text: str) -> str:
    """ "eight eight three two" -> "8832" (speech recognisers sometimes spell digits out)."""
    return _DIGIT_RUN.sub(
        lambda m: "".join(_DIGIT_WORDS[w.lower()] for w in re.split(r"[\s-]+", m.group(0))), text
    )


def find_dates(text: str) -> list[tuple[str, tuple[int, int]]]:
    """ISO dates in `text` with their spans.

    Understands 1985-04-12, 4/12/1985 (US order), April 12th, 1985 and 12 April 1985.
    """
    found: list[tuple[str, tuple[int, int]]] = []
    patterns = (
        (r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", "ymd"),
        (r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b", "mdy"),
        (rf"\b({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", "Mdy"),
        (rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE}),?\s+(\d{{4}})\b", "dMy"),
    )
    for pattern, order in patterns:
        for m in re.finditer(pattern, text, re.I):
            a, b, c = m.groups()
            month_of = _MONTHS.get(a.lower().rstrip("."), 0) if order == "Mdy" else 0
            y, mo, d = {
                "ymd": (a, b, c),
                "mdy": (c, a, b),
                "Mdy": (c, str(month_of), b),
                "dMy": (c, str(_MONTHS.get(b.lower().rstrip("."), 0)), a),
            }[order]
            try:
                found.append((date(int(y), int(mo), int(d)).isoformat(), m.span()))
            except ValueError:
                continue
    return found


def _four_digit_numbers(text: str) -> list[tuple[str, str]]:
    """Every free-standing 4-digit number with the nearest cue before it: ssn, card, last4."""
    dates = [span for _, span in find_dates(text)]
    cues = {"ssn": r"ssn|social", "card": r"card|ending|ends|ended", "last4": r"last (?:four|4)"}
    numbers = []
    for m in re.finditer(r"(?<![\d\-$,.])(\d{4})(?![\d\-]|\s*(?:dollars|bucks|usd)\b)", text):
        if any(start <= m.start() < end for start, end in dates):
            continue
        before = text[max(0, m.start() - 50) : m.start()].lower()
        nearest, kind = -1, "bare"
        for cue_kind, cue in cues.items():
            hits = [hit.end() for hit in re.finditer(cue, before)]
            if hits and hits[-1] > nearest:
                nearest, kind = hits[-1], cue_kind
        numbers.append((m.group(1), kind))
    return numbers


def find_last4(text: str, *, ssn: bool) -> str | None:
    """The last four digits of the SSN (`ssn=True`) or of a card."""
    numbers = _four_digit_numbers(text)
    preferred = ("ssn", "last4") if ssn else ("card", "last4")
    for kind in preferred:
        for digits, found in numbers:
            if found == kind:
                return digits
    bare = [digits for digits, found in numbers if found == "bare"]
    return bare[0] if len(bare) == 1 and len(numbers) == 1 else None


def find_full_name(text: str) -> str | None:
    """ "my name is Alex Morgan" / "this is Alex Morgan" -> "Alex Morgan"."""
    intro = r"(?i:\bmy name is|\bmy name's|\bname is|\bthis is|\bi am|\bi'm|\bit's)"
    m = re.search(intro + r"\s+([A-Z][a-zA-Z'’-]+(?:\s+[A-Z][a-zA-Z'’-]+){1,2})\b", text)
    if m:
        return m.group(1)
    m = re.search(r"(?i)\bmy name is\s+([a-z'’-]+)\s+([a-z'’-]+)", text)
    if m and m.group(2).lower() not in {"and", "born", "i", "my", "is", "from"}:
        return f"{m.group(1).title()} {m.group(2).title()}"
    return None


def find_id(text: str, prefix: str | None) -> str | None:
    """An id like POL-A-1001 / CLM-0001 (spoken "pol a 1001" too), with `prefix` if known."""
    if prefix is None:  # only the written form, PREFIX-123, when the prefix is unknown
        m = re.search(r"\b([A-Z]{2,5})-((?:[A-Z]-)?\d{1,6})\b", text)
    else:
        m = re.search(rf"\b({re.escape(prefix)})[\s-]*((?:[a-z][\s-]+)?\d{{1,6}})\b", text, re.I)
    if m is None:
        return None
    return f"{m.group(1).upper()}-" + re.sub(r"[\s-]+", "-", m.group(2)).upper()


def find_ticker(text: str) -> str | None:
    """A stock ticker: "$BTNF", "ticker BTNF", "buy QNTM", or a lone capitalised symbol."""
    verbs = r"(?i:\b(?:ticker|symbol|stock|shares of|shares in|trade|trading|buy|sell|invest in))"
    for pattern in (
        r"\$([A-Za-z]{1,5})\b",
        verbs + r"\s+(?:(?i:symbol|ticker|in)\s+)?([A-Z]{1,5})\b",
    ):
        m = re.search(pattern, text)
        if m:
            return m.group(1).upper()
    candidates = [w for w in re.findall(r"\b[A-Z]{2,5}\b", text) if w not in _NOT_TICKERS]
    return candidates[0] if len(candidates) == 1 else None


def find_amount(text: str) -> float | None:
    """Dollars: "$1,200", "$45.50", "2500 dollars"."""
    number = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?"
    m = re.search(r"\$\s?" + number, text) or re.search(
        number + r"\s*(?:dollars|usd|bucks)\b", text, re.I
    )
    if m is None:
        return None
    cents = m.group(2) or "0"
    return float(f"{m.group(1).replace(',', '')}.{cents}")


def _find_int(name: str, text: str) -> int | None:
    lowered = normalize(text)
    if name == "days":
        m = re.search(r"\b(?:last|past)\s+(\d{1,3})\s+days?\b", lowered)
        named = {"week": 7, "month": 30, "year": 365}
        n = re.search(r"\b(?:last|past)\s+(week|month|year)\b", lowered)
        return int(m.group(1)) if m else (named[n.group(1)] if n else None)
    if name == "limit":
        m = re.search(
            r"\b(?:last|recent)\s+(\d{1,2})\s+(?:transactions|charges|purchases)", lowered
        )
        return int(m.group(1)) if m else None
    return None


def _contains(text: str, phrase: str) -> bool:
    return re.search(rf"(?<![a-z0-9]){re.escape(phrase)}(?![a-z0-9])", text) is not None


def match_choice(choices: Sequence[str], text: str) -> str | None:
    """The first of `choices` the text names, directly or through an everyday alias."""
    lowered = normalize(text)
    for choice in choices:
        spoken = choice.replace("_", " ").lower()
        if any(_contains(lowered, p) for p in (spoken, *_ALIASES.get(choice, ()))):
            return choice
    return None


def description_examples(description: str) -> list[str]:
    """ "e.g. primary care, cardiology" / 'for example "caller done"' -> the examples."""
    m = re.search(r"(?:e\.g\.|for example)\s*(.+?)(?:\)|\.\s|\.$|$)", description, re.I)
    if m is None:
        return []
    parts = re.split(r",|\bor\b", m.group(1))
    return [p.strip(" \"'.") for p in parts if p.strip(" \"'.")]


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
    if kind == "integer":
        return _find_int(name, text)
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


def fill_arguments(parameters: Mapping[str, Any], texts: Sequence[str]) -> Filled:
    """Arguments for a tool from `texts` (the latest utterance first, then earlier ones)."""
    texts = [spoken_digits(t) for t in texts if t.strip()] or [""]
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])
    filled = Filled()
    for name, spec in properties.items():
        spec = spec if isinstance(spec, Mapping) else {}
        found = [(i, v) for i, t in enumerate(texts) if _valid(v := _specific(name, spec, t), spec)]
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
