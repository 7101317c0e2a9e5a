"""The fallback a speech request names: an agent's or scenario's `speech_fallback`, pinned in
the call's snapshot and sent with each segment and text (`fallback_provider`).

A request naming one pairs the worker's own provider (without its BATON_STT_FALLBACK /
BATON_TTS_FALLBACK) with the named one, as `FallbackRecognizer` / `FallbackSynthesizer` do for
the environment's pair; a request naming none keeps the environment's pair. Each named provider
is built once per worker and reused by every call that names it (a local model loads once).

A named provider the worker cannot set up (e.g. `azure` with no AZURE_SPEECH_KEY here) is a
configuration problem of this worker, not of the call: it is logged once and the worker's own
providers serve, so a missing fallback never fails speech that works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import structlog

from activities.provider_errors import ProviderError
from activities.speech_providers.base import SpeechRecognizer, SpeechSynthesizer
from activities.speech_providers.factory import recognizer_named, synthesizer_named
from activities.speech_providers.fallback import FallbackRecognizer, FallbackSynthesizer

log = structlog.get_logger("baton.speech")

P = TypeVar("P", SpeechRecognizer, SpeechSynthesizer)


class RequestedFallbacks:
    """The worker's recognizer and synthesizer, each paired with a fallback a request names."""

    def __init__(
        self,
        recognizer: SpeechRecognizer,
        synthesizer: SpeechSynthesizer,
        *,
        build_recognizer: Callable[[str], SpeechRecognizer] = recognizer_named,
        build_synthesizer: Callable[[str], SpeechSynthesizer] = synthesizer_named,
    ) -> None:
        self._recognizer, self._synthesizer = recognizer, synthesizer
        self._build_recognizer, self._build_synthesizer = build_recognizer, build_synthesizer
        self._recognizers: dict[str, SpeechRecognizer] = {}
        self._synthesizers: dict[str, SpeechSynthesizer] = {}

    def recognizer(self, fallback: str) -> SpeechRecognizer:
        """The recognizer for a segment whose request names `fallback` ("" for none)."""
        if not fallback:
            return self._recognizer
        if fallback not in self._recognizers:
            own = self._recognizer
            primary = own.primary if isinstance(own, FallbackRecognizer) else own
            built = _built(fallback, "recognizer", self._build_recognizer)
            self._recognizers[fallback] = (
                own if built is None else FallbackRecognizer(primary, built)
            )
        return self._recognizers[fallback]

    def synthesizer(self, fallback: str) -> SpeechSynthesizer:
        """The synthesizer for a text whose request names `fallback` ("" for none)."""
        if not fallback:
            return self._synthesizer
        if fallback not in self._synthesizers:
            own = self._synthesizer
            primary = own.primary if isinstance(own, FallbackSynthesizer) else own
            built = _built(fallback, "synthesizer", self._build_synthesizer)
            self._synthesizers[fallback] = (
                own if built is None else FallbackSynthesizer(primary, built)
            )
        return self._synthesizers[fallback]


def _built(provider: str, role: str, build: Callable[[str], P]) -> P | None:
    try:
        return build(provider)
    except ProviderError as error:
        log.warning(
            "a registry's speech fallback cannot be set up on this worker; its own providers "
            "serve instead",
            role=role,
            fallback=provider,
            error=str(error),
        )
        return None
