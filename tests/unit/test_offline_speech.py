"""The embedded offline speech pair: espeak-ng synthesis and PocketSphinx recognition, for real.

No fakes: these drive the shipped C libraries, so they catch a broken wheel, a wrong sample
rate or a lost text offset, which is what a barge-in relies on.
"""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from activities.provider_errors import ProviderError
from activities.speech_providers.base import (
    SpeechChunk,
    SpeechRecognizer,
    SpeechSynthesizer,
)
from activities.speech_providers.offline_stt import PocketsphinxRecognizer
from activities.speech_providers.offline_tts import (
    BASE_WPM,
    EspeakSynthesizer,
    espeak_voice,
    espeak_wpm,
    sentences,
)
from runtime.audio import pcm16_rms

SENTENCE = "I think someone stole my card."
REPLY = (
    "I have blocked the card ending in eight eight three two. A new card will arrive within "
    "five working days. Is there anything else I can help you with today?"
)


async def collect(text: str, **kwargs: str) -> list[SpeechChunk]:
    return [chunk async for chunk in EspeakSynthesizer().synthesize(text, **kwargs)]


def seconds(chunks: list[SpeechChunk]) -> float:
    return sum(len(chunk.pcm16_16k) for chunk in chunks) / 32000


def audio(chunks: list[SpeechChunk]) -> bytes:
    return b"".join(chunk.pcm16_16k for chunk in chunks)


def test_providers_satisfy_the_protocols() -> None:
    assert isinstance(EspeakSynthesizer(), SpeechSynthesizer)
    assert isinstance(PocketsphinxRecognizer(), SpeechRecognizer)


async def test_sentence_is_audible_speech_of_plausible_length() -> None:
    chunks = await collect(SENTENCE)
    pcm = audio(chunks)
    assert all(len(chunk.pcm16_16k) % 2 == 0 for chunk in chunks)
    # Six words at conversational pace: well over half a second, well under four.
    assert 0.8 < seconds(chunks) < 4.0
    assert pcm16_rms(pcm) > 500  # speech, not a near-silent buffer


async def test_text_end_never_goes_back_and_reaches_the_end() -> None:
    chunks = await collect(REPLY)
    ends = [chunk.text_end for chunk in chunks]
    assert ends == sorted(ends)
    assert ends[-1] == len(REPLY)
    # Progress is reported along the way, not only at the end.
    assert len(set(ends)) >= 6
    # Mid-stream offsets land on word boundaries: a barge-in never credits half a word.
    for end in ends[:-1]:
        assert end == 0 or REPLY[end - 1] == " "


async def test_first_chunk_comes_before_the_rest_is_spoken() -> None:
    first_sentence_end = sentences(REPLY)[0][1]
    stream = EspeakSynthesizer().synthesize(REPLY)
    first = await stream.__anext__()
    await stream.aclose()
    assert first.text_end <= first_sentence_end
    assert 0.05 < len(first.pcm16_16k) / 32000 < 0.5  # a playable chunk, not the whole reply


async def test_rate_changes_duration_in_the_right_direction() -> None:
    slow = seconds(await collect(SENTENCE, rate="-30%"))
    normal = seconds(await collect(SENTENCE, rate="+0%"))
    fast = seconds(await collect(SENTENCE, rate="+30%"))
    assert slow > normal * 1.15
    assert fast < normal * 0.9


def test_rate_strings_map_to_words_per_minute() -> None:
    assert espeak_wpm("+0%") == BASE_WPM
    assert espeak_wpm("+10%") == round(BASE_WPM * 1.1)
    assert espeak_wpm("-20%") == round(BASE_WPM * 0.8)
    assert espeak_wpm("1.5") == round(BASE_WPM * 1.5)
    assert espeak_wpm("slow") < BASE_WPM < espeak_wpm("fast")
    assert espeak_wpm("nonsense") == BASE_WPM
    assert espeak_wpm("-95%") >= 80 and espeak_wpm("+900%") <= 450


def test_azure_voice_names_map_to_espeak_voices() -> None:
    jenny = espeak_voice("en-US-JennyNeural")
    assert jenny[0].startswith("en-us+f") and jenny[-1] == "en-us"
    assert not espeak_voice("en-US-GuyNeural")[0].split("+")[-1].startswith("f")
    assert espeak_voice("en-GB-SoniaNeural")[0].startswith("en-gb")
    assert espeak_voice("") == ["en-us"]
    # Stable: an agent keeps its voice from one call to the next.
    assert espeak_voice("en-US-AriaNeural") == espeak_voice("en-US-AriaNeural")


