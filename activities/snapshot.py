"""Activity: load a scenario with its agents and tools, and pin it by content hash.

Runs once at call start. The workflow keeps the snapshot, so editing YAML later changes new
calls only, and old histories replay against the exact configuration they ran with.
"""

from __future__ import annotations

import contextlib

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.snapshot_store import load_saved_snapshot, save_snapshot, snapshot_digest
from contracts.registry import ScenarioConfig
from contracts.snapshot import (
    LOAD_CALL_SNAPSHOT,
    AgentBrief,
    CallSnapshot,
    HandoffRoute,
    SnapshotRequest,
    ToolSchema,
)
from registries.errors import BatonError, RegistryError
from registries.handoff_service import HandoffService, build_handoff_instructions
from registries.loading import Registry, load_registry, registry_fingerprint
from registries.prompting import template_vars
from registries.toolset import tools_for_agent
from runtime.snapshot_cache import cached_snapshot, shared_snapshot


def routes_from(registry: Registry, scenario: ScenarioConfig, agent: str) -> list[HandoffRoute]:
    """The scenario's handoff routes out of `agent`, each with its target's description."""
    return [
        HandoffRoute(
            target_agent=edge.to_agent,
            condition=edge.handoff_condition,
            target_description=registry.agents[edge.to_agent].description,
        )
        for edge in scenario.handoffs
        if edge.from_agent == agent and edge.to_agent in registry.agents
    ]


def build_snapshot(registry: Registry, scenario_name: str) -> CallSnapshot:
    """The snapshot of one scenario; raises RegistryError when the scenario has errors."""
    scenario = registry.require_scenario(scenario_name)
    service = HandoffService(scenario, registry.agents)
    briefs: dict[str, AgentBrief] = {}
    used_tools: set[str] = set()
    for name in sorted(service.members):
        agent = registry.agents[name]
        offered = tools_for_agent(agent, service, registry.tools)
        used_tools.update(t.name for t in offered if t.name in registry.tools)
        briefs[name] = AgentBrief(
            config=agent,
            template_vars=template_vars(scenario, agent),
            tools=[
                ToolSchema(name=t.name, description=t.description, parameters=t.parameters)
                for t in offered
            ],
            routes=routes_from(registry, scenario, name),
            handoff_instructions=build_handoff_instructions(scenario, name, registry.agents),
        )
    unhashed = CallSnapshot(
        scenario=scenario,
        agents=briefs,
        tool_specs={name: registry.tools[name] for name in sorted(used_tools)},
        handoff_map=dict(service.handoff_map),
        content_hash="",
    )
    return unhashed.model_copy(update={"content_hash": snapshot_digest(unhashed)})


#: Snapshots built from unchanged registry files, so a burst of new calls does not parse and
#: check the same YAML once per call (about 40 ms of CPU each for the shipped registry).
_built: dict[tuple[object, ...], CallSnapshot] = {}
_BUILT_MAX = 32


def current_snapshot(registry: str | None, scenario: str) -> CallSnapshot:
    """`build_snapshot` for the registry's current files, reused while they are unchanged."""
    key = (registry_fingerprint(registry), scenario)
    snapshot = _built.get(key)
    if snapshot is None:
        snapshot = build_snapshot(load_registry(registry), scenario)
        if len(_built) >= _BUILT_MAX:
            _built.clear()  # edits are rare; dropping old versions keeps memory bounded
        _built[key] = snapshot
    return snapshot


@activity.defn(name=LOAD_CALL_SNAPSHOT)
async def load_call_snapshot(request: SnapshotRequest) -> CallSnapshot:
    """Load and pin the call's scenario. Registry errors are not retryable: a person must
    fix the YAML, so the call fails fast with every problem listed."""
    try:
        snapshot = current_snapshot(request.registry, request.scenario)
        save_snapshot(snapshot)
        # The registry as the caller named it (None: each worker's default), never this
        # machine's path: tools workers on other machines resolve it themselves.
        return snapshot.model_copy(update={"registry": request.registry})
    except RegistryError as exc:
        raise ApplicationError(
            f"scenario {request.scenario!r} has errors:\n{exc}",
            type="RegistryError",
            non_retryable=True,
        ) from exc
    except BatonError as exc:
        raise ApplicationError(str(exc), type="RegistryError", non_retryable=True) from exc


def pinned_snapshot(content_hash: str, scenario: str, registry: str | None) -> CallSnapshot:
    """The snapshot a call pinned, by its hash: from this process's cache, else rebuilt from the
    registry's current files when they still hash the same, else from the snapshot store.

    Raises ApplicationError (not retryable) when no copy is left anywhere.
    """
    snapshot = cached_snapshot(content_hash)
    if snapshot is None and scenario:
        with contextlib.suppress(BatonError):
            built = current_snapshot(registry, scenario)
            if built.content_hash == content_hash:
                snapshot = built
    if snapshot is None:
        snapshot = load_saved_snapshot(content_hash)
    if snapshot is None:
        raise ApplicationError(
            f"snapshot {content_hash[:12]} of scenario {scenario!r} is neither in the registry "
            "nor in the snapshot store; give every worker the same $BATON_DATA_DIR",
            type="SnapshotMissing",
            non_retryable=True,
        )
    return shared_snapshot(snapshot)
