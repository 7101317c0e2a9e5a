"""The transfer to a person that follows an escalation's ticket, when the scenario names a
target (contracts.registry.EscalationConfig).

The call's platform is asked to move the caller (activity `start_transfer`): it answers
`connected` (it has the caller: the call ends `transferred`), `failed`, or `pending` (a console
queue holds the caller with hold audio until a person takes the call, declines it, or the
scenario's hold timeout passes; the gateway says which with the `transfer_settled` signal).
While pending the call stays open and a caller's hang-up still ends it. Whenever nobody takes
the call the caller hears so, the ticket is kept and the call ends `escalated`.

Twilio and ACS answer `pending` when they will report the outcome (patch
'platform-transfer-outcome'): their media stream ends as the platform takes the caller over,
so the hang-up the gateway reports then is not the caller leaving, and only the platform's
report (or the hold timeout) settles the transfer. On Twilio the caller's stream is gone by
then: the gateway's answer to the `<Dial>` tells them nobody could take the call.

An ACS `queue` target is a Job Router queue (patch 'acs-job-router'): the activity itself waits
there for a worker, up to the hold timeout, with the caller on hold audio, then transfers the
caller to the worker; a job cancelled or not taken in time is the transfer `failed`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Literal

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.calls import CallStatus
    from contracts.escalation import EscalationTicket
    from contracts.metrics import EscalationReason
    from contracts.temporal import TOOLS_QUEUE
    from contracts.transcript import TransferItem
    from contracts.transfer import (
        NOBODY_FREE,
        START_TRANSFER,
        TransferOutcome,
        TransferRequest,
        TransferSettled,
        TransferTarget,
    )
    from contracts.transfer_task import TransferTask
    from workflows import policies
    from workflows.live_call import LiveCall
    from workflows.speech import Speaker

#: Guards the transfer after the ticket; calls recorded before it end `escalated` right away.
TRANSFER_PATCH = "human-transfer"
#: Guards waiting out a Twilio/ACS transfer through the stream's end (see the docstring).
PLATFORM_OUTCOME_PATCH = "platform-transfer-outcome"
#: Guards telling a caller with no transfer target the truth instead of "please hold".
NO_TARGET_TRUTH_PATCH = "no-target-truth"
#: Guards an ACS queue target waiting in Job Router for a worker (the activity runs up to the
#: hold timeout, heartbeating) instead of being refused at once.
JOB_ROUTER_PATCH = "acs-job-router"
#: Guards ending `hung_up` (not `escalated` with an apology to nobody) when a Job Router wait
#: failed because ACS says the caller hung up in the queue.
QUEUE_HANG_UP_PATCH = "acs-queue-hang-up"
#: A queue wait's activity heartbeats every second; this long without one, it is retried.
QUEUE_HEARTBEAT = timedelta(seconds=10)
__all__ = [
    "JOB_ROUTER_PATCH",
    "NOBODY_FREE",
    "NO_TARGET_TRUTH_PATCH",
    "PLATFORM_OUTCOME_PATCH",
    "QUEUE_HANG_UP_PATCH",
    "TRANSFER_PATCH",
    "HumanTransfer",
]

Outcome = Literal["connected", "taken", "declined", "timeout", "failed", "hung_up"]
Finish = Callable[[CallStatus, str], Awaitable[None]]


class HumanTransfer:
    """Moves an escalated caller to the scenario's target and ends the call accordingly."""

    def __init__(self, call: LiveCall, speaker: Speaker, finish: Finish) -> None:
        self.call = call
        self.speaker = speaker
        self.finish = finish
        #: Whether this run transfers at all (patch `human-transfer`, see `decide`).
        self.enabled = False
        #: True from the request until the transfer settles: only then is a signal expected.
        self.expecting = False
        self.settled: TransferSettled | None = None
        #: The platform (Twilio, ACS), not the media stream, says how a pending transfer ends.
        self.platform_reports = False
        #: With no target, the caller hears that a colleague will call back, not "please hold".
        self.truthful_without_target = False
        #: An ACS queue target waits in Job Router for a worker (patch `acs-job-router`).
        self.job_router = False
        #: A caller who hung up in that queue ends the call `hung_up` (`acs-queue-hang-up`).
        self.queue_hang_up = False

    def decide(self) -> None:
        """Ask, once at the start of each run, whether this call transfers escalations
        (whether a Twilio/ACS transfer waits for the platform's report, and whether a caller
        with no target is told a colleague will call back).

        Asked before any activity, not when an escalation comes: an escalation can follow a
        local activity's result (a loop guard after a handoff decision, a greeting that does
        not render), and a result that landed in a later workflow task comes back at once
        on replay, so a patch asked after it would be asked in another task than it was.
        """
        self.enabled = workflow.patched(TRANSFER_PATCH)
        channel = self.call.state.call.channel
        self.platform_reports = (
            self.enabled
            and channel in ("twilio", "acs")
            and workflow.patched(PLATFORM_OUTCOME_PATCH)
        )
        self.truthful_without_target = self.enabled and workflow.patched(NO_TARGET_TRUTH_PATCH)
        self.job_router = self.enabled and channel == "acs" and workflow.patched(JOB_ROUTER_PATCH)
        self.queue_hang_up = self.job_router and workflow.patched(QUEUE_HANG_UP_PATCH)

    def target_for(self, kind: EscalationReason) -> TransferTarget | None:
        """The scenario's target for this escalation, or None (no transfer configured, or
        a call recorded before transfers)."""
        snapshot = self.call.state.snapshot
        if snapshot is None or not self.enabled:
            return None
        target = snapshot.scenario.escalation.target_for(kind, self.call.state.active_agent)
        return None if target is None else target.to_transfer()

    def settle(self, settled: TransferSettled) -> None:
        """The gateway's `transfer_settled` signal: a console's person took the call or not."""
        if self.expecting:
            self.settled = settled
        else:
            workflow.logger.warning("transfer_settled signal with no transfer pending: ignored")

    async def hand_over(
        self, ticket: EscalationTicket, target: TransferTarget, reason: str, kind: str
    ) -> None:
        """Transfer the caller to `target` and end the call: transferred, hung up or escalated."""
        if self.call.hang_up is not None:
            await self._end(ticket, target, "hung_up", reason, "caller hung up before transfer")
            return
        self.expecting, self.settled = True, None
        outcome = await self._start(ticket, target, kind)
        if outcome.status == "connected":
            await self._end(ticket, target, "connected", reason, outcome.detail)
        elif outcome.status == "failed" and self._left_the_queue(outcome):
            await self._end(ticket, target, "hung_up", reason, outcome.detail)
        elif outcome.status == "failed":
            await self._end(ticket, target, "failed", reason, outcome.detail)
        else:
            await self._wait(ticket, target, reason)
        self.expecting = False

    async def _start(
        self, ticket: EscalationTicket, target: TransferTarget, kind: str
    ) -> TransferOutcome:
        call = self.call.state.call
        start_to_close, heartbeat = policies.TRANSFER.start_to_close, None
        queue_wait: int | None = None
        if self.job_router and target.kind == "queue":
            # The caller waits on hold in Job Router for up to the hold timeout, inside the
            # activity; heartbeats say it is still waiting.
            queue_wait = max(1, int(self.call.snapshot.scenario.escalation.hold_timeout_seconds))
            start_to_close += timedelta(seconds=queue_wait)
            heartbeat = QUEUE_HEARTBEAT
        request = TransferRequest(
            call_id=call.call_id,
            channel=call.channel,
            platform_call_id=call.platform_call_id,
            gateway_address=call.gateway_address,
            target=target,
            ticket_id=ticket.ticket_id,
            # The category only: the free-text reason may quote the caller (the ticket has it).
            reason=kind,
            ring_timeout_seconds=self._ring_timeout() if self.platform_reports else None,
            queue_wait_seconds=queue_wait,
        )
        try:
            outcome: TransferOutcome = await workflow.execute_activity(
                START_TRANSFER,
                TransferTask(request=request, ticket=ticket),
                result_type=TransferOutcome,
                task_queue=TOOLS_QUEUE,
                start_to_close_timeout=start_to_close,
                heartbeat_timeout=heartbeat,
                schedule_to_start_timeout=policies.TRANSFER.schedule_to_start,
                retry_policy=policies.TRANSFER.retry,
                summary=f"transfer to {target.label or target.kind}",
            )
        except ActivityError as error:
            cause = type(error.cause).__name__ if error.cause else "error"
            return TransferOutcome(status="failed", detail=f"start_transfer gave up ({cause})")
        return outcome

    def _left_the_queue(self, outcome: TransferOutcome) -> bool:
        """A Job Router wait that failed because ACS says the caller hung up: their stream's
        end may reach the workflow only after the gateway's reconnect grace."""
        return self.queue_hang_up and outcome.caller_left

    def _ring_timeout(self) -> int:
        """Twilio's default 30 s of ringing, cut to end 5 s inside the hold timeout (5 s at
        least, Twilio's minimum), so its report of an unanswered desk is still awaited."""
        hold = self.call.snapshot.scenario.escalation.hold_timeout_seconds
        return max(5, min(30, int(hold) - 5))

    async def _wait(self, ticket: EscalationTicket, target: TransferTarget, reason: str) -> None:
        """On hold until the console settles, the caller hangs up, or the hold timeout."""
        snapshot = self.call.snapshot
        hold = timedelta(seconds=snapshot.scenario.escalation.hold_timeout_seconds)
        try:
            await workflow.wait_condition(
                lambda: (
                    self.settled is not None
                    or (self.call.hang_up is not None and not self.platform_reports)
                ),
                timeout=hold,
                timeout_summary="caller on hold for a person",
            )
        except TimeoutError:
            seconds = f"{hold.total_seconds():g}"
            await self._end(ticket, target, "timeout", reason, f"nobody took it in {seconds} s")
            return
        settled = self.settled
        if settled is None:  # the caller hung up while on hold
            await self._end(ticket, target, "hung_up", reason, "caller hung up on hold")
        elif settled.taken:
            await self._end(ticket, target, "taken", reason, settled.detail, settled.taken_by)
        else:
            await self._end(ticket, target, "declined", reason, settled.detail)

    async def _end(
        self,
        ticket: EscalationTicket,
        target: TransferTarget,
        outcome: Outcome,
        reason: str,
        detail: str,
        taken_by: str = "",
    ) -> None:
        state = self.call.state
        item = TransferItem(
            at=workflow.now(),
            turn=state.turn,
            target_kind=target.kind,
            target_label=target.label,
            ticket_id=ticket.ticket_id,
            outcome=outcome,
            detail=detail,
            taken_by=taken_by,
        )
        state.transcript.append(item)
        state.transfer = item
        workflow.logger.info("transfer to a person ended: %s", outcome)
        if outcome in ("connected", "taken"):
            await self.finish("transferred", reason)
        elif outcome == "hung_up":
            await self.finish("hung_up", self.call.hang_up.reason if self.call.hang_up else detail)
        else:
            # A Twilio caller's stream ended with the `<Dial>`: the gateway's TwiML told them.
            dialled_away = self.platform_reports and state.call.channel == "twilio"
            if not (dialled_away and outcome in ("declined", "timeout")):
                await self.speaker.speak(state.active_agent, NOBODY_FREE, "reply")
            await self.finish("escalated", reason)
