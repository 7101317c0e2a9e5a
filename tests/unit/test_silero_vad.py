"""Silero VAD v6 as the gateway's speech decision: real model, offline voice, generated noise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from activities.speech_providers.offline_tts import EspeakSynthesizer
from benchmarks.noise_beds import clatter, street
from media_gateway.gateway_config import GatewayConfig
from media_gateway.silero_vad import (
    MODEL_SHA256,
    SileroClassifier,
    SileroModelError,
    check_digest,
    model_path,
)
from media_gateway.vad import (
    FRAME_BYTES,
    Endpointer,
    FrameClassifier,
    SpeechEnded,
    SpeechStarted,
    VadEvent,
    frame_energy_dbfs,
)

RATE = 16_000
#: The noise sits at -36 dBFS: 10 dB under a caller at a telephone's usual -26 dBFS.
NOISE_DBFS = -36.0


def as_pcm(samples: np.ndarray) -> bytes:
    return np.clip(np.round(samples), -32768, 32767).astype("<i2").tobytes()


def noise_at(level_dbfs: float, bed: np.ndarray) -> bytes:
    return as_pcm(bed * 32768 * 10 ** (level_dbfs / 20))  # beds come at unit RMS


def run(audio: bytes, endpointer: Endpointer) -> list[VadEvent]:
    events: list[VadEvent] = []
    for start in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES):
        events += endpointer.feed(audio[start : start + FRAME_BYTES])
    return events + endpointer.finish()


def silero_endpointer() -> Endpointer:
    endpointer = GatewayConfig(media_address="127.0.0.1:0").new_endpointer()
    assert isinstance(endpointer.classifier, SileroClassifier)
    return endpointer


async def test_silero_hears_the_offline_voice_as_one_utterance() -> None:
    text = "I would like to check the balance on my checking account."
    chunks = [c.pcm16_16k async for c in EspeakSynthesizer().synthesize(text, voice="en-us+f2")]
    speech = b"".join(chunks)
    audio = bytes(RATE) + speech + bytes(2 * RATE)  # 0.5 s of quiet, the line, 1 s of quiet
    events = run(audio, silero_endpointer())
    assert [type(e) for e in events if not isinstance(e, SpeechStarted)][-1:] == [SpeechEnded]
    ended = [e for e in events if isinstance(e, SpeechEnded)]
    assert len(ended) == 1
    speech_ms = len(speech) // 32
    assert ended[0].duration_ms >= 0.6 * speech_ms  # most of the sentence, not a fragment


@pytest.mark.parametrize("bed", [street, clatter], ids=["street", "clatter"])
def test_silero_finds_no_speech_in_street_noise_or_clatter(bed: object) -> None:
    assert callable(bed)
    audio = noise_at(NOISE_DBFS, bed(30.0, np.random.default_rng(14)))
    endpointer = silero_endpointer()
    events = run(audio, endpointer)
    classifier = endpointer.classifier
    assert isinstance(classifier, SileroClassifier)
    # The noise is loud and varied enough to fool the energy VAD (offline-light) into
    # announcing speech, and Silero judged it (the energy gate opened on it)...
    light = GatewayConfig(media_address="127.0.0.1:0", vad="offline-light").new_endpointer()
    assert any(isinstance(e, SpeechStarted) for e in run(audio, light))
    assert classifier.windows_run > 0.2 * (len(audio) // 1024)
    # ...but nothing Silero heard was speech: no barge-in announced, no utterance sent.
    assert events == []


async def test_with_silero_the_first_speech_frame_pauses_a_reply_the_energy_vad_waits() -> None:
    chunks = [c.pcm16_16k async for c in EspeakSynthesizer().synthesize("Okay.")]
    audio = bytes(RATE) + b"".join(chunks)  # 0.5 s of quiet, then the word

    def started_at(endpointer: Endpointer) -> tuple[int, int]:
        """The onset `SpeechStarted` names, and the stream time when it was announced."""
        for start in range(0, len(audio) - FRAME_BYTES + 1, FRAME_BYTES):
            for event in endpointer.feed(audio[start : start + FRAME_BYTES]):
                if isinstance(event, SpeechStarted):
                    return event.at_ms, endpointer.position_ms
        raise AssertionError("no SpeechStarted")

    onset, announced = started_at(silero_endpointer())
    assert announced - onset == 20  # announced with the frame it heard speech in
    light = GatewayConfig(media_address="127.0.0.1:0", vad="offline-light").new_endpointer()
    light_onset, light_announced = started_at(light)
    assert light_announced - light_onset == 60  # the energy VAD's 60 ms of proof


def test_quiet_frames_never_run_the_model() -> None:
    classifier = SileroClassifier()
    hiss = as_pcm(np.random.default_rng(3).normal(0.0, 20.0, 3 * RATE))  # about -64 dBFS
    frames = [hiss[i : i + FRAME_BYTES] for i in range(0, len(hiss), FRAME_BYTES)]
    assert all(frame_energy_dbfs(f) < -50 for f in frames)
    assert not any(classifier.is_speech(f) for f in frames)
    assert classifier.windows_run == 0


def test_the_digest_check_refuses_another_file(tmp_path: Path) -> None:
    impostor = tmp_path / "silero_vad_v6.onnx"
    impostor.write_bytes(model_path().read_bytes()[:-1] + b"\0")  # one byte changed
    with pytest.raises(SileroModelError, match="not the Silero VAD v6 model"):
        check_digest(impostor)
    with pytest.raises(SileroModelError, match="cannot read"):
        check_digest(tmp_path / "missing.onnx")
    assert check_digest(model_path()) == model_path().read_bytes()  # the shipped file passes
    assert len(MODEL_SHA256) == 64


def test_offline_light_selects_the_energy_vad_and_offline_is_the_default() -> None:
    light = GatewayConfig(media_address="127.0.0.1:0", vad="offline-light").new_endpointer()
    assert type(light.classifier) is FrameClassifier
    assert GatewayConfig(media_address="127.0.0.1:0").vad == "offline"
    with pytest.raises(ValueError, match="unknown VAD 'loud'"):
        GatewayConfig(media_address="127.0.0.1:0", vad="loud")
