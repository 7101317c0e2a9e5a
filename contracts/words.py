"""What a caller's provisional words say about turn-taking: plain text rules, no model.

Two questions, both asked of the recognizer's words for audio the gateway is still deciding on:

* Was speech over a reply only a *backchannel* ("mm-hmm", "okay", "right")? Then the reply
  resumes where it paused and the words are recorded as a backchannel, not a turn. Every word
  must belong to one of the scenario's backchannel phrases ("okay okay" and "yeah, sure" are
  backchannels, "okay wait" is not), and a backchannel is short. Fillers and connectives alone
  ("um", "and then") do not take the turn either: they say nothing yet.
* Does the utterance so far *end* like a finished sentence or question, or trail off ("and",
  "so", "um", a number being read out)? The gateway's endpointer waits less after the first and
  more after the second (``media_gateway.vad.Endpointer.adapt_hangover``).

The speech worker asks both (it has the words and the call's scenario) and tells the gateway
only the answers, so caller words never travel to or stay on the gateway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final, Literal

#: Said while listening, not to take the turn. "yes" and "no" are left out on purpose: said over
#: a reply that ends in a question they answer it, and cutting in is the safe reading.
DEFAULT_BACKCHANNELS: Final = (
    "mm-hmm",
    "mhm",
    "hmm",
    "mm",
    "uh-huh",
    "okay",
    "ok",
    "right",
    "yeah",
    "yep",
    "sure",
    "alright",
    "all right",
    "i see",
    "got it",
)
#: Words that always mean "stop talking": a scenario cannot list them as backchannels.
ALWAYS_INTERRUPT: Final = frozenset({"wait", "stop", "no", "what", "sorry", "excuse", "hold"})
#: Words that say nothing on their own: over a reply, a caller who said only these has not taken
#: the turn (what Pipecat's minimum-words and LiveKit's false-interruption handling count on).
#: Whisper tiny.en also writes a noisy "mm-hmm" as "and and and" or "and then". "so" is left out
#: ("So?" challenges; under clatter Whisper heard "Stop." as "So."), and so are "yes" and "oh".
FILLERS: Final = frozenset({"um", "uh", "er", "erm", "and", "then"})
#: "Uh-uh" is "no", though both its words are fillers.
_UH_UH = re.compile(r"\buh[- ]uh\b", re.IGNORECASE)
#: Longer than this is someone taking the turn, whatever the words.
MAX_BACKCHANNEL_WORDS: Final = 4
MAX_BACKCHANNEL_PHRASES: Final = 50
MAX_PHRASE_WORDS: Final = 3

#: How a provisional transcript ends (see `sentence_ending`).
Ending = Literal["complete", "trailing", "open"]

_WORD = re.compile(r"[a-z0-9']+")


def words_of(text: str) -> list[str]:
    """Lower-case words, hyphenated ones split ("Uh-huh." -> ["uh", "huh"])."""
    return _WORD.findall(text.lower().replace("-", " "))


#: Words after which a speaker is mid-thought, whatever the punctuation: conjunctions, fillers.
_TRAILING_WORDS: Final = frozenset(words_of("and or but so because um uh er erm like"))
#: ...and, unless the recognizer closed the sentence ("Go on."), articles and prepositions.
_OPEN_ENDED_WORDS: Final = frozenset(
    words_of(
        "the a an to of for with my your is are was if then that which who when where at in on "
        "from about into than as"
    )
)
_NUMBER_WORDS: Final = frozenset(
    words_of(
        "zero oh one two three four five six seven eight nine ten eleven twelve hundred "
        "thousand double triple"
    )
)


#: A closed-mouth hum however a recognizer spells it: "m", "mm", "Mmmmm", "hmm", "mhm", and
#: with an n ("M-N-N", "mn") as Whisper tiny.en wrote a noisy "mm-hmm".
_HUM = re.compile(r"h*[mn]+(h+[mn]+)*h*")


def hummed(words: list[str]) -> list[str]:
    """`words` with every hum spelled "mm" and a run of hums as one: Whisper writes one
    "mm-hmm" as "Mmm", "M M", "M. M. M. M." or "Mmmmmmmmm" by the noise under it, and all of
    them are the listener's same sound, not that many words."""
    out: list[str] = []
    for word in words:
        word = "mm" if _HUM.fullmatch(word) else word
        if not (word == "mm" and out and out[-1] == "mm"):
            out.append(word)
    return out


