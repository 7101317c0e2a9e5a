"""Noise bench: the energy VAD (`offline-light`) against Silero (`offline`) in noisy rooms.

    python -m benchmarks.bench_noise [--seconds 60] [--snrs 20,10,5] [--wer]

Caller speech is the offline voice in four variants saying contact-center sentences and
backchannels ("mm-hmm", "okay"), placed a few seconds apart over a generated noise bed (street,
clatter, babble, music/TV, hum; benchmarks/noise_beds.py, seeded) at each SNR: the speech's
active level against the bed's. For each bed, SNR and VAD, through the gateway's own endpointer
settings, it prints:

* pauses per minute: over the bed alone, how often a reply would have paused
  (`SpeechStarted`), to resume or be cut, as if the agent spoke the whole minute;
* false barge-ins per minute: over the bed alone, how often a reply would have been cut (the
  gateway's rule: 160 ms of varying speech, or an utterance paused or ended);
* bogus utterances per minute: over the bed alone, utterances sent to recognition;
* missed: spoken items (of the total) no utterance overlapped; split: items heard as more
  than one utterance; extra: utterances over the speech track that overlap no item;
* with --wer, Whisper tiny.en's word error rate on the utterances that overlap each sentence.

Prints figures and asserts nothing. Speech sits at -26 dBFS, a telephone's usual level.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from benchmarks.bench_speech_accuracy import speak, whisper_candidate, word_errors
from benchmarks.noise_beds import BEDS, RATE
from media_gateway.gateway_config import GatewayConfig
from media_gateway.vad import (
    FRAME_BYTES,
    Endpointer,
    NoiseIgnored,
    SpeechEnded,
    SpeechPaused,
    SpeechStarted,
)

SENTENCES = (
    "I would like to check the balance on my checking account.",
    "My card was declined at the store this morning.",
    "Can you tell me when my next payment is due?",
    "I think there is a charge I did not make.",
    "Please send me a new card to my home address.",
    "What is the interest rate on the savings account?",
    "I need to speak to someone about a loan.",
    "Yes, that is the right account number.",
)
BACKCHANNELS = ("mm-hmm", "okay", "yeah", "right")
VOICES = ("en-us", "en-us+f2", "en-us+m3", "en-us+f3")
SPEECH_DBFS = -26.0
GATEWAY = GatewayConfig(media_address="127.0.0.1:0")

MakeEndpointer = Callable[[], Endpointer]
#: Each VAD as the gateway builds it (media_gateway.gateway_config.new_endpointer).
VADS: dict[str, MakeEndpointer] = {
    "energy": replace(GATEWAY, vad="offline-light").new_endpointer,
    "silero": GATEWAY.new_endpointer,
}


@dataclass(frozen=True)
class Item:
    text: str
    start: int  # samples
    end: int


@dataclass
class Heard:
    """What one VAD made of one track."""

    pauses: int = 0
    barge_ins: int = 0
    utterances: list[SpeechEnded] = field(default_factory=list)


def listen(audio: bytes, endpointer: Endpointer) -> Heard:
    """Feed 20 ms frames as a call would, applying the gateway's barge-in rule."""
    heard, pending = Heard(), False
    for start in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES):
        for event in endpointer.feed(audio[start : start + FRAME_BYTES]):
            if isinstance(event, SpeechStarted):
                pending = True
                heard.pauses += 1
            elif isinstance(event, NoiseIgnored):
                pending = False
            elif isinstance(event, SpeechPaused | SpeechEnded):
                heard.barge_ins += pending
                pending = False
                if isinstance(event, SpeechEnded):
                    heard.utterances.append(event)
        if pending and endpointer.speech_ms >= GATEWAY.min_barge_in_ms and endpointer.speech_varies:
            heard.barge_ins += 1
            pending = False
    heard.utterances += [e for e in endpointer.finish() if isinstance(e, SpeechEnded)]
    return heard


def to_pcm(samples: np.ndarray) -> bytes:
    return np.clip(np.round(samples), -32768, 32767).astype("<i2").tobytes()


def active_rms(clip: np.ndarray) -> float:
    """RMS over the frames within 30 dB of the loudest (the speech, not its pauses)."""
    usable = len(clip) // 320 * 320
    frames = clip[:usable].reshape(-1, 320)
    power = np.mean(frames**2, axis=1)
    return math.sqrt(float(np.mean(power[power >= power.max() / 1000])))


async def speech_clips() -> list[tuple[str, np.ndarray]]:
    """Each item once, voices in turn, scaled to SPEECH_DBFS active level."""
    texts = [*SENTENCES, *BACKCHANNELS]
    target = 32768 * 10 ** (SPEECH_DBFS / 20)
    clips = []
    for index, text in enumerate(texts):
        pcm = await speak(text, VOICES[index % len(VOICES)])
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
        clips.append((text, samples * target / active_rms(samples)))
    return clips


