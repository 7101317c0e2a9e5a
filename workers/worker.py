"""Workers: one entry point serving any mix of the calls, llm, speech and tools queues.

The embedded default runs every queue in one process; an SRE runs each queue as its own fleet
(`baton worker --queues llm`), and both behave the same because the workflow calls activities
by name on their queue.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import structlog
from temporalio.client import Client
from temporalio.worker import Worker

from activities.agent_reply import AgentReplyActivity
from activities.business_tools import run_business_tool
from activities.chat_models.base import ChatModel
from activities.escalation import (
    deliver_escalation_ticket,
    file_escalation_ticket,
    mark_escalation_ticket,
)
from activities.handoff import render_start_greeting, resolve_handoff
from activities.snapshot import load_call_snapshot
from activities.speech import SpeechActivities
from activities.transfer.activity import TransferActivities
from contracts.temporal import QUEUES
from workers.tuning import DEFAULT_TOOL_THREADS, SHUTDOWN_SLACK_SECONDS, WorkerTuning
from workflows.call_session import CallSessionWorkflow
from workflows.runner import workflow_runner

log = structlog.get_logger("baton.worker")

#: A replacement worker picks up a call within this long after the old one died; the SDK's
#: 10 s default would leave the caller in silence that long.
STICKY_TIMEOUT = timedelta(seconds=1)


def parse_queues(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in QUEUES]
    if unknown or not names:
        raise ValueError(
            f"unknown queue(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(QUEUES)}"
        )
    return names


def build_workers(
    client: Client,
    queues: Sequence[str],
    *,
    chat_model: ChatModel | None = None,
    speech: SpeechActivities | None = None,
    tuning: WorkerTuning | None = None,
) -> list[Worker]:
    """One Temporal worker per requested queue."""
    tuning = tuning or WorkerTuning()
    common: dict[str, Any] = {
        "max_concurrent_workflow_task_polls": tuning.pollers,
        "max_concurrent_activity_task_polls": tuning.pollers,
        # Stopping: no new polls at once; activities held get this long before cancellation.
        "graceful_shutdown_timeout": timedelta(seconds=tuning.drain_seconds),
    }
    activity_limit: dict[str, Any] = {"max_concurrent_activities": tuning.max_activities}
    workers: list[Worker] = []
    if "calls" in queues:
        workers.append(
            Worker(
                client,
                task_queue=QUEUES["calls"],
                workflows=[CallSessionWorkflow],
                # The runner `baton audit verify` replays calls in, too (workflows.runner).
                workflow_runner=workflow_runner(),
                # Local activities run on the workflow worker itself.
                activities=[resolve_handoff, render_start_greeting],
                sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
                max_cached_workflows=tuning.sticky_cache,
                # Few tasks at once, each done fast: a replacement worker rebuilding hundreds of
                # calls would otherwise run them all together and overrun the 2 s workflow task
                # timeout (contracts.temporal), and the server would hand them out again.
                max_concurrent_workflow_tasks=tuning.max_workflow_tasks,
                **common,
            )
        )
    if "llm" in queues:
        replies = AgentReplyActivity(chat_model)
        workers.append(
            Worker(
                client,
                task_queue=QUEUES["llm"],
                activities=[replies.generate_agent_reply],
                **activity_limit,
                **common,
            )
        )
    if "speech" in queues:
        speech = speech or speech_from_env()
        workers.append(
            Worker(
                client,
                task_queue=QUEUES["speech"],
                activities=[speech.synthesize_speech, speech.transcribe_segment],
                **activity_limit,
                **common,
            )
        )
    if "tools" in queues:
        # Handlers are synchronous: one thread per activity slot.
        threads = tuning.max_activities or DEFAULT_TOOL_THREADS
        workers.append(
            Worker(
                client,
                task_queue=QUEUES["tools"],
                activities=[
                    run_business_tool,
                    load_call_snapshot,
                    file_escalation_ticket,
                    deliver_escalation_ticket,
                    mark_escalation_ticket,
                    TransferActivities().start_transfer,
                ],
                activity_executor=ThreadPoolExecutor(max_workers=threads),
                max_concurrent_activities=threads,
                **common,
            )
        )
    return workers


def warn_if_english_only() -> None:
    """A speech worker on the offline recognizer says at start which agents it cannot hear."""
    from registries.language_check import english_only_warning, offline_recognizer
    from registries.loading import load_registry

    if offline_recognizer():
        warning = english_only_warning(load_registry().agents.values())
        if warning:
            log.warning(warning)


def speech_from_env() -> SpeechActivities:
    """Speech activities with the providers BATON_STT / BATON_TTS name (offline by default)."""
    from activities.speech_providers.factory import recognizer_from_env, synthesizer_from_env

    recognizer = recognizer_from_env()
    warn_if_english_only()
    warm_up = getattr(recognizer, "warm_up", None)
    if warm_up is not None:
        warm_up()  # load a local model now, not on the first caller's first words
    return SpeechActivities(recognizer, synthesizer_from_env())


#: How often a serving worker asks its Temporal frontend whether it is there, and how long it
#: waits for the answer: a lost server shows on /readyz within about both together.
SERVER_CHECK_EVERY = timedelta(seconds=5)
SERVER_CHECK_TIMEOUT = timedelta(seconds=2)


@dataclass
class ServingState:
    """Whether this process should get new work: an ops server's `/readyz` asks `is_ready`.

    Ready once every queue's pollers run and while the Temporal frontend answers its health
    check (pollers keep retrying a lost server quietly, so only asking shows it); not ready
    from the moment a drain begins, so a load balancer or orchestrator stops counting on the
    process while it finishes what it holds."""

    running: bool = False
    draining: bool = False
    server_reachable: bool = True

    def is_ready(self) -> bool:
        return self.running and not self.draining and self.server_reachable


async def watch_server(client: Client, state: ServingState) -> None:
    """Keep `state.server_reachable` current with the frontend's gRPC health check."""
    while True:
        why = "it says it is not serving"
        try:
            answered = await client.service_client.check_health(timeout=SERVER_CHECK_TIMEOUT)
        except Exception as error:  # unreachable, timed out, refused: all mean not ready
            answered, why = False, type(error).__name__
        if answered != state.server_reachable:
            if answered:
                log.info("temporal server answering its health check again")
            else:
                log.warning("temporal server not answering its health check", why=why)
        state.server_reachable = answered
        await asyncio.sleep(SERVER_CHECK_EVERY.total_seconds())


