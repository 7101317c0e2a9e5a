"""The two speech roles and what they exchange. Audio is always PCM16 mono 16 kHz little-endian.

A recognizer turns one finished caller segment into text. A synthesizer turns reply text into a
stream of audio chunks, each saying how far into the text it reaches, so the gateway can report
exactly how much of a reply the caller heard when a barge-in cut it short.

Providers raise `activities.provider_errors.ProviderError` with `retryable` set, and the
activity maps it onto Temporal's retry policy (a bad key never retries; a dropped connection
does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

SAMPLE_RATE = 16000


@dataclass(frozen=True, slots=True)
class Recognition:
    text: str
    #: 0..1; providers without a score report 0.0 rather than inventing one.
    confidence: float


@dataclass(frozen=True, slots=True)
class SpeechChunk:
    """A piece of synthesized audio and the text it completes.

    ``text_end`` is the character offset in the synthesized text reached once this chunk has
    played (non-decreasing across a stream; the last chunk reaches ``len(text)``).
    """

    pcm16_16k: bytes
    text_end: int


@runtime_checkable
class SpeechRecognizer(Protocol):
    name: str

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        """The words of a finished segment. `expected`: the backchannels ("mm-hmm", "okay")
        of words said over a paused reply, which a provider may use to choose between its
        readings (offline Whisper reads a short unclear one again) or to bias its recognition
        (Azure's phrase list); none returns them unheard. OpenAI's and PocketSphinx's ignore
        them: a prompt biased that way turned noise into "Yeah." offline (PERFORMANCE.md).
        """
        ...


@runtime_checkable
class SpeechSynthesizer(Protocol):
    name: str

    def synthesize(
        self, text: str, *, voice: str = "", rate: str = "+0%"
    ) -> AsyncIterator[SpeechChunk]:
        """Stream `text` as audio, sentence by sentence where the provider allows."""
        ...
