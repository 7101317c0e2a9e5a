"""Backchannel bench: would the gateway resume a reply over a backchannel, and cut it over an
interruption, by the words Whisper tiny.en hears in noise?

    python -m benchmarks.bench_backchannels [--snrs 10,5] [--seed 14]

bench_turn_taking's backchannels ("Okay.", "Mm-hmm.", "I see."...) and interruptions ("Wait,
stop.", "Hold on.", "What?"...), each said by the four voices of the noise bench, alone and over
every noise bed (benchmarks/noise_beds.py) at each SNR, with 300 ms of the bed before and after
(what the endpointer hands over). Each clip is recognized as the speech worker does, and judged
as the speech worker judges held words (`contracts.words.is_backchannel`, the default phrases):

* resumed: backchannels whose words resume the reply (all of them should);
* cut: interruptions whose words cut it (all of them must);
* the same two as before, in the same run: one reading of each clip (Whisper not told the
  words were said over a reply, so a short unclear one is not read again), judged by the
  phrases alone (before fillers such as "um" and "and then" stopped taking the turn);
* every clip judged wrong, with the words heard.

The SNR is the speech's active level against the bed's, as in bench_noise. Prints figures and
asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter

import numpy as np

from activities.speech_providers.offline_whisper import WhisperRecognizer
from benchmarks.bench_noise import SPEECH_DBFS, VOICES, active_rms, to_pcm
from benchmarks.bench_speech_accuracy import speak
from benchmarks.bench_turn_taking import BACKCHANNELS, INTERRUPTIONS
from benchmarks.noise_beds import BEDS, RATE
from contracts.words import DEFAULT_BACKCHANNELS, is_backchannel

EDGE = int(0.3 * RATE)
#: rule -> (Whisper told the backchannels it may hear, the fillers that say nothing)
RULES: dict[str, tuple[bool, frozenset[str] | None]] = {
    "now": (True, None),
    "before": (False, frozenset()),
}


async def clips(seed: int, snrs: list[float]) -> list[tuple[str, str, str, np.ndarray]]:
    """(kind, phrase, voice and condition, samples) for every phrase, voice and condition."""
    rng = np.random.default_rng(seed)
    beds = {name: make(10.0, rng) for name, make in BEDS.items()}
    target = 32768 * 10 ** (SPEECH_DBFS / 20)
    out = []
    for kind, phrases in (("backchannel", BACKCHANNELS), ("interruption", INTERRUPTIONS)):
        for phrase in phrases:
            for voice in VOICES:
                pcm = await speak(phrase, voice)
                speech = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
                speech = np.pad(speech * target / active_rms(speech), EDGE)
                out.append((kind, phrase, f"{voice}, quiet", speech))
                for snr in snrs:
                    for name, bed in beds.items():
                        start = int(rng.integers(0, len(bed) - len(speech)))
                        noise = bed[start : start + len(speech)] * target / 10 ** (snr / 20)
                        out.append((kind, phrase, f"{voice}, {name} {snr:g} dB", speech + noise))
    return out


async def main(args: argparse.Namespace) -> None:
    snrs = [float(s) for s in args.snrs.split(",") if s]
    recognizer = WhisperRecognizer()
    recognizer.warm_up()
    judged: Counter[tuple[str, str, str]] = Counter()  # (rule, kind, condition) -> right
    totals: Counter[tuple[str, str]] = Counter()  # (kind, condition) -> clips
    wrong: list[str] = []
    reread: Counter[str] = Counter()  # kind -> clips read again (the cost: a second decode)
    for kind, phrase, said, samples in await clips(args.seed, snrs):
        pcm = to_pcm(samples)
        condition = said.split(", ", 1)[1]
        totals[kind, condition] += 1
        for rule, (held, fillers) in RULES.items():
            expected = DEFAULT_BACKCHANNELS if held else ()
            readings = recognizer.second_readings
            heard = (await recognizer.recognize(pcm, expected=expected)).text
            reread[kind] += recognizer.second_readings - readings
            resumed = is_backchannel(heard, DEFAULT_BACKCHANNELS, fillers=fillers)
            right = resumed == (kind == "backchannel")
            judged[rule, kind, condition] += right
            if rule == "now" and not right:
                wrong.append(f"{kind} {phrase!r}, {said}: heard {heard!r}")
    conditions = ["quiet"] + [f"{bed} {snr:g} dB" for snr in snrs for bed in BEDS]
    print(
        f"{len(BACKCHANNELS)} backchannels and {len(INTERRUPTIONS)} interruptions, "
        f"{len(VOICES)} voices each; right = resumed / cut"
    )
    print(f"{'condition':16s} " + "  ".join(f"{rule + ': bc, int':>22s}" for rule in RULES))
    for condition in [*conditions, "all"]:
        cells = []
        for rule in RULES:
            cell = []
            for kind in ("backchannel", "interruption"):
                keys = conditions if condition == "all" else [condition]
                count = sum(judged[rule, kind, c] for c in keys)
                cell.append(f"{count}/{sum(totals[kind, c] for c in keys)}")
            cells.append(f"{', '.join(cell):>22s}")
        print(f"{condition:16s} " + "  ".join(cells))
    print(
        f"read again: {reread['backchannel']} backchannels and {reread['interruption']} "
        f"interruptions; {recognizer.second_readings_kept} second readings kept"
    )
    print(f"judged wrong now: {len(wrong)}")
    for line in wrong:
        print(f"    {line}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--snrs", default="10,5", help="dB, comma-separated")
    parser.add_argument("--seed", type=int, default=14)
    asyncio.run(main(parser.parse_args()))
