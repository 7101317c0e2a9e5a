"""Whisper tiny.en in a window fitted to the utterance: the real model, and its safety net.

The window is what makes the default recognizer fast enough for the turn (see the module's
docstring); these check that short utterances really get a short window and still come out
right, that a runaway decode is redone in the full window, and that audio longer than one
window still goes through faster-whisper's own loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from activities.provider_errors import ProviderError
from activities.speech_providers.factory import recognizer_from_env
from activities.speech_providers.offline_whisper import (
    FULL_WINDOW,
    MIN_WINDOW,
    QUIET_AFTER,
    Decoded,
    WhisperRecognizer,
    fitted_window,
    runaway,
    token_cap,
)
from contracts.words import DEFAULT_BACKCHANNELS, is_backchannel
from tests.gateway.conftest import speech_pcm


def test_window_fits_the_utterance_with_quiet_after_and_never_passes_30_s() -> None:
    assert fitted_window(130) == MIN_WINDOW  # a 1.3 s question
    assert fitted_window(MIN_WINDOW) == MIN_WINDOW + QUIET_AFTER  # quiet after, whole seconds
    assert fitted_window(1234) == 1600
    assert fitted_window(FULL_WINDOW - QUIET_AFTER) == FULL_WINDOW
    assert fitted_window(FULL_WINDOW) == FULL_WINDOW


def test_repeated_sentences_and_the_token_cap_are_runaway_but_short_repeats_are_not() -> None:
    cap = token_cap(200)
    assert runaway("Can you send me a statement? Can you send me a statement? Can", 20, cap)
    assert runaway("What is my balance", cap, cap)
    assert not runaway("What is my balance?", 6, cap)
    assert not runaway("Okay. Okay.", 4, cap)  # a caller may say one word twice
    assert not runaway("I lost my card. Can you block my card?", 12, cap)


@pytest.fixture(scope="module")
def recognizer() -> WhisperRecognizer:
    whisper = WhisperRecognizer(fitted=True)
    whisper.warm_up()
    return whisper


def spy_windows(monkeypatch: pytest.MonkeyPatch, whisper: WhisperRecognizer) -> list[int]:
    """The encoder window of every decode `whisper` runs from now on."""
    windows: list[int] = []
    real = WhisperRecognizer._window

    def window(
        self: WhisperRecognizer, model: Any, features: Any, size: int, cap: int, *rest: Any
    ) -> Any:
        windows.append(size)
        return real(self, model, features, size, cap, *rest)

    monkeypatch.setattr(WhisperRecognizer, "_window", window)
    return windows


async def test_a_short_question_is_encoded_in_a_short_window_and_heard_right(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    windows = spy_windows(monkeypatch, recognizer)
    pcm = bytes(6400) + await speech_pcm("What is my balance?") + bytes(3200)
    heard = await recognizer.recognize(pcm)
    assert windows == [MIN_WINDOW]
    assert heard.text.lower().strip("?.") == "what is my balance"
    assert 0 < heard.confidence <= 1


async def test_the_full_window_option_recognizes_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    full = WhisperRecognizer(fitted=False)
    windows = spy_windows(monkeypatch, full)
    heard = await full.recognize(await speech_pcm("I lost my card."))
    assert windows == []  # faster-whisper's transcribe, its 30 s window
    assert "card" in heard.text.lower()


def test_the_window_is_chosen_by_the_environment() -> None:
    assert recognizer_from_env({}).fitted  # type: ignore[attr-defined]
    fitted = recognizer_from_env({"BATON_WHISPER_WINDOW": "fitted"})
    assert isinstance(fitted, WhisperRecognizer) and fitted.fitted
    full = recognizer_from_env({"BATON_WHISPER_WINDOW": "full"})
    assert isinstance(full, WhisperRecognizer) and not full.fitted
    with pytest.raises(ProviderError, match="BATON_WHISPER_WINDOW"):
        recognizer_from_env({"BATON_WHISPER_WINDOW": "short"})


async def test_a_runaway_decode_is_done_again_in_the_full_window(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    windows: list[int] = []

    def window(
        self: WhisperRecognizer, model: Any, features: Any, size: int, cap: int, *_: Any
    ) -> Any:
        windows.append(size)
        if size < FULL_WINDOW:
            return Decoded("Yes, that is right. Yes, that is right.", 12, -0.2, 0.01)
        return Decoded("Yes, that is right.", 6, -0.2, 0.01)

    monkeypatch.setattr(WhisperRecognizer, "_window", window)
    refits = recognizer.refits
    heard = await recognizer.recognize(await speech_pcm("Yes, that is right."))
    assert windows == [MIN_WINDOW, FULL_WINDOW]
    assert heard.text == "Yes, that is right."
    assert recognizer.refits == refits + 1


def scripted_readings(monkeypatch: pytest.MonkeyPatch, fitted: str, full: str) -> list[int]:
    """Each window's reading scripted (the fitted one's, the full one's); the windows run."""
    windows: list[int] = []

    def window(
        self: WhisperRecognizer, model: Any, features: Any, size: int, cap: int, *_: Any
    ) -> Any:
        windows.append(size)
        return Decoded(fitted if size < FULL_WINDOW else full, 2, -0.4, 0.01)

    monkeypatch.setattr(WhisperRecognizer, "_window", window)
    return windows


