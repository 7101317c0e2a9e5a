"""OpenAI (and Azure OpenAI) audio endpoints behind the speech protocols.

* `OpenAIRecognizer` posts one finished segment, wrapped in a WAV header, to
  `audio/transcriptions`. The endpoint reports no confidence, so `Recognition.confidence` is 0.0.
* `OpenAISynthesizer` asks `audio/speech` for raw PCM (24 kHz, 16-bit mono) one sentence at a
  time, so the caller hears the first sentence while the next is not even requested yet, and
  a barge-in never pays for sentences nobody will hear. Audio is resampled to 16 kHz as it
  streams in. The endpoint has no language field: the agent's locale (carried by its
  Azure-style voice name) goes in `instructions`, which only the gpt-4o TTS models take.

`text_end` convention: every chunk of a sentence carries the sentence's *start* offset except
the last one, which carries its end (the start of the next sentence, or `len(text)`). A
barge-in mid-sentence therefore counts that sentence as unheard, which errs on the side of
the caller having heard less than they did, never more.

The SDK's own retries are off (`activities.openai_clients`): Temporal's retry policy owns
retries, and every failure is a `ProviderError` classified the way chat-model errors are
(timeouts, dropped connections, 408/409/429 and 5xx retry; 400/401/403/404 do not).
"""

from __future__ import annotations

import io
import re
import wave
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar

from openai import AsyncOpenAI

from activities.chat_models.openai_wire import classify_exception
from activities.openai_clients import DEFAULT_AZURE_API_VERSION, azure_openai_client, openai_client
from activities.provider_errors import ProviderError
from activities.speech_providers.base import SAMPLE_RATE, Recognition, SpeechChunk
from activities.speech_providers.voices import voice_locale
from runtime.resampling import StreamResampler

T = TypeVar("T")

DEFAULT_STT_MODEL = "gpt-4o-mini-transcribe"
DEFAULT_TTS_MODEL = "gpt-4o-mini-tts"
DEFAULT_VOICE = "alloy"
DEFAULT_TIMEOUT_SECONDS = 30.0
#: What `response_format="pcm"` returns: raw 16-bit mono little-endian at 24 kHz.
OPENAI_PCM_RATE = 24000
#: Voices the speech endpoint knows. Agents name Azure-style voices (en-US-JennyNeural), which
#: OpenAI would reject with a 400, so anything else falls back to the configured voice.
OPENAI_VOICES = frozenset(
    {
        "alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx",
        "sage", "shimmer", "verse",
    }
)  # fmt: skip
#: Audio is resampled in pieces of this many 24 kHz bytes (20 ms), through one streaming
#: resampler per sentence, flushed at its end.
_PIECE = 480 * 2
_RATE = re.compile(r"^([+-]?)(\d{1,3})%$")
# A sentence ends at ., !, ? or … (possibly followed by closing quotes or brackets) followed by
# whitespace, or at a line break. Abbreviations like "Dr. Smith" split early; harmless, since
# both halves are still spoken in order.
_SENTENCE_END = re.compile(r"(?:[.!?…]+[\"')\]”’]*\s+|\n+\s*)")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Spans `(start, end)` covering `text` end to end, one per sentence.

    Each span keeps the whitespace that follows its sentence, so spans are contiguous and the
    last one ends at `len(text)`; spans with nothing to say are merged into a neighbour.
    """
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if text[start:end].strip():
            spans.append((start, end))
            start = end
        elif spans:  # leading blank lines belong to the next sentence; others to the last one
            spans[-1] = (spans[-1][0], end)
            start = end
    if start < len(text):
        if text[start:].strip() or not spans:
            spans.append((start, len(text)))
        else:
            spans[-1] = (spans[-1][0], len(text))
    return spans


def rate_to_speed(rate: str) -> float:
    """`"+10%"` -> 1.1, `"-25%"` -> 0.75; clamped to the endpoint's 0.25..4.0."""
    match = _RATE.match(rate.strip())
    if match is None:
        raise ProviderError(f"rate must look like '+10%' or '-20%', got {rate!r}", retryable=False)
    percent = int(match.group(2)) * (-1 if match.group(1) == "-" else 1)
    return min(4.0, max(0.25, 1.0 + percent / 100.0))


def pcm_to_wav(pcm16_16k: bytes) -> bytes:
    """PCM16 mono 16 kHz wrapped in a RIFF/WAVE header, as the transcription endpoint wants."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(SAMPLE_RATE)
        wav.writeframes(pcm16_16k)
    return out.getvalue()


def classified(exc: BaseException, *, provider: str) -> ProviderError:
    """`exc` as a `ProviderError`, classified as the chat models classify SDK failures."""
    if isinstance(exc, ProviderError):
        return exc  # raised by this module, already classified
    return classify_exception(exc, provider=provider)


class _OpenAIAudio:
    """What both roles share: the client, its provider label and SDK-call error mapping."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None,
        model: str,
        timeout: float,
        client: AsyncOpenAI | None,
        provider: str,
    ) -> None:
        self.provider = provider
        self.model = model
        self.name = f"{provider}:{model}"
        self._client = client or openai_client(api_key=api_key, base_url=base_url, timeout=timeout)

    async def aclose(self) -> None:
        """Close the HTTP connections (the provider is unusable afterwards)."""
        await self._client.close()

    async def _sdk(self, pending: Awaitable[T]) -> T:
        try:
            return await pending
        except Exception as exc:
            raise classified(exc, provider=self.provider) from exc


