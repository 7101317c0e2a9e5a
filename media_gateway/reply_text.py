"""Reply text on its way from the LLM worker to the speech worker, sentence by sentence.

The workflow starts a turn's model call and its speech at the same moment. The LLM activity
publishes the reply here while the model is still writing it; the TTS activity follows the same
reply and speaks each sentence as it lands, so the caller's first audio waits for the first
sentence rather than the whole reply (and for no extra activity hop). The gateway holding the
call is the meeting point because both workers already know its address and it lives as long as
the call; text is kept only while a turn needs it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

#: Replies a call keeps; a turn uses one per model round, so this spans several turns.
MAX_REPLIES = 16
#: An ended reply is forgotten after this long (a retried speech activity may follow it again).
ENDED_TTL_SECONDS = 120.0


#: A live LLM worker publishes a voice reply's first piece (or a filler, or its end) within
#: about 1.5 s of the model call; a reply with nothing after this long was published to another
#: gateway (this one restarted since) or abandoned, and the speech following it gives up.
UNPUBLISHED_LIMIT_SECONDS = 10.0


class ReplyTextError(ValueError):
    """A publisher sent something the reply cannot take (a gap in the pieces)."""


class ReplyNeverPublishedError(LookupError):
    """Nothing of a followed reply reached this gateway in time."""


@dataclass
class _Reply:
    pieces: list[str] = field(default_factory=list)
    ended: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    ended_at: float = 0.0


class ReplyTexts:
    """One call's replies in flight, by reply id."""

    def __init__(self) -> None:
        self._replies: dict[str, _Reply] = {}

    def _reply(self, reply_id: str) -> _Reply:
        reply = self._replies.get(reply_id)
        if reply is None:
            self._prune()
            reply = self._replies[reply_id] = _Reply()
        return reply

    def _prune(self) -> None:
        now = time.monotonic()
        for reply_id, reply in list(self._replies.items()):
            if reply.ended and now - reply.ended_at > ENDED_TTL_SECONDS:
                del self._replies[reply_id]
        # Oldest first (dicts keep insertion order); an abandoned reply must not pin memory.
        while len(self._replies) >= MAX_REPLIES:
            oldest = next(iter(self._replies))
            self._replies.pop(oldest).changed.set()

    def holds(self, reply_id: str) -> bool:
        """Whether anything of the reply (a piece or its end) reached this gateway."""
        reply = self._replies.get(reply_id)
        return reply is not None and (bool(reply.pieces) or reply.ended)

    def publish(self, reply_id: str, index: int, piece: str) -> int:
        """Add the piece at `index`; a piece already held there wins. Returns pieces held."""
        reply = self._reply(reply_id)
        if index > len(reply.pieces):
            raise ReplyTextError(f"piece {index} of {reply_id} arrived before piece {index - 1}")
        if index == len(reply.pieces) and not reply.ended and piece:
            reply.pieces.append(piece)
            reply.changed.set()
        return len(reply.pieces)

    def end(self, reply_id: str) -> int:
        reply = self._reply(reply_id)
        if not reply.ended:
            reply.ended, reply.ended_at = True, time.monotonic()
            reply.changed.set()
        return len(reply.pieces)

    async def follow(
        self, reply_id: str, *, first_within: float = UNPUBLISHED_LIMIT_SECONDS
    ) -> AsyncIterator[str]:
        """Every piece of the reply, as it arrives, until the publisher ends it; raises
        `ReplyNeverPublishedError` when nothing of it arrives within `first_within` seconds."""
        reply = self._reply(reply_id)
        sent = 0
        deadline = asyncio.get_running_loop().time() + first_within
        while True:
            while sent < len(reply.pieces):
                yield reply.pieces[sent]
                sent += 1
            if reply.ended or self._replies.get(reply_id) is not reply:
                return
            reply.changed.clear()
            if reply.pieces:
                await reply.changed.wait()
                continue
            try:
                async with asyncio.timeout_at(deadline):  # no extra task: wakes as promptly
                    await reply.changed.wait()
            except TimeoutError:
                raise ReplyNeverPublishedError(
                    f"nothing of reply {reply_id} reached this gateway in {first_within:g} s"
                ) from None
