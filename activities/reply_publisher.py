"""Publishing a model's reply to the call's gateway, sentence by sentence, while it is written.

The turn's speech activity follows the same reply on the gateway and speaks each sentence as it
lands (see media_gateway/reply_text.py). Publishing is best effort: a gateway that cannot be
reached costs the early start, not the turn, and the result says so (`AgentTurnResult.published`)
so the workflow speaks the finished text the ordinary way instead.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import grpc
import structlog

from activities.media_channels import MediaChannels
from contracts.agent_reply import SpokenReply
from contracts.proto import media_pb2

log = structlog.get_logger("baton.activities")

#: A sentence ends at . ! ? (maybe closed by quotes or brackets) before whitespace, or at a
#: line break. The whitespace stays with the sentence, so the pieces add up to the exact text.
_SENTENCE_END = re.compile(r"[.!?…]+[\"')\]]*\s+|\n+")
#: A reply that runs this long without a sentence end is sent up to its last space, so speech
#: never waits on one endless sentence.
_LONGEST_PIECE = 200
#: How long the gateway may take to confirm the end of a reply.
FINISH_TIMEOUT_SECONDS = 5.0


def split_sentences(text: str) -> tuple[list[str], str]:
    """Complete pieces at the start of `text`, and the unfinished rest."""
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        pieces.append(text[start : match.end()])
        start = match.end()
    rest = text[start:]
    while len(rest) > _LONGEST_PIECE:
        cut = rest.rfind(" ", 0, _LONGEST_PIECE) + 1 or _LONGEST_PIECE
        pieces.append(rest[:cut])
        rest = rest[cut:]
    return pieces, rest


class ReplyPublisher:
    """One reply's text on its way to the gateway; `add` as the model writes, then `finish`."""

    def __init__(self, channels: MediaChannels, call_id: str, target: SpokenReply) -> None:
        self.call_id, self.reply_id = call_id, target.reply_id
        self.text = ""
        #: A filler went out ahead of the reply (see `interject`).
        self.interjected = False
        self._pending = ""
        self._index = 0
        self._outbox: asyncio.Queue[media_pb2.ReplyText | None] = asyncio.Queue()
        stub = channels.stub(target.gateway_address)
        self._rpc = stub.PublishReplyText(self._messages())

    async def _messages(self) -> AsyncIterator[media_pb2.ReplyText]:
        while (message := await self._outbox.get()) is not None:
            yield message

    def _send(self, piece: str = "", *, end: bool = False) -> None:
        self._outbox.put_nowait(
            media_pb2.ReplyText(
                call_id=self.call_id,
                reply_id=self.reply_id,
                index=self._index,
                piece=piece,
                end=end,
            )
        )
        if piece:
            self._index += 1

    def interject(self, words: str) -> bool:
        """Say `words` ahead of the reply, if none of the reply has gone out yet (a filler
        while a slow model thinks). The reply's own text stays the model's."""
        if self._index or self._pending or self.text:
            return False
        self._send(words)
        self.interjected = True
        return True

    def add(self, delta: str) -> None:
        """More of the reply: every sentence it completes goes out at once."""
        self.text += delta
        pieces, self._pending = split_sentences(self._pending + delta)
        for piece in pieces:
            self._send(piece)

    async def finish(self, text: str) -> bool:
        """The model is done and `text` is its whole reply: send what is left and end the reply.
        True when the gateway holds the reply for the speech worker."""
        if not self.text and text:  # a model that does not stream: the reply comes at once
            self.add(text)
        if self._pending:
            self._send(self._pending)
            self._pending = ""
        self._send(end=True)
        self._outbox.put_nowait(None)
        try:
            await asyncio.wait_for(self._rpc, FINISH_TIMEOUT_SECONDS)
        except (grpc.aio.AioRpcError, TimeoutError) as error:
            log.warning(
                "reply text not published; it will be spoken when complete",
                call_id=self.call_id,
                reply_id=self.reply_id,
                error=str(error),
            )
            return False
        return True

    def abort(self) -> None:
        """The model call failed or was cancelled: the gateway's reply is left unended, and the
        workflow cancels the speech following it."""
        self._rpc.cancel()