def is_backchannel(
    text: str, phrases: Iterable[str], *, fillers: Iterable[str] | None = None
) -> bool:
    """Whether `text` is nothing but backchannel phrases and fillers (empty text counts: nothing
    was said). Hums are matched as one sound (`hummed`): any hum passes when the list holds
    one. "Uh-uh" is "no", never a filler. `fillers` replaces `FILLERS` (a bench's baseline)."""
    fillers = FILLERS if fillers is None else frozenset(fillers)
    # A run of one filler is one: under noise Whisper loops on a sound it is unsure of
    # ("and, and, and, and, and" for one "mm-hmm").
    said: list[str] = []
    for word in hummed(words_of(text)):
        if not (word in fillers and said and said[-1] == word):
            said.append(word)
    if len(said) > MAX_BACKCHANNEL_WORDS or _UH_UH.search(text):
        return False
    allowed = {tuple(hummed(words_of(phrase))) for phrase in phrases}
    allowed.update((filler,) for filler in fillers)
    allowed.discard(())
    # Can the words be split into listed phrases? Position i is reachable when words[:i] can.
    reachable = [True] + [False] * len(said)
    for end in range(1, len(said) + 1):
        reachable[end] = any(
            reachable[end - len(phrase)] and tuple(said[end - len(phrase) : end]) == phrase
            for phrase in allowed
            if len(phrase) <= end
        )
    return reachable[-1]


#: The most words a backchannel misheard by the recognizer came back as (bench_backchannels).
UNCLEAR_WORDS: Final = 2


def unclear_backchannel(text: str, phrases: Iterable[str]) -> bool:
    """Whether words said over a reply may be a misheard backchannel worth a second reading:
    one or two words ("here.", "Light", "Bye, see."), not backchannels, none that always
    interrupts, and not "yes" (left out of the backchannels as an answer; it is not doubted
    into a "yeah" either). Most real interruptions are longer or hold such a word ("Stop.",
    "Hold on."); a short one without ("Representative.") costs one more reading."""
    said = words_of(text)
    return (
        0 < len(said) <= UNCLEAR_WORDS
        and ALWAYS_INTERRUPT.isdisjoint(said)
        and "yes" not in said
        and not is_backchannel(text, phrases)
    )


def sentence_ending(text: str) -> Ending:
    """How the words end: ``trailing`` (a connective, a filler, a number being read out, or an
    ellipsis or comma), ``complete`` (a full stop, question or exclamation mark after a word
    that finishes a thought), else ``open`` (no punctuation to go by)."""
    stripped = text.strip()
    said = words_of(stripped)
    if not said:
        return "open"
    last = said[-1]
    if stripped.endswith(("...", "…", ",", "-")) or last in _TRAILING_WORDS:
        return "trailing"
    if last.isdigit() or last in _NUMBER_WORDS:
        return "trailing"  # digits come in groups: "4532, 1234" pauses between them
    if stripped.endswith((".", "?", "!")):
        return "complete"
    return "trailing" if last in _OPEN_ENDED_WORDS else "open"


def check_backchannels(phrases: Iterable[str]) -> tuple[str, ...]:
    """A scenario's backchannel list, refused with a plain reason when it cannot work."""
    checked: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for phrase in phrases:
        said = tuple(words_of(phrase))
        if not said or len(said) > MAX_PHRASE_WORDS:
            raise ValueError(
                f"backchannel {phrase!r} must be 1 to {MAX_PHRASE_WORDS} words, such as 'mm-hmm'"
            )
        stops = ALWAYS_INTERRUPT.intersection(said)
        if stops:
            raise ValueError(
                f"backchannel {phrase!r} contains {sorted(stops)[0]!r}, which always cuts the "
                "reply; remove it from backchannels"
            )
        if said in seen:
            raise ValueError(f"backchannel {phrase!r} is listed twice")
        seen.add(said)
        checked.append(phrase)
    if len(checked) > MAX_BACKCHANNEL_PHRASES:
        raise ValueError(
            f"backchannels lists {len(checked)} phrases; at most {MAX_BACKCHANNEL_PHRASES}"
        )
    return tuple(checked)
