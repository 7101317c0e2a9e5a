"""Work a call or the console starts and does not wait for: kept, logged, and cancelled as one.

asyncio keeps only a weak reference to a task, so a task nobody holds can vanish mid-run; and a
task cancelled before its first step never starts its coroutine, which Python then reports as
"never awaited". This set holds each task until it ends and closes a coroutine that never ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

log = structlog.get_logger("baton.gateway")


class BackgroundTasks:
    """Tasks started and not awaited by their owner; `cancel` ends them all."""

    def __init__(self, failure: str, **context: Any) -> None:
        self._failure = failure  # the log line for work that raised, with `context` (a call id)
        self._context = context
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[None]:
        task = asyncio.create_task(self._logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        # Cancelled before its first step, the task never awaited `work`: close it unstarted.
        # On a coroutine that already finished, close() does nothing.
        task.add_done_callback(lambda _task: work.close())
        return task

    async def _logged(self, work: Coroutine[Any, Any, Any]) -> None:
        try:
            await work
        except Exception:
            log.exception(self._failure, **self._context)

    async def wait(self) -> None:
        """Until every task, including those started meanwhile, has ended."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    def cancel(self) -> None:
        """Cancel every task; `wait` then waits for them to end."""
        for task in list(self._tasks):
            task.cancel()
