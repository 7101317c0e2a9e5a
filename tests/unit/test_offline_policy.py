"""The offline policy on turns built from the shipped registry: routing, business tools and
the replies it gives from their results."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from contracts.agent_reply import AgentTurnResult, ChatMessage
from registries.demo_data import open_demo_database
from registries.loading import Registry
from registries.tool_handlers import run_tool
from registries.tool_runtime import ToolContext
from tests.unit.offline_policy_turns import (
    Message,
    after_tool,
    calls,
    generate,
    handoff_target,
    make_turn,
    table,
)

# --- routing -------------------------------------------------------------------------------


ROUTES = table("""
banking    | Concierge          | someone used my card in another country, I think it's fraud           | FraudAgent
banking    | Concierge          | I want to talk about my retirement portfolio                           | InvestmentAdvisor
banking    | Concierge          | I lost my card                                                         | FraudAgent
banking    | Concierge          | there's a charge I don't recognize                                     | FraudAgent
banking    | Concierge          | I'd like a new credit card                                             | CardRecommendation
banking    | FraudAgent         | thanks, that's all for fraud, I have another question about my balance | Concierge
banking    | InvestmentAdvisor  | I have a question about insider trading                                | ComplianceDesk
banking    | CardRecommendation | thanks, actually I want to check my balance                            | Concierge
insurance  | ClaimsAgent        | this claim looks like fraud, the other driver staged it                | FraudAgent
insurance  | FraudAgent         | ok, the fraud report is complete                                       | AuthAgent
healthcare | ReceptionAgent     | I've had a fever and chest pain since yesterday                        | NurseAgent
healthcare | ReceptionAgent     | I have a question about my bill                                        | BillingAgent
healthcare | NurseAgent         | ok thanks, now I'd like to book an appointment                         | ReceptionAgent
healthcare | BillingAgent       | great, that's resolved, thanks                                         | ReceptionAgent
""")  # noqa: E501


@pytest.mark.parametrize(("scenario", "agent", "utterance", "target"), ROUTES)
def test_hands_off_where_the_scenario_routes(
    shipped: Registry, scenario: str, agent: str, utterance: str, target: str
) -> None:
    result = generate(make_turn(shipped, scenario, agent, utterance))
    assert handoff_target(result) == target
    ((_, args),) = calls(result)
    assert args["reason"] and utterance[:20] in args["reason"]
    assert result.finish_reason == "tool_calls"


def test_verified_only_routes_ask_for_identity_first(shipped: Registry) -> None:
    utterance = "I was in a car accident and need to file a claim"
    unverified = generate(make_turn(shipped, "insurance", "AuthAgent", utterance))
    assert unverified.tool_calls == [] and "verify your identity" in unverified.text
    verified = generate(make_turn(shipped, "insurance", "AuthAgent", utterance, verified=True))
    assert handoff_target(verified) == "ClaimsAgent"
    with_details = f"{utterance}. My name is Alex Morgan, born April 12 1985, ssn last four 4321"
    checked = generate(make_turn(shipped, "insurance", "AuthAgent", with_details))
    assert calls(checked) == [
        ("verify_identity", {"full_name": "Alex Morgan", "dob": "1985-04-12", "ssn_last4": "4321"})
    ]


def test_open_routing_reads_targets_from_the_handoff_tool(shipped: Registry) -> None:
    request = make_turn(
        shipped, "default", "Concierge", "I think someone stole my card, it's fraud"
    )
    assert request.routes == []  # the default scenario routes generically
    assert handoff_target(generate(request)) == "FraudAgent"


# --- business tools ------------------------------------------------------------------------


TOOL_CALLS = table("""
# scenario | agent            | utterance                                        | tool and JSON arguments
banking    | Concierge          | what's my balance                                | get_account_balance {}
banking    | Concierge          | what's my savings balance                        | get_account_balance {"account_type": "savings"}
banking    | Concierge          | show me my recent transactions                   | get_recent_transactions {}
banking    | FraudAgent         | check my recent activity for anything suspicious | analyze_recent_transactions {}
banking    | InvestmentAdvisor  | can I buy shares of BTNF                         | check_trade_restrictions {"symbol": "BTNF"}
banking    | InvestmentAdvisor  | how is my portfolio doing                        | get_portfolio_summary {}
banking    | CardRecommendation | I want a card with travel rewards                | recommend_card {"priority": "travel"}
insurance  | ClaimsAgent        | what's the status of claim CLM-0001              | get_claim_status {"claim_id": "CLM-0001"}
insurance  | ClaimsAgent        | tell me about policy pol a 1001                  | get_policy {"policy_id": "POL-A-1001"}
insurance  | ClaimsAgent        | what policies do I have                          | list_policies {}
healthcare | ReceptionAgent     | I need an appointment with cardiology            | find_available_appointments {"specialty": "cardiology"}
healthcare | ReceptionAgent     | please book APT-0042                             | book_appointment {"appointment_id": "APT-0042"}
healthcare | BillingAgent       | how much do I owe                                | get_billing_balance {}
healthcare | BillingAgent       | pay invoice INV-5001                             | pay_invoice {"invoice_id": "INV-5001"}
healthcare | NurseAgent         | I have a bad cough and a fever                   | triage_symptoms {"symptoms": "I have a bad cough and a fever"}
""")  # noqa: E501


@pytest.mark.parametrize(("scenario", "agent", "utterance", "expected"), TOOL_CALLS)
def test_calls_the_business_tool_with_arguments_from_the_utterance(
    shipped: Registry, scenario: str, agent: str, utterance: str, expected: str
) -> None:
    tool, arguments = expected.split(" ", 1)
    assert calls(generate(make_turn(shipped, scenario, agent, utterance))) == [
        (tool, json.loads(arguments))
    ]


def test_block_card_takes_the_digits_and_a_reason(shipped: Registry) -> None:
    ((name, args),) = calls(
        generate(make_turn(shipped, "banking", "FraudAgent", "block my card ending in 8832"))
    )
    assert name == "block_card" and args["last4"] == "8832" and args["reason"]
    stolen = make_turn(
        shipped, "banking", "FraudAgent", "my card was stolen, block the one ending in 4417"
    )
    assert calls(generate(stolen)) == [
        ("block_card", {"last4": "4417", "reason": "card reported stolen"})
    ]


def test_file_claim_fills_policy_amount_and_description_across_two_utterances(
    shipped: Registry,
) -> None:
    first = "a tree fell on my car, I want to file a claim on POL-A-1001"
    asked = generate(make_turn(shipped, "insurance", "ClaimsAgent", first))
    assert asked.tool_calls == [] and "estimated loss in dollars" in asked.text
    answer = make_turn(
        shipped,
        "insurance",
        "ClaimsAgent",
        first,
        ChatMessage(role="assistant", content=asked.text),
        "about $2,500",
    )
    ((name, args),) = calls(generate(answer))
    assert name == "file_claim" and args["policy_id"] == "POL-A-1001" and args["amount"] == 2500.0
    assert "tree fell on my car" in args["description"]


def test_asks_for_missing_arguments_instead_of_guessing(shipped: Registry) -> None:
    result = generate(make_turn(shipped, "banking", "FraudAgent", "I need to block my card"))
    assert result.tool_calls == [] and "last four digits of the card" in result.text


def test_never_repeats_the_same_call_within_a_caller_turn(shipped: Registry) -> None:
    history = [
        "what's my balance",
        *after_tool("get_account_balance", {}, {"error": "temporarily unavailable"}),
        ChatMessage(role="assistant", content="I'm sorry, that is unavailable right now."),
    ]
    result = generate(make_turn(shipped, "banking", "Concierge", *history))
    assert "get_account_balance" not in [name for name, _ in calls(result)]


def test_only_offered_tools_are_called(shipped: Registry) -> None:
    # ReceptionAgent has no fraud tools and no route to a fraud desk.
    result = generate(
        make_turn(shipped, "healthcare", "ReceptionAgent", "block my card ending in 8832")
    )
    offered = {tool.name for tool in make_turn(shipped, "healthcare", "ReceptionAgent", "x").tools}
    assert {name for name, _ in calls(result)} <= offered


# --- after a tool ran ----------------------------------------------------------------------


@pytest.fixture
def demo_db(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    connection = open_demo_database(tmp_path / "demo.sqlite3")
    yield connection
    connection.close()


TOOL_RESULTS = table("""
# scenario | agent            | tool and JSON arguments                                      | the reply includes (;-separated)
banking    | Concierge          | get_account_balance {}                                       | $4,825.37; checking; in total
banking    | Concierge          | get_recent_transactions {}                                   | most recent transactions; Netflix
banking    | FraudAgent         | analyze_recent_transactions {}                               | suspicious; block the card
banking    | FraudAgent         | block_card {"last4": "8832", "reason": "fraud"}              | ending in 8832 is now blocked
banking    | FraudAgent         | create_fraud_case {"description": "Lisbon charges"}          | fraud case FC-
banking    | FraudAgent         | list_cards {}                                                | ending in 8832; ending in 4417
banking    | InvestmentAdvisor  | get_portfolio_summary {}                                     | investments total; % stocks
banking    | InvestmentAdvisor  | check_trade_restrictions {"symbol": "BTNF"}                  | BTNF is restricted
banking    | CardRecommendation | recommend_card {"priority": "cashback"}                      | I'd suggest the Baton
insurance  | ClaimsAgent        | list_policies {}                                             | POL-A-1001
insurance  | ClaimsAgent        | file_claim {"policy_id": "POL-A-1001", "description": "tree", "amount": 2500} | CLM-; $2,000.00; contact you
healthcare | ReceptionAgent     | find_available_appointments {"specialty": "cardiology"}      | next openings; APT-
healthcare | BillingAgent       | get_billing_balance {}                                       | balance due is $45.00; INV-5001
healthcare | NurseAgent         | triage_symptoms {"symptoms": "chest pain"}                   | emergency; not medical advice
""")  # noqa: E501


@pytest.mark.parametrize(("scenario", "agent", "tool_call", "expected"), TOOL_RESULTS)
def test_replies_from_real_tool_results(
    shipped: Registry,
    demo_db: sqlite3.Connection,
    scenario: str,
    agent: str,
    tool_call: str,
    expected: str,
) -> None:
    tool, arguments = tool_call.split(" ", 1)
    args = json.loads(arguments)
    session = {"client_id": "C1001"}
    context = ToolContext(call_id="call-1", idempotency_key="k1", db=demo_db, session=session)
    result = run_tool(shipped, tool, args, context)
    reply = generate(
        make_turn(shipped, scenario, agent, "go ahead", *after_tool(tool, args, result))
    )
    assert reply.tool_calls == [] and reply.finish_reason == "stop"
    for fragment in expected.split("; "):
        assert fragment in reply.text
    assert "the caller" not in reply.text and "_" not in reply.text  # nothing meant for the model


WORDING = table("""
# tool result (JSON)                                                                       | the reply starts with
{"message": "Your card is on its way."}                                                     | Your card is on its way.
{"error": "I don't know who the caller is yet. Verify the caller's identity first."}        | I'm sorry, I need to verify your identity first.
{"error": "No claim CLM-9 on this caller's file. Ask them to read the number."}             | I'm sorry, no claim CLM-9 on your file. Could you please read the number?
{"verified": false, "message": "Those details don't match our records. Ask the caller to repeat them; do not say which detail was wrong."} | Those details don't match our records. Could you please repeat them?
{"escalated": true, "message": "A specialist will pick up the call shortly. Tell the caller to stay on the line; they will not need to repeat themselves."} | A specialist will pick up the call shortly. Please stay on the line. You will not need to repeat yourself.
{"error": "unknown tool 'x'; tools: get_account_balance"}                                   | I'm sorry, something went wrong
{"verified": true, "first_name": "Alex", "client_id": "C1001"}                              | Thank you, Alex, you're verified.
""")  # noqa: E501


@pytest.mark.parametrize(("content", "expected"), WORDING)
def test_reply_wording_for_messages_and_errors(
    shipped: Registry, content: str, expected: str
) -> None:
    history = after_tool("some_tool", {}, content)
    reply = generate(make_turn(shipped, "banking", "Concierge", "go ahead", *history))
    assert reply.text.startswith(expected)


def test_a_refused_handoff_says_so_and_what_is_possible(shipped: Registry) -> None:
    refusal = {
        "success": False,
        "error": "the scenario has no route from FraudAgent to ComplianceDesk. "
        "Valid targets: Concierge.",
    }
    history = after_tool(
        "handoff_to_agent", {"target_agent": "ComplianceDesk", "reason": "x"}, refusal
    )
    reply = generate(make_turn(shipped, "banking", "FraudAgent", "get me compliance", *history))
    assert reply.tool_calls == []
    assert "can't transfer you there" in reply.text and "concierge" in reply.text
    assert "lost or stolen cards" in reply.text


def transferred(result: AgentTurnResult, utterance: str, target: str) -> list[Message]:
    """The window after `result`'s handoff succeeded: what the arriving agent sees."""
    outcome = json.dumps({"success": True, "target_agent": target}, sort_keys=True)
    return [
        utterance,
        ChatMessage(role="assistant", tool_calls=result.tool_calls),
        ChatMessage(
            role="tool",
            tool_call_id=result.tool_calls[0].id,
            name="handoff_to_agent",
            content=outcome,
        ),
    ]


