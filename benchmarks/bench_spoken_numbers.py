"""Spoken numbers through the offline recognizer: are they heard whole, and at what cost?

    python -m benchmarks.bench_spoken_numbers [--voices en-us,en-us+f2] [--rounds 1]

A bank's caller says card digits, account numbers, dates and amounts; a number misheard makes
the agent ask again. Each line below is spoken by the offline voices (espeak-ng), padded as a
VAD-cut segment is, and recognized by Whisper tiny.en both ways, each clip by both in turn (so
the machine's load weighs on them alike):

* ``30 s window``: faster-whisper's `transcribe` (``BATON_WHISPER_WINDOW=full``), the baseline;
* ``fitted window``: the window fitted to the utterance (``BATON_WHISPER_WINDOW=fitted``).

Printed per way: lines whose numbers came back whole (the digits in order, read one by one, so
"8832", "8,832" and "eight eight three two" agree), and the recognition time p50 over lines
with a number and over lines without one, with ratios to the 30 s window; then each miss.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable

from activities.speech_providers.offline_whisper import WhisperRecognizer
from benchmarks.bench_speech_accuracy import normalize, pad, speak

#: (what the caller says, the digits that must come back in order; "" for a line with none).
LINES = (
    ("Please block my card ending in 8832", "8832"),
    ("Block the card ending in 8832", "8832"),
    ("My card ends in 8832, please block it", "8832"),
    ("My account number is 40917", "40917"),
    ("I was born on the 14th of March 1985", "141985"),
    ("I paid 250 dollars yesterday", "250"),
    ("I live at 27 Elm Street", "27"),
    ("The card ending in 4417 is lost", "4417"),
    ("The charge was 89 dollars and 99 cents", "8999"),
    ("What is my balance?", ""),
    ("Someone used my card abroad, I think it's fraud", ""),
    ("I want to speak to a real person please.", ""),
    ("Can you tell me my recent transactions?", ""),
)
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def heard_whole(digits: str, hypothesis: str) -> bool:
    """Whether `digits` come back in order, no digit between them (words between them, as in
    "the 14th of March 1985", do not count)."""
    want = [DIGIT_WORDS[int(d)] for d in digits]
    said = [word for word in normalize(hypothesis) if word in DIGIT_WORDS]
    return any(said[i : i + len(want)] == want for i in range(len(said) - len(want) + 1))


def ways() -> dict[str, Callable[[bytes], str]]:
    full = WhisperRecognizer(fitted=False)
    fitted = WhisperRecognizer(fitted=True)
    full.warm_up()
    fitted.warm_up()
    return {
        "30 s window": lambda pcm: full._decode(pcm).text,
        "fitted window": lambda pcm: fitted._decode(pcm).text,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default="en-us,en-us+f2,en-us+f3,en-us+m3,en-us+f1,en-us+m1")
    parser.add_argument("--rounds", type=int, default=1, help="times each clip is recognized")
    args = parser.parse_args()
    clips = [
        (text, digits, pad(await speak(text, voice), 16000))
        for voice in args.voices.split(",")
        for text, digits in LINES
    ]
    recognizers = ways()
    whole = {name: 0 for name in recognizers}
    times: dict[tuple[str, bool], list[float]] = {}
    misheard: list[str] = []
    for _ in range(args.rounds):
        for text, digits, pcm in clips:
            for name, recognize in recognizers.items():
                started = time.perf_counter()
                hypothesis = recognize(pcm)
                times.setdefault((name, bool(digits)), []).append(time.perf_counter() - started)
                if digits and heard_whole(digits, hypothesis):
                    whole[name] += 1
                elif digits:
                    misheard.append(f"  {name}: {text!r} heard as {hypothesis!r}")
    numbered = args.rounds * sum(1 for _, digits, _ in clips if digits)
    base = {kind: statistics.median(times[("30 s window", kind)]) for kind in (True, False)}
    print(f"{len(clips)} clips x {args.rounds} round(s); {numbered} hold a number")
    print(
        f"{'way':<24} {'numbers whole':>14} {'p50, number':>12} {'ratio':>6} "
        f"{'p50, no number':>15} {'ratio':>6}"
    )
    for name in recognizers:
        with_number = statistics.median(times[(name, True)])
        without = statistics.median(times[(name, False)])
        print(
            f"{name:<24} {whole[name]:>6} of {numbered:<5} {1000 * with_number:>9.0f} ms "
            f"{with_number / base[True]:>6.2f} {1000 * without:>12.0f} ms "
            f"{without / base[False]:>6.2f}"
        )
    print("numbers not heard whole:" if misheard else "every number heard whole")
    print("\n".join(misheard))


if __name__ == "__main__":
    asyncio.run(main())
