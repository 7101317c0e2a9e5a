"""A second recognizer or synthesizer for when the first one is down (`BATON_STT_FALLBACK`,
`BATON_TTS_FALLBACK`), e.g. Azure Speech backed by the offline Whisper and espeak-ng.

Only failures a retry could cure (5xx, timeouts, refused or dropped connections: `retryable`)
go to the fallback; a wrong key or a bad request is a configuration error the fallback would
hide, so it still fails. A synthesizer falls back only before its first audio: once the caller
heard part of a reply in one voice, a second voice would say it again from the start.

A failure the fallback covers never reaches the activity's error mapping, so it is counted
here, in `baton_provider_errors` under the primary's name: an SRE sees the outage while the
caller hears nothing of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import structlog

from activities.provider_errors import ProviderError, named
from activities.speech_providers.base import (
    Recognition,
    SpeechChunk,
    SpeechRecognizer,
    SpeechSynthesizer,
)
from contracts.metrics import PROVIDER_ERRORS
from runtime.baton_metrics import count

log = structlog.get_logger("baton.speech")


def _covered(error: ProviderError) -> None:
    """Count a primary's failure its fallback is about to cover (always a retryable one)."""
    count(PROVIDER_ERRORS, provider=error.provider or "unknown", retryable="true")


class FallbackRecognizer:
    """`primary`, or `fallback` for a segment the primary failed on."""

    def __init__(self, primary: SpeechRecognizer, fallback: SpeechRecognizer) -> None:
        self.primary, self.fallback = primary, fallback
        self.name = f"{primary.name}|{fallback.name}"

    def warm_up(self) -> None:
        """Load a local fallback's model at start, as the worker does for a primary one."""
        for recognizer in (self.primary, self.fallback):
            warm_up = getattr(recognizer, "warm_up", None)
            if warm_up is not None:
                warm_up()

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        # Each failure names the provider that failed, not this pair (a metric label per pair).
        try:
            return await self.primary.recognize(pcm16_16k, locale=locale, expected=expected)
        except ProviderError as error:
            if not named(error, self.primary.name).retryable:
                raise
            _covered(error)
            log.warning(
                "recognizer failed; its fallback hears this segment",
                primary=self.primary.name,
                fallback=self.fallback.name,
                error=str(error),
            )
            try:
                return await self.fallback.recognize(pcm16_16k, locale=locale, expected=expected)
            except ProviderError as second:
                raise named(second, self.fallback.name) from error


class FallbackSynthesizer:
    """`primary`, or `fallback` for a text the primary failed on before any audio."""

    def __init__(self, primary: SpeechSynthesizer, fallback: SpeechSynthesizer) -> None:
        self.primary, self.fallback = primary, fallback
        self.name = f"{primary.name}|{fallback.name}"

    async def synthesize(
        self, text: str, *, voice: str = "", rate: str = "+0%"
    ) -> AsyncIterator[SpeechChunk]:
        stream = self.primary.synthesize(text, voice=voice, rate=rate)
        try:
            first = await anext(stream)
        except StopAsyncIteration:
            return
        except ProviderError as error:
            if not named(error, self.primary.name).retryable:
                raise
            _covered(error)
            log.warning(
                "synthesizer failed; its fallback speaks this text",
                primary=self.primary.name,
                fallback=self.fallback.name,
                error=str(error),
            )
            try:
                async for chunk in self.fallback.synthesize(text, voice=voice, rate=rate):
                    yield chunk
            except ProviderError as second:
                raise named(second, self.fallback.name) from error
            return
        yield first
        try:
            async for chunk in stream:
                yield chunk
        except ProviderError as error:
            named(error, self.primary.name)
            raise
