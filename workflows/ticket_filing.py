"""Filing an escalation ticket: the local store while the caller holds, the webhook beside.

The call waits only for `file_escalation_ticket` (the local store, milliseconds, and where the
transfer to a human reads the ticket). `deliver_escalation_ticket` sends it to the remote
sinks and may retry for minutes against a receiver that is down, so it is started, not
awaited: the caller hears where the call goes at once, and the run awaits the delivery only
after the call has ended (`settled`), which keeps the retry durable — a worker that dies
mid-delivery is replaced, and the workflow does not close before the webhook has its answer.
"""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.escalation import (
        DELIVER_ESCALATION_TICKET,
        FILE_ESCALATION_TICKET,
        MARK_ESCALATION_TICKET,
        EscalationTicket,
        TicketDelivery,
        TicketMark,
        TicketStatus,
    )
    from contracts.temporal import TOOLS_QUEUE
    from workflows import policies, summaries
    from workflows.state import CallState

#: Calls recorded before it filed the ticket and ended there; with it, a failed local filing
#: no longer fails the call (the ticket is in the result), the webhook delivery follows, and
#: the stored ticket is marked with the transfer's outcome when the call ends.
TICKET_SINKS_PATCH = "ticket-sinks"
#: The transfer's outcome (workflows.transfer) as the ticket's status: a person has the caller,
#: or nobody took them and one must call back. No transfer tried: the ticket stays `open`.
_STATUS_AFTER_TRANSFER: dict[str, TicketStatus] = {
    "connected": "transferred",
    "taken": "transferred",
    "declined": "escalated",
    "timeout": "escalated",
    "failed": "escalated",
    "hung_up": "escalated",
}


class TicketFiling:
    """Files tickets for one run and remembers the deliveries still under way."""

    def __init__(self, state: CallState) -> None:
        self.state = state
        self._deliveries: list[workflow.ActivityHandle[Any]] = []
        #: The ticket filed with the sinks patch on, whose status `settled` records.
        self._filed: str | None = None

    async def file(self, ticket: EscalationTicket) -> None:
        """Store the ticket locally (awaited) and start its delivery to remote sinks."""
        # Asked before the activity: the branch never depends on its result.
        sinks = workflow.patched(TICKET_SINKS_PATCH)
        policy = policies.ESCALATION
        try:
            await workflow.execute_activity(
                FILE_ESCALATION_TICKET,
                ticket,
                result_type=str,
                task_queue=TOOLS_QUEUE,
                start_to_close_timeout=policy.start_to_close,
                schedule_to_start_timeout=policy.schedule_to_start if sinks else None,
                retry_policy=policy.retry,
                summary=summaries.ESCALATION,
            )
        except ActivityError as error:
            if not sinks:
                raise
            # The ticket stays in the call's result; the caller is still told where they go.
            workflow.logger.warning("escalation ticket not stored locally: %s", _cause(error))
        if sinks:
            self._filed = ticket.ticket_id
            webhook = policies.TICKET_WEBHOOK
            self._deliveries.append(
                workflow.start_activity(
                    DELIVER_ESCALATION_TICKET,
                    ticket,
                    result_type=TicketDelivery,
                    task_queue=TOOLS_QUEUE,
                    start_to_close_timeout=webhook.start_to_close,
                    schedule_to_close_timeout=webhook.schedule_to_close,
                    retry_policy=webhook.retry,
                    summary=summaries.TICKET_DELIVERY,
                )
            )

    async def settled(self) -> None:
        """Once the call has ended: record the transfer's outcome on the stored ticket and
        wait for the deliveries started this run. Failures are logged, not raised: the ticket
        is in the local store (when configured) and the call's result either way."""
        transfer = self.state.transfer
        if self._filed is not None and transfer is not None:
            mark = TicketMark(
                ticket_id=self._filed, status=_STATUS_AFTER_TRANSFER[transfer.outcome]
            )
            try:
                await workflow.execute_activity(
                    MARK_ESCALATION_TICKET,
                    mark,
                    result_type=bool,
                    task_queue=TOOLS_QUEUE,
                    start_to_close_timeout=policies.ESCALATION.start_to_close,
                    schedule_to_start_timeout=policies.ESCALATION.schedule_to_start,
                    retry_policy=policies.ESCALATION.retry,
                    summary=summaries.ticket_marked(mark.status),
                )
            except ActivityError as error:
                workflow.logger.warning("escalation ticket not marked: %s", _cause(error))
        self._filed = None
        for handle in self._deliveries:
            try:
                await handle
            except ActivityError as error:
                workflow.logger.warning("escalation ticket not delivered: %s", _cause(error))
        self._deliveries.clear()


def _cause(error: ActivityError) -> str:
    # Sink errors name a status or an error type only, never the caller or the URL.
    cause = error.cause
    return str(cause) if cause is not None else str(error)