async def run_workers(
    client: Client,
    queues: Sequence[str],
    stop: asyncio.Event,
    *,
    chat_model: ChatModel | None = None,
    speech: SpeechActivities | None = None,
    tuning: WorkerTuning | None = None,
    state: ServingState | None = None,
) -> None:
    """Serve `queues` until `stop` is set, then drain: poll no more, let the work held finish
    (activities get `tuning.drain_seconds`, then are cancelled and retried elsewhere)."""
    tuning = tuning or WorkerTuning()
    state = state or ServingState()
    workers = build_workers(client, queues, chat_model=chat_model, speech=speech, tuning=tuning)
    runs = [asyncio.create_task(worker.run()) for worker in workers]
    watcher = asyncio.create_task(watch_server(client, state))
    state.running = True
    log.info("worker started", queues=list(queues))
    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([*runs, stopper], return_when=asyncio.FIRST_COMPLETED)
    state.draining = True
    log.info("worker draining", queues=list(queues), drain_seconds=tuning.drain_seconds)
    try:
        await asyncio.wait_for(
            asyncio.gather(*(worker.shutdown() for worker in workers), return_exceptions=True),
            tuning.drain_seconds + SHUTDOWN_SLACK_SECONDS,
        )
    except TimeoutError:
        log.warning("worker drain overran; the server hands what is left to other workers")
    finally:
        state.running = False
        stopper.cancel()
        watcher.cancel()
    for task in runs:
        if task in done and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    log.info("worker stopped", queues=list(queues))


def stop_on_signals(stop: asyncio.Event, *, exit_after: float | None = None) -> None:
    """SIGINT/SIGTERM set `stop` so the process drains instead of dying mid-activity.

    With `exit_after`, the process also ends that many seconds after the first signal even if
    the drain hangs (a stuck native shutdown, a handler that never returns): an orchestrator
    then sees the exit, not a process it has to kill. A plain timer thread, because the event
    loop itself may be what is stuck."""
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if exit_after is not None and not stop.is_set():
            timer = threading.Timer(exit_after, _exit_overran, args=(exit_after,))
            timer.daemon = True
            timer.start()
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)


def _exit_overran(seconds: float) -> None:
    log.error("drain did not finish; exiting", seconds=seconds)
    os._exit(1)
