"""Workers: one entry point serving any mix of the calls, llm, speech and tools queues.

The embedded default runs every queue in one process; an SRE runs each queue as its own fleet
(`baton worker --queues llm`), and both behave the same because the workflow calls activities
by name on their queue.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import structlog
from temporalio.client import Client
from temporalio.worker import Worker

from activities.agent_reply import AgentReplyActivity
from activities.business_tools import run_business_tool
from activities.chat_models.base import ChatModel
from activities.escalation import file_escalation_ticket
from activities.handoff import render_start_greeting, resolve_handoff
from activities.snapshot import load_call_snapshot
from activities.speech import SpeechActivities
from contracts.temporal import QUEUES
from workflows.call_session import CallSessionWorkflow

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


#: Workflow tasks one calls worker runs at once (its replays compete for one interpreter).
MAX_CONCURRENT_WORKFLOW_TASKS = 8


def build_workers(
    client: Client,
    queues: Sequence[str],
    *,
    chat_model: ChatModel | None = None,
    speech: SpeechActivities | None = None,
    tool_threads: int = 16,
    max_cached_calls: int = 1000,
) -> list[Worker]:
    """One Temporal worker per requested queue."""
    workers: list[Worker] = []
    if "calls" in queues:
        workers.append(
            Worker(
                client,
                task_queue=QUEUES["calls"],
                workflows=[CallSessionWorkflow],
                # Local activities run on the workflow worker itself.
                activities=[resolve_handoff, render_start_greeting],
                sticky_queue_schedule_to_start_timeout=STICKY_TIMEOUT,
                max_cached_workflows=max_cached_calls,
                # Few tasks at once, each done fast: a replacement worker rebuilding hundreds of
                # calls would otherwise run them all together and overrun the 2 s workflow task
                # timeout (contracts.temporal), and the server would hand them out again.
                max_concurrent_workflow_tasks=MAX_CONCURRENT_WORKFLOW_TASKS,
            )
        )
    if "llm" in queues:
        replies = AgentReplyActivity(chat_model)
        workers.append(
            Worker(client, task_queue=QUEUES["llm"], activities=[replies.generate_agent_reply])
        )
    if "speech" in queues:
        speech = speech or speech_from_env()
        workers.append(
            Worker(
                client,
                task_queue=QUEUES["speech"],
                activities=[speech.synthesize_speech, speech.transcribe_segment],
            )
        )
    if "tools" in queues:
        workers.append(
            Worker(
                client,
                task_queue=QUEUES["tools"],
                activities=[run_business_tool, load_call_snapshot, file_escalation_ticket],
                activity_executor=ThreadPoolExecutor(max_workers=tool_threads),
            )
        )
    return workers


def speech_from_env() -> SpeechActivities:
    """Speech activities with the providers BATON_STT / BATON_TTS name (offline by default)."""
    from activities.speech_providers.factory import recognizer_from_env, synthesizer_from_env

    recognizer = recognizer_from_env()
    warm_up = getattr(recognizer, "warm_up", None)
    if warm_up is not None:
        warm_up()  # load a local model now, not on the first caller's first words
    return SpeechActivities(recognizer, synthesizer_from_env())


async def run_workers(
    client: Client,
    queues: Sequence[str],
    stop: asyncio.Event,
    *,
    chat_model: ChatModel | None = None,
    speech: SpeechActivities | None = None,
) -> None:
    """Serve `queues` until `stop` is set, then shut down gracefully (in-flight work ends)."""
    workers = build_workers(client, queues, chat_model=chat_model, speech=speech)
    runs = [asyncio.create_task(worker.run()) for worker in workers]
    log.info("worker started", queues=list(queues))
    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([*runs, stopper], return_when=asyncio.FIRST_COMPLETED)
    await asyncio.gather(*(worker.shutdown() for worker in workers), return_exceptions=True)
    stopper.cancel()
    for task in runs:
        if task in done and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]
    log.info("worker stopped", queues=list(queues))


def stop_on_signals(stop: asyncio.Event) -> None:
    """SIGINT/SIGTERM set `stop` so the worker drains instead of dying mid-activity."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
