"""OpenAI audio providers against a real OpenAI-compatible HTTP server on 127.0.0.1.

The fake (tests/fakes/openai_audio_server.py) parses the SDK's multipart upload and streams
PCM with chunked transfer encoding, so these tests cover what the SDK really sends and how
its answers and failures come back.
"""

from __future__ import annotations

import asyncio
import io
import struct
import wave
from collections.abc import AsyncIterator
from typing import Any

import pytest

from activities.provider_errors import ProviderError
from activities.speech_providers.base import (
    Recognition,
    SpeechChunk,
    SpeechRecognizer,
    SpeechSynthesizer,
)
from activities.speech_providers.factory import recognizer_from_env, synthesizer_from_env
from activities.speech_providers.openai_audio import (
    OpenAIRecognizer,
    OpenAISynthesizer,
    rate_to_speed,
    split_sentences,
)
from tests.fakes.openai_audio_server import (
    FakeOpenAIAudioServer,
    error,
    speech,
    stall,
    transcript,
)

pytestmark = pytest.mark.timeout(60)

SEGMENT = struct.pack("<3200h", *range(-1600, 1600))  # 200 ms at 16 kHz
PCM_24K_100MS = struct.pack("<2400h", *([500] * 2400))  # 100 ms at 24 kHz


async def collect(chunks: AsyncIterator[SpeechChunk]) -> list[SpeechChunk]:
    return [chunk async for chunk in chunks]


