"""A caller that keeps a call going through faults, the way a gateway does.

While the server is down (or just back) an Update cannot be delivered, and while a call
stalls the client's long poll for the reply can run out. In both cases the caller sends the
same utterance again, under the same utterance id: the workflow takes each id in once and
answers a resent one from its first reply, so resending can neither lose nor double a turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from temporalio.client import WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.service import RPCError

from baton.call_client import CallSession, new_utterance_id
from contracts.calls import TurnReply

T = TypeVar("T")
#: Pause before resending: short, so the measured stall is the system's, not this loop's.
RESEND_PAUSE = 0.2


async def say_until_answered(
    session: CallSession, text: str, utterance_id: str, timeout: float
) -> TurnReply:
    """Say `text` as `utterance_id`, resending it until answered; TimeoutError after
    `timeout` seconds in all."""
    async with asyncio.timeout(timeout):
        while True:
            try:
                return await session.say(text, utterance_id)
            except RPCError:  # the server is down, or restarting
                await asyncio.sleep(RESEND_PAUSE)
            except WorkflowUpdateRPCTimeoutOrCancelledError as error:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    # The SDK's word for our own cancellation: as CancelledError, so that the
                    # timeout above turns it into TimeoutError (and any other cancel stays one).
                    raise asyncio.CancelledError() from error
                # The long poll for the reply ran out while the call was stalled: resend.


async def retrying(action: Callable[[], Awaitable[T]], timeout: float) -> T:
    """`action()` again after each RPC error (the server restarting, no worker to answer a
    query yet), until it succeeds; TimeoutError after `timeout` seconds in all."""
    async with asyncio.timeout(timeout):
        while True:
            try:
                return await action()
            except RPCError:
                await asyncio.sleep(RESEND_PAUSE)


@dataclass(kw_only=True)
class Caller:
    """What a fault test's caller said (utterance ids, for the audit) and the turns it awaits
    in the background while a fault is injected (cancelled at teardown)."""

    reply_timeout: ClassVar[float] = 90.0
    said: list[str] = field(default_factory=list)
    turns: list[asyncio.Task[TurnReply]] = field(default_factory=list)

    async def say(self, session: CallSession, text: str) -> TurnReply:
        """Say `text`, resending it while the server cannot be reached (as a gateway does)."""
        uid = new_utterance_id()
        self.said.append(uid)
        return await say_until_answered(session, text, uid, self.reply_timeout)

    def say_later(self, session: CallSession, text: str) -> asyncio.Task[TurnReply]:
        """`say` in the background, for a fault to be injected meanwhile."""
        turn = asyncio.create_task(self.say(session, text))
        self.turns.append(turn)
        return turn
