"""The gateway's control plane: start or attach to a call's workflow and send it what happens.

Speaks to Temporal only through `contracts`. Every utterance the gateway accepted is
delivered or the call has ended: submission retries with the same utterance id (the workflow
answers a duplicate id once), so a Temporal hiccup delays a turn but never drops it.
"""

from __future__ import annotations

import asyncio
import os
import socket
from datetime import datetime, timedelta
from typing import Any

import structlog
from temporalio.api.enums.v1 import PendingWorkflowTaskState
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
    WorkflowUpdateHandle,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from contracts.calls import (
    QUERY_SUMMARY,
    QUERY_TRANSCRIPT_SINCE,
    SIGNAL_BARGE_IN,
    SIGNAL_DTMF,
    SIGNAL_HANG_UP,
    SIGNAL_RENEW_LEASE,
    UPDATE_SUBMIT_UTTERANCE,
    BargeIn,
    CallInput,
    CallOutcome,
    CallSessionStart,
    CallStatus,
    CallSummary,
    Dtmf,
    HangUp,
    LeaseHolder,
    LeaseRenewal,
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
from contracts.transfer import SIGNAL_TRANSFER_SETTLED, TransferSettled
from media_gateway.playback import Heard

log = structlog.get_logger("baton.gateway")
#: This gateway process, as a call's lease names its holder: a gateway restarted on the same
#: address is another holder.
GATEWAY_ID = f"{socket.gethostname()}:{os.getpid()}"

#: Temporal errors worth retrying: the server or the network blinked.
_TRANSIENT = frozenset(
    {RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.RESOURCE_EXHAUSTED}
)
RETRY_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0)
#: How long a new connection waits to learn whether another gateway has the caller's line.
LINE_CHECK_TIMEOUT = timedelta(seconds=2)
#: How long a gateway that found its call closed waits to read how it ended.
FINAL_STATUS_TIMEOUT_S = 5.0


def _raise_if_cancelling() -> None:
    """The SDK reports a cancelled update call as an RPC timeout-or-cancel error: in a task
    being cancelled, raise the cancellation again so the task ends cancelled."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError from None


async def turn_reply(handle: WorkflowUpdateHandle[TurnReply]) -> TurnReply:
    """A submitted utterance's turn, once the workflow has answered it. A gateway closing
    meanwhile cancels the wait: that is a cancellation, not a failed call control."""
    try:
        return await handle.result()
    except WorkflowUpdateRPCTimeoutOrCancelledError:
        _raise_if_cancelling()
        raise


class CallEndedError(Exception):
    """The call's workflow is closed; a connection for it is refused."""


