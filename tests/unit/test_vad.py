"""Voice-activity detection and endpointing over synthetic PCM16 signals (pure code)."""

from __future__ import annotations

import math
import random
import sys
from array import array

import pytest

from media_gateway.vad import (
    BYTES_PER_MS,
    MAX_HANDOVERS,
    Endpointer,
    EndpointerConfig,
    NoiseIgnored,
    SpeechEnded,
    SpeechPaused,
    SpeechStarted,
    VadEvent,
    frame_energy_dbfs,
    zero_crossing_rate,
)

RATE = 16_000
PRE_ROLL_MS = 200
POST_ROLL_MS = 100


def n_samples(ms: int) -> int:
    return RATE * ms // 1000


def silence(ms: int) -> list[float]:
    # A faint dither rather than digital zeros, like a real line.
    rng = random.Random(7)
    return [rng.gauss(0.0, 3.0) for _ in range(n_samples(ms))]


def voiced(ms: int, *, peak: float = 8000.0, f0: float = 120.0) -> list[float]:
    """Speech-like: harmonics of f0 up to 3 kHz falling as 1/k, with syllable-rate AM."""
    harmonics = [k for k in range(1, 100) if k * f0 <= 3000]
    scale = peak / sum(1.0 / k for k in harmonics)
    out = []
    ramp = n_samples(10)
    total = n_samples(ms)
    for n in range(total):
        t = n / RATE
        envelope = 0.6 + 0.4 * math.sin(2 * math.pi * 4.0 * t)
        edge = min(1.0, n / ramp, (total - n) / ramp)
        wave = sum(math.sin(2 * math.pi * k * f0 * t) / k for k in harmonics)
        out.append(scale * envelope * edge * wave)
    return out


def white_noise(ms: int, rms: float, seed: int = 1) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(0.0, rms) for _ in range(n_samples(ms))]


def hum(ms: int, amplitude: float) -> list[float]:
    return [
        amplitude
        * (math.sin(2 * math.pi * 50 * n / RATE) + 0.5 * math.sin(2 * math.pi * 150 * n / RATE))
        for n in range(n_samples(ms))
    ]


def mix(bed: list[float], signal: list[float], at_ms: int) -> list[float]:
    out = list(bed)
    start = n_samples(at_ms)
    for i, value in enumerate(signal):
        out[start + i] += value
    return out


def pcm(samples: list[float]) -> bytes:
    clipped = array("h", (max(-32768, min(32767, round(x))) for x in samples))
    if sys.byteorder == "big":
        clipped.byteswap()
    return clipped.tobytes()


def run(audio: bytes, chunk: int = 640, config: EndpointerConfig | None = None) -> list[VadEvent]:
    endpointer = Endpointer(config)
    events: list[VadEvent] = []
    for start in range(0, len(audio), chunk):
        events += endpointer.feed(audio[start : start + chunk])
    return events + endpointer.finish()


def kinds(events: list[VadEvent]) -> list[type]:
    return [type(event) for event in events]


def test_frame_features() -> None:
    assert frame_energy_dbfs(pcm([0.0] * 320)) == -100.0
    full = pcm([32767.0 if n % 2 else -32768.0 for n in range(320)])
    assert frame_energy_dbfs(full) == pytest.approx(0.0, abs=0.01)
    assert zero_crossing_rate(full) == 1.0
    tone = pcm([1000 * math.sin(2 * math.pi * 1000 * n / RATE + 0.1) for n in range(320)])
    assert zero_crossing_rate(tone) == pytest.approx(2000 / RATE, abs=0.01)
    assert zero_crossing_rate(pcm(white_noise(20, 1000))) > 0.4


def test_silence_produces_no_events() -> None:
    assert run(pcm(silence(3000))) == []


def test_one_second_of_speech_between_silences_is_one_utterance() -> None:
    audio = pcm(silence(500) + voiced(1000) + silence(1000))
    events = run(audio)
    assert kinds(events) == [SpeechStarted, SpeechEnded]
    started, ended = events
    assert isinstance(started, SpeechStarted) and isinstance(ended, SpeechEnded)
    assert abs(started.at_ms - 500) <= 40
    assert abs(ended.duration_ms - 1000) <= 100
    assert abs(ended.at_ms - 1500) <= 100
    assert not ended.forced
    assert len(ended.audio) == BYTES_PER_MS * (ended.duration_ms + PRE_ROLL_MS + POST_ROLL_MS)
    # The pre-roll reaches back before the onset, so the utterance audio starts with it.
    onset_byte = started.at_ms * BYTES_PER_MS
    assert ended.audio.startswith(audio[onset_byte - PRE_ROLL_MS * BYTES_PER_MS : onset_byte])


def test_steady_white_noise_is_not_speech() -> None:
    events = run(pcm(silence(500) + white_noise(3000, rms=1500) + silence(700)))
    assert not any(isinstance(event, SpeechEnded) for event in events)
    assert not [e for e in events if isinstance(e, SpeechStarted) and e.at_ms > 700]


def test_a_hum_that_starts_is_retracted_never_an_utterance() -> None:
    events = run(pcm(silence(500) + hum(2000, amplitude=4000) + silence(700)))
    # The onset of a hum looks like a voiced onset, so it is announced; but its level never
    # moves as speech does, so it is retracted and the caller has said nothing.
    assert kinds(events) == [SpeechStarted, NoiseIgnored]
    assert events[0].at_ms == 500


def test_speech_varies_at_once_a_hum_never() -> None:
    for audio, varies in ((voiced(300), True), (hum(300, amplitude=4000), False)):
        endpointer = Endpointer()
        endpointer.feed(pcm(silence(200) + audio))
        assert endpointer.speech_ms >= 160 and endpointer.speech_varies is varies


