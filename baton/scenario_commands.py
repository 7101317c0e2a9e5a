"""`baton scenario check | graph | route | list`: tools for scenario authors."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from baton.scenario_test_command import add_test_parser
from contracts.registry import ScenarioConfig
from registries.errors import BatonError
from registries.graph import to_dot, to_mermaid
from registries.handoff_service import HandoffService, scenario_agent_names
from registries.loading import Registry, load_registry, load_scenario_file
from registries.validation import check_registry

#: What an agent with no speech fallback of its own or its scenario's is covered by.
WORKERS_OWN = "the worker's own"


def add_registry_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry",
        metavar="DIR",
        help="registry folder with agentstore/, scenariostore/, toolstore/ "
        "(default: $BATON_REGISTRY or the shipped registry)",
    )


def add_parser(commands: Any) -> None:
    scenario = commands.add_parser("scenario", help="check, draw and try scenarios")
    sub = scenario.add_subparsers(dest="scenario_command", required=True, metavar="ACTION")

    check = sub.add_parser("check", help="report every problem of the registry or a scenario")
    check.add_argument("target", nargs="?", help="scenario name, scenario folder or registry")
    add_registry_option(check)
    check.set_defaults(handler=run_check)

    graph = sub.add_parser("graph", help="print the handoff graph")
    graph.add_argument("name", help="scenario name")
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    add_registry_option(graph)
    graph.set_defaults(handler=run_graph)

    route = sub.add_parser("route", help="show what the HandoffService decides, as JSON")
    route.add_argument("name", help="scenario name")
    route.add_argument("source", metavar="FROM", help="agent handing off")
    route.add_argument("target", metavar="TO", help="agent asked for")
    route.add_argument("--tool", default="handoff_to_agent", help="handoff tool name")
    route.add_argument("--reason", default="", help="reason the LLM gives")
    route.add_argument("--visited", default="", help="agents already visited, comma separated")
    route.add_argument("--utterance", default=None, help="the caller's last utterance")
    route.add_argument("--profile", default=None, help="caller profile as a JSON object")
    add_registry_option(route)
    route.set_defaults(handler=run_route)

    add_test_parser(sub, add_registry_option)

    listing = sub.add_parser("list", help="list scenarios and their agents")
    add_registry_option(listing)
    listing.set_defaults(handler=run_list)


def _load_for_check(args: argparse.Namespace) -> tuple[Registry, str | None]:
    target = args.target
    path = Path(target) if target else None
    if path is not None and path.exists():
        if (path / "scenariostore").is_dir() or (path / "agentstore").is_dir():
            return load_registry(path), None
        scenario_file = path if path.is_file() else path / "scenario.yaml"
        registry = load_registry(args.registry)
        scenario = load_scenario_file(registry, scenario_file.resolve())
        return registry, scenario.name if scenario else scenario_file.parent.name
    registry = load_registry(args.registry)
    if target is not None:
        registry.scenario(target)  # unknown name: a clear error with suggestions
    return registry, target


def run_check(args: argparse.Namespace) -> int:
    registry, only = _load_for_check(args)
    problems = check_registry(registry, only=only)
    for problem in problems:
        print(problem, file=sys.stderr)
    names = [only] if only else sorted(registry.scenarios)
    for name in names:
        if name not in registry.scenarios:
            continue
        scenario = registry.scenarios[name]
        members = scenario_agent_names(scenario, registry.agents)
        failed = any(p.severity == "error" for p in check_registry(registry, only=name))
        status = "FAILED" if failed else "ok"
        print(
            f"{name}: {status} ({len(members)} agents, {len(scenario.handoffs)} routes, "
            f"start {scenario.start_agent})"
        )
        fallbacks = speech_fallbacks(registry, scenario, members)
        if fallbacks:
            print(f"  speech fallback: {fallbacks}")
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    print(
        f"{len(registry.agents)} agents, {len(registry.tools)} tools, {len(names)} "
        f"scenario(s) checked: {errors} error(s), {warnings} warning(s)"
    )
    return 1 if errors else 0


def speech_fallbacks(registry: Registry, scenario: ScenarioConfig, members: Iterable[str]) -> str:
    """Each agent's speech fallback in force (its own, else the scenario's), on one line; ""
    when none is set, so every agent relies on its worker's BATON_STT/TTS_FALLBACK."""
    said: list[str] = []
    for name in sorted(members):
        agent = registry.agents.get(name)
        chosen = agent.speech_fallback.over(scenario.speech_fallback) if agent else None
        if chosen is not None and (chosen.recognizer or chosen.synthesizer):
            said.append(
                f"{name} hears by {chosen.recognizer or WORKERS_OWN}, "
                f"speaks by {chosen.synthesizer or WORKERS_OWN}"
            )
    return "; ".join(said)


def run_graph(args: argparse.Namespace) -> int:
    registry = load_registry(args.registry)
    scenario = registry.scenario(args.name)
    render = to_dot if args.format == "dot" else to_mermaid
    sys.stdout.write(render(scenario, registry.agents))
    return 0


def run_route(args: argparse.Namespace) -> int:
    registry = load_registry(args.registry)
    scenario = registry.require_scenario(args.name)
    service = HandoffService(scenario, registry.agents)
    try:
        profile = json.loads(args.profile) if args.profile else None
    except json.JSONDecodeError as exc:
        raise BatonError(f"--profile is not valid JSON: {exc}") from exc
    if profile is not None and not isinstance(profile, dict):
        raise BatonError("--profile must be a JSON object")
    system_vars: dict[str, Any] = {"session_profile": profile} if profile else {}
    if profile and "client_id" in profile:
        system_vars["client_id"] = profile["client_id"]
    tool_args = {"target_agent": args.target, "reason": args.reason}
    resolution = service.resolve_handoff(
        source_agent=args.source,
        tool_name=args.tool,
        tool_args=tool_args,
        current_system_vars=system_vars,
        user_last_utterance=args.utterance,
    )
    visited = {name.strip().lower() for name in args.visited.split(",") if name.strip()}
    greeting = None
    if resolution.success and resolution.target_agent:
        greeting = service.select_greeting(
            agent=resolution.target_agent,
            is_first_visit=resolution.target_agent.lower() not in visited,
            greet_on_switch=resolution.greet_on_switch,
            system_vars=resolution.system_vars,
        )
    output = resolution.model_dump(mode="json")
    output["greeting"] = greeting
    print(json.dumps(output, indent=2))
    return 0 if resolution.success else 1


def run_list(args: argparse.Namespace) -> int:
    registry = load_registry(args.registry)
    for name, scenario in sorted(registry.scenarios.items()):
        members = ", ".join(scenario_agent_names(scenario, registry.agents))
        print(f"{name}: {scenario.description} [start {scenario.start_agent}] {members}")
    return 0