@pytest.mark.parametrize(
    "voice", ["xx-XX-NobodyNeural", "definitely not a voice", "en-US-JennyNeural"]
)
async def test_unknown_or_odd_voice_still_speaks(voice: str) -> None:
    chunks = await collect(SENTENCE, voice=voice)
    assert seconds(chunks) > 0.8 and chunks[-1].text_end == len(SENTENCE)


def test_sentence_spans_cover_the_text_and_respect_abbreviations() -> None:
    text = "Hello Mr. Smith. Your balance is $12.50! Anything else?  Bye"
    spans = sentences(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(spans))
    assert [text[a:b].strip() for a, b in spans] == [
        "Hello Mr. Smith.",
        "Your balance is $12.50!",
        "Anything else?",
        "Bye",
    ]
    assert sentences("   ") == []


async def test_blank_text_yields_nothing() -> None:
    assert await collect("  ") == []


async def test_closing_the_stream_mid_reply_stops_quickly_and_engine_stays_usable() -> None:
    long_text = " ".join([REPLY] * 20)
    stream = EspeakSynthesizer().synthesize(long_text)
    first = await stream.__anext__()
    started = time.monotonic()
    await asyncio.wait_for(stream.aclose(), timeout=5)
    assert time.monotonic() - started < 2
    assert first.text_end < len(long_text)
    assert (await collect(SENTENCE))[-1].text_end == len(SENTENCE)


async def test_cancelling_the_listener_does_not_hang() -> None:
    received: list[SpeechChunk] = []

    async def listen() -> None:
        async for chunk in EspeakSynthesizer().synthesize(" ".join([REPLY] * 20)):
            received.append(chunk)
            await asyncio.sleep(0.01)  # paced like playback

    task = asyncio.create_task(listen())
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)
    assert received
    assert (await collect(SENTENCE))[-1].text_end == len(SENTENCE)


async def test_concurrent_streams_each_get_their_own_text() -> None:
    one, two = await asyncio.gather(collect(REPLY), collect(SENTENCE, voice="en-US-AriaNeural"))
    assert one[-1].text_end == len(REPLY) and two[-1].text_end == len(SENTENCE)
    assert seconds(one) > 2 * seconds(two)


# --- recognition -------------------------------------------------------------------------


def padded(pcm: bytes) -> bytes:
    silence = bytes(2 * 4000)  # a VAD-cut segment keeps a little silence either side
    return silence + pcm + silence


async def test_round_trip_recognizes_most_words() -> None:
    # espeak-ng's output for a sentence varies a little from one synthesis to the next (its
    # voice keeps pitch-jitter state across utterances), and PocketSphinx sometimes mishears
    # one word of a given rendition. So this asserts over five sentences, not word by word:
    # over 15 runs of this set at least 85% of the words came back on this voice, and the
    # 80-90% word error rate PocketSphinx gets on other voices would fall far below the bound.
    recognizer = PocketsphinxRecognizer()
    said = (
        "What's my balance?",
        "I want to file a claim.",
        "I want to talk to an agent.",
        "Please check my account.",
        "I was in a car accident.",
    )
    heard = []
    for text in said:
        pcm = audio(await collect(text, voice="en-us+f2"))
        result = await recognizer.recognize(padded(pcm))
        assert 0.0 < result.confidence <= 1.0
        heard.append(result.text.split())
    reference = [w.strip("?.").lower() for text in said for w in text.split()]
    hypothesis = [w for words in heard for w in words]
    matched = sum(min(reference.count(w), hypothesis.count(w)) for w in set(reference))
    assert matched >= 0.7 * len(reference), heard
    key_words = ("balance", "claim", "agent", "account", "accident")
    assert sum(key in words for key, words in zip(key_words, heard, strict=True)) >= 3, heard


async def test_vocabulary_hint_recognizes_in_domain_phrasing() -> None:
    recognizer = PocketsphinxRecognizer(
        vocabulary=["my card was stolen", "someone stole my card", "block my card"]
    )
    pcm = audio(await collect(SENTENCE, voice="en-us+f2"))
    words = (await recognizer.recognize(padded(pcm))).text.split()
    assert {"stole", "card"} <= set(words)


async def test_silence_and_scraps_are_empty_not_errors() -> None:
    recognizer = PocketsphinxRecognizer()
    assert await recognizer.recognize(bytes(32000)) == (await recognizer.recognize(b""))
    assert (await recognizer.recognize(bytes(32000))).text == ""
    assert (await recognizer.recognize(b"\x01\x02\x03")).text == ""


async def test_other_languages_are_refused_without_retry() -> None:
    with pytest.raises(ProviderError) as raised:
        await PocketsphinxRecognizer().recognize(bytes(32000), locale="de-DE")
    assert raised.value.retryable is False
