"""What the Temporal Web UI shows for a call: a one-line summary on every activity and local
activity the workflow runs, and the call's current details (active agent, turn).

The UI otherwise lists a call as rows of identical activity names. Summaries are user metadata
payloads, which the data converter encodes like any other payload: they are encrypted in
history and readable through the codec endpoint. They still name only agents, tools, scenario
and counts, never what the caller said or who the caller is.
"""

from __future__ import annotations

import re
from typing import Any

from contracts.registry import HANDOFF_TOOL
from contracts.snapshot import CallSnapshot
from workflows.state import CallState

STT = "STT caller segment"
ESCALATION = "escalation ticket"
TICKET_DELIVERY = "escalation ticket delivery"
#: Ends of sentences, for "TTS 2 sentences": a stop, question or exclamation mark, then space.
_SENTENCE_END = re.compile(r"[.!?…]+(?:\s+|$)")


def load_snapshot(scenario: str) -> str:
    return f"load scenario {scenario}"


def start_greeting(agent: str) -> str:
    return f"greeting · {agent}"


def model(agent: str, fallback: str = "") -> str:
    return f"LLM · {agent} · fallback {fallback}" if fallback else f"LLM · {agent}"


def tool(name: str) -> str:
    return f"tool {name}"


def ticket_marked(status: str) -> str:
    return f"escalation ticket → {status}"


def speech(agent: str, text: str, kind: str, *, streamed: bool = False) -> str:
    if streamed:
        return f"TTS streamed reply · {agent}"
    if kind == "greeting":
        return f"TTS greeting · {agent}"
    sentences = max(1, len(_SENTENCE_END.findall(text.strip())))
    return f"TTS {sentences} sentence{'s' if sentences > 1 else ''} · {agent}"


def handoff(
    snapshot: CallSnapshot, source: str, tool_name: str, args: dict[str, Any] | None, trigger: str
) -> str:
    """The handoff asked for and the kind of route the pinned scenario has for it.

    Written before the HandoffService decides (a summary is fixed when the activity is
    scheduled), so it names the route as the scenario declares it; the decision itself is the
    marker's result, which `baton audit verify` derives again from the snapshot."""
    requested = _requested_target(snapshot, source, tool_name, args or {})
    via = "" if trigger == "llm" else f" ({trigger})"
    if requested is None:
        return f"handoff {source} via {tool_name}, no target named{via}"
    names = {name.lower(): name for name in snapshot.agents}
    target = names.get(requested.strip().lower())
    if target is None:
        return f"handoff {source} → {requested}, not an agent{via}"
    return f"handoff {source} → {target}, {_route_kind(snapshot, source, target, tool_name)}{via}"


def _requested_target(
    snapshot: CallSnapshot, source: str, tool_name: str, args: dict[str, Any]
) -> str | None:
    if tool_name == HANDOFF_TOOL:
        target = args.get("target_agent")
        return target if isinstance(target, str) and target.strip() else None
    for edge in snapshot.scenario.handoffs:
        if edge.from_agent == source and edge.tool == tool_name:
            return edge.to_agent
    return snapshot.handoff_map.get(tool_name)


def _route_kind(snapshot: CallSnapshot, source: str, target: str, tool_name: str) -> str:
    scenario = snapshot.scenario
    if target == source:
        return "already active"
    edges = [e for e in scenario.handoffs if e.from_agent == source and e.to_agent == target]
    by_tool = [e for e in edges if e.tool == tool_name]
    if by_tool or edges:
        return scenario.type_of((by_tool or edges)[0])
    generic = scenario.generic_handoff
    if generic.enabled and (not generic.allowed_targets or target in generic.allowed_targets):
        return f"{generic.default_type or scenario.handoff_type} (generic)"
    return "no route"


def call_details(state: CallState) -> str:
    """The call's current details (Temporal markdown): who is talking, how far, and how it
    ended once it has."""
    agent = state.active_agent or "starting"
    line = f"**{agent}** · turn {state.turn} · {state.status}"
    if len(state.visited) > 1:
        line += f"\n\nvisited: {' → '.join(state.visited)}"
    return line
