"""Client side of a call: start it, say things, hang up, read its timeline.

Used by `baton call`, `baton demo`, the tests and benchmarks. Speaks to the workflow only
through the names and payloads of `contracts`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from temporalio.client import Client, WithStartWorkflowOperation, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy

from baton.preflight import CommandFailedError
from contracts.calls import (
    QUERY_STATE,
    QUERY_SUMMARY,
    QUERY_TRANSCRIPT,
    QUERY_TRANSCRIPT_SINCE,
    SIGNAL_HANG_UP,
    UPDATE_SUBMIT_UTTERANCE,
    CallInput,
    CallSessionStart,
    CallSummary,
    HangUp,
    TranscriptSlice,
    TurnReply,
    Utterance,
)
from contracts.temporal import (
    CALLS_QUEUE,
    WORKFLOW_NAME,
    WORKFLOW_TASK_TIMEOUT_SECONDS,
    workflow_id_for,
)
from contracts.transcript import (
    AgentTurn,
    BargeInItem,
    CallEndItem,
    DtmfItem,
    GreetingItem,
    HandoffItem,
    RouteChangeItem,
    SupervisorItem,
    ToolCallItem,
    ToolResultItem,
    TranscriptItem,
    TransferItem,
    UserTurn,
)

#: A workflow task outlives a dead `calls` worker by this much at most.
WORKFLOW_TASK_TIMEOUT = timedelta(seconds=WORKFLOW_TASK_TIMEOUT_SECONDS)


class CallSession:
    """One call seen from a client (CLI, test, gateway)."""

    def __init__(self, client: Client, call: CallInput) -> None:
        self.client = client
        self.call = call
        self.workflow_id = workflow_id_for(call.call_id)
        self.handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(self.workflow_id)

    async def start(self) -> None:
        """Start the call's workflow; starting an already running call is harmless."""
        self.handle = await self.client.start_workflow(
            WORKFLOW_NAME,
            CallSessionStart(call=self.call),
            id=self.workflow_id,
            task_queue=CALLS_QUEUE,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            task_timeout=WORKFLOW_TASK_TIMEOUT,
            static_summary=self.call.static_summary(),
        )

    async def start_with_utterance(self, text: str, utterance_id: str | None = None) -> TurnReply:
        """Start the call and deliver its first utterance in one round trip."""
        operation: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            WORKFLOW_NAME,
            CallSessionStart(call=self.call),
            id=self.workflow_id,
            task_queue=CALLS_QUEUE,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            task_timeout=WORKFLOW_TASK_TIMEOUT,
            static_summary=self.call.static_summary(),
        )
        reply: TurnReply = await self.client.execute_update_with_start_workflow(
            UPDATE_SUBMIT_UTTERANCE,
            Utterance(utterance_id=utterance_id or new_utterance_id(), text=text),
            start_workflow_operation=operation,
            result_type=TurnReply,
        )
        self.handle = await operation.workflow_handle()
        return reply

    async def say(self, text: str, utterance_id: str | None = None) -> TurnReply:
        """Submit an utterance and wait for what the caller hears back."""
        reply: TurnReply = await self.handle.execute_update(
            UPDATE_SUBMIT_UTTERANCE,
            Utterance(utterance_id=utterance_id or new_utterance_id(), text=text),
            result_type=TurnReply,
        )
        return reply

    async def hang_up(self, reason: str = "caller hung up") -> None:
        await self.handle.signal(SIGNAL_HANG_UP, HangUp(reason=reason))

    async def state(self) -> dict[str, Any]:
        """The workflow's whole state as JSON (for `baton call --json` and tests)."""
        result: dict[str, Any] = await self.handle.query(QUERY_STATE, result_type=dict)
        return result

    async def summary(self) -> CallSummary:
        """Where the call stands: status, active agent, agents visited, turn."""
        result: CallSummary = await self.handle.query(QUERY_SUMMARY, result_type=CallSummary)
        return result

    async def transcript_since(self, start: int = 0) -> TranscriptSlice:
        """The typed transcript items from index `start` on."""
        result: TranscriptSlice = await self.handle.query(
            QUERY_TRANSCRIPT_SINCE, start, result_type=TranscriptSlice
        )
        return result

    async def transcript(self) -> list[dict[str, Any]]:
        """The whole transcript as JSON, for tests that match on its fields."""
        result: list[dict[str, Any]] = await self.handle.query(QUERY_TRANSCRIPT, result_type=list)
        return result

    async def wait_for(
        self,
        ready: Callable[[list[dict[str, Any]]], bool],
        timeout: float = 15.0,
        interval: float = 0.05,
        *,
        what: str = "it got there",
    ) -> list[dict[str, Any]]:
        """Poll the transcript until `ready` (e.g. the opening greeting has been spoken).

        Raises `CallEndedError` with the workflow's own reason as soon as the call has ended
        without getting there, rather than waiting out `timeout`.
        """
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            # The status first: once it says ended, the transcript read after it is final.
            summary = await self.summary()
            items = await self.transcript()
            if ready(items):
                return items
            if summary.status != "active":
                raise CallEndedError(f"the call ended before {what}: {summary.end_reason}")
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"call {self.call.call_id} did not get there in {timeout}s")
            await asyncio.sleep(interval)

    async def until_greeted(self, timeout: float = 30.0) -> list[dict[str, Any]]:
        """Wait for the first greeting (see `wait_for`); a stall says what to check."""
        try:
            return await self.wait_for(greeted, timeout, what="it began")
        except TimeoutError:
            raise CommandFailedError(
                f"no greeting within {timeout:.0f} s: are workers running?"
            ) from None


