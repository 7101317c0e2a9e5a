"""The offline policy on turns built from the shipped registry (prompts, tools and routes)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from activities.chat_models import offline_policy
from activities.chat_models.offline_extract import (
    find_amount,
    find_dates,
    find_full_name,
    find_id,
    find_last4,
    find_ticker,
    spoken_digits,
)
from activities.chat_models.offline_policy import OfflineChatModel
from baton.contracts import AgentTurnInput, AgentTurnResult, ChatMessage, HandoffRoute, ToolCall
from registries.demo_data import open_demo_database
from registries.handoff_service import HandoffService, build_handoff_instructions
from registries.loading import Registry
from registries.prompting import render_prompt, template_vars
from registries.tool_handlers import run_tool
from registries.tool_runtime import ToolContext
from registries.toolset import tools_for_agent

Message = str | ChatMessage


def table(text: str) -> list[tuple[str, ...]]:
    """Rows of a '|'-separated table (cells stripped), like the demo data's tables."""
    return [
        tuple(cell.strip() for cell in line.split("|"))
        for line in text.strip().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def make_turn(
    registry: Registry,
    scenario_name: str,
    agent_name: str,
    *messages: Message,
    verified: bool = False,
    with_routes: bool = True,
) -> AgentTurnInput:
    """The turn the workflow would send: rendered prompt, the agent's tools and routes."""
    scenario = registry.scenarios[scenario_name]
    agent = registry.agents[agent_name]
    service = HandoffService(scenario, registry.agents)
    routes = [
        HandoffRoute(
            target_agent=edge.to_agent,
            condition=edge.handoff_condition,
            target_description=registry.agents[edge.to_agent].description,
        )
        for edge in scenario.handoffs
        if edge.from_agent == agent_name and with_routes
    ]
    prompt = render_prompt(
        scenario,
        agent,
        {"client_id": "C1001"} if verified else {},
        handoff_instructions=build_handoff_instructions(scenario, agent_name, registry.agents),
    )
    return AgentTurnInput(
        call_id="call-1",
        agent=agent_name,
        agent_description=agent.description,
        system_prompt=prompt,
        messages=[
            ChatMessage(role="user", content=m) if isinstance(m, str) else m for m in messages
        ],
        tools=[
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in tools_for_agent(agent, service, registry.tools)
        ],
        routes=routes,
        template_vars=template_vars(scenario, agent),
    )


def generate(request: AgentTurnInput) -> AgentTurnResult:
    return asyncio.run(OfflineChatModel().generate(request))


def calls(result: AgentTurnResult) -> list[tuple[str, dict[str, Any]]]:
    return [(call.name, json.loads(call.arguments)) for call in result.tool_calls]


def handoff_target(result: AgentTurnResult) -> str | None:
    found = [args["target_agent"] for name, args in calls(result) if name == "handoff_to_agent"]
    return found[0] if found else None


def after_tool(
    call_name: str, args: dict[str, Any], content: Any, call_id: str = "c1"
) -> list[Message]:
    """An assistant tool call and its result, as the workflow records them."""
    text = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
    return [
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(id=call_id, name=call_name, arguments=json.dumps(args))],
        ),
        ChatMessage(role="tool", tool_call_id=call_id, name=call_name, content=text),
    ]


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
banking    | FraudAgent         | someone used my card abroad, I think it's fraud  | analyze_recent_transactions {}
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


def test_an_arriving_agent_never_sends_the_caller_straight_back(shipped: Registry) -> None:
    utterance = "thanks, that's all for fraud, I have another question about my balance"
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


# --- conversation ---------------------------------------------------------------------------


def test_goodbye_ends_the_call_when_the_agent_can(shipped: Registry) -> None:
    result = generate(make_turn(shipped, "banking", "Concierge", "no thanks, that's all. Bye!"))
    assert calls(result) == [("end_call", {"reason": "caller done"})]
    assert "Thank you for calling Harbor Private Bank" in result.text
    fraud = generate(
        make_turn(shipped, "banking", "FraudAgent", "ok that's it, goodbye", with_routes=False)
    )
    assert fraud.tool_calls == [] and "Goodbye" in fraud.text


def test_asking_for_a_person_escalates(shipped: Registry) -> None:
    result = generate(
        make_turn(shipped, "banking", "Concierge", "can I speak to a real person please")
    )
    ((name, args),) = calls(result)
    assert name == "escalate_human" and args["reason"] == "caller asked for a person"


