"""Silero VAD v6 as the gateway's per-frame speech decision (the default VAD).

The model is the ONNX file that ships inside faster-whisper's package, so nothing is downloaded
at run time; its SHA-256 is checked before first use, like the Whisper weights, so another file
can never load under this name. It runs on onnxruntime with one thread, one session per process
(onnxruntime sessions may be run from any thread); the recurrent state is kept per call.

The model takes 512-sample windows (32 ms at 16 kHz) after 64 samples of context from the window
before, while calls speak in 20 ms frames: :class:`SileroClassifier` collects frames into
windows and each frame is judged by the newest window's probability. A window is only run when
some of its frames passed a cheap energy gate (above -50 dBFS and a few dB over an adaptive
noise floor, or speech already under way), so quiet stretches and steady noise beds cost one
dot product per frame, as with the energy VAD. Measured (benchmarks/bench_voice.py with
``--noise-dbfs -40``): running the model on every window took the gateway from under 1% to
1-2% of a core per call; with the floor it stays within noise of the energy VAD.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import threading
from pathlib import Path
from typing import Final

import numpy as np
import onnxruntime  # type: ignore[import-untyped]

from media_gateway.vad import VadConfig, frame_energy_dbfs

#: SHA-256 of silero_vad_v6.onnx as shipped in faster-whisper 1.2 (faster_whisper/assets).
MODEL_SHA256: Final = "4cbf549b8326f60f80f2536d9eefeb450a9abe83365a098031c89719f1be17d2"
WINDOW_SAMPLES: Final = 512
CONTEXT_SAMPLES: Final = 64
_WINDOW_BYTES: Final = WINDOW_SAMPLES * 2
_STATE_SHAPE: Final = (1, 1, 128)
#: How far over the noise floor a frame must be to wake the model: below the energy VAD's own
#: 10 dB margin, so speech's softer frames at 10 dB SNR still reach Silero.
GATE_MARGIN_DB: Final = 4.0
_FLOOR_RISE = 1.0 - math.exp(-20 / 400)  # 20 ms frames: the floor climbs to a bed in ~0.4 s
_FLOOR_FALL = 1.0 - math.exp(-20 / 40)  # ...and follows quieter frames almost at once

_session: onnxruntime.InferenceSession | None = None
_session_lock = threading.Lock()


class SileroModelError(Exception):
    """The Silero model is missing, or is not the file Baton was measured with."""


def model_path() -> Path:
    """Where faster-whisper's package keeps the model, found without importing faster-whisper
    (which would load CTranslate2 into the gateway for nothing)."""
    spec = importlib.util.find_spec("faster_whisper")
    if spec is None or not spec.submodule_search_locations:
        raise SileroModelError("the Silero VAD model is not installed (pip install faster-whisper)")
    return Path(next(iter(spec.submodule_search_locations))) / "assets" / "silero_vad_v6.onnx"


def check_digest(path: Path, expected: str = MODEL_SHA256) -> bytes:
    """The model file's bytes, once its SHA-256 is the one pinned here."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SileroModelError(f"cannot read the Silero VAD model: {error.strerror}") from error
    digest = hashlib.sha256(data).hexdigest()
    if digest != expected:
        raise SileroModelError(
            f"{path.name} is not the Silero VAD v6 model Baton was measured with "
            f"(sha256 {digest[:16]}…); reinstall faster-whisper"
        )
    return data


def load_session(path: Path | None = None) -> onnxruntime.InferenceSession:
    """The process's Silero session, loaded (and digest-checked) on first use."""
    global _session
    with _session_lock:
        if _session is None:
            options = onnxruntime.SessionOptions()
            # One thread: many calls share the cores, and one window is ~0.1 ms of work.
            options.intra_op_num_threads = options.inter_op_num_threads = 1
            options.log_severity_level = 3
            _session = onnxruntime.InferenceSession(
                check_digest(path or model_path()),
                sess_options=options,
                providers=["CPUExecutionProvider"],
            )
        return _session


class SileroClassifier:
    """Per-call speech decision for 20 ms PCM16 frames from Silero's speech probability.

    Offers what :class:`media_gateway.vad.Endpointer` reads from a classifier: ``is_speech``,
    ``last_energy_dbfs`` (for its level-spread hum check) and ``config``.
    """

    def __init__(
        self,
        config: VadConfig | None = None,
        *,
        threshold: float = 0.5,
        session: onnxruntime.InferenceSession | None = None,
    ) -> None:
        self.config = config or VadConfig()
        self.threshold = threshold
        # Once speech is under way it continues down to a lower probability (the same
        # hysteresis Silero's own segmenter uses), so soft syllables do not split a sentence.
        self.release_threshold = threshold - 0.15
        self.last_energy_dbfs = -100.0
        self.noise_floor_dbfs = self.config.initial_floor_dbfs
        self.probability = 0.0
        #: Windows the model actually ran on (the others were quiet and cost nothing).
        self.windows_run = 0
        self._session = session or load_session()
        self._pending = bytearray()
        self._gate_seen = False
        self._in_speech = False
        self._reset_state()

    def _reset_state(self) -> None:
        self._h = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._c = np.zeros(_STATE_SHAPE, dtype=np.float32)
        self._context = np.zeros(CONTEXT_SAMPLES, dtype=np.float32)

    def is_speech(self, frame: bytes) -> bool:
        """Classify one 20 ms frame (probability from the newest complete window)."""
        energy = self.last_energy_dbfs = frame_energy_dbfs(frame)
        floor = self.noise_floor_dbfs
        gate = energy >= self.config.min_energy_dbfs and (
            self._in_speech or energy >= floor + GATE_MARGIN_DB
        )
        if not self._in_speech or energy < floor:
            rate = _FLOOR_FALL if energy < floor else _FLOOR_RISE
            self.noise_floor_dbfs += rate * (energy - floor)
        self._gate_seen |= gate
        self._pending += frame
        if len(self._pending) >= _WINDOW_BYTES:
            window = bytes(self._pending[:_WINDOW_BYTES])
            del self._pending[:_WINDOW_BYTES]
            if self._gate_seen:
                self.probability = self._run(window)
            else:
                # A quiet window: the model is not run. Its memory is kept: having heard the
                # room's noise before, it is slower to take the next burst of it for a voice.
                self.probability = 0.0
            self._gate_seen = gate
        bar = self.release_threshold if self._in_speech else self.threshold
        self._in_speech = self.probability >= bar
        return energy >= self.config.min_energy_dbfs and self._in_speech

    def _run(self, window: bytes) -> float:
        samples = np.frombuffer(window, dtype="<i2").astype(np.float32) / 32768.0
        model_input = np.concatenate((self._context, samples))[np.newaxis, :]
        probability, self._h, self._c = self._session.run(
            None, {"input": model_input, "h": self._h, "c": self._c}
        )
        self._context = samples[-CONTEXT_SAMPLES:]
        self.windows_run += 1
        return float(probability.reshape(-1)[0])
