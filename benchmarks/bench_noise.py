"""Noise bench: the energy VAD (`offline-light`) against Silero (`offline`) in noisy rooms,
each with the fixed endpointer and the adaptive one.

    python -m benchmarks.bench_noise [--seconds 100] [--snrs 20,10,5] [--wer]
        [--endpointing fixed,adaptive] [--words-after-ms 450]

Caller speech is the offline voice in four variants saying contact-center sentences, sentences
with a half-second pause mid-thought (after "and", "um", between groups of digits: the ones
bench_turn_taking uses) and backchannels ("mm-hmm", "okay"), placed a few seconds apart over a
generated noise bed (street, clatter, babble, music/TV, hum; benchmarks/noise_beds.py, seeded)
at each SNR: the speech's active level against the bed's. For each bed, SNR, endpointing
(`fixed`: 400 ms of quiet ends an utterance; `adaptive`: the gateway's default, which ends it by
the provisional words of the audio handed over at each pause) and VAD, it prints:

* pauses per minute: over the bed alone, how often a reply would have paused
  (`SpeechStarted`), to resume or be cut, as if the agent spoke the whole minute;
* false barge-ins per minute: over the bed alone, how often a reply would have been cut (the
  gateway's rule: 160 ms of varying speech, or an utterance paused or ended);
* bogus utterances per minute: over the bed alone, utterances sent to recognition;
* missed: spoken items (of the total) no utterance overlapped; split: items heard as more
  than one utterance (cut in two: the cost of ending utterances sooner); extra: utterances
  over the speech track that overlap no item;
* wait and ready: the quiet after the end of speech before the utterance ended, and before it
  had ended and its words were in (what the answer waits on), p50 over the items heard whole;
* with --wer, Whisper tiny.en's word error rate on the utterances that overlap each sentence
  (recognized as the speech worker recognizes words said over a reply),
  and how many backchannels would have cut a reply playing over them (the gateway's rule:
  the reply resumes only when every utterance overlapping the backchannel lasted no longer
  than ``max_backchannel_ms`` and its words are backchannel phrases, contracts.words).

Words come ``--words-after-ms`` after the audio is handed over (the recognizer's time on an
idle machine plus the round trip; fixed, so runs repeat). The adaptive endpointer is given
Whisper tiny.en's words for the audio of each pause, ignored once a later pause has revised
that audio, as the gateway does (media_gateway/calls.py).

Prints figures and asserts nothing. Speech sits at -26 dBFS, a telephone's usual level.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from benchmarks.bench_speech_accuracy import speak, whisper_candidate, word_errors
from benchmarks.bench_turn_taking import PAUSE_MS, PAUSED
from benchmarks.noise_beds import BEDS, RATE
from contracts.words import DEFAULT_BACKCHANNELS, is_backchannel, sentence_ending
from media_gateway.gateway_config import ADAPTIVE_ENDPOINTING, FIXED_ENDPOINTING, GatewayConfig
from media_gateway.vad import (
    FRAME_BYTES,
    FRAME_MS,
    Endpointer,
    EndpointerConfig,
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

#: Each VAD by its gateway option; the gateway builds its endpointer (`new_endpointer`).
VADS = {"energy": "offline-light", "silero": "offline"}
ENDPOINTINGS: dict[str, EndpointerConfig] = {
    "fixed": FIXED_ENDPOINTING,
    "adaptive": ADAPTIVE_ENDPOINTING,
}
Recognize = Callable[[bytes], str]
MakeEndpointer = Callable[[], Endpointer]


def endpointer_maker(vad: str, endpointing: EndpointerConfig) -> MakeEndpointer:
    return replace(GATEWAY, vad=vad, endpointing=endpointing).new_endpointer


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
    #: Per utterance (by id): ms of quiet after its speech until it ended, and until it had
    #: ended and its words were in (what the answer waits on).
    waits: dict[int, tuple[int, int]] = field(default_factory=dict)


def listen(
    audio: bytes, endpointer: Endpointer, words_after_ms: int, words: Recognize | None = None
) -> Heard:
    """Feed 20 ms frames as a call would, applying the gateway's barge-in rule.

    The recognizer has the words of audio handed over `words_after_ms` after it was, at a
    pause or at the end (an end that adds nothing to the audio of the last pause reuses its
    words, as the gateway does). With `words`, the endpointer is given the words of the latest
    pause's audio when they come, unless the utterance ended first."""
    heard, pending = Heard(), False
    after = words_after_ms // FRAME_MS
    due: tuple[int, str] | None = None  # (frame index, words) for the endpointer
    paused: tuple[bytes, int] = (b"", 0)  # the latest pause's audio, when its words are in
    for index, start in enumerate(range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES)):
        events = endpointer.feed(audio[start : start + FRAME_BYTES])
        if due is not None and index >= due[0]:
            events += endpointer.words_end(sentence_ending(due[1]))
            due = None
        for event in events:
            if isinstance(event, SpeechPaused):
                paused = (event.audio, index + after)
                due = (index + after, words(event.audio)) if words is not None else None
            if isinstance(event, SpeechEnded):
                due = None
                words_at = max(index, paused[1]) if event.audio == paused[0] else index + after
                heard.waits[id(event)] = (
                    (index + 1) * FRAME_MS - event.at_ms,
                    (words_at + 1) * FRAME_MS - event.at_ms,
                )
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
    """Each item once, voices in turn, scaled to SPEECH_DBFS active level. A sentence said
    with a pause mid-thought is one item: its two parts, `PAUSE_MS` of quiet between."""
    gap = bytes(PAUSE_MS * RATE // 1000 * 2)
    parts = [(text,) for text in (*SENTENCES, *BACKCHANNELS)] + list(PAUSED)
    target = 32768 * 10 ** (SPEECH_DBFS / 20)
    clips = []
    for index, said in enumerate(parts):
        voice = VOICES[index % len(VOICES)]
        pcm = gap.join([await speak(text, voice) for text in said])
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
        clips.append((" ".join(said), samples * target / active_rms(samples)))
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
    waits: list[tuple[int, int]] = field(default_factory=list)  # see Heard.waits
    errors: int = 0
    words: int = 0
    #: Backchannel items whose words (or length) would have cut a reply, and what was heard.
    backchannel_cuts: list[str] = field(default_factory=list)
    backchannels: int = 0


def measure(
    make: MakeEndpointer,
    bed: np.ndarray,
    speech: np.ndarray,
    items: list[Item],
    recognize: Recognize | None,
    words_after_ms: int,
    words: Recognize | None,
) -> Row:
    """`recognize`: for the WER; `words`: for the endpointer (`listen`)."""
    minutes = len(bed) / RATE / 60
    started = time.process_time()
    alone = listen(to_pcm(bed), make(), words_after_ms, words)
    mixed = listen(to_pcm(bed + speech), make(), words_after_ms, words)
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
        if len(found) == 1:
            row.waits += [mixed.waits[id(found[0])]] if id(found[0]) in mixed.waits else []
        if recognize is None:
            continue
        hypothesis = " ".join(recognize(u.audio) for u in found)
        if item.text in BACKCHANNELS:
            row.backchannels += 1
            if not resumes(found, hypothesis):
                row.backchannel_cuts.append(f"{item.text} -> {hypothesis!r}")
            continue
        errors, count = word_errors(item.text, hypothesis)
        row.errors, row.words = row.errors + errors, row.words + count
    row.extra = sum(id(u) not in matched for u in mixed.utterances)
    return row


def resumes(utterances: list[SpeechEnded], words: str) -> bool:
    """Whether a reply paused under these utterances would resume: each short enough to be a
    backchannel, and their words nothing but backchannel phrases (a missed one resumes too)."""
    short = all(u.duration_ms <= GATEWAY.max_backchannel_ms for u in utterances)
    return short and is_backchannel(words, DEFAULT_BACKCHANNELS)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--seconds", type=float, default=100.0, help="per bed: all items fit")
    parser.add_argument("--snrs", default="20,10,5")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--wer", action="store_true", help="recognize with Whisper tiny.en")
    parser.add_argument("--endpointing", default="fixed,adaptive", help="of: fixed, adaptive")
    parser.add_argument("--words-after-ms", type=int, default=450)
    args = parser.parse_args()
    snrs = [float(s) for s in args.snrs.split(",") if s.strip()]
    modes = [m.strip() for m in args.endpointing.split(",") if m.strip()]
    if unknown := set(modes) - set(ENDPOINTINGS):
        parser.error(f"unknown endpointing {', '.join(sorted(unknown))}: fixed or adaptive")
    whisper = whisper_candidate() if "adaptive" in modes else None
    # Said over a reply, as the bc-cut column supposes: told the backchannels it may hear.
    recognize = whisper_candidate(expected=DEFAULT_BACKCHANNELS) if args.wer else None
    clips = await speech_clips()
    speech_rms = 32768 * 10 ** (SPEECH_DBFS / 20)
    print(
        f"{args.seconds:.0f} s per bed; speech at {SPEECH_DBFS:.0f} dBFS; "
        "p/min = pauses per minute, fb/min = false barge-ins per minute, "
        "bogus/min = utterances from the bed alone, "
        "missed/split of the items, extra = utterances over the speech track matching no item, "
        "wait / ready = quiet before an item heard whole ended / ended with its words in "
        f"(p50, ms; words {args.words_after_ms} ms after the audio is handed over)"
    )
    header = f"{'bed':9s} {'SNR':>4s} {'end':8s} " + "  ".join(
        f"{name:>6s} p/min fb/min bogus/min missed split extra wait ready"
        + ("   WER bc-cut" if recognize else "")
        for name in VADS
    )
    print(header)
    cpu = {name: [0.0, 0.0] for name in VADS}
    cuts: list[str] = []  # backchannels that would have cut a reply, and their words
    for bed_index, (bed_name, make_bed) in enumerate(BEDS.items()):
        rng = np.random.default_rng([args.seed, bed_index])
        bed = make_bed(args.seconds, rng)
        speech, items = speech_track(clips, args.seconds, rng)
        for snr in snrs:
            noise = bed * speech_rms / 10 ** (snr / 20)
            for mode in modes:
                words = whisper if mode == "adaptive" else None
                cells = []
                for name, vad in VADS.items():
                    make = endpointer_maker(vad, ENDPOINTINGS[mode])
                    row = measure(make, noise, speech, items, recognize, args.words_after_ms, words)
                    if words is None:  # the VAD's CPU alone, without the recognizer's
                        cpu[name][0] += row.cpu_s
                        cpu[name][1] += row.audio_s
                    ended, ready = (
                        (statistics.median(w) for w in zip(*row.waits, strict=True))
                        if row.waits
                        else (math.nan, math.nan)
                    )
                    cell = (
                        f"{'':6s} {row.pauses:5.1f} {row.false_barge_ins:6.1f} {row.bogus:9.1f} "
                        f"{row.missed:3d}/{row.items:<2d} {row.split:5d} {row.extra:5d} "
                        f"{ended:4.0f} {ready:5.0f}"
                    )
                    if recognize is not None:
                        cell += f" {row.errors / max(row.words, 1):5.0%}"
                        cell += f" {len(row.backchannel_cuts)}/{row.backchannels}"
                        cuts += [
                            f"{bed_name} {snr:g} dB {mode} {name}: {c}"
                            for c in row.backchannel_cuts
                        ]
                    cells.append(cell)
                print(f"{bed_name:9s} {snr:4.0f} {mode:8s} " + "  ".join(cells), flush=True)
    if recognize is not None:
        print(f"backchannels that would cut a reply: {len(cuts)}")
        for cut in cuts:
            print(f"    {cut}")
    # Noise beds keep the energy gate open nearly all the time, so this is a call's worst case
    # (a quiet line costs Silero nothing); includes converting the mix to PCM.
    for name, (busy, audio) in cpu.items():
        if audio:
            print(f"{name} VAD CPU over noisy audio: {100 * busy / audio:.2f}% of a core per call")


if __name__ == "__main__":
    asyncio.run(main())
