"""The escalation ticket: what a human needs to take a call over without asking again."""

from __future__ import annotations

from datetime import datetime

from contracts.escalation import EscalationTicket
from contracts.transcript import ToolResultItem, UserTurn
from workflows.conversation import fold_summary, summary_line
from workflows.policies import CallLimits
from workflows.state import CallState

COLLECTED_KEYS = ("client_id", "session_profile", "handoff_context", "handoff_reason")


def build_ticket(
    state: CallState, limits: CallLimits, reason: str, *, ticket_id: str, now: datetime
) -> EscalationTicket:
    """Reason, summary, key facts (tool results), collected data and the handoff history."""
    fold_summary(state, limits)
    recent = [summary_line(item) for item in state.transcript[-12:]]
    facts = [
        line
        for item in state.transcript
        if isinstance(item, ToolResultItem) and (line := summary_line(item))
    ]
    return EscalationTicket(
        ticket_id=ticket_id,
        call_id=state.call.call_id,
        scenario=state.call.scenario,
        reason=reason,
        summary="\n".join(part for part in (state.summary, *recent) if part),
        active_agent=state.active_agent,
        key_facts=facts[-20:],
        collected_data={k: state.system_vars[k] for k in COLLECTED_KEYS if k in state.system_vars},
        handoff_history=list(state.handoffs),
        last_utterances=[i.text for i in state.transcript if isinstance(i, UserTurn)][-5:],
        created_at=now,
    )
