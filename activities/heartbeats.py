"""Heartbeating while an activity waits, so Temporal's cancellation reaches it promptly.

Temporal delivers an activity's cancellation only with the response to a heartbeat. An activity
that waits on a model, a speech provider or the gateway without heartbeating would learn of a
barge-in or an ended call only when the wait is over.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable
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


def heartbeat_while(work: Callable[[], T], *, every: float) -> T:
    """For a sync activity: run `work` on this thread while another heartbeats for it.

    The heartbeats show the worker is alive, so a worker killed inside a slow tool is noticed
    within the heartbeat timeout instead of the whole start-to-close timeout. The beating
    thread runs in a copy of this thread's context, where the SDK keeps the activity's.
    """
    finished = threading.Event()
    context = contextvars.copy_context()

    def beat() -> None:
        while not finished.wait(every):
            context.run(activity.heartbeat)

    beater = threading.Thread(target=beat, name="heartbeat", daemon=True)
    beater.start()
    try:
        return work()
    finally:
        finished.set()
        beater.join()