@pytest.fixture(autouse=True)
async def _close_clients(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """Close every provider's HTTP client before the test's event loop ends."""
    built: list[OpenAIRecognizer | OpenAISynthesizer] = []
    for cls in (OpenAIRecognizer, OpenAISynthesizer):
        original = cls.__init__

        def init(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> None:
            _original(self, *args, **kwargs)
            built.append(self)

        monkeypatch.setattr(cls, "__init__", init)
    yield
    for provider in built:
        await provider.aclose()


# -- recognition ---------------------------------------------------------------------------


async def test_transcription_uploads_a_16k_wav_and_returns_the_text() -> None:
    with FakeOpenAIAudioServer([transcript(" Block my card. ")]) as server:
        recognizer = OpenAIRecognizer(api_key="k", base_url=server.base_url, model="stt-model")
        assert isinstance(recognizer, SpeechRecognizer)
        result = await recognizer.recognize(SEGMENT, locale="de-DE")
        await recognizer.aclose()
    assert result == Recognition(text="Block my card.", confidence=0.0)
    request = server.requests[0]
    assert request.path == "/v1/audio/transcriptions"
    assert request.fields["model"] == "stt-model"
    assert request.fields["language"] == "de"
    filename, content_type, data = request.files["file"]
    assert (filename, content_type) == ("segment.wav", "audio/wav")
    with wave.open(io.BytesIO(data)) as wav:
        assert (wav.getnchannels(), wav.getsampwidth(), wav.getframerate()) == (1, 2, 16000)
        assert wav.readframes(wav.getnframes()) == SEGMENT


async def test_transcription_of_nothing_skips_the_service() -> None:
    with FakeOpenAIAudioServer() as server:
        recognizer = OpenAIRecognizer(api_key="k", base_url=server.base_url)
        assert await recognizer.recognize(b"") == Recognition(text="", confidence=0.0)
    assert server.requests == []


async def test_transcription_server_error_is_retryable() -> None:
    with FakeOpenAIAudioServer([error(500, "boom", kind="server_error")]) as server:
        recognizer = OpenAIRecognizer(api_key="k", base_url=server.base_url)
        with pytest.raises(ProviderError, match="500") as caught:
            await recognizer.recognize(SEGMENT)
    assert caught.value.retryable is True


async def test_transcription_bad_key_is_not_retryable() -> None:
    with FakeOpenAIAudioServer([error(401, "Incorrect API key provided")]) as server:
        recognizer = OpenAIRecognizer(api_key="bad", base_url=server.base_url)
        with pytest.raises(ProviderError, match="401") as caught:
            await recognizer.recognize(SEGMENT)
    assert caught.value.retryable is False


async def test_transcription_timeout_is_retryable() -> None:
    with FakeOpenAIAudioServer([stall(3.0, transcript("too late"))]) as server:
        recognizer = OpenAIRecognizer(api_key="k", base_url=server.base_url, timeout=0.5)
        with pytest.raises(ProviderError, match="timed out") as caught:
            await recognizer.recognize(SEGMENT)
    assert caught.value.retryable is True


async def test_azure_openai_transcription_uses_the_deployment_route() -> None:
    with FakeOpenAIAudioServer([transcript("hi")]) as server:
        recognizer = OpenAIRecognizer.azure(
            endpoint=server.azure_endpoint, api_key="az-key", deployment="my-whisper"
        )
        assert (await recognizer.recognize(SEGMENT)).text == "hi"
    request = server.requests[0]
    assert request.path == "/openai/deployments/my-whisper/audio/transcriptions"
    assert request.headers["api-key"] == "az-key"


# -- synthesis -----------------------------------------------------------------------------


async def test_speech_streams_resampled_pcm_per_sentence() -> None:
    text = "Hello there. How can I help?"
    replies = [speech(PCM_24K_100MS, chunk_size=1000), speech(PCM_24K_100MS * 2)]
    with FakeOpenAIAudioServer(replies) as server:
        synthesizer = OpenAISynthesizer(api_key="k", base_url=server.base_url, model="tts-x")
        assert isinstance(synthesizer, SpeechSynthesizer)
        chunks = await collect(synthesizer.synthesize(text, voice="nova"))
    # Within a sentence chunks carry its start; its last chunk reaches its end. Audio goes
    # out in 20 ms pieces (960 bytes at 24 kHz), the last piece held back until the end.
    assert [chunk.text_end for chunk in chunks] == [0] * 4 + [13] + [13] * 9 + [28]
    # 100 ms at 24 kHz (4800 bytes) becomes exactly 100 ms at 16 kHz (3200 bytes).
    assert sum(len(chunk.pcm16_16k) for chunk in chunks[:5]) == 3200
    assert sum(len(chunk.pcm16_16k) for chunk in chunks) == 3 * 3200
    assert all(len(chunk.pcm16_16k) % 2 == 0 for chunk in chunks)
    # A constant level stays that level through the 24 -> 16 kHz conversion (its first and
    # last few milliseconds aside, where the filter rings at the sentence's edges).
    first = b"".join(chunk.pcm16_16k for chunk in chunks[:5])
    assert set(struct.unpack("<1600h", first)[160:-160]) <= {499, 500, 501}
    bodies = [request.fields for request in server.requests]
    assert [body["input"] for body in bodies] == ["Hello there.", "How can I help?"]
    assert bodies[0] == {
        "model": "tts-x",
        "voice": "nova",
        "input": "Hello there.",
        "response_format": "pcm",
    }


async def test_first_sentence_audio_arrives_before_the_second_request() -> None:
    replies = [speech(PCM_24K_100MS), speech(PCM_24K_100MS)]
    with FakeOpenAIAudioServer(replies) as server:
        synthesizer = OpenAISynthesizer(api_key="k", base_url=server.base_url)
        stream = synthesizer.synthesize("One. Two.")
        first = await asyncio.wait_for(anext(stream), 10)
        assert first.pcm16_16k
        assert len(server.requests) == 1  # the second sentence has not been asked for yet
        rest = await asyncio.wait_for(collect(stream), 10)
    assert len(server.requests) == 2
    assert rest[-1].text_end == len("One. Two.")


async def test_speech_resampling_keeps_the_duration() -> None:
    pcm = struct.pack("<24000h", *([1000, -1000] * 12000))  # 1 s at 24 kHz
    with FakeOpenAIAudioServer([speech(pcm, chunk_size=777)]) as server:
        synthesizer = OpenAISynthesizer(api_key="k", base_url=server.base_url)
        chunks = await collect(synthesizer.synthesize("A long one"))
    assert sum(len(chunk.pcm16_16k) for chunk in chunks) == 32000  # 1 s at 16 kHz
    assert chunks[-1].text_end == len("A long one")


async def test_speech_rate_and_unknown_voice() -> None:
    with FakeOpenAIAudioServer([speech(PCM_24K_100MS)]) as server:
        synthesizer = OpenAISynthesizer(api_key="k", base_url=server.base_url, voice="coral")
        await collect(synthesizer.synthesize("Hi.", voice="en-US-JennyNeural", rate="+20%"))
    body = server.requests[0].fields
    assert body["voice"] == "coral"  # an Azure voice name falls back to the configured voice
    assert body["speed"] == pytest.approx(1.2)


@pytest.mark.parametrize(
    ("model", "voice", "instructions"),
    [
        ("gpt-4o-mini-tts", "es-ES-ElviraNeural", "locale es-ES."),
        ("gpt-4o-mini-tts", "nova", None),  # an OpenAI voice names no locale
        ("tts-1", "es-ES-ElviraNeural", None),  # tts-1 refuses instructions
    ],
)
async def test_the_voices_locale_is_asked_for_in_instructions_where_the_model_takes_them(
    model: str, voice: str, instructions: str | None
) -> None:
    with FakeOpenAIAudioServer([speech(PCM_24K_100MS)]) as server:
        synthesizer = OpenAISynthesizer(api_key="k", base_url=server.base_url, model=model)
        await collect(synthesizer.synthesize("Hola.", voice=voice))
    sent = server.requests[0].fields.get("instructions")
    assert sent is None if instructions is None else str(sent).endswith(instructions)


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (429, True), (401, False)])
async def test_speech_errors_are_classified(status: int, retryable: bool) -> None:
    with FakeOpenAIAudioServer([error(status, "nope")]) as server:
        synthesizer = OpenAISynthesizer(api_key="k", base_url=server.base_url)
        with pytest.raises(ProviderError, match=str(status)) as caught:
            await collect(synthesizer.synthesize("Hello."))
    assert caught.value.retryable is retryable