def test_an_agent_arriving_by_transfer_answers_the_utterance(shipped: Registry) -> None:
    # Concierge -> InvestmentAdvisor is discrete: the advisor answers the same utterance.
    utterance = "I want to talk about my retirement portfolio"
    first = generate(make_turn(shipped, "banking", "Concierge", utterance))
    history = transferred(first, utterance, "InvestmentAdvisor")
    assert calls(generate(make_turn(shipped, "banking", "InvestmentAdvisor", *history))) == [
        ("get_portfolio_summary", {})
    ]


@pytest.mark.parametrize(
    "utterance",
    [
        "thanks, that's all for fraud, I have another question about my balance",
        # The demo's line: its closing clause alone fit the identity desk's condition best.
        "Thanks, the fraud matter is handled. I have another question about my balance",
    ],
)
def test_an_arriving_agent_answers_what_the_caller_asked_next(
    shipped: Registry, utterance: str
) -> None:
    first = generate(make_turn(shipped, "banking", "FraudAgent", utterance))
    assert handoff_target(first) == "Concierge"
    history = transferred(first, utterance, "Concierge")
    assert calls(generate(make_turn(shipped, "banking", "Concierge", *history))) == [
        ("get_account_balance", {})
    ]


def test_a_request_outside_the_agent_takes_its_something_else_route(shipped: Registry) -> None:
    # ComplianceDesk -> Concierge is for "something else"; the Concierge then routes onward.
    utterance = "ok, I'd like a new credit card with cash back"
    first = generate(make_turn(shipped, "banking", "ComplianceDesk", utterance))
    assert handoff_target(first) == "Concierge"
    second = generate(
        make_turn(shipped, "banking", "Concierge", *transferred(first, utterance, "Concierge"))
    )
    assert handoff_target(second) == "CardRecommendation"
