"""The gateway's barge-in decision over a real paced reply: held for words, resumed or cut."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator

from media_gateway.barge_in import BargeIn
from media_gateway.gateway_config import GatewayConfig
from media_gateway.playback import Heard, Playback, Sink
from media_gateway.recognizer_pace import RecognizerPace
from tests.unit.test_playback import Peer, chunks

CONFIG = GatewayConfig(media_address="127.0.0.1:0")


@dataclasses.dataclass
class Decisions:
    cuts: list[Heard] = dataclasses.field(default_factory=list)
    not_turns: list[str] = dataclasses.field(default_factory=list)


@contextlib.asynccontextmanager
async def held_reply(
    config: GatewayConfig = CONFIG, pace: RecognizerPace | None = None
) -> AsyncIterator[tuple[BargeIn, Decisions]]:
    """A reply playing, paused by caller speech that lasted: held for its words (with no
    recognizer answers timed yet unless `pace` says otherwise)."""
    sink = Sink()
    Peer(sink)
    playback = Playback(sink)
    playing = asyncio.create_task(
        playback.play("r1", "Your balance is ready.", chunks([(3000, 22)]))
    )
    while not playback.speaking:
        await asyncio.sleep(0.01)
    decisions = Decisions()
    barge = BargeIn(
        playback,
        config,
        cut=decisions.cuts.append,
        not_a_turn=decisions.not_turns.append,
        pace=pace or RecognizerPace(),
    )
    barge.speech_started()
    barge.confirm()
    try:
        yield barge, decisions
    finally:
        barge.close()
        playback.cancel()
        await playing


async def test_a_backchannel_resumes_the_reply_and_is_not_a_turn() -> None:
    async with held_reply() as (barge, decisions):
        assert barge.holding and barge.playback.current is not None
        assert barge.playback.current.paused
        assert barge.words_due("seg-1", "call:seg-1")
        assert barge.words("seg-1", backchannel=True, covers_all=True)
        assert not barge.playback.current.paused and not barge.pending
        assert decisions.not_turns == ["call:seg-1"] and not decisions.cuts
        assert barge.words("seg-1", backchannel=True, covers_all=True)  # the final report


async def test_other_words_cut_the_reply_even_before_they_are_complete() -> None:
    async with held_reply() as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        # Provisional words the caller has since added to cannot resume, but can cut.
        assert not barge.words("seg-1", backchannel=True, covers_all=False)
        assert barge.holding and not decisions.cuts
        assert not barge.words("seg-1", backchannel=False, covers_all=False)
        (heard,) = decisions.cuts
        assert barge.playback.current is not None and barge.playback.current.barged_in
        assert not decisions.not_turns and heard.chars < len("Your balance is ready.")


async def test_no_words_before_the_deadline_cuts() -> None:
    config = dataclasses.replace(CONFIG, word_wait_ms=20, max_word_wait_ms=20)
    async with held_reply(config) as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        await asyncio.sleep(0.2)
        assert len(decisions.cuts) == 1 and not barge.holding
        assert not barge.words("seg-1", backchannel=True, covers_all=True)  # too late


async def test_without_holding_speech_that_lasts_cuts_at_once() -> None:
    async with held_reply(dataclasses.replace(CONFIG, hold_for_words=False)) as (barge, decisions):
        assert len(decisions.cuts) == 1 and not barge.holding
        assert not barge.words_due("seg-1", "call:seg-1")  # the utterance is not held


@dataclasses.dataclass
class Speaking:
    """What `BargeIn.check` reads of the endpointer, for a caller still talking after the
    audio was handed over at a pause ("Okay, ... okay")."""

    speech_ms: int = 500
    speech_varies: bool = True
    went_on_after_pause: bool = True
    awaiting_words: bool = False


async def test_speech_after_the_handover_waits_for_the_words_from_its_end() -> None:
    config = dataclasses.replace(CONFIG, word_wait_ms=20, max_word_wait_ms=20)
    async with held_reply(config) as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        for _ in range(10):  # 100 ms more of the caller talking: five times the wait
            barge.check(Speaking(), "seg-1")  # type: ignore[arg-type]
            await asyncio.sleep(0.01)
        assert barge.holding and not decisions.cuts
        assert barge.words("seg-1", backchannel=True, covers_all=True)  # "okay, okay"
        assert decisions.not_turns == ["call:seg-1"]


async def test_words_that_never_come_still_cut_once_the_caller_stops() -> None:
    config = dataclasses.replace(CONFIG, word_wait_ms=20, max_word_wait_ms=20)
    async with held_reply(config) as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        barge.check(Speaking(), "seg-1")  # type: ignore[arg-type]
        await asyncio.sleep(0.2)
        assert len(decisions.cuts) == 1 and not barge.holding


async def test_speech_after_a_resumed_backchannel_holds_the_reply_again() -> None:
    # "Okay, ... okay": the words of "Okay," came inside the comma's pause and resumed the
    # reply; the caller going on pauses it again, and the words of the whole decide.
    async with held_reply() as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        assert barge.words("seg-1", backchannel=True, covers_all=True)
        barge.check(Speaking(), "seg-1")  # type: ignore[arg-type]
        assert barge.holding and barge.playback.current is not None
        assert barge.playback.current.paused and not decisions.cuts
        assert barge.words("seg-1", backchannel=True, covers_all=True)
        assert not barge.playback.current.paused and not decisions.cuts


async def test_a_turn_after_a_resumed_backchannel_cuts_once_its_words_say_so() -> None:
    # "Okay... so what about my card": the same, and the words of the whole cut the reply.
    async with held_reply() as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        assert barge.words("seg-1", backchannel=True, covers_all=True)
        barge.check(Speaking(), "seg-1")  # type: ignore[arg-type]
        assert not barge.words("seg-1", backchannel=False, covers_all=True)
        assert len(decisions.cuts) == 1 and not barge.holding


async def test_speech_after_a_resumed_backchannel_is_a_turn_once_the_reply_is_over() -> None:
    async with held_reply() as (barge, decisions):
        barge.words_due("seg-1", "call:seg-1")
        assert barge.words("seg-1", backchannel=True, covers_all=True)
        barge.playback.cancel()  # the reply ended before the caller went on
        await asyncio.sleep(0)
        barge.check(Speaking(), "seg-1")  # type: ignore[arg-type]
        assert not barge.holding and not decisions.cuts
        assert not barge.words("seg-1", backchannel=True, covers_all=True)  # a turn after all