class OpenAIRecognizer(_OpenAIAudio):
    """Speech to text through `audio/transcriptions`."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        model: str = DEFAULT_STT_MODEL,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        client: AsyncOpenAI | None = None,
        provider: str = "openai",
    ) -> None:
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            model=model,
            timeout=timeout,
            client=client,
            provider=provider,
        )

    @classmethod
    def azure(
        cls,
        *,
        endpoint: str,
        api_key: str,
        deployment: str,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> OpenAIRecognizer:
        """An Azure OpenAI transcription deployment (e.g. a whisper or gpt-4o-transcribe one)."""
        # Azure routes by deployment, so the deployment name stands in for the model name.
        client = azure_openai_client(
            endpoint=endpoint,
            api_key=api_key,
            deployment=deployment,
            api_version=api_version,
            timeout=timeout,
        )
        return cls(api_key=api_key, model=deployment, client=client, provider="azure-openai")

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        if len(pcm16_16k) < 2:
            return Recognition(text="", confidence=0.0)  # nothing to send; the API would 400
        pcm = pcm16_16k[: len(pcm16_16k) // 2 * 2]
        params: dict[str, Any] = {
            "model": self.model,
            "file": ("segment.wav", pcm_to_wav(pcm), "audio/wav"),
        }
        language = locale.split("-")[0].strip().lower()
        if language:  # ISO-639-1 is all the endpoint takes; it improves accuracy and latency
            params["language"] = language
        result = await self._sdk(self._client.audio.transcriptions.create(**params))
        return Recognition(text=str(getattr(result, "text", "")).strip(), confidence=0.0)


class OpenAISynthesizer(_OpenAIAudio):
    """Text to speech through `audio/speech`, one streamed request per sentence."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        model: str = DEFAULT_TTS_MODEL,
        voice: str = DEFAULT_VOICE,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        client: AsyncOpenAI | None = None,
        provider: str = "openai",
    ) -> None:
        """`voice` is used whenever the caller asks for a voice the endpoint does not know."""
        super().__init__(
            api_key=api_key,
            base_url=base_url,
            model=model,
            timeout=timeout,
            client=client,
            provider=provider,
        )
        self.voice = voice

    @classmethod
    def azure(
        cls,
        *,
        endpoint: str,
        api_key: str,
        deployment: str,
        voice: str = DEFAULT_VOICE,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> OpenAISynthesizer:
        """An Azure OpenAI speech deployment (e.g. a tts or gpt-4o-mini-tts one)."""
        # Azure routes by deployment, so the deployment name stands in for the model name.
        client = azure_openai_client(
            endpoint=endpoint,
            api_key=api_key,
            deployment=deployment,
            api_version=api_version,
            timeout=timeout,
        )
        return cls(
            api_key=api_key, model=deployment, voice=voice, client=client, provider="azure-openai"
        )

    def pick_voice(self, voice: str) -> str:
        """The requested voice if the endpoint knows it, else the configured one."""
        wanted = voice.strip().lower()
        return wanted if wanted in OPENAI_VOICES else self.voice

    def locale_instructions(self, voice: str) -> str:
        """What tells the model which locale to speak, from an Azure-style voice name ("" if
        the name carries none or the model takes no instructions).

        OpenAI's voices are multilingual and would otherwise guess the accent from the text;
        tts-1 and tts-1-hd refuse `instructions`, and an Azure deployment's name does not say
        which model it runs, so only a name that says gpt-4o gets them.
        """
        locale = voice_locale(voice.strip())
        if not locale or "gpt-4o" not in self.model.lower():
            return ""
        return f"Speak in the language and accent of the BCP-47 locale {locale}."

    async def synthesize(
        self, text: str, *, voice: str = "", rate: str = "+0%"
    ) -> AsyncIterator[SpeechChunk]:
        speed = rate_to_speed(rate)
        chosen = self.pick_voice(voice)
        instructions = self.locale_instructions(voice)
        for start, end in split_sentences(text):
            sentence = text[start:end].strip()
            if not sentence:  # whitespace only: nothing to say, but the stream must reach `end`
                yield SpeechChunk(b"", end)
                continue
            async for pcm, last in self._sentence_audio(sentence, chosen, speed, instructions):
                yield SpeechChunk(pcm, end if last else start)

    async def _sentence_audio(
        self, sentence: str, voice: str, speed: float, instructions: str
    ) -> AsyncIterator[tuple[bytes, bool]]:
        """16 kHz pieces of one sentence as they stream in; `True` marks the final piece.

        At least one piece is held back until more audio (or the end of the stream) arrives,
        so the final piece is known to be final and carries the sentence's end offset.
        """
        params: dict[str, Any] = {
            "model": self.model,
            "voice": voice,
            "input": sentence,
            "response_format": "pcm",
        }
        if speed != 1.0:  # some models ignore or reject `speed`; only send it when asked
            params["speed"] = speed
        if instructions:
            params["instructions"] = instructions
        buffer = bytearray()
        resampler = StreamResampler(OPENAI_PCM_RATE, SAMPLE_RATE)
        try:
            async with self._client.audio.speech.with_streaming_response.create(
                **params
            ) as response:
                async for data in response.iter_bytes():
                    buffer += data
                    while len(buffer) >= 2 * _PIECE:
                        piece = bytes(buffer[:_PIECE])
                        del buffer[:_PIECE]
                        if pcm := resampler.process(piece):  # empty while the filter fills
                            yield pcm, False
        except Exception as exc:
            # Only SDK and transport failures land here: a consumer that stops early raises
            # GeneratorExit or CancelledError at the `yield`, which are not Exceptions.
            raise classified(exc, provider=self.provider) from exc
        tail = bytes(buffer[: len(buffer) // 2 * 2])  # a truncated last sample is dropped
        yield resampler.process(tail, last=True), True
