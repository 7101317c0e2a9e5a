"""A browser call's ticket records how its transfer ended, on the real stack (gateway holding
the call in its console queue, `transfer_settled` sent as the gateway sends it): a person who
took the call makes it `transferred`, a decline leaves it `escalated` for a call back."""

from __future__ import annotations

import asyncio

from activities.chat_models.scripted import ScriptedChatModel
from activities.ticket_sinks import list_tickets, ticket_by_id
from contracts.transfer import SIGNAL_TRANSFER_SETTLED, TransferSettled
from tests.gateway.conftest import GatewayStack
from tests.gateway.test_transfer_outcomes import escalated_on_hold, outcome_of


async def test_a_taken_call_marks_its_ticket_transferred(
    stack: GatewayStack, scripted: ScriptedChatModel
) -> None:
    session, turn = await escalated_on_hold(stack, scripted)
    ticket_id = session.workflow_id
    on_hold = ticket_by_id(ticket_id)
    assert on_hold is not None and on_hold.status == "open"  # filed before the transfer
    settled = TransferSettled(taken=True, taken_by="op-7", detail="browser console")
    await session.handle.signal(SIGNAL_TRANSFER_SETTLED, settled)
    await asyncio.wait_for(turn, 60)
    assert (await outcome_of(session))["status"] == "transferred"
    taken = ticket_by_id(ticket_id)
    assert taken is not None and taken.status == "transferred"
    assert list_tickets() == []  # nobody has to call this caller back


async def test_a_declined_call_marks_its_ticket_escalated(
    stack: GatewayStack, scripted: ScriptedChatModel
) -> None:
    session, turn = await escalated_on_hold(stack, scripted)
    settled = TransferSettled(taken=False, detail="declined on the console")
    await session.handle.signal(SIGNAL_TRANSFER_SETTLED, settled)
    await asyncio.wait_for(turn, 60)
    assert (await outcome_of(session))["status"] == "escalated"
    declined = ticket_by_id(session.workflow_id)
    assert declined is not None and declined.status == "escalated"
    assert [t.ticket.ticket_id for t in list_tickets()] == [session.workflow_id]
