"""Hang-up: what runs to the end, what is recorded. (Barge-in runs against a real gateway:
tests/gateway/test_speech_activities.py.)"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import yaml

from registries.loading import SHIPPED_REGISTRY
from tests.workflow.conftest import Stack, items_of

SLOW_TOOL = {
    "tools": [
        {
            "name": "count_loyalty_points",
            "description": "Count the caller's loyalty points and rewards points balance.",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
            "mutates": True,
        }
    ]
}
SLOW_HANDLER = """
import time
from pathlib import Path

GATE = Path(__file__).parent.parent.parent / "gate"


def count_loyalty_points(ctx):
    (GATE / "started").write_text(ctx.idempotency_key)
    deadline = time.monotonic() + 20
    while not (GATE / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    (GATE / "finished").write_text(ctx.idempotency_key)
    return {"points": 1200, "message": "You have 1,200 points."}
"""


def registry_with_slow_tool(root: Path) -> Path:
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    (registry / "toolstore" / "slow.yaml").write_text(yaml.safe_dump(SLOW_TOOL))
    (registry / "toolstore" / "slow.py").write_text(SLOW_HANDLER)
    agent_file = registry / "agentstore" / "concierge" / "agent.yaml"
    agent: dict[str, Any] = yaml.safe_load(agent_file.read_text())
    agent["tools"].append("count_loyalty_points")
    agent_file.write_text(yaml.safe_dump(agent))
    (root / "gate").mkdir()
    return registry


async def test_hang_up_during_a_tool_call_lets_the_tool_finish(
    stack: Stack, tmp_path: Path
) -> None:
    registry = registry_with_slow_tool(tmp_path)
    gate = tmp_path / "gate"
    session = stack.call(registry=str(registry))
    await session.start()
    await session.wait_for(lambda t: bool(items_of(t, "greeting")))
    turn = asyncio.create_task(session.say("How many loyalty points do I have?"))
    for _ in range(800):
        if (gate / "started").exists():
            break
        await asyncio.sleep(0.025)
    await session.hang_up()
    (gate / "release").write_text("go")
    reply = await turn
    outcome = await session.handle.result()
    assert outcome["status"] == "hung_up"
    assert (gate / "finished").read_text() == (gate / "started").read_text()
    transcript = await session.transcript()
    results = items_of(transcript, "tool_result")
    assert results[-1]["tool"] == "count_loyalty_points" and "1200" in results[-1]["content"]
    assert not items_of(transcript, "agent_turn")  # nobody talks to a caller who hung up
    assert reply.status in ("active", "hung_up")
