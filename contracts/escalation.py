"""Activity `file_escalation_ticket` (tools queue): hand the call to a human queue."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from contracts._base import Payload
from contracts.handoff import HandoffStep

FILE_ESCALATION_TICKET = "file_escalation_ticket"


class EscalationTicket(Payload):
    """Everything a human needs to take the call over without asking the caller again."""

    ticket_id: str
    call_id: str
    scenario: str
    reason: str
    summary: str
    active_agent: str
    key_facts: list[str] = Field(default_factory=list)
    collected_data: dict[str, Any] = Field(default_factory=dict)
    handoff_history: list[HandoffStep] = Field(default_factory=list)
    last_utterances: list[str] = Field(default_factory=list)
    created_at: datetime
