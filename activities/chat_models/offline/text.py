"""Text features for the offline policy: words, crude stems and synonym concepts.

A text becomes a set of features: the stem of every content word, plus `#concept` for each
synonym group the text touches ("stolen", "scam" and "unknown charge" all add `#fraud`). An
utterance is matched against candidate documents (routes, tools, the agent itself) by the
summed weight of shared features, where a feature found in fewer candidates weighs more
(IDF). Every step is a plain rule, so a decision can be explained by listing the features.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping, Sequence


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOPWORDS = _wordset(
    """
    a an the and or but if of to in on at by for with from about into over after is are was
    were be been being am do does did done have has had having i me my mine myself we our you
    your yours he she him her it its they them their this that these those there here what
    which who whom whose when where why how can could would should will shall may might must
    just so very too also not no yes please thanks thank hi hello hey okay ok well oh um uh
    like want wanted wants need needs needed get got let lets im ive id its thats whats dont
    cant wont didnt doesnt isnt something anything someone anyone one some any all more most
    other such only own same than then now today up out off again once caller callers customer
    customers patient patients agent agents desk talk speak tell know think say said see look
    help call calling way sure really right going go much many use using used question
    questions
    """
)

# Words that say the same thing for routing purposes. A word may sit in several groups.
_SYNONYMS: Mapping[str, str] = {
    "fraud": "fraud fraudulent scam scammed scammer stolen steal stole theft thief lost "
    "suspicious suspect suspected unknown unrecognized unauthorized hacked compromised "
    "phishing dispute disputed staged fake",
    "charge": "charge charged transaction purchase activity spent spending merchant",
    "card": "card cards credit debit visa mastercard",
    "block": "block blocked freeze frozen lock deactivate",
    "invest": "invest investment investing investor portfolio retirement retire 401k ira "
    "stock shares brokerage trading trade bonds wealth allocation asset market",
    "balance": "balance balances money funds available",
    "account": "account accounts checking savings",
    "bill": "bill bills billing invoice payment pay paying paid copay statement owe due",
    "claim": "claim claims accident crash collision damage damaged flood fire loss losses "
    "totaled dent",
    "policy": "policy policies coverage covered premium deductible insurance insured",
    "vehicle": "car auto vehicle truck",
    "symptom": "symptom symptoms pain painful fever sick ill illness hurt hurts ache aching "
    "headache cough coughing injury injured bleeding vomiting nausea dizzy rash medication "
    "medicine breathing chest sore throat flu infection medical emergency unwell",
    "appointment": "appointment appointments book booking schedule reschedule visit slot "
    "slots doctor checkup cardiology dermatology",
    "identity": "identity verify verified verification authenticate birth dob born ssn",
    "human": "human person representative operator manager supervisor",
    "compliance": "compliance insider regulatory regulator complaint restricted blackout "
    "conflict suitability",
    "recommend": "recommend recommendation suggest apply compare comparison best",
    "rewards": "rewards reward cashback travel points miles fee fees annual",
    "location": "location country abroad overseas foreign city",
}

# Multi-word expressions that carry a concept none of their words carries alone.
_PHRASES: Sequence[tuple[str, str]] = (
    (r"\b(?:don'?t|do not|didn'?t|did not) (?:recogni[sz]e|make|authori[sz]e)", "fraud"),
    (r"\bnot mine\b|\bwasn'?t me\b|\bsomeone (?:else )?used\b|\bidentity theft\b", "fraud"),
    (r"\bhow much (?:do i have|is in|money)\b", "balance"),
    (r"\bhow much do i owe\b|\bwhat do i owe\b", "bill"),
    (r"\bcash back\b", "rewards"),
    (r"\breal person\b|\blive agent\b|\bactual person\b|\bsomeone real\b", "human"),
)


def normalize(text: str) -> str:
    """Lowercase, typographic quotes folded, punctuation (but not apostrophes) to spaces."""
    text = text.lower().replace("’", "'").replace("‘", "'")
    return " ".join(re.sub(r"[^a-z0-9'$]+", " ", text).split())


def stem(word: str) -> str:
    """A crude, consistent stem: "charges", "charged" and "charging" all give "charg"."""
    word = word.strip("'")
    if word.endswith("'s"):
        word = word[:-2]
    word = word.replace("'", "")
    if len(word) <= 3 or word.isdigit():
        return word
    word = re.sub(r"is(e|ed|es|ing)$", r"iz\1", word)  # recognise -> recognize
    if word.endswith(("ies", "ied")) and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]  # stopped -> stopp -> stop
    return word


def _concepts_by_stem() -> dict[str, frozenset[str]]:
    found: dict[str, set[str]] = {}
    for concept, words in _SYNONYMS.items():
        for word in words.split():
            found.setdefault(stem(word), set()).add(concept)
    return {key: frozenset(value) for key, value in found.items()}


_CONCEPTS = _concepts_by_stem()


_ID_LIKE = re.compile(r"\b[A-Za-z]{2,5}-[A-Za-z0-9-]*\d\b")


def words(text: str) -> list[str]:
    """Content words of `text` (stopwords, bare numbers and ids like POL-A-1001 dropped)."""
    return [
        w
        for w in normalize(_ID_LIKE.sub(" ", text)).replace("$", " ").split()
        if w.replace("'", "") not in _STOPWORDS and not w.isdigit()
    ]


@functools.lru_cache(maxsize=4096)  # descriptions and route texts recur on every turn
def features(text: str) -> frozenset[str]:
    """Stems of the content words plus `#concept` for every synonym group touched."""
    found: set[str] = set()
    for word in words(text):
        stemmed = stem(word)
        if len(stemmed) < 3:
            continue
        found.add(stemmed)
        found.update(f"#{concept}" for concept in _CONCEPTS.get(stemmed, ()))
    lowered = normalize(text)
    for pattern, concept in _PHRASES:
        if re.search(pattern, lowered):
            found.add(f"#{concept}")
    return frozenset(found)


def concepts(text: str) -> frozenset[str]:
    """Only the `#concept` features of `text`, without the `#`."""
    return frozenset(f[1:] for f in features(text) if f.startswith("#"))


def idf_weights(documents: Iterable[frozenset[str]]) -> dict[str, float]:
    """1 + ln(N / df): a feature shared by every candidate weighs 1, a unique one more."""
    docs = list(documents)
    counts: dict[str, int] = {}
    for doc in docs:
        for feature in doc:
            counts[feature] = counts.get(feature, 0) + 1
    total = max(1, len(docs))
    return {feature: 1.0 + math.log(total / df) for feature, df in counts.items()}


def overlap(
    query: frozenset[str], document: frozenset[str], weights: Mapping[str, float]
) -> tuple[float, list[str]]:
    """Summed weight of the features `query` shares with `document`, and which ones."""
    shared = sorted(query & document)
    return sum(weights.get(feature, 1.0) for feature in shared), shared