class CallEndedError(CommandFailedError):
    """The call ended before what a client waited for happened."""


def greeted(items: list[dict[str, Any]]) -> bool:
    return any(item["type"] == "greeting" for item in items)


class TimelinePrinter:
    """Prints a call's timeline as it grows: each call of `show_new` prints the new items."""

    def __init__(
        self,
        session: CallSession,
        *,
        quiet: bool = False,
        heard_as: bool = False,
        caller_lines: bool = True,
    ):
        self.session = session
        self.quiet = quiet
        self.caller_lines = caller_lines
        #: Voice calls: the caller's line is what the recognizer heard, and says so.
        self.heard_as = heard_as
        self.shown = 0

    async def show_new(self) -> None:
        new = await self.session.transcript_since(self.shown)
        if new.total < self.shown:  # a continue-as-new run carries fewer items: read them all
            new = await self.session.transcript_since(0)
        for item in new.items:
            if item.type == "user_turn" and not self.caller_lines:
                continue
            line = describe_item(item)
            if line and self.heard_as and item.type == "user_turn":
                line = "caller (heard as) " + line.removeprefix("caller       ")
            if line and not self.quiet:
                print(line, flush=True)
        self.shown = new.start + len(new.items)


def new_utterance_id() -> str:
    return f"u-{uuid.uuid4().hex[:12]}"


def describe_item(item: TranscriptItem) -> str | None:
    """One timeline line for a transcript item, or None for bookkeeping items."""
    match item:
        case UserTurn():
            note = "" if item.answered else "  (unanswered: the call ended)"
            return f"caller       : {item.text}{note}"
        case GreetingItem():
            return f"{item.agent:<13}: {item.text}   [greeting]"
        case AgentTurn(interrupted=True):
            return f"{item.agent:<13}: {item.heard_text or ''}…   [interrupted]"
        case AgentTurn():
            return f"{item.agent:<13}: {item.text}"
        case ToolCallItem():
            return f"  · {item.agent} calls {item.tool}({item.arguments})"
        case ToolResultItem():
            content = item.content
            return f"  · {item.tool} -> {content[:140]}{'…' if len(content) > 140 else ''}"
        case HandoffItem(success=True):
            return (
                f"  ⇢ handoff {item.source} -> {item.target} "
                f"[{item.handoff_type}, {item.trigger}] reason: {item.reason}"
            )
        case HandoffItem():
            return f"  ✗ handoff refused from {item.source}: {item.error}"
        case BargeInItem():
            return f"  ! caller barged in on {item.agent} after: {item.heard_text!r}"
        case SupervisorItem():
            return f"  ⚑ supervisor {item.supervisor}: {item.action} {item.target or ''}"
        case RouteChangeItem():
            change = item.change
            return f"  ⚑ supervisor {change.supervisor}: {change.describe()}"
        case DtmfItem():
            return f"caller keypad: {item.digits}"
        case TransferItem():
            by = f" by {item.taken_by}" if item.taken_by else ""
            detail = f" ({item.detail})" if item.detail else ""
            where = item.target_label or item.target_kind
            return f"  ☎ transfer to {where}: {item.outcome}{by}{detail}"
        case CallEndItem():
            return f"  ■ call {item.status}: {item.reason}"
    return None
