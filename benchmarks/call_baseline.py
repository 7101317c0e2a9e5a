"""What the call bench compares Baton with, and the registry it runs handoffs on: the same
providers called in process (no Temporal), and the shipped registry with fast voices."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

import yaml

from activities.agent_reply import AgentReplyActivity, build_turn_input
from activities.business_tools import execute_tool
from activities.snapshot import build_snapshot
from contracts.agent_reply import AgentReplyRequest, ChatMessage
from contracts.tools import ToolRequest
from registries.loading import SHIPPED_REGISTRY, load_registry

PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}


# --- in-process baseline: the same providers, called directly ------------------------------


async def in_process_turn(utterance: str) -> float:
    """One Concierge turn without Temporal: model, tools, model again, as the workflow does."""
    registry = load_registry()
    snapshot = build_snapshot(registry, "banking")
    brief = snapshot.agents["Concierge"]
    model = AgentReplyActivity()
    system_vars = {"session_profile": PROFILE, "client_id": "C1001"}
    start = time.perf_counter()
    messages = [ChatMessage(role="user", content=utterance)]
    for _ in range(5):
        request = AgentReplyRequest(
            call_id="baseline",
            agent=brief.config,
            template_vars=brief.template_vars,
            system_vars=system_vars,
            handoff_instructions=brief.handoff_instructions,
            tools=brief.tools,
            routes=brief.routes,
            messages=messages,
        )
        result = await model.model.generate(build_turn_input(request))
        if not result.tool_calls:
            break
        messages.append(ChatMessage(role="assistant", tool_calls=result.tool_calls))
        for call in result.tool_calls:
            outcome = execute_tool(
                ToolRequest(
                    call_id="baseline",
                    tool=call.name,
                    arguments=json.loads(call.arguments),
                    idempotency_key=uuid.uuid4().hex,
                    system_vars=system_vars,
                )
            )
            messages.append(
                ChatMessage(role="tool", tool_call_id=call.id, content=str(outcome.result))
            )
    return (time.perf_counter() - start) * 1000


def fast_voices_registry(root: Path) -> Path:
    """The shipped registry with every voice at 10x speed: playback pacing is not what the
    handoff-gap figure measures, and slow pacing would only make the run long."""
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    defaults = registry / "agentstore" / "_defaults.yaml"
    data = yaml.safe_load(defaults.read_text())
    data.setdefault("voice", {})["rate"] = "+900%"
    defaults.write_text(yaml.safe_dump(data))
    for agent_file in (registry / "agentstore").glob("*/agent.yaml"):
        agent = yaml.safe_load(agent_file.read_text())
        if isinstance(agent.get("voice"), dict):
            agent["voice"]["rate"] = "+900%"
        agent_file.write_text(yaml.safe_dump(agent))
    return registry
