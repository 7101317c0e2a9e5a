"""Replaying a call's runs against today's workflow code (Temporal's own `Replayer`, the project's
data converter, the real `CallSessionWorkflow`), in-process: no server and no worker.

The replay also hands back every handoff decision the call recorded, with the request it
answered. History keeps a local activity's result (the marker) but not its input, and the input
(system vars, visited agents, the caller's words) is state the workflow built up along the way.
Replaying rebuilds that state, so an interceptor on the replayed workflow sees each request
exactly as the call sent it, and the recorded decision as it came back from the marker.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from temporalio import workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import (
    Interceptor,
    Replayer,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from contracts.handoff import RESOLVE_HANDOFF, HandoffRequest, HandoffResult
from runtime.temporal_client import data_converter
from workflows.call_session import CallSessionWorkflow
from workflows.runner import workflow_runner

#: The quoted failure message inside Core's "Workflow activation completion failed: ..." text.
_CORE_MESSAGE = re.compile(r'message: "((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class RecordedDecision:
    """One `resolve_handoff` of the call: what the workflow asked and what history says came
    back (`result`), or the type and message of the error it failed with (`failure`)."""

    run: int
    request: HandoffRequest
    result: HandoffResult | None
    failure: str | None = None


@dataclass
class ReplayOutcome:
    """Whether every run replayed, and the handoff decisions seen while replaying."""

    runs: int = 0
    events: int = 0
    #: Why a run did not replay, naming its first incompatible event; None when all did.
    failure: str | None = None
    decisions: list[RecordedDecision] = field(default_factory=list)


class _DecisionRecorder(Interceptor):
    """Collects every handoff request and its recorded decision during a replay."""

    def __init__(self) -> None:
        self.run = 0
        self.decisions: list[RecordedDecision] = []

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        recorder = self

        class Inbound(WorkflowInboundInterceptor):
            def init(self, outbound: WorkflowOutboundInterceptor) -> None:
                super().init(_RecordingOutbound(outbound, recorder))

        return Inbound

    def add(self, run: int, request: HandoffRequest, done: workflow.ActivityHandle[Any]) -> None:
        """Keep a decision once its (replayed) local activity resolved."""
        if done.cancelled():
            return
        error = done.exception()
        if error is None:
            self.decisions.append(RecordedDecision(run, request, done.result()))
            return
        cause = error.cause if isinstance(error, ActivityError) else error
        kind = cause.type if isinstance(cause, ApplicationError) and cause.type else "error"
        self.decisions.append(RecordedDecision(run, request, None, f"{kind}: {cause}"))


class _RecordingOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, recorder: _DecisionRecorder) -> None:
        super().__init__(next)
        self.recorder = recorder

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        handle = self.next.start_local_activity(input)
        request = input.args[0] if input.args else None
        if input.activity == RESOLVE_HANDOFF and isinstance(request, HandoffRequest):
            run = self.recorder.run
            handle.add_done_callback(lambda done: self.recorder.add(run, request, done))
        return handle


def _replayer(recorder: _DecisionRecorder) -> Replayer:
    # The workers' own runner (the SDK's sandbox, made leaner: workflows.runner), so a call
    # replays exactly as a worker would run it, restrictions included.
    return Replayer(
        workflows=[CallSessionWorkflow],
        data_converter=data_converter(),
        workflow_runner=workflow_runner(),
        interceptors=[recorder],
    )


async def replay_runs(histories: list[WorkflowHistory]) -> ReplayOutcome:
    """Replay each run in order; on the first that fails, name its first incompatible event.
    All runs go through one replay worker (the SDK replays them one after another), so its
    start-up is paid once per call, not once per run."""
    recorder = _DecisionRecorder()
    outcome = ReplayOutcome(decisions=recorder.decisions)

    async def in_order() -> AsyncIterator[WorkflowHistory]:
        for run, history in enumerate(histories, start=1):
            # The SDK asks for the next history only once the one before has replayed.
            recorder.run = run
            yield history

    failed: tuple[WorkflowHistory, Exception] | None = None
    async with _replayer(recorder).workflow_replay_iterator(in_order()) as results:
        async for result in results:
            outcome.runs = recorder.run
            outcome.events += len(result.history.events)
            if result.replay_failure is not None:
                failed = (result.history, result.replay_failure)
                break
    if failed is not None:  # searched once the replay worker above has shut down
        where = await _first_failing_event(failed[0])
        outcome.failure = f"run {outcome.runs}: {where}{_core_message(failed[1])}"
    return outcome


async def _first_failing_event(history: WorkflowHistory) -> str:
    """ "first incompatible event: #N TYPE (name) — ", found by replaying ever shorter prefixes
    of the history (a prefix replays as far as it goes, so the shortest one that fails ends at
    the event the code no longer agrees with)."""
    replayer = _replayer(_DecisionRecorder())
    events = list(history.events)

    async def fails(count: int) -> bool:
        prefix = WorkflowHistory(history.workflow_id, events[:count])
        result = await replayer.replay_workflow(prefix, raise_on_replay_failure=False)
        return result.replay_failure is not None

    low, high = 1, len(events)  # prefixes of up to `low - 1` events pass, `high` fails
    if not await fails(high):
        return ""
    while low < high:
        middle = (low + high) // 2
        if await fails(middle):
            high = middle
        else:
            low = middle + 1
    return f"first incompatible event: {describe_event(events[high - 1])} — "


def describe_event(event: Any) -> str:
    """`#19 ACTIVITY_TASK_SCHEDULED (generate_agent_reply)`: an event as a person reads it."""
    kind = EventType.Name(event.event_type).removeprefix("EVENT_TYPE_")
    name = ""
    if event.HasField("activity_task_scheduled_event_attributes"):
        name = event.activity_task_scheduled_event_attributes.activity_type.name
    elif event.HasField("marker_recorded_event_attributes"):
        name = event.marker_recorded_event_attributes.marker_name
    elif event.HasField("timer_started_event_attributes"):
        name = f"timer {event.timer_started_event_attributes.timer_id}"
    return f"#{event.event_id} {kind}" + (f" ({name})" if name else "")


def _core_message(error: Exception) -> str:
    """Core's own message out of its failure dump, else the error's first line."""
    text = str(error)
    found = _CORE_MESSAGE.search(text)
    message = found.group(1).replace('\\"', '"') if found else text.splitlines()[0]
    return message[:400]