class CallControl:
    """One call's link to its workflow."""

    def __init__(self, client: Client, call: CallInput) -> None:
        self.client = client
        self.call = call
        self.handle: WorkflowHandle[Any, Any] = client.get_workflow_handle(
            workflow_id_for(call.call_id)
        )

    async def attach(self) -> None:
        """Start the call's workflow, or attach to it if it is running.

        A closed call is never started again: that would be a second session for one call id.
        """
        try:
            self.handle = await self.client.start_workflow(
                WORKFLOW_NAME,
                CallSessionStart(call=self.call),
                id=self.handle.id,
                task_queue=CALLS_QUEUE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                task_timeout=timedelta(seconds=WORKFLOW_TASK_TIMEOUT_SECONDS),
                static_summary=self.call.static_summary(),
            )
        except WorkflowAlreadyStartedError as error:
            raise CallEndedError(f"call {self.call.call_id} has already ended") from error

    async def submit(self, utterance: Utterance) -> WorkflowUpdateHandle[TurnReply] | None:
        """Hand an utterance to the workflow; returns once it is accepted, in order.

        The caller awaits the handle's result (the turn) separately, so a new utterance never
        waits behind the reply still being spoken. None when the call ended meanwhile.
        """
        for attempt, delay in enumerate((*RETRY_DELAYS, None)):
            try:
                return await self.handle.start_update(
                    UPDATE_SUBMIT_UTTERANCE,
                    utterance,
                    # The update id is the utterance id: Temporal and the workflow both
                    # recognise a retried submission as the same utterance.
                    id=utterance.utterance_id,
                    wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                    result_type=TurnReply,
                )
            except WorkflowUpdateFailedError as error:
                log.warning(
                    "utterance refused", utterance=utterance.utterance_id, error=str(error.cause)
                )
                return None
            except WorkflowUpdateRPCTimeoutOrCancelledError:
                # A submitter being cancelled (the gateway closing) must stop, not go on to
                # the next utterance and hold the gateway's shutdown forever.
                _raise_if_cancelling()
                if delay is None:
                    raise
                log.info("utterance not accepted yet", utterance=utterance.utterance_id)
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    return None  # the workflow is gone: the call is over
                if error.status not in _TRANSIENT or delay is None:
                    raise
                log.info(
                    "retrying utterance", utterance=utterance.utterance_id, attempt=attempt + 1
                )
                await asyncio.sleep(delay)
        return None

    async def barge_in(self, heard: Heard) -> None:
        await self._signal(
            SIGNAL_BARGE_IN,
            BargeIn(heard_chars=heard.chars, played_ms=heard.played_ms, heard_text=heard.text),
        )

    async def dtmf(self, digits: str) -> None:
        await self._signal(SIGNAL_DTMF, Dtmf(digits=digits))

    async def hang_up(self, reason: str) -> None:
        await self._signal(SIGNAL_HANG_UP, HangUp(reason=reason))

    async def renew_lease(
        self, gateway_address: str, connected_at: datetime, *, line_open: bool = True
    ) -> bool:
        """Renew the gateway's lease; False when the call's workflow has closed meanwhile
        (ended by a turn, a transfer or a supervisor that did not go through this gateway).
        `connected_at`: when the caller's connection here began (the newest one holds);
        `line_open`: whether that connection is up (else this gateway is in its grace)."""
        renewal = LeaseRenewal(
            gateway_address=gateway_address,
            gateway_id=GATEWAY_ID,
            connected_at=connected_at,
            line_open=line_open,
        )
        return await self._signal(SIGNAL_RENEW_LEASE, renewal)

    async def final_status(self) -> CallStatus | None:
        """How the call's closed workflow ended (completed, transferred...), or None when that
        cannot be read in a few seconds (the caller is still told the call is over)."""
        closed: WorkflowHandle[Any, CallOutcome] = self.client.get_workflow_handle(
            self.handle.id, result_type=CallOutcome
        )
        try:
            async with asyncio.timeout(FINAL_STATUS_TIMEOUT_S):
                outcome: CallOutcome = await closed.result()
        except (WorkflowFailureError, RPCError, TimeoutError):  # the line closes all the same
            return None
        return outcome.status

    async def line_holder(self) -> LeaseHolder | None:
        """The gateway the call's lease names, as its workflow says: None for a call not
        started yet, and for one no worker answers for in time (a connection then goes ahead,
        as it would for a call recorded before lease holders said whether the line is open)."""
        try:
            summary: CallSummary = await self.handle.query(
                QUERY_SUMMARY, result_type=CallSummary, rpc_timeout=LINE_CHECK_TIMEOUT
            )
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                log.info("lease holder not known", call_id=self.call.call_id, error=str(error))
            return None
        except WorkflowQueryFailedError as error:
            log.info("lease holder not known", call_id=self.call.call_id, error=str(error))
            return None
        return summary.gateway

    async def transfer_settled(self, settled: TransferSettled) -> bool:
        """Tell the workflow how its pending transfer ended; False when it has closed."""
        return await self._signal(SIGNAL_TRANSFER_SETTLED, settled)

    async def outcome(self) -> CallOutcome:
        """Wait for the call's workflow to close (through continue-as-new) and return its result."""
        handle = self.client.get_workflow_handle(self.handle.id, result_type=CallOutcome)
        outcome: CallOutcome = await handle.result()
        return outcome

    async def task_waiting(self) -> str | None:
        """A key for the workflow task now waiting for a worker to take it (its first
        scheduling time), or None when none waits: no task pending, one already taken, or
        the workflow closed. The same key on two looks means the same task waited between.
        DescribeWorkflowExecution: the server's own record, whatever the workers' state."""
        try:
            description = await self.handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        if description.status != WorkflowExecutionStatus.RUNNING:
            return None
        raw = description.raw_description
        if not raw.HasField("pending_workflow_task"):
            return None
        task = raw.pending_workflow_task
        if task.state != PendingWorkflowTaskState.PENDING_WORKFLOW_TASK_STATE_SCHEDULED:
            return None
        return task.original_scheduled_time.ToJsonString()

    async def _signal(self, name: str, payload: Any) -> bool:
        """Signal the call; False when its workflow is closed."""
        for delay in (*RETRY_DELAYS, None):
            try:
                await self.handle.signal(name, payload)
                return True
            except RPCError as error:
                if error.status == RPCStatusCode.NOT_FOUND:
                    return False  # nothing to tell a finished call
                if error.status not in _TRANSIENT or delay is None:
                    raise
                await asyncio.sleep(delay)
        return True  # not reached: the last attempt returns or raises

    async def timeline(self, start: int) -> tuple[CallSummary, TranscriptSlice]:
        """Where the call stands, and its transcript items from index `start` on."""
        summary: CallSummary = await self.handle.query(QUERY_SUMMARY, result_type=CallSummary)
        items: TranscriptSlice = await self.handle.query(
            QUERY_TRANSCRIPT_SINCE, start, result_type=TranscriptSlice
        )
        return summary, items
