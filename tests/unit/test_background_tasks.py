"""The gateway's background work: held until it ends, failures logged, cancellation clean."""

from __future__ import annotations

import asyncio
import gc
import warnings

import structlog

from media_gateway.background import BackgroundTasks


async def test_work_cancelled_before_it_started_is_closed_without_a_never_awaited_warning() -> None:
    tasks = BackgroundTasks("work failed")
    started: list[str] = []

    async def refresh() -> None:
        started.append("refresh")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tasks.spawn(refresh())
        tasks.cancel()  # before the loop gave the task its first step, as a call closing does
        await tasks.wait()
        gc.collect()

    assert started == []
    assert len(tasks) == 0
    never_awaited = [w for w in caught if "never awaited" in str(w.message)]
    assert never_awaited == []


async def test_failing_work_is_logged_with_its_context_and_the_others_go_on() -> None:
    tasks = BackgroundTasks("call control failed", call_id="call-7")
    finished: list[str] = []

    async def broken() -> None:
        raise RuntimeError("the workflow refused")

    async def fine() -> None:
        await asyncio.sleep(0)
        finished.append("fine")

    with structlog.testing.capture_logs() as logs:
        tasks.spawn(broken())
        tasks.spawn(fine())
        await tasks.wait()

    assert finished == ["fine"]
    failures = [entry for entry in logs if entry["event"] == "call control failed"]
    assert len(failures) == 1
    assert failures[0]["call_id"] == "call-7"
    assert failures[0]["log_level"] == "error"


async def test_wait_also_waits_for_work_started_while_waiting() -> None:
    tasks = BackgroundTasks("work failed")
    go, first_done, release_second = asyncio.Event(), asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def second() -> None:
        await release_second.wait()
        order.append("second")

    async def first() -> None:
        await go.wait()
        tasks.spawn(second())  # after wait() began, with only `first` to wait for
        order.append("first")
        first_done.set()

    tasks.spawn(first())
    waiting = asyncio.create_task(tasks.wait())
    await asyncio.sleep(0)  # wait() starts, holding `first` alone
    go.set()
    await first_done.wait()
    for _ in range(5):  # let the loop go round: wait() must still hold for `second`
        await asyncio.sleep(0)
    assert not waiting.done()

    release_second.set()
    await waiting
    assert order == ["first", "second"]


async def test_cancel_stops_work_in_progress() -> None:
    tasks = BackgroundTasks("work failed")
    started, never = asyncio.Event(), asyncio.Event()
    reached_the_end: list[bool] = []

    async def long_refresh() -> None:
        started.set()
        await never.wait()
        reached_the_end.append(True)

    task = tasks.spawn(long_refresh())
    await started.wait()
    tasks.cancel()
    await tasks.wait()

    assert task.cancelled()
    assert reached_the_end == []
