"""Ranking what the caller's line asks for: each route, each business tool and the agent itself.

Candidates are matched by meaning (`offline.meaning` sentence embeddings), not by keywords: a
route by its `handoff_condition` and by what its target agent does, a tool by its name and
description, the agent by its own description. A caller line often carries two requests ("I
want to move my savings, so you'll need to confirm who I am first"), so each clause is matched
on its own too and a candidate keeps its best clause. A small bonus for shared word stems
breaks near ties towards the candidate whose own words the caller used.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from activities.chat_models.offline.meaning import SentenceEncoder
from activities.chat_models.offline.text import stem, words

#: Weight of one content-word stem shared by the caller's line and a candidate's text.
SHARED_STEM_BONUS = 0.03
#: A route's condition is the author's rule; what its target does only backs it up, and a
#: tool's extra texts (one sentence, its parameters) only add to its whole description.
#: An item of a listed description is narrower evidence than a whole condition or description.
ITEM_DISCOUNT = 0.15
#: Clauses shorter than this many words carry too little meaning to be matched alone.
MIN_CLAUSE_WORDS = 3
# Where one request ends and another begins in a spoken line.
_CLAUSE_BREAK = re.compile(r"[,;.!?]|\b(?:so|because|but|and then|and|then|before|first)\b", re.I)
# Conditions that mark a route as a step the caller must take before anything else.
_PREREQUISITE = re.compile(r"\b(?:before|first)\b", re.I)
# Conditions of routes that close a matter rather than open one ("the claim is handled").
_CLOSING = re.compile(
    r"something else|another request|other request|changes? topic|\bis (?:complete|resolved|"
    r"handled|answered|settled|finished|sorted|fixed|cleared|done|confirmed)\b|decides to stay",
    re.I,
)


@dataclass(frozen=True)
class Candidate:
    """Something the policy could do, with the texts that say when it fits."""

    key: str
    texts: tuple[str, ...]
    #: A route the caller must take before their other request can be served.
    prerequisite: bool = False
    #: A route that returns the caller once a matter is closed.
    closing: bool = False
    #: How many of `texts` are whole descriptions; the rest are items listed in one.
    whole: int = 99


@dataclass(frozen=True)
class Match:
    """How well a candidate fits the line: its score, and the clause that fit best."""

    key: str
    score: float
    clause: str
    #: Which of the candidate's texts fit best (0: a route's condition, 1: what its target does).
    text: int = 0
    #: The candidate's best score for each clause, in `clauses(utterance)` order.
    by_clause: tuple[float, ...] = ()


def clause_spans(utterance: str) -> list[tuple[int, int]]:
    """Character spans of the clauses long enough to be matched alone (none if only one)."""
    spans, start = [], 0
    for found in [*_CLAUSE_BREAK.finditer(utterance), None]:
        end = found.start() if found else len(utterance)
        if len(utterance[start:end].split()) >= MIN_CLAUSE_WORDS:
            spans.append((start, end))
        start = found.end() if found else end
    return spans if len(spans) > 1 else []


def clauses(utterance: str) -> list[str]:
    """The whole line, then each clause long enough to be matched alone (if there are two+)."""
    return [utterance, *(utterance[a:b].strip() for a, b in clause_spans(utterance))]


def request_part(utterance: str) -> str:
    """The line without its clauses that close a matter ("Thanks, the fraud matter is handled.
    I have another question about my balance" -> "I have another question about my balance"),
    or the whole line when nothing else is left."""
    spans = clause_spans(utterance)
    kept = [utterance[a:b].strip() for a, b in spans if not _CLOSING.search(utterance[a:b])]
    return " ".join(kept) if spans and kept else utterance


def listed(description: str) -> list[str]:
    """The items of a description that lists what an agent does ("Fraud desk: suspicious
    charges, lost or stolen cards, blocking a card"): a long list blurs its own meaning, so
    each item is matched on its own as well."""
    _, _, tail = description.rpartition(":")
    items = [i.strip(" .") for i in re.split(r",|;|\band\b", tail)]
    items = [i for i in items if len(i.split()) >= 2]
    return items if len(items) > 1 else []


def route_candidate(target: str, condition: str, target_does: str) -> Candidate:
    """A route, matched by its condition, by what its target does and by each thing the target
    lists (a route back from a closed matter too: "another question about my balance" is for
    the desk that answers balances)."""
    closing = bool(_CLOSING.search(condition))
    items = listed(target_does)
    return Candidate(
        key=f"route:{target}",
        texts=tuple(t for t in (condition, target_does, *items) if t.strip()),
        prerequisite=bool(_PREREQUISITE.search(condition)),
        closing=closing,
        whole=len([t for t in (condition, target_does) if t.strip()]),
    )


@functools.lru_cache(maxsize=4096)  # candidates' texts recur on every turn
def _stems(text: str) -> frozenset[str]:
    return frozenset(s for w in words(text) if len(s := stem(w)) >= 3)


def rank(
    encoder: SentenceEncoder, utterance: str, candidates: Sequence[Candidate]
) -> dict[str, Match]:
    """Every candidate's best match to the line or one of its clauses."""
    parts = clauses(utterance)
    part_vectors = encoder.encode_parts(utterance, clause_spans(utterance))
    text_vectors = encoder.encode([text for candidate in candidates for text in candidate.texts])
    said = _stems(utterance)
    ranked: dict[str, Match] = {}
    start = 0
    for candidate in candidates:
        own = text_vectors[start : start + len(candidate.texts)]
        start += len(candidate.texts)
        best, clause, which = -1.0, utterance, 0
        per_clause = []
        for part, part_vector in zip(parts, part_vectors, strict=True):
            clause_best = -1.0
            for index, vector in enumerate(own):
                score = float(part_vector @ vector) - ITEM_DISCOUNT * (index >= candidate.whole)
                clause_best = max(clause_best, score)
                if score > best:
                    best, clause, which = score, part, index
            per_clause.append(clause_best)
        shared = len(said & _stems(" ".join(candidate.texts)))
        bonus = SHARED_STEM_BONUS * shared
        ranked[candidate.key] = Match(candidate.key, best + bonus, clause, which, tuple(per_clause))
    return ranked


def prerequisite_first(
    matches: Mapping[str, Match], candidates: Sequence[Candidate], utterance: str, floor: float
) -> Match | None:
    """A prerequisite route whose condition one clause of a longer line asks for.

    "Move my savings, so you'll need to confirm who I am first": the identity check must come
    before the other request, whichever of the two the whole line resembles more. The clause
    must fit the route's condition itself at `floor` or better, and fit nothing else better.
    """
    parts = clauses(utterance)
    for candidate in candidates:
        match = matches.get(candidate.key)
        if not (candidate.prerequisite and match and match.clause != utterance):
            continue
        if match.score < floor or match.text != 0:
            continue
        index = parts.index(match.clause)
        rivals = [m.by_clause[index] for k, m in matches.items() if k != candidate.key]
        if match.by_clause[index] > max(rivals, default=-1.0):
            return match
    return None