async def test_speech_timeout_is_retryable() -> None:
    with FakeOpenAIAudioServer([stall(3.0, speech(PCM_24K_100MS))]) as server:
        synthesizer = OpenAISynthesizer(api_key="k", base_url=server.base_url, timeout=0.5)
        with pytest.raises(ProviderError, match="timed out") as caught:
            await collect(synthesizer.synthesize("Hello."))
    assert caught.value.retryable is True


async def test_azure_openai_speech_uses_the_deployment_route() -> None:
    with FakeOpenAIAudioServer([speech(PCM_24K_100MS)]) as server:
        synthesizer = OpenAISynthesizer.azure(
            endpoint=server.azure_endpoint, api_key="az", deployment="my-tts"
        )
        chunks = await collect(synthesizer.synthesize("Hi."))
    assert sum(len(chunk.pcm16_16k) for chunk in chunks) == 3200
    assert server.requests[0].path == "/openai/deployments/my-tts/audio/speech"


# -- pieces and configuration --------------------------------------------------------------


def test_sentences_cover_the_text_end_to_end() -> None:
    text = "Hi!  Is that Dr. Lee?\n\nYes"
    spans = split_sentences(text)
    assert [text[start:end] for start, end in spans] == ["Hi!  ", "Is that Dr. ", "Lee?\n\n", "Yes"]
    assert spans[-1][1] == len(text)
    assert split_sentences("") == []


def test_rate_to_speed() -> None:
    assert rate_to_speed("+0%") == 1.0
    assert rate_to_speed("-25%") == 0.75
    assert rate_to_speed("+500%") == 4.0
    with pytest.raises(ProviderError) as caught:
        rate_to_speed("fast")
    assert caught.value.retryable is False


def test_factory_builds_network_providers_and_names_missing_settings() -> None:
    env = {"BATON_STT": "openai", "BATON_TTS": "openai", "OPENAI_API_KEY": "k"}
    assert isinstance(recognizer_from_env(env), OpenAIRecognizer)
    assert isinstance(synthesizer_from_env(env), OpenAISynthesizer)
    with pytest.raises(ProviderError, match="BATON_OPENAI_API_KEY") as caught:
        recognizer_from_env({"BATON_STT": "openai"})
    assert caught.value.retryable is False
    with pytest.raises(ProviderError, match=r"AZURE_SPEECH_KEY.*AZURE_SPEECH_REGION"):
        synthesizer_from_env({"BATON_TTS": "azure"})
    with pytest.raises(ProviderError, match="AZURE_OPENAI_TTS_DEPLOYMENT"):
        synthesizer_from_env(
            {"BATON_TTS": "azure-openai", "AZURE_OPENAI_ENDPOINT": "x", "AZURE_OPENAI_API_KEY": "k"}
        )
    with pytest.raises(ProviderError, match="BATON_STT must be one of"):
        recognizer_from_env({"BATON_STT": "google"})
    with pytest.raises(ProviderError, match="BATON_SPEECH_TIMEOUT"):
        recognizer_from_env({**env, "BATON_SPEECH_TIMEOUT": "soon"})


def test_factory_defaults_to_the_offline_providers() -> None:
    from activities.speech_providers.offline_stt import PocketsphinxRecognizer
    from activities.speech_providers.offline_tts import EspeakSynthesizer
    from activities.speech_providers.offline_whisper import WhisperRecognizer

    assert isinstance(recognizer_from_env({}), WhisperRecognizer)
    assert isinstance(recognizer_from_env({"BATON_STT": "offline-light"}), PocketsphinxRecognizer)
    assert isinstance(synthesizer_from_env({"BATON_TTS": " Offline "}), EspeakSynthesizer)