def test_speech_over_a_steady_noise_bed_is_detected() -> None:
    bed = white_noise(4500, rms=150)  # about -47 dBFS, ~22 dB below the speech peaks
    audio = pcm(mix(bed, voiced(1000), at_ms=2000))
    events = run(audio)
    assert kinds(events) == [SpeechStarted, SpeechEnded]
    started, ended = events
    assert isinstance(started, SpeechStarted) and isinstance(ended, SpeechEnded)
    assert abs(started.at_ms - 2000) <= 60
    assert abs(ended.duration_ms - 1000) <= 100


def test_a_click_is_ignored_not_an_utterance() -> None:
    audio = pcm(silence(500) + voiced(50) + silence(1000))
    events = run(audio)
    assert kinds(events) == [SpeechStarted, NoiseIgnored]
    ignored = events[1]
    assert isinstance(ignored, NoiseIgnored) and ignored.duration_ms <= 80
    # With a longer onset requirement the click never even announces itself (no barge-in).
    assert run(audio, config=EndpointerConfig(min_speech_ms=100)) == []


def test_a_short_pause_does_not_split_an_utterance_but_a_long_one_does() -> None:
    short_gap = pcm(silence(400) + voiced(600) + silence(300) + voiced(600) + silence(900))
    assert kinds(run(short_gap)) == [SpeechStarted, SpeechEnded]
    long_gap = pcm(silence(400) + voiced(600) + silence(900) + voiced(600) + silence(900))
    assert kinds(run(long_gap)) == [SpeechStarted, SpeechEnded] * 2


def test_chunk_boundaries_do_not_matter() -> None:
    bed = white_noise(4000, rms=200, seed=3)
    audio = pcm(mix(mix(bed, voiced(800), at_ms=1000), voiced(50), at_ms=2800))
    reference = run(audio, chunk=640)
    assert SpeechEnded in kinds(reference)
    assert run(audio, chunk=7) == reference
    assert run(audio, chunk=3200) == reference


def test_max_utterance_length_forces_an_end() -> None:
    config = EndpointerConfig(max_utterance_ms=1000)
    events = run(pcm(silence(300) + voiced(1600) + silence(900)), config=config)
    ended = [e for e in events if isinstance(e, SpeechEnded)]
    assert len(ended) == 2
    assert ended[0].forced and ended[0].duration_ms == 1000
    assert not ended[1].forced
    assert kinds(events)[:2] == [SpeechStarted, SpeechEnded]
    # The continuation carries no pre-roll, so no audio is handed over twice.
    assert len(ended[1].audio) == BYTES_PER_MS * (ended[1].duration_ms + POST_ROLL_MS)


def test_end_of_stream_closes_an_open_utterance() -> None:
    endpointer = Endpointer()
    events = endpointer.feed(pcm(silence(300) + voiced(800)))
    assert kinds(events) == [SpeechStarted]
    closing = endpointer.finish()
    assert kinds(closing) == [SpeechEnded]
    assert endpointer.finish() == []


@pytest.mark.parametrize(
    "fields",
    [{"min_speech_ms": 0}, {"hangover_ms": 100, "post_roll_ms": 200}, {"pre_roll_ms": -20}],
)
def test_bad_endpointer_config_is_refused(fields: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        EndpointerConfig(**fields)


def test_a_pause_is_announced_once_with_the_audio_the_end_will_carry() -> None:
    config = EndpointerConfig(hangover_ms=400, pause_ms=120)
    events = run(pcm(silence(300) + voiced(800) + silence(600)), config=config)
    assert kinds(events) == [SpeechStarted, SpeechPaused, SpeechEnded]
    paused, ended = events[1], events[2]
    assert isinstance(paused, SpeechPaused) and isinstance(ended, SpeechEnded)
    assert paused.audio == ended.audio  # nothing new was said: the early audio is final


def test_speech_after_a_pause_extends_the_utterance_and_the_next_pause_hands_all_of_it_over() -> (
    None
):
    config = EndpointerConfig(hangover_ms=400, pause_ms=120)
    audio = silence(300) + voiced(600) + silence(250) + voiced(600) + silence(250) + silence(400)
    events = run(pcm(audio), config=config)
    assert kinds(events) == [SpeechStarted, SpeechPaused, SpeechPaused, SpeechEnded]
    first, again, ended = events[1], events[2], events[3]
    assert isinstance(first, SpeechPaused) and isinstance(again, SpeechPaused)
    assert isinstance(ended, SpeechEnded)
    assert len(again.audio) > len(first.audio) + 600 * 32  # the second phrase is in it
    assert again.audio == ended.audio  # nothing was said after the second pause


def test_a_caller_who_keeps_pausing_is_handed_over_a_bounded_number_of_times() -> None:
    config = EndpointerConfig(hangover_ms=400, pause_ms=80)
    audio = silence(300)
    for _ in range(MAX_HANDOVERS + 2):
        audio += voiced(400) + silence(200)  # every gap is a pause, none ends it
    events = run(pcm(audio + silence(400)), config=config)
    handed_over = [event for event in events if isinstance(event, SpeechPaused)]
    assert len(handed_over) == MAX_HANDOVERS  # each re-recognizes all of it: no more
    (ended,) = [event for event in events if isinstance(event, SpeechEnded)]
    assert len(ended.audio) > len(handed_over[-1].audio)  # the rest comes with the end


def test_a_blip_never_announces_a_pause() -> None:
    events = run(
        pcm(silence(300) + voiced(100) + silence(600)), config=EndpointerConfig(pause_ms=120)
    )
    assert SpeechPaused not in kinds(events)
