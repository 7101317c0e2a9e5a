"""The word wait follows the recognizer's recent pace, between its floor and its cap."""

from __future__ import annotations

import asyncio
import dataclasses

from media_gateway.recognizer_pace import WINDOW, RecognizerPace
from tests.unit.test_barge_in import CONFIG, held_reply


def test_with_no_answers_yet_the_wait_is_half_way_to_the_cap() -> None:
    assert RecognizerPace().wait_ms(2000, 6000) == 4000
    assert RecognizerPace().wait_ms(20, 20) == 20


def test_a_slow_recognizer_lengthens_the_wait_up_to_the_cap() -> None:
    pace = RecognizerPace()
    for took in (1400, 1600, 1800, 2400):
        pace.observe(took)
    assert pace.wait_ms(2000, 6000) == int(1800 * 1.5)  # the 90th percentile, with headroom
    pace.observe(9000)
    pace.observe(9000)
    assert pace.wait_ms(2000, 6000) == 6000
    assert pace.wait_ms(8000, 6000) == 8000  # a cap under the floor never shortens it


def test_a_fast_recognizer_keeps_the_floor() -> None:
    pace = RecognizerPace()
    for _ in range(10):
        pace.observe(400)
    assert pace.wait_ms(2000, 6000) == 2000


def test_only_recent_answers_count() -> None:
    pace = RecognizerPace()
    for _ in range(WINDOW):
        pace.observe(5000)
    for _ in range(WINDOW):
        pace.observe(500)
    assert pace.wait_ms(2000, 6000) == 2000


async def test_first_words_of_each_segment_time_the_recognizer() -> None:
    pace = RecognizerPace()
    pace.handed_over("seg-1")
    await asyncio.sleep(0.05)
    pace.words_came("seg-1")
    pace.words_came("seg-1")  # the final report on the same segment is not a second answer
    pace.words_came("seg-unknown")
    waited = pace.wait_ms(1, 10_000)
    assert 50 * 1.5 <= waited < 10_000


async def test_a_held_reply_waits_past_the_floor_for_a_slow_recognizer() -> None:
    pace = RecognizerPace()
    pace.observe(400)  # lately the words came after 400 ms: wait 600 ms for them
    config = dataclasses.replace(CONFIG, word_wait_ms=20, max_word_wait_ms=5000)
    async with held_reply(config, pace=pace) as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        await asyncio.sleep(0.2)  # ten times the floor: a fixed wait would have cut by now
        assert barge.holding and not decisions.cuts
        assert barge.words("seg-1", backchannel=True, covers_all=True)
        assert decisions.not_turns == ["call:seg-1"] and not decisions.cuts
