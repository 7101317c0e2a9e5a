"""Reply text on its way from the LLM worker to the speech worker: splitting, the gateway's
board, and a publisher whose gateway is gone."""

from __future__ import annotations

import asyncio
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activities.media_channels import MediaChannels
from activities.reply_publisher import ReplyPublisher, split_sentences
from contracts.agent_reply import SpokenReply
from media_gateway.reply_text import MAX_REPLIES, ReplyTextError, ReplyTexts


def test_sentences_are_cut_after_their_end_and_keep_their_spacing() -> None:
    pieces, rest = split_sentences('Your card is safe. "Really?" Yes!\nNothing else to')
    assert pieces == ["Your card is safe. ", '"Really?" ', "Yes!\n"]
    assert rest == "Nothing else to"
    # A full stop with nothing after it yet may be a decimal point: it waits for more text.
    assert split_sentences("It costs 4.") == ([], "It costs 4.")


def test_a_sentence_that_never_ends_is_sent_in_parts_at_spaces() -> None:
    text = "and then " * 60
    pieces, rest = split_sentences(text)
    assert pieces and all(len(p) <= 200 and p.endswith(" ") for p in pieces)
    assert "".join(pieces) + rest == text


@given(st.lists(st.text(alphabet="ab .!?\n", max_size=30), max_size=12))
def test_pieces_add_up_to_the_text_however_it_arrives(deltas: list[str]) -> None:
    sent, pending = [], ""
    for delta in deltas:
        pieces, pending = split_sentences(pending + delta)
        sent += pieces
    assert "".join(sent) + pending == "".join(deltas)


async def test_a_follower_gets_every_piece_in_order_until_the_end() -> None:
    board = ReplyTexts()
    heard: list[str] = []

    async def follow() -> None:
        async for piece in board.follow("1.0"):
            heard.append(piece)

    follower = asyncio.create_task(follow())  # follows before anything is published
    await asyncio.sleep(0)
    board.publish("1.0", 0, "One. ")
    await asyncio.sleep(0)
    assert heard == ["One. "]
    board.publish("1.0", 1, "Two.")
    board.end("1.0")
    await asyncio.wait_for(follower, 1)
    assert heard == ["One. ", "Two."]
    # A second follower (a retried speech activity) reads the whole reply again.
    assert [p async for p in board.follow("1.0")] == ["One. ", "Two."]


async def test_a_retried_publisher_repeats_nothing_and_a_gap_is_refused() -> None:
    board = ReplyTexts()
    assert board.publish("2.0", 0, "First attempt. ") == 1
    assert board.publish("2.0", 0, "Second attempt. ") == 1  # the piece already held wins
    assert board.publish("2.0", 1, "And more.") == 2
    with pytest.raises(ReplyTextError):
        board.publish("2.0", 5, "out of order")
    board.end("2.0")
    assert board.publish("2.0", 2, "after the end") == 2
    assert [p async for p in board.follow("2.0")] == ["First attempt. ", "And more."]


async def test_a_reply_with_no_words_ends_its_follower_empty() -> None:
    board = ReplyTexts()
    board.end("3.0")  # the model only called tools
    assert [p async for p in board.follow("3.0")] == []


async def test_abandoned_replies_do_not_pile_up() -> None:
    board = ReplyTexts()
    stuck = asyncio.create_task(anext(board.follow("never-ended"), None))
    await asyncio.sleep(0)
    for n in range(MAX_REPLIES * 3):
        board.publish(f"r{n}", 0, "Hello. ")
    assert len(board._replies) <= MAX_REPLIES
    # The follower of a reply that was dropped is released rather than left waiting.
    assert await asyncio.wait_for(stuck, 1) is None


async def test_a_publisher_whose_gateway_is_gone_reports_it_without_failing() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    channels = MediaChannels()
    try:
        publisher = ReplyPublisher(
            channels, "call-1", SpokenReply(gateway_address=address, reply_id="1.0")
        )
        publisher.add("Hello there. How")
        assert await publisher.finish("Hello there. How are you?") is False
        assert publisher.text == "Hello there. How"
    finally:
        await channels.close()


async def test_following_a_reply_that_never_reaches_this_gateway_gives_up() -> None:
    # The LLM worker published it to a gateway that has since died; this one never saw it.
    from media_gateway.reply_text import ReplyNeverPublishedError, ReplyTexts

    texts = ReplyTexts()
    with pytest.raises(ReplyNeverPublishedError):
        async for _ in texts.follow("r-lost", first_within=0.05):
            pass


async def test_a_reply_whose_first_piece_comes_in_time_is_followed_to_its_end() -> None:
    from media_gateway.reply_text import ReplyTexts

    texts = ReplyTexts()

    async def publish() -> None:
        await asyncio.sleep(0.01)
        texts.publish("r1", 0, "Hello. ")
        texts.end("r1")

    publisher = asyncio.create_task(publish())
    assert [p async for p in texts.follow("r1", first_within=5)] == ["Hello. "]
    await publisher
