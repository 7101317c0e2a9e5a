"""Finding values in what the caller said: dates, digits, names, ids, tickers and amounts.

Plain regular expressions over the utterance (speech-recognised or typed), for the offline
policy's argument filling. Each finder returns None when it is not sure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date

from activities.chat_models.offline.text import concepts, normalize

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
    """Spelled-out digit runs as digits: "eight eight three two" becomes "8832".

    Speech recognisers sometimes write digits out; runs of three or more are converted.
    """
    return _DIGIT_RUN.sub(
        lambda m: "".join(_DIGIT_WORDS[w.lower()] for w in re.split(r"[\s-]+", m.group(0))), text
    )


def _month_number(name: str) -> str:
    return str(_MONTHS.get(name.lower().rstrip("."), 0))


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
            if order == "ymd":
                y, mo, d = a, b, c
            elif order == "mdy":
                y, mo, d = c, a, b
            elif order == "Mdy":
                y, mo, d = c, _month_number(a), b
            else:
                y, mo, d = c, _month_number(b), a
            try:
                found.append((date(int(y), int(mo), int(d)).isoformat(), m.span()))
            except ValueError:
                continue
    return found


def _four_digit_numbers(text: str) -> list[tuple[str, str]]:
    """Every free-standing 4-digit number with the nearest cue before it: ssn, card, last4."""
    # Speech recognizers write spoken digits as quantities ("ending in 8,832"); a lone
    # thousands separator inside four digits is undone (money keeps its "$").
    text = re.sub(r"(?<![\d$,.])(\d),(\d{3})(?![\d,])", r"\1\2", text)
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


def find_last4(text: str, *, ssn: bool, strict: bool = False) -> str | None:
    """The last four digits of the SSN (`ssn=True`) or of a card.

    A lone number with no cue is taken unless `strict`; a number cued as the SSN's is never
    taken for a card, nor a card's for the SSN.
    """
    numbers = _four_digit_numbers(text)
    preferred: tuple[str, ...] = ("ssn", "last4") if ssn else ("card", "last4")
    if strict:
        preferred = preferred[:1]
    for kind in preferred:
        for digits, found in numbers:
            if found == kind:
                return digits
    if strict:
        return None
    bare = [digits for digits, found in numbers if found == "bare"]
    return bare[0] if len(bare) == 1 and len(numbers) == 1 else None


def find_full_name(text: str) -> str | None:
    """The caller's name from "my name is Alex Morgan" or "this is Alex Morgan"."""
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


def find_int(name: str, text: str) -> int | None:
    """`days` from "last 10 days" / "past month", `limit` from "last 3 transactions"."""
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
    """Examples a parameter description lists after "e.g." or "for example"."""
    m = re.search(r"(?:e\.g\.|for example)\s*(.+?)(?:\)|\.\s|\.$|$)", description, re.I)
    if m is None:
        return []
    parts = re.split(r",|\bor\b", m.group(1))
    return [p.strip(" \"'.") for p in parts if p.strip(" \"'.")]
