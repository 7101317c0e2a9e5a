"""CallSessionWorkflow on the real dev server with the offline policy and shipped registry."""

from __future__ import annotations

import asyncio
import sqlite3

from contracts.calls import SIGNAL_SUPERVISOR_TRANSFER, SupervisorTransfer
from registries.demo_data import default_database_path
from tests.workflow.conftest import Stack, items_of, started


async def test_banking_call_announced_then_discrete_handoff(stack: Stack) -> None:
    session = stack.call()
    opening = await started(session)
    assert items_of(opening, "greeting")[0]["agent"] == "Concierge"

    fraud = await session.say("Someone used my card abroad last night, I think it's fraud")
    assert fraud.agent == "FraudAgent"
    assert [line.kind for line in fraud.spoken] == ["greeting"]
    assert fraud.handoffs and fraud.handoffs[0].startswith("Concierge -> FraudAgent (announced")

    block = await session.say("Please block my card ending in 8832")
    assert block.agent == "FraudAgent" and "8832" in block.text
    with sqlite3.connect(default_database_path()) as db:
        status = db.execute("SELECT status FROM cards WHERE last4 = '8832'").fetchone()[0]
    assert status == "blocked"

    back = await session.say(
        "Thanks, the fraud matter is handled. I have another question about my balance"
    )
    assert back.agent == "Concierge"
    assert back.handoffs[0].startswith("FraudAgent -> Concierge (discrete")
    assert [line.kind for line in back.spoken] == ["reply"]  # no greeting: discrete

    state = await session.state()
    assert state["active_agent"] == "Concierge"
    assert state["visited"] == ["Concierge", "FraudAgent"]
    assert [(h["source"], h["target"]) for h in state["handoffs"]] == [
        ("Concierge", "FraudAgent"),
        ("FraudAgent", "Concierge"),
    ]
    first_handoff = items_of(state["transcript"], "handoff")[0]
    assert first_handoff["resolution"]["system_vars"]["client_id"] == "C1001"
    assert first_handoff["resolution"]["greet_on_switch"] is True
    assert first_handoff["greeting"] == fraud.spoken[0].text
    assert state["usage"]["Concierge"]["turns"] >= 2
    assert state["usage"]["FraudAgent"]["prompt_tokens"] > 0
    await session.hang_up()
    outcome = await session.handle.result()
    assert outcome["status"] == "hung_up" and outcome["visited"] == ["Concierge", "FraudAgent"]


async def test_duplicate_utterance_is_answered_once(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    first = await session.say("What's my checking balance?", utterance_id="same-id")
    again = await session.say("What's my checking balance?", utterance_id="same-id")
    assert again.duplicate and again.text == first.text and not first.duplicate
    users = items_of(await session.transcript(), "user_turn")
    assert [u["utterance_id"] for u in users] == ["same-id"]
    await session.hang_up()


async def test_starting_a_call_twice_reaches_the_same_workflow(stack: Stack) -> None:
    session = stack.call()
    await session.start()
    first_run = session.handle.first_execution_run_id or session.handle.result_run_id
    await session.start()
    assert (session.handle.first_execution_run_id or session.handle.result_run_id) == first_run
    await session.hang_up()


async def test_supervisor_transfer_uses_the_graph(stack: Stack) -> None:
    session = stack.call()
    await started(session)
    await session.handle.signal(
        SIGNAL_SUPERVISOR_TRANSFER, SupervisorTransfer(target_agent="NurseAgent", reason="x")
    )
    await session.handle.signal(
        SIGNAL_SUPERVISOR_TRANSFER,
        SupervisorTransfer(target_agent="InvestmentAdvisor", reason="VIP caller", supervisor="kim"),
    )
    items = await session.wait_for(lambda t: len(items_of(t, "supervisor_action")) == 2)
    refused, moved = items_of(items, "supervisor_action")
    assert refused["action"] == "transfer_refused" and "NurseAgent" in refused["reason"]
    assert moved["action"] == "transfer" and moved["supervisor"] == "kim"
    state = await session.state()
    assert state["active_agent"] == "InvestmentAdvisor"
    assert state["handoffs"][-1]["trigger"] == "supervisor"
    await session.hang_up()


async def test_first_utterance_can_start_the_call(stack: Stack) -> None:
    session = stack.call()
    reply = await session.start_with_utterance("Someone used my card abroad, it's fraud")
    assert reply.agent == "FraudAgent"
    again = await session.start_with_utterance("What's my balance?")  # same call, next turn
    assert again.status == "active"
    users = items_of(await session.transcript(), "user_turn")
    assert len(users) == 2
    await session.hang_up()


async def test_insurance_call_authenticates_then_files_a_claim(stack: Stack) -> None:
    session = stack.call("insurance", caller_profile={})
    opening = await started(session)
    assert items_of(opening, "greeting")[0]["agent"] == "AuthAgent"
    verified = await session.say(
        "My name is Alex Morgan, born 1985-04-12, last four of my social 4321"
    )
    assert verified.agent == "AuthAgent"
    assert (await session.state())["system_vars"]["client_id"] == "C1001"
    claim = await session.say("I want to file a claim, I had a car accident")
    assert claim.agent == "ClaimsAgent" and claim.spoken[0].kind == "greeting"
    await session.hang_up()


async def test_healthcare_call_routes_symptoms_to_the_nurse(stack: Stack) -> None:
    session = stack.call("healthcare")
    opening = await started(session)
    assert items_of(opening, "greeting")[0]["agent"] == "ReceptionAgent"
    nurse = await session.say("I have had a fever and a sore throat for three days")
    assert nurse.agent == "NurseAgent"
    billing = await session.say("Thanks. Also I have a question about my bill")
    state = await session.state()
    assert state["visited"] == ["ReceptionAgent", "NurseAgent", "BillingAgent"]
    assert billing.agent == "BillingAgent" and billing.status == "active"
    await session.hang_up()


async def test_duplicate_sent_while_the_first_is_answered_gets_the_same_reply(
    stack: Stack,
) -> None:
    session = stack.call()
    await started(session)
    first, retry = await asyncio.gather(
        session.say("Please block my card ending in 8832", utterance_id="retry-me"),
        session.say("Please block my card ending in 8832", utterance_id="retry-me"),
    )
    assert {first.duplicate, retry.duplicate} == {False, True}
    assert first.text == retry.text and first.text
    tools = [i for i in items_of(await session.transcript(), "tool_call")]
    assert len(tools) <= 1  # answered once
    await session.hang_up()


async def test_a_farewell_said_with_end_call_is_not_followed_by_a_second_goodbye(
    stack: Stack,
) -> None:
    session = stack.call()
    await started(session)
    reply = await session.say("That's all, thank you, goodbye")
    assert reply.status == "completed"
    # The offline policy says its own farewell and calls end_call in the same round.
    assert [line.text for line in reply.spoken] == [
        "Thank you for calling Harbor Private Bank. Goodbye!"
    ]
    items = await session.transcript()
    kinds = [i["type"] for i in items if i["turn"] == 1]
    assert kinds == ["user_turn", "agent_turn", "tool_call", "tool_result", "call_end"]
