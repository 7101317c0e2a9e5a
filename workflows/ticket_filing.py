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
        EscalationTicket,
        TicketDelivery,
    )
    from contracts.temporal import TOOLS_QUEUE
    from workflows import policies, summaries

#: Calls recorded before it filed the ticket and ended there; with it, a failed local filing
#: no longer fails the call (the ticket is in the result) and the webhook delivery follows.
TICKET_SINKS_PATCH = "ticket-sinks"


class TicketFiling:
    """Files tickets for one run and remembers the deliveries still under way."""

    def __init__(self) -> None:
        self._deliveries: list[workflow.ActivityHandle[Any]] = []

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
        """Wait for the deliveries started this run; a failed one is logged, not raised: the
        ticket is in the local store (when configured) and the call's result either way."""
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
