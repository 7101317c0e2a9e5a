"""The adaptive endpointer: quiet ends an utterance by what its provisional words say.

Counted in 20 ms frames of stream time, never wall time: speech, then quiet fed frame by frame,
with the recognizer's answer arriving after a given number of quiet frames.
"""

from __future__ import annotations

import pytest

from contracts.words import sentence_ending
from media_gateway.gateway_config import ADAPTIVE_ENDPOINTING, FIXED_ENDPOINTING
from media_gateway.vad import (
    FRAME_BYTES,
    Endpointer,
    EndpointerConfig,
    SpeechEnded,
    SpeechPaused,
    VadEvent,
)
from tests.unit.test_vad import pcm, silence, voiced

QUIET_FRAME = pcm(silence(20))


def frames(samples: list[float]) -> list[bytes]:
    audio = pcm(samples)
    return [audio[i : i + FRAME_BYTES] for i in range(0, len(audio), FRAME_BYTES)]


def quiet_frames_to_end(config: EndpointerConfig, words: str | None, words_after: int) -> int:
    """Quiet frames after the speech until ``SpeechEnded``, when the recognizer's words for the
    audio handed over at the pause arrive `words_after` quiet frames in (None: never)."""
    endpointer = Endpointer(config)
    for frame in frames(silence(300) + voiced(900)):
        endpointer.feed(frame)
    for quiet in range(1, 200):
        events: list[VadEvent] = endpointer.feed(QUIET_FRAME)
        if words is not None and quiet == words_after:
            events += endpointer.words_end(sentence_ending(words))
        if any(isinstance(event, SpeechEnded) for event in events):
            return quiet
    raise AssertionError("the utterance never ended")


def test_a_complete_question_ends_sooner_than_a_trailing_phrase() -> None:
    question = quiet_frames_to_end(ADAPTIVE_ENDPOINTING, "What is my balance?", words_after=8)
    trailing = quiet_frames_to_end(ADAPTIVE_ENDPOINTING, "I want to check my savings and", 8)
    fixed = quiet_frames_to_end(FIXED_ENDPOINTING, "What is my balance?", words_after=8)
    assert question == 240 // 20  # complete: 240 ms of quiet
    assert trailing == 700 // 20  # trailing off: 700 ms
    assert fixed == 400 // 20  # the fixed endpointer ignores the words
    assert question < fixed < trailing


def test_words_arriving_after_the_short_hangover_end_the_utterance_at_once() -> None:
    # 18 quiet frames (360 ms) in, the words say "complete": 240 ms has passed, so it ends now.
    assert quiet_frames_to_end(ADAPTIVE_ENDPOINTING, "I lost my card.", words_after=18) == 18


def test_without_words_the_endpointer_waits_for_them_then_gives_up() -> None:
    assert quiet_frames_to_end(ADAPTIVE_ENDPOINTING, None, words_after=0) == 700 // 20


def test_words_that_do_not_say_how_they_end_keep_the_plain_hangover() -> None:
    assert quiet_frames_to_end(ADAPTIVE_ENDPOINTING, "checking balance", words_after=8) == 20


def test_words_of_audio_the_caller_has_since_added_to_wait_for_the_next_pause() -> None:
    endpointer = Endpointer(ADAPTIVE_ENDPOINTING)
    events: list[VadEvent] = []
    for frame in frames(silence(300) + voiced(600) + silence(200) + voiced(600)):
        events += endpointer.feed(frame)
    assert any(isinstance(event, SpeechPaused) for event in events)
    assert not endpointer.awaiting_words  # the caller went on after the pause
    assert endpointer.words_end("complete") == []  # the old words cover part of it only
    quiet, paused_at = 0, 0
    while True:
        quiet += 1
        events = endpointer.feed(QUIET_FRAME)
        if any(isinstance(event, SpeechPaused) for event in events):
            paused_at = quiet  # all of it handed over again
            assert endpointer.awaiting_words
        if quiet == 8:  # the words of that audio
            events += endpointer.words_end("complete")
        if any(isinstance(event, SpeechEnded) for event in events):
            break
    assert paused_at == ADAPTIVE_ENDPOINTING.pause_ms // 20
    assert quiet == 240 // 20  # the complete sentence's hangover, not the plain 400 ms


@pytest.mark.parametrize(
    "fields",
    [
        {"wait_for_words_ms": 700},  # no pause_ms: nothing is ever handed over early
        {"pause_ms": 120, "wait_for_words_ms": 700, "complete_hangover_ms": 100},
        {"pause_ms": 120, "wait_for_words_ms": 5000, "complete_hangover_ms": 240},
    ],
)
def test_unbounded_or_impossible_adaptive_settings_are_refused(fields: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="adaptive endpointing"):
        EndpointerConfig(**{"trailing_hangover_ms": 700, **fields})
