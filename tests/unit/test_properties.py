"""Property tests: resolutions never leave the graph; the loader never crashes on junk."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contracts.registry import AgentConfig, ScenarioConfig
from registries.handoff_service import HandoffService
from registries.loading import load_registry
from registries.validation import check_registry

NAMES = ["Alpha", "Bravo", "Charlie", "Delta", "Echo"]
name = st.sampled_from(NAMES)
probe = st.one_of(name, name.map(str.lower), st.text(max_size=12))


@st.composite
def scenarios(draw: st.DrawFn) -> ScenarioConfig:
    members = draw(st.lists(name, min_size=1, max_size=5, unique=True))
    edges = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "from_agent": name,
                    "to_agent": name,
                    "type": st.sampled_from(["announced", "discrete"]),
                    "tool": st.sampled_from(["handoff_to_agent", "legacy_a", "legacy_b"]),
                }
            ),
            max_size=10,
        )
    )
    generic = draw(
        st.fixed_dictionaries(
            {
                "enabled": st.booleans(),
                "allowed_targets": st.lists(name, max_size=3, unique=True),
            }
        )
    )
    return ScenarioConfig.model_validate(
        {
            "name": "prop",
            "start_agent": members[0],
            "agents": members,
            "handoffs": edges,
            "generic_handoff": generic,
        }
    )


AGENTS = {
    n: AgentConfig.model_validate({"name": n, "handoff": {"trigger": f"handoff_{n.lower()}"}})
    for n in NAMES
}


@given(
    scenarios(),
    probe,
    probe,
    st.sampled_from(
        ["handoff_to_agent", "legacy_a", "legacy_b", "handoff_alpha", "handoff_echo", "other"]
    ),
)
@settings(max_examples=400, deadline=None)
def test_resolution_never_leaves_the_graph(
    scenario: ScenarioConfig, source: str, target: str, tool: str
) -> None:
    service = HandoffService(scenario, AGENTS)
    result = service.resolve_handoff(
        source_agent=source, tool_name=tool, tool_args={"target_agent": target}
    )
    if not result.success:
        assert result.error
        return
    src, dst = result.source_agent, result.target_agent
    assert src in scenario.agents and dst in scenario.agents and src != dst
    explicit = any(e.from_agent == src and e.to_agent == dst for e in scenario.handoffs)
    generic = scenario.generic_handoff
    allowed = not generic.allowed_targets or dst in generic.allowed_targets
    assert explicit or (generic.enabled and allowed)
    assert dst in service.valid_targets(src)


junk_value = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "name",
                    "agents",
                    "handoffs",
                    "start_agent",
                    "tools",
                    "from_agent",
                    "to_agent",
                    "type",
                    "greeting",
                    "prompt",
                    "voice",
                    "context_vars",
                    "generic_handoff",
                    "parameters",
                    "description",
                    "x",
                ]
            ),
            children,
            max_size=5,
        ),
    ),
    max_leaves=20,
)
junk_text = st.one_of(
    junk_value.map(lambda v: yaml.safe_dump(v)),
    st.text(max_size=200),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
)


@given(junk_text, junk_text, junk_text)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_loader_never_crashes_on_junk(scenario_text: str, agent_text: str, tool_text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files: dict[str, Any] = {
            "scenariostore/junk/scenario.yaml": scenario_text,
            "agentstore/junk/agent.yaml": agent_text,
            "toolstore/junk.yaml": tool_text,
        }
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8", errors="surrogateescape")
        registry = load_registry(root)
        problems = check_registry(registry)
        assert all(str(p) for p in problems)
