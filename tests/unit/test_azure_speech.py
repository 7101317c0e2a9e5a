"""Azure Speech providers against a fake service speaking the SDK's real WebSocket protocol.

The real `azure.cognitiveservices.speech` SDK connects to `ws://127.0.0.1` (tests/fakes/
azure_speech_server.py), so these tests cover the SDK's own framing, events and error codes.
The fake runs on the test's event loop: were a provider to block the loop while waiting on
the SDK, the fake could not answer and the test would time out.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncGenerator, AsyncIterator

import azure.cognitiveservices.speech as speechsdk  # type: ignore[import-untyped]
import pytest

from activities.provider_errors import ProviderError
from activities.speech_providers.azure_speech import (
    AzureRecognizer,
    AzureSpeechSettings,
    AzureSynthesizer,
    _TextMap,
    is_retryable_code,
)
from activities.speech_providers.base import (
    Recognition,
    SpeechChunk,
    SpeechRecognizer,
    SpeechSynthesizer,
)
from activities.speech_providers.factory import recognizer_from_env, synthesizer_from_env
from tests.fakes.azure_speech_server import FakeAzureSpeechServer, spoken_words

pytestmark = pytest.mark.timeout(60)

SEGMENT = struct.pack("<1600h", *([1000, -1000] * 800))  # 100 ms of a loud 8 kHz square wave


async def collect(chunks: AsyncIterator[SpeechChunk]) -> list[SpeechChunk]:
    return [chunk async for chunk in chunks]


def settings(server: FakeAzureSpeechServer, *, endpoint: bool = False) -> AzureSpeechSettings:
    if endpoint:
        return AzureSpeechSettings(key="test-key", endpoint=server.stt_endpoint)
    return AzureSpeechSettings(key="test-key", host=server.host)


# -- recognition ---------------------------------------------------------------------------


async def test_recognition_returns_the_services_phrase_and_confidence() -> None:
    async with FakeAzureSpeechServer(phrases=[("Hello world.", 0.87)]) as server:
        recognizer = AzureRecognizer(settings(server, endpoint=True), timeout=10)
        assert isinstance(recognizer, SpeechRecognizer)
        result = await asyncio.wait_for(recognizer.recognize(SEGMENT, locale="en-GB"), 20)
    assert result.text == "Hello world."
    assert result.confidence == pytest.approx(0.87)
    connection = server.connections[0]
    assert connection.headers["Ocp-Apim-Subscription-Key"] == "test-key"
    assert "language=en-GB" in connection.path or "language=en-gb" in connection.path
    assert "format=detailed" in connection.path


async def test_recognition_sends_the_segment_as_16k_mono_pcm() -> None:
    async with FakeAzureSpeechServer(phrases=[("Yes.", 0.9)]) as server:
        await asyncio.wait_for(AzureRecognizer(settings(server)).recognize(SEGMENT), 20)
    audio = [body for body in server.connections[0].bodies("audio") if isinstance(body, bytes)]
    header, pcm = audio[0], b"".join(audio[1:])
    # The SDK opens the audio stream with a RIFF/WAVE header describing the pushed format.
    assert header[:4] == b"RIFF" and header[8:12] == b"WAVE"
    channels, rate, _, _, bits = struct.unpack("<HIIHH", header[22:36])
    assert (channels, rate, bits) == (1, 16000, 16)
    assert pcm == SEGMENT
    assert audio[-1] == b""  # the end of the segment is signalled with an empty audio message


async def test_expected_backchannels_go_to_the_service_as_its_phrase_list() -> None:
    async with FakeAzureSpeechServer(phrases=[("Okay.", 0.9)]) as server:
        recognizer = AzureRecognizer(settings(server))
        await asyncio.wait_for(recognizer.recognize(SEGMENT, expected=["mm-hmm", "okay"]), 20)
        await asyncio.wait_for(recognizer.recognize(SEGMENT), 20)
    held, plain = (str(c.bodies("speech.context")) for c in server.connections)
    assert "mm-hmm" in held and "okay" in held  # words said over a reply: biased to these
    assert "mm-hmm" not in plain  # a turn: no bias


async def test_recognition_joins_every_phrase_of_the_segment() -> None:
    phrases = [("Block my card.", 0.9), ("The one ending 1234.", 0.7)]
    async with FakeAzureSpeechServer(phrases=phrases) as server:
        result = await asyncio.wait_for(AzureRecognizer(settings(server)).recognize(SEGMENT), 20)
    assert result.text == "Block my card. The one ending 1234."
    assert result.confidence == pytest.approx(0.8)


async def test_recognition_of_nothing_skips_the_service() -> None:
    async with FakeAzureSpeechServer() as server:
        result = await AzureRecognizer(settings(server)).recognize(b"")
    assert result == Recognition(text="", confidence=0.0)
    assert server.connections == []


@pytest.mark.parametrize(
    ("status", "retryable"), [(401, False), (403, False), (400, False), (429, True), (503, True)]
)
async def test_recognition_upgrade_rejections_are_classified(status: int, retryable: bool) -> None:
    async with FakeAzureSpeechServer(reject_status=status) as server:
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(AzureRecognizer(settings(server)).recognize(SEGMENT), 20)
    assert caught.value.retryable is retryable
    assert str(status) in str(caught.value)


async def test_recognition_auth_failure_is_not_retryable() -> None:
    async with FakeAzureSpeechServer(reject_status=401) as server:
        with pytest.raises(ProviderError, match="AuthenticationFailure") as caught:
            await asyncio.wait_for(AzureRecognizer(settings(server)).recognize(SEGMENT), 20)
    assert caught.value.retryable is False


async def test_recognition_dropped_connection_is_retryable() -> None:
    async with FakeAzureSpeechServer(drop_on="audio-end") as server:
        with pytest.raises(ProviderError, match="ConnectionFailure") as caught:
            await asyncio.wait_for(AzureRecognizer(settings(server)).recognize(SEGMENT), 20)
    assert caught.value.retryable is True


async def test_recognition_silent_service_times_out_retryably() -> None:
    async with FakeAzureSpeechServer(silent=True) as server:
        recognizer = AzureRecognizer(settings(server), timeout=1.0)
        with pytest.raises(ProviderError, match="timed out") as caught:
            await asyncio.wait_for(recognizer.recognize(SEGMENT), 20)
    assert caught.value.retryable is True


# -- synthesis -----------------------------------------------------------------------------


async def test_synthesis_streams_audio_with_text_end_from_word_boundaries() -> None:
    text = "Hello there, caller."
    async with FakeAzureSpeechServer(audio_per_word=3200, metadata_lead=0.3) as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="k", endpoint=server.tts_endpoint))
        assert isinstance(synthesizer, SpeechSynthesizer)
        chunks = await asyncio.wait_for(collect(synthesizer.synthesize(text)), 20)
    audio = [chunk for chunk in chunks if chunk.pcm16_16k]
    # One chunk per word; each reaches the end of the word whose audio it completes.
    assert [len(chunk.pcm16_16k) for chunk in audio] == [3200, 3200, 3200]
    assert [chunk.text_end for chunk in audio] == [5, 11, 19]
    assert audio[1].pcm16_16k == b"\x02\x00" * 1600  # the second word's audio, in order
    # The trailing "." has no audio of its own: a closing empty chunk reaches the end.
    assert chunks[-1] == SpeechChunk(b"", len(text))
    ssml = server.connections[0].bodies("ssml")[0]
    assert isinstance(ssml, str) and "caller." in ssml
    context = server.connections[0].bodies("synthesis.context")[0]
    assert "raw-16khz-16bit-mono-pcm" in str(context)


async def test_synthesis_never_claims_text_beyond_the_audio_played() -> None:
    # Boundaries interleaved with audio, as the service sends them: the SDK's threads may
    # deliver a boundary after its audio, so text_end may lag, but never run ahead.
    text = "one two three four five six"
    word_ends = [3, 7, 13, 18, 23, 27]
    async with FakeAzureSpeechServer(audio_per_word=1600) as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="k", host=server.host))
        chunks = await asyncio.wait_for(collect(synthesizer.synthesize(text)), 20)
    played = 0
    ends = [chunk.text_end for chunk in chunks]
    assert ends == sorted(ends) and ends[-1] == len(text)
    for chunk in chunks:
        played += len(chunk.pcm16_16k)
        words_spoken = played // 1600
        assert chunk.text_end <= (word_ends[words_spoken - 1] if words_spoken else 0)
    assert played == 6 * 1600


async def test_synthesis_first_audio_arrives_before_the_service_finishes() -> None:
    gate = asyncio.Event()
    async with FakeAzureSpeechServer(gate=gate, metadata_lead=0.3) as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="k", host=server.host))
        stream = synthesizer.synthesize("One two three")
        first = await asyncio.wait_for(anext(stream), 20)
        # The fake is parked after the first word until the gate opens.
        assert first.pcm16_16k == b"\x01\x00" * 1600 and first.text_end == 3
        gate.set()
        rest = await asyncio.wait_for(collect(stream), 20)
    assert [chunk.text_end for chunk in rest] == [7, 13]


async def test_synthesis_rate_uses_ssml_prosody_and_maps_offsets_back() -> None:
    text = 'Tom & "Jerry" <run>'
    async with FakeAzureSpeechServer(metadata_lead=0.3) as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="k", host=server.host))
        chunks = await asyncio.wait_for(
            collect(synthesizer.synthesize(text, voice="en-GB-RyanNeural", rate="+15%")), 20
        )
    ssml = str(server.connections[0].bodies("ssml")[0])
    assert "<prosody rate='+15%'>" in ssml or '<prosody rate="+15%">' in ssml
    assert "en-GB-RyanNeural" in ssml and 'xml:lang="en-GB"' in ssml
    assert "Tom &amp; &quot;Jerry&quot; &lt;run&gt;" in ssml
    # Word ends are offsets into the caller's text, not into the escaped SSML.
    assert [chunk.text_end for chunk in chunks if chunk.pcm16_16k] == [3, 12, 18]
    assert chunks[-1].text_end == len(text)


async def test_synthesis_stopped_early_ends_promptly() -> None:
    gate = asyncio.Event()
    async with FakeAzureSpeechServer(gate=gate) as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="k", host=server.host))
        stream = synthesizer.synthesize("One two three four")
        assert isinstance(stream, AsyncGenerator)
        assert (await asyncio.wait_for(anext(stream), 20)).pcm16_16k
        # A barge-in: the caller stops listening while the service is still mid-reply.
        await asyncio.wait_for(stream.aclose(), 10)


async def test_synthesis_auth_failure_is_not_retryable() -> None:
    async with FakeAzureSpeechServer(reject_status=401) as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="bad", host=server.host))
        with pytest.raises(ProviderError, match="AuthenticationFailure") as caught:
            await asyncio.wait_for(collect(synthesizer.synthesize("Hello")), 20)
    assert caught.value.retryable is False


async def test_synthesis_dropped_connection_is_retryable() -> None:
    async with FakeAzureSpeechServer(drop_on="ssml") as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="k", host=server.host))
        with pytest.raises(ProviderError, match="ConnectionFailure") as caught:
            await asyncio.wait_for(collect(synthesizer.synthesize("Hello")), 20)
    assert caught.value.retryable is True


async def test_synthesis_rejects_a_malformed_rate_without_calling_the_service() -> None:
    async with FakeAzureSpeechServer() as server:
        synthesizer = AzureSynthesizer(AzureSpeechSettings(key="k", host=server.host))
        with pytest.raises(ProviderError) as caught:
            await collect(synthesizer.synthesize("Hi", rate="fast'/>"))
    assert caught.value.retryable is False
    assert server.connections == []


async def test_factory_reaches_the_service_through_the_environment() -> None:
    async with FakeAzureSpeechServer(phrases=[("Hi.", 0.5)], metadata_lead=0.2) as server:
        env = {
            "BATON_STT": "azure",
            "AZURE_SPEECH_KEY": "env-key",
            "AZURE_SPEECH_HOST": server.host,
        }
        recognizer = recognizer_from_env(env)
        assert isinstance(recognizer, AzureRecognizer)
        assert (await asyncio.wait_for(recognizer.recognize(SEGMENT), 20)).text == "Hi."
        tts_env = {
            "BATON_TTS": "azure",
            "AZURE_SPEECH_KEY": "env-key",
            "AZURE_SPEECH_REGION": "nowhere",  # a role's own endpoint wins over the region
            "AZURE_SPEECH_TTS_ENDPOINT": server.tts_endpoint,
            "BATON_AZURE_SPEECH_VOICE": "en-US-JennyNeural",
        }
        synthesizer = synthesizer_from_env(tts_env)
        chunks = await asyncio.wait_for(collect(synthesizer.synthesize("Hi there")), 20)
    assert chunks[-1].text_end == len("Hi there")
    assert [c.headers["Ocp-Apim-Subscription-Key"] for c in server.connections] == ["env-key"] * 2
    assert "en-US-JennyNeural" in str(server.connections[1].bodies("ssml")[0])


# -- pieces --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "retryable"),
    [
        (speechsdk.CancellationErrorCode.AuthenticationFailure, False),
        (speechsdk.CancellationErrorCode.Forbidden, False),
        (speechsdk.CancellationErrorCode.BadRequest, False),
        (speechsdk.CancellationErrorCode.ConnectionFailure, True),
        (speechsdk.CancellationErrorCode.ServiceTimeout, True),
        (speechsdk.CancellationErrorCode.ServiceUnavailable, True),
        (speechsdk.CancellationErrorCode.TooManyRequests, True),
        (speechsdk.CancellationErrorCode.ServiceError, True),
    ],
)
def test_error_codes_are_classified(code: object, retryable: bool) -> None:
    assert is_retryable_code(code) is retryable


def test_text_map_places_words_the_sdk_could_not_find() -> None:
    mapping = _TextMap("one two one")
    assert mapping.word_end(-1, 3, "one") == 3
    assert mapping.word_end(-1, 3, "two") == 7
    assert mapping.word_end(-1, 3, "one") == 11  # searched after the previous word
    assert mapping.word_end(-1, 4, "zero") is None


def test_fake_speaks_the_words_of_the_ssml() -> None:
    assert spoken_words("<speak><voice name='x'>It's &amp; done.</voice></speak>") == [
        "It's",
        "done",
    ]
