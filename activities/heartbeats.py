"""Heartbeating while an activity waits, so Temporal's cancellation reaches it promptly.

Temporal delivers an activity's cancellation only with the response to a heartbeat. An activity
that waits on a model, a speech provider or the gateway without heartbeating would learn of a
barge-in or an ended call only when the wait is over.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from temporalio import activity

T = TypeVar("T")


async def with_heartbeats(work: Awaitable[T], *, every: float) -> T:
    """Await `work`, heartbeating every `every` seconds until it finishes.

    When the activity is cancelled, `work` is cancelled too, which stops the provider call or
    the RPC instead of leaving it to run for nobody.
    """
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every)
            if done:
                return task.result()
            activity.heartbeat()
    finally:
        task.cancel()  # no-op once it has finished