def test_greeting_and_unknown_requests_get_an_offer_of_help(shipped: Registry) -> None:
    hello = generate(make_turn(shipped, "healthcare", "ReceptionAgent", "hello"))
    assert hello.tool_calls == []
    assert "City Health Clinic" in hello.text and "book, reschedule or cancel" in hello.text
    unknown = generate(
        make_turn(shipped, "banking", "FraudAgent", "what is the weather like", with_routes=False)
    )
    assert unknown.tool_calls == [] and unknown.text.startswith("I'm not sure I can help")


def test_token_usage_is_recorded_deterministically(shipped: Registry) -> None:
    short = make_turn(shipped, "banking", "Concierge", "what's my balance")
    longer = make_turn(
        shipped,
        "banking",
        "Concierge",
        "hello",
        ChatMessage(role="assistant", content="Hi there, how can I help?"),
        "what's my balance",
    )
    first, again, more = generate(short), generate(short), generate(longer)
    assert first == again  # same turn, same answer, same call ids
    assert (first.provider, first.model) == ("offline", "offline-policy")
    assert first.usage.prompt_tokens > 100 and first.usage.completion_tokens > 0
    assert more.usage.prompt_tokens > first.usage.prompt_tokens
    assert first.tool_calls[0].id == "offline-Concierge-1-0"


def test_says_once_that_it_is_not_a_language_model(
    shipped: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(offline_policy, "_announced", False)
    with structlog.testing.capture_logs() as logs:
        generate(make_turn(shipped, "banking", "Concierge", "hello"))
        generate(make_turn(shipped, "banking", "Concierge", "hello"))
    notices = [entry for entry in logs if entry["event"] == "offline chat policy in use"]
    assert len(notices) == 1 and "not a language model" in notices[0]["detail"]


_WORDS = [
    "card",
    "fraud",
    "balance",
    "my",
    "block",
    "claim",
    "policy",
    "bye",
    "8832",
    "POL-A-1001",
    "appointment",
    "fever",
    "invoice",
    "stolen",
    "portfolio",
    "the",
    "$2,500",
    "thanks",
    "person",
]


@settings(max_examples=60, deadline=None)
@given(
    words=st.lists(st.sampled_from(_WORDS), max_size=8),
    agent=st.sampled_from(["Concierge", "FraudAgent", "InvestmentAdvisor"]),
)
def test_any_utterance_yields_offered_tools_with_json_arguments(
    shipped: Registry, words: list[str], agent: str
) -> None:
    request = make_turn(shipped, "banking", agent, " ".join(words) or "hmm")
    result = generate(request)
    offered = {tool.name: tool for tool in request.tools}
    assert result.text or result.tool_calls
    for name, args in calls(result):
        assert name in offered
        assert set(offered[name].parameters.get("required", [])) <= set(args)
        if name == "handoff_to_agent":
            assert (
                args["target_agent"]
                in offered[name].parameters["properties"]["target_agent"]["enum"]
            )


# --- extractors -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("born 1985-04-12", "1985-04-12"),
        ("April 12 1985", "1985-04-12"),
        ("april 12th, 1985", "1985-04-12"),
        ("12 April 1985", "1985-04-12"),
        ("4/12/1985", "1985-04-12"),
        ("Feb 30 1990", None),
    ],
)
def test_dates(text: str, iso: str | None) -> None:
    found = find_dates(text)
    assert (found[0][0] if found else None) == iso


def test_last_four_digits_by_context() -> None:
    text = "my card ending in 8832, and my social is 4321, born 1985-04-12"
    assert find_last4(text, ssn=False) == "8832" and find_last4(text, ssn=True) == "4321"
    assert find_last4("last four 4321", ssn=True) == "4321"
    assert find_last4("block 2500 dollars", ssn=False) is None
    assert spoken_digits("ending in eight eight three two") == "ending in 8832"


def test_names_ids_amounts_and_tickers() -> None:
    assert find_full_name("hi, this is Alex Morgan calling") == "Alex Morgan"
    assert find_full_name("my name is alex morgan and I was born") == "Alex Morgan"
    assert find_full_name("I am worried") is None
    assert find_id("policy pol a 1001 please", "POL") == "POL-A-1001"
    assert find_id("invoice INV-5001", "INV") == "INV-5001"
    assert find_amount("about $1,200.50 of damage") == 1200.5
    assert find_amount("2500 dollars") == 2500.0
    assert find_ticker("can I buy shares of QNTM") == "QNTM"
    assert find_ticker("what about $btnf") == "BTNF"
