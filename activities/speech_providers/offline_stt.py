"""Offline speech recognition: PocketSphinx with the US-English model its wheel ships.

No network and no key. Building a decoder loads the acoustic model, dictionary and language
model (a fraction of a second to a second), so each configuration is built once per process,
lazily, and reused; a decoder is not reentrant, so each has a lock, and decoding runs in a
worker thread.

`vocabulary` swaps the general language model for a small n-gram model built from sentences
typical of the deployment: far better on those phrasings, blind to most other speech, so it is
an option for narrow menus, never the default. `benchmarks/bench_speech_accuracy.py` measures
both on held-out sentences.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import pocketsphinx  # type: ignore[import-untyped]
from pocketsphinx.lm import ArpaBoLM  # type: ignore[import-untyped]

from activities.provider_errors import ProviderError
from activities.speech_providers.base import SAMPLE_RATE, Recognition
from runtime.audio import pcm16_rms

__all__ = ["PocketsphinxRecognizer", "Transcript"]

#: Shorter than this is a click or a cough, not words; the decoder would only invent some.
MIN_AUDIO_SECONDS = 0.15
_MIN_BYTES = int(SAMPLE_RATE * MIN_AUDIO_SECONDS) * 2
SILENCE_RMS = 50.0
_DOMAIN = "domain"
#: Fillers and markers pocketsphinx may emit ("<sil>", "[SPEECH]", "+noise+"), never words the
#: caller said, are dropped by their leading character.


@dataclass(frozen=True, slots=True)
class Transcript:
    """One search's reading of an utterance."""

    words: tuple[str, ...]
    #: Mean lattice posterior of the words, 0..1. (The whole-path posterior is near zero for
    #: any long utterance, so it says little about whether the words are right.)
    confidence: float


class _Engine:
    """A decoder and the lock that serializes it."""

    def __init__(self, vocabulary: tuple[str, ...]) -> None:
        self.lock = threading.Lock()
        try:
            self.decoder = pocketsphinx.Decoder(samprate=SAMPLE_RATE, loglevel="FATAL")
            if vocabulary:
                self._use_domain_lm(vocabulary)
        except (RuntimeError, ValueError) as exc:
            raise ProviderError(f"pocketsphinx failed to start: {exc}", retryable=False) from exc

    def _use_domain_lm(self, vocabulary: tuple[str, ...]) -> None:
        # add_start: pocketsphinx rejects a model without sentence-boundary tokens.
        builder = ArpaBoLM(text="\n".join(vocabulary), case="lower", add_start=True)
        builder.compute()
        arpa = io.StringIO()
        builder.write(arpa)
        # NGramModel reads only from a path; the file lives just long enough to be parsed.
        fd, path = tempfile.mkstemp(suffix=".arpa")
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(arpa.getvalue())
            lm = pocketsphinx.NGramModel(self.decoder.config, self.decoder.logmath, path)
        finally:
            os.unlink(path)
        self.decoder.add_lm(_DOMAIN, lm)
        self.decoder.activate_search(_DOMAIN)

    def decode(self, pcm: bytes) -> Transcript:
        with self.lock:
            self.decoder.start_utt()
            self.decoder.process_raw(pcm, full_utt=True)
            self.decoder.end_utt()
            if self.decoder.hyp() is None:
                return Transcript((), 0.0)
            words, posteriors = [], []
            for segment in self.decoder.seg():
                word = segment.word.split("(")[0]  # alternate pronunciations read "word(2)"
                if not word.startswith(("+", "[", "<")):
                    words.append(word)
                    posteriors.append(float(segment.prob))
        confidence = sum(posteriors) / len(posteriors) if posteriors else 0.0
        return Transcript(tuple(words), min(1.0, max(0.0, confidence)))


_ENGINES: dict[str, _Engine] = {}
_ENGINES_LOCK = threading.Lock()


def _engine(vocabulary: tuple[str, ...]) -> _Engine:
    key = hashlib.sha256("\n".join(vocabulary).encode()).hexdigest()
    with _ENGINES_LOCK:  # two first calls must not both pay for (and keep) a decoder
        if key not in _ENGINES:
            _ENGINES[key] = _Engine(vocabulary)
        return _ENGINES[key]


class PocketsphinxRecognizer:
    """`SpeechRecognizer` on the embedded PocketSphinx US-English model."""

    name = "offline-pocketsphinx"

    def __init__(self, *, vocabulary: Sequence[str] = ()) -> None:
        self.vocabulary = tuple(line.strip() for line in vocabulary if line.strip())

    def warm_up(self) -> None:
        """Build the decoder now (blocking) rather than on the first caller's turn."""
        _engine(self.vocabulary)

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        if not locale.lower().startswith("en"):
            raise ProviderError(f"no offline recognizer model for {locale!r}", retryable=False)
        pcm = pcm16_16k[: len(pcm16_16k) // 2 * 2]
        # Digital silence makes the decoder hallucinate a word; nobody speaks below -56 dBFS.
        if len(pcm) < _MIN_BYTES or pcm16_rms(pcm) < SILENCE_RMS:
            return Recognition("", 0.0)
        best = await asyncio.to_thread(self.transcribe, pcm)
        return Recognition(" ".join(best.words), best.confidence)

    def transcribe(self, pcm16_16k: bytes) -> Transcript:
        """Blocking: decode one utterance (for callers already on a worker thread)."""
        return _engine(self.vocabulary).decode(pcm16_16k)
