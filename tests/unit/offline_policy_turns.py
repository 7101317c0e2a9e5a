"""Building offline-policy turns from the shipped registry, and reading what the policy did."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from activities.chat_models.base import AgentTurnInput
from activities.chat_models.offline.policy import OfflineChatModel
from activities.snapshot import routes_from
from contracts.agent_reply import AgentTurnResult, ChatMessage, ToolCall
from registries.handoff_service import HandoffService, build_handoff_instructions
from registries.loading import Registry
from registries.prompting import render_prompt, template_vars
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
    routes = routes_from(registry, scenario, agent_name) if with_routes else []
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