def speech_track(
    clips: list[tuple[str, np.ndarray]], seconds: float, rng: np.random.Generator
) -> tuple[np.ndarray, list[Item]]:
    """Items in a shuffled order, 1.5-3.5 s of quiet between them, over ``seconds``."""
    track, items, at = np.zeros(int(seconds * RATE)), [], RATE
    order = rng.permutation(len(clips))
    for index in order:
        text, samples = clips[index]
        if at + len(samples) >= len(track) - RATE:
            break
        track[at : at + len(samples)] += samples
        items.append(Item(text, at, at + len(samples)))
        at += len(samples) + int(rng.uniform(1.5, 3.5) * RATE)
    return track, items


def overlapping(item: Item, utterances: list[SpeechEnded]) -> list[SpeechEnded]:
    found = []
    for utterance in utterances:
        end = utterance.at_ms * RATE // 1000
        start = end - utterance.duration_ms * RATE // 1000
        if start < item.end and end > item.start:
            found.append(utterance)
    return found


@dataclass
class Row:
    pauses: float = 0.0
    false_barge_ins: float = 0.0
    bogus: float = 0.0
    cpu_s: float = 0.0  # process CPU in the VAD over both tracks
    audio_s: float = 0.0
    missed: int = 0
    split: int = 0
    extra: int = 0
    items: int = 0
    errors: int = 0
    words: int = 0


def measure(
    make: MakeEndpointer,
    bed: np.ndarray,
    speech: np.ndarray,
    items: list[Item],
    recognize: Callable[[bytes], str] | None,
) -> Row:
    minutes = len(bed) / RATE / 60
    started = time.process_time()
    alone = listen(to_pcm(bed), make())
    mixed = listen(to_pcm(bed + speech), make())
    row = Row(
        alone.pauses / minutes,
        alone.barge_ins / minutes,
        len(alone.utterances) / minutes,
        items=len(items),
    )
    row.cpu_s, row.audio_s = time.process_time() - started, 2 * len(bed) / RATE
    matched: set[int] = set()
    for item in items:
        found = overlapping(item, mixed.utterances)
        matched.update(id(u) for u in found)
        row.missed += not found
        row.split += len(found) > 1
        if recognize is not None and item.text in SENTENCES:
            hypothesis = " ".join(recognize(u.audio) for u in found)
            errors, words = word_errors(item.text, hypothesis)
            row.errors, row.words = row.errors + errors, row.words + words
    row.extra = sum(id(u) not in matched for u in mixed.utterances)
    return row


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--snrs", default="20,10,5")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--wer", action="store_true", help="recognize with Whisper tiny.en")
    args = parser.parse_args()
    snrs = [float(s) for s in args.snrs.split(",") if s.strip()]
    recognize = whisper_candidate() if args.wer else None
    clips = await speech_clips()
    speech_rms = 32768 * 10 ** (SPEECH_DBFS / 20)
    print(
        f"{args.seconds:.0f} s per bed; speech at {SPEECH_DBFS:.0f} dBFS; "
        "p/min = pauses per minute, fb/min = false barge-ins per minute, "
        "bogus/min = utterances from the bed alone, "
        "missed/split of the items, extra = utterances over the speech track matching no item"
    )
    header = f"{'bed':9s} {'SNR':>4s}  " + "  ".join(
        f"{name:>6s} p/min fb/min bogus/min missed split extra" + ("   WER" if recognize else "")
        for name in VADS
    )
    print(header)
    cpu = {name: [0.0, 0.0] for name in VADS}
    for bed_index, (bed_name, make_bed) in enumerate(BEDS.items()):
        rng = np.random.default_rng([args.seed, bed_index])
        bed = make_bed(args.seconds, rng)
        speech, items = speech_track(clips, args.seconds, rng)
        for snr in snrs:
            noise = bed * speech_rms / 10 ** (snr / 20)
            cells = []
            for name, make in VADS.items():
                row = measure(make, noise, speech, items, recognize)
                cpu[name][0] += row.cpu_s
                cpu[name][1] += row.audio_s
                cell = (
                    f"{'':6s} {row.pauses:5.1f} {row.false_barge_ins:6.1f} {row.bogus:9.1f} "
                    f"{row.missed:3d}/{row.items:<2d} {row.split:5d} {row.extra:5d}"
                )
                if recognize is not None:
                    cell += f" {row.errors / max(row.words, 1):5.0%}"
                cells.append(cell)
            print(f"{bed_name:9s} {snr:4.0f}  " + "  ".join(cells), flush=True)
    # Noise beds keep the energy gate open nearly all the time, so this is a call's worst case
    # (a quiet line costs Silero nothing); includes converting the mix to PCM.
    for name, (busy, audio) in cpu.items():
        print(f"{name} VAD CPU over noisy audio: {100 * busy / audio:.2f}% of a core per call")


if __name__ == "__main__":
    asyncio.run(main())