async def test_a_short_unclear_reading_over_a_reply_is_read_again_for_a_backchannel(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # How the two windows read one noisy "yeah" (bench_backchannels, street at 10 dB).
    windows = scripted_readings(monkeypatch, "here.", "Yeah.")
    pcm = await speech_pcm("Yeah.")
    read, kept = recognizer.second_readings, recognizer.second_readings_kept
    heard = await recognizer.recognize(pcm, expected=DEFAULT_BACKCHANNELS)
    assert (heard.text, windows) == ("Yeah.", [MIN_WINDOW, FULL_WINDOW])
    assert (recognizer.second_readings, recognizer.second_readings_kept) == (read + 1, kept + 1)
    # Not said over a reply: one reading, as it came.
    windows.clear()
    assert (await recognizer.recognize(pcm)).text == "here."
    assert windows == [MIN_WINDOW]


@pytest.mark.parametrize(
    ("fitted", "full", "windows"),
    [
        ("Representative.", "Represent it.", [MIN_WINDOW, FULL_WINDOW]),  # not a backchannel
        ("Stop.", "Okay.", [MIN_WINDOW]),  # always interrupts: nothing to doubt
        ("Okay.", "Hello.", [MIN_WINDOW]),  # a backchannel already
        ("Can I ask you something?", "Okay.", [MIN_WINDOW]),  # too long to be one misheard
    ],
)
async def test_the_first_reading_stands_unless_the_second_is_a_backchannel(
    recognizer: WhisperRecognizer,
    monkeypatch: pytest.MonkeyPatch,
    fitted: str,
    full: str,
    windows: list[int],
) -> None:
    ran = scripted_readings(monkeypatch, fitted, full)
    heard = await recognizer.recognize(await speech_pcm("Okay."), expected=DEFAULT_BACKCHANNELS)
    assert (heard.text, ran) == (fitted, windows)


async def test_clear_words_over_a_reply_are_read_once(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    windows = spy_windows(monkeypatch, recognizer)
    okay, question = [
        await recognizer.recognize(
            bytes(6400) + await speech_pcm(said) + bytes(3200), expected=DEFAULT_BACKCHANNELS
        )
        for said in ("Okay.", "What is my balance?")
    ]
    assert is_backchannel(okay.text, DEFAULT_BACKCHANNELS)  # "Okay", "OK." or "Okay."
    assert question.text.lower().strip("?.") == "what is my balance"
    assert windows == [MIN_WINDOW, MIN_WINDOW]


def decodes_done(monkeypatch: pytest.MonkeyPatch, whisper: WhisperRecognizer) -> threading.Event:
    """Set each time a decoder thread of `whisper` returns, abandoned or not."""
    done = threading.Event()
    real = WhisperRecognizer._decode

    def decode(self: WhisperRecognizer, *args: Any) -> Any:
        try:
            return real(self, *args)
        finally:
            done.set()

    monkeypatch.setattr(WhisperRecognizer, "_decode", decode)
    return done


class BusyDecoder:
    """The recognizer's decoder lock, held as by another decode; says when a thread waits."""

    def __init__(self) -> None:
        self.lock, self.waiting = threading.Lock(), threading.Event()
        self.lock.acquire()

    def __enter__(self) -> None:
        self.waiting.set()
        self.lock.acquire()

    def __exit__(self, *_: object) -> None:
        self.lock.release()


async def test_a_recognition_cancelled_while_waiting_for_the_decoder_never_runs_the_model(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    windows = spy_windows(monkeypatch, recognizer)
    question = await speech_pcm("What is my balance?")
    before = recognizer.abandoned
    busy = BusyDecoder()  # another decode is running
    monkeypatch.setattr(recognizer, "_decode_lock", busy)
    done = decodes_done(monkeypatch, recognizer)
    stale = asyncio.create_task(recognizer.recognize(question))
    assert await asyncio.to_thread(busy.waiting.wait, 5)  # its thread waits for the decoder
    stale.cancel()  # the caller went on: the gateway sent all of the audio again
    with pytest.raises(asyncio.CancelledError):
        await stale
    busy.lock.release()  # the other decode is done
    assert await asyncio.to_thread(done.wait, 5)
    assert recognizer.abandoned == before + 1
    assert windows == []  # the cancelled audio never reached the model
    heard = await recognizer.recognize(question)
    assert windows == [MIN_WINDOW]
    assert heard.text == "What is my balance?"


async def test_a_recognition_cancelled_during_the_encoder_skips_the_decoder(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = recognizer._loaded()
    real_encode = model.encode
    encoding, go_on = threading.Event(), threading.Event()

    def slow_encode(features: Any) -> Any:
        encoding.set()
        go_on.wait(5)
        return real_encode(features)

    monkeypatch.setattr(model, "encode", slow_encode)
    done = decodes_done(monkeypatch, recognizer)
    before = recognizer.abandoned
    task = asyncio.create_task(recognizer.recognize(await speech_pcm("I lost my card.")))
    assert await asyncio.to_thread(encoding.wait, 5)
    task.cancel()
    go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(done.wait, 5)
    assert recognizer.abandoned == before + 1


async def test_noise_the_model_doubts_is_no_words(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def window(
        self: WhisperRecognizer, model: Any, features: Any, size: int, cap: int, *_: Any
    ) -> Any:
        return Decoded("Thank you.", 3, -1.4, 0.8)  # what Whisper invents for a door slam

    monkeypatch.setattr(WhisperRecognizer, "_window", window)
    heard = await recognizer.recognize(bytes(32000))
    assert (heard.text, heard.confidence) == ("", 0.0)


LONG_CALL = (
    "I think someone stole my card.",
    "I saw two payments this morning that I did not make.",
    "One was at a petrol station and one was online.",
    "I still have the card in my wallet.",
    "My husband also uses the account.",
    "He says he did not buy anything today.",
    "We moved house last month.",
    "The new address is on the account already.",
    "I would like the money back if that is possible.",
    "Could you also tell me my balance.",
    "I want to check the last three payments as well.",
    "The card is a debit card, not the credit card.",
    "I have had this account for twelve years.",
    "I can answer any security questions you have.",
    "Please send me a new statement.",
)


async def test_audio_longer_than_one_window_goes_through_faster_whispers_loop(
    recognizer: WhisperRecognizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Sentences that differ: repeats of one sentence raise Whisper's compression ratio, and
    # its temperature fallback then samples, which may drop or fold them run to run.
    windows = spy_windows(monkeypatch, recognizer)
    pause = bytes(16000)
    said = [await speech_pcm(sentence) + pause for sentence in LONG_CALL]
    assert len(b"".join(said[:-1])) / 32000 > FULL_WINDOW / 100  # the last one starts past 30 s
    heard = await recognizer.recognize(b"".join(said))
    assert windows == []  # not one fitted window
    assert "stole my card" in heard.text.lower()
    assert "new statement" in heard.text.lower()  # heard in the second window
