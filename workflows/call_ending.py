"""How a call ends: escalation to a human with a ticket, a tool that ends the call, and the
search attributes that show a call's agent and status in the Temporal UI."""

from __future__ import annotations

from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from contracts.calls import CallStatus
    from contracts.metrics import EscalationReason
    from contracts.transcript import CallEndItem
    from workflows import summaries
    from workflows.live_call import LiveCall
    from workflows.metrics import count_escalation
    from workflows.speech import Speaker
    from workflows.ticket_filing import TicketFiling
    from workflows.tickets import build_ticket
    from workflows.transfer import HumanTransfer

SCENARIO_KEY = SearchAttributeKey.for_keyword("BatonScenario")
ACTIVE_AGENT_KEY = SearchAttributeKey.for_keyword("BatonActiveAgent")
STATUS_KEY = SearchAttributeKey.for_keyword("BatonStatus")
VISITED_KEY = SearchAttributeKey.for_int("BatonVisitedCount")
GOODBYE = "Thank you for calling. Goodbye."
HANDOFF_TO_HUMAN = "I'm connecting you with a colleague who can help you further. Please hold."
#: Said instead of the hold line when the scenario names nobody to transfer to: "please hold"
#: would promise a person the call never reaches (patch `no-target-truth`).
NO_TRANSFER_TARGET = (
    "I'm sorry, there is nobody I can put you through to right now. Everything you told us is "
    "saved in a ticket, and a colleague will call you back as soon as possible."
)


class CallEnding:
    """The last steps of a call, and the search attributes every change of agent refreshes."""

    def __init__(self, call: LiveCall, speaker: Speaker) -> None:
        self.call = call
        self.speaker = speaker
        #: Tickets filed this run; `run` awaits their deliveries once the call has ended.
        self.tickets = TicketFiling(call.state)
        self.transfer = HumanTransfer(call, speaker, self.finish)

    async def escalate(self, reason: str, kind: EscalationReason) -> None:
        """End the call as `escalated`, filing a ticket for a human, or `transferred` when the
        scenario names a target and a person takes the caller; `kind` is the reason's
        category, the only part of it the metrics see."""
        state = self.call.state
        if state.status != "active":
            return
        count_escalation(kind)
        target = self.transfer.target_for(kind)
        truthful = target is None and self.transfer.truthful_without_target
        line = NO_TRANSFER_TARGET if truthful else HANDOFF_TO_HUMAN
        await self.speaker.speak(state.active_agent, line, "reply")
        ticket = build_ticket(
            state,
            self.call.limits,
            reason,
            ticket_id=workflow.info().workflow_id,
            now=workflow.now(),
        )
        await self.tickets.file(ticket)
        state.ticket = ticket
        # The reason can be a model's free text about the caller: it stays in the (encrypted)
        # history and the ticket, never in a log line, where redaction cannot catch a name.
        # An agent handing the caller to a person is the call going as designed; any other
        # reason is something an operator should look at.
        log = workflow.logger.info if kind == "agent_requested" else workflow.logger.warning
        log("call escalated to a human (ticket filed, reason %s)", kind)
        if target is not None:
            await self.transfer.hand_over(ticket, target, reason, kind)
        else:
            await self.finish("escalated", reason)

    async def end_by_tool(self, agent: str, result: dict[str, Any]) -> None:
        """End the call because a tool (end_call, escalate_human) said so."""
        spec = self.call.snapshot.tool_specs[result["tool"]]
        message = result.get("message")
        if spec.escalates:
            await self.escalate(
                str(result.get("reason") or f"{agent} escalated to a human"), "agent_requested"
            )
            return
        said_goodbye = any(
            line.agent == agent and line.kind == "reply" for line in self.call.turn_spoken
        )
        if isinstance(message, str) and message:
            await self.speaker.speak(agent, message, "reply")
        elif not said_goodbye:  # the model's own farewell came with the tool call
            await self.speaker.speak(agent, GOODBYE, "reply")
        await self.finish("completed", str(result.get("reason") or f"{agent} ended the call"))

    async def finish(self, status: CallStatus, reason: str) -> None:
        state = self.call.state
        self.call.cancel_inflight()
        state.status, state.end_reason = status, reason
        state.transcript.append(
            CallEndItem(at=workflow.now(), turn=state.turn, status=status, reason=reason)
        )
        self.update_search_attributes()

    def update_search_attributes(self) -> None:
        """Search attributes change only with the agent or status, so this is not per turn.
        The current details (not a command, so free of history) follow them here too."""
        state = self.call.state
        workflow.set_current_details(summaries.call_details(state))
        workflow.upsert_search_attributes(
            [
                SCENARIO_KEY.value_set(state.call.scenario),
                ACTIVE_AGENT_KEY.value_set(state.active_agent),
                STATUS_KEY.value_set(state.status),
                VISITED_KEY.value_set(len(state.visited)),
            ]
        )
