"""`baton audit verify`: did this call follow its rules? Four checks, each from the bundle alone
(no server once the bundle is read, no worker):

1. hashes: every part of the bundle matches its SHA-256 in the manifest (tamper evidence);
2. replay: every run replays against today's workflow code, or the first incompatible event;
3. handoffs: each recorded handoff decision is derived again from the pinned snapshot with the
   HandoffService and matches (target, type, greeting, refusal). The pinned snapshot is the one
   history records (the `load_call_snapshot` result, or the one a later run was carried into
   with): it must hash to its own hash, every model request must name that hash, and the
   bundle's copy of it must be the same snapshot. A call whose routes a supervisor changed
   (Update `change_routes`) is derived with the changes the replay rebuilt from the accepted
   Updates in its history;
4. tools: every business tool that ran was offered, in the snapshot check 3 verified, to the
   agent whose model asked for it, and every mutating call carried its own idempotency key and
   ran as one activity.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory

from activities.handoff import decide_handoff
from activities.snapshot_store import snapshot_digest
from audit.bundle import CallBundle, recorded_snapshot
from audit.errors import AuditError
from audit.payloads import PayloadReader
from audit.replay_audit import RecordedDecision, describe_event, replay_runs
from contracts.agent_reply import GENERATE_AGENT_REPLY, AgentReplyRequest, AgentTurnResult
from contracts.handoff import TEMPLATE_RENDER_ERROR, HandoffResult
from contracts.snapshot import CallSnapshot
from contracts.tools import RUN_BUSINESS_TOOL, ToolRequest
from registries.errors import TemplateRenderError

SCHEDULED = EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
COMPLETED = EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
#: Each model request of the call by (run, scheduled event id).
ModelRequests = dict[tuple[int, int], AgentReplyRequest]


@dataclass(frozen=True)
class Check:
    name: str
    passed: bool
    detail: str

    def line(self) -> str:
        return f"{'ok  ' if self.passed else 'FAIL'} {self.name}: {self.detail}"


async def verify_call(bundle: CallBundle, reader: PayloadReader | None = None) -> list[Check]:
    """The four checks of a call, in order; each runs even when an earlier one failed, so an
    auditor sees everything that is wrong at once."""
    reader = reader or PayloadReader()
    checks = [check_hashes(bundle)]
    try:
        histories = bundle.histories()
    except AuditError as error:
        unreadable = f"the runs cannot be read: {error}"
        return [*checks, *(Check(n, False, unreadable) for n in ("replay", "handoffs", "tools"))]
    replay = await replay_runs(histories)
    if replay.failure is None:
        runs = f"{replay.runs} run{'s' if replay.runs != 1 else ''}"
        checks.append(Check("replay", True, f"{runs}, {replay.events} events replay"))
    else:
        checks.append(Check("replay", False, replay.failure))
    try:
        requests = await read_model_requests(histories, reader)
    except AuditError as error:  # a payload that no longer decodes: damaged or another key
        unread = f"the model requests cannot be read: {error}"
        return [*checks, Check("handoffs", False, unread), Check("tools", False, unread)]
    snapshot, problem = await pinned_snapshot(bundle, requests, reader)
    checks.append(check_handoffs(snapshot, problem, replay.decisions, replay.failure))
    if snapshot is None and problem is not None:
        # Tool lists from a snapshot that did not verify would prove nothing.
        detail = "not checked: the snapshot the call pinned did not verify (see handoffs)"
        checks.append(Check("tools", False, detail))
        return checks
    try:
        checks.append(await check_tools(snapshot, histories, requests, reader))
    except AuditError as error:
        checks.append(Check("tools", False, f"the tool calls cannot be read: {error}"))
    return checks


def check_hashes(bundle: CallBundle) -> Check:
    wrong = bundle.check_hashes()
    if wrong is not None:
        return Check("hashes", False, f"part {wrong!r} does not match its SHA-256 in the manifest")
    return Check("hashes", True, f"{len(bundle.manifest)} parts match the manifest")


async def read_model_requests(
    histories: list[WorkflowHistory], reader: PayloadReader
) -> ModelRequests:
    """Every model request the call scheduled, decoded once for checks 3 and 4."""
    requests: ModelRequests = {}
    for run, history in enumerate(histories, start=1):
        for event in history.events:
            attrs = event.activity_task_scheduled_event_attributes
            if event.event_type == SCHEDULED and attrs.activity_type.name == GENERATE_AGENT_REPLY:
                requests[(run, event.event_id)] = await reader.value(
                    attrs.input.payloads, AgentReplyRequest
                )
    return requests


async def pinned_snapshot(
    bundle: CallBundle, requests: ModelRequests, reader: PayloadReader
) -> tuple[CallSnapshot | None, str | None]:
    """The snapshot the call pinned, read from its history, and what is wrong with it or with
    the bundle's copy of it (None when nothing is). The snapshot is returned, for check 4, only
    when history's own record of it verifies: a copy edited, hashed again and sealed into the
    manifest passes check 1, but differs from what history pinned."""
    try:
        recorded = await recorded_snapshot(bundle.runs, reader)
    except AuditError as error:
        return None, f"the snapshot the call pinned cannot be read from its history: {error}"
    problem = _recorded_problem(recorded, requests)
    if problem is not None:
        return None, problem
    return recorded, _copy_problem(bundle, recorded)


def _recorded_problem(recorded: CallSnapshot | None, requests: ModelRequests) -> str | None:
    """What is wrong with the snapshot history records: its content against its own hash, and
    the hash every model request named (the LLM worker loaded the agent's brief by it)."""
    named = {key: r.snapshot_hash for key, r in requests.items() if r.snapshot_hash}
    if recorded is None:
        if named:
            (run, event), digest = next(iter(named.items()))
            return (
                f"run {run} model request #{event} names snapshot {digest[:12]}, but history "
                "records no snapshot loaded"
            )
        return None
    digest = snapshot_digest(recorded)
    if digest != recorded.content_hash:
        return (
            f"the snapshot history records hashes to {digest[:12]}, not the "
            f"{recorded.content_hash[:12]} it names"
        )
    for (run, event), asked in named.items():
        if asked != recorded.content_hash:
            return (
                f"run {run} model request #{event} was asked with snapshot {asked[:12]}, but "
                f"history records snapshot {recorded.content_hash[:12]} as the one loaded"
            )
    return None


def _copy_problem(bundle: CallBundle, recorded: CallSnapshot | None) -> str | None:
    """How the bundle's `snapshot` part (and the hash in its metadata) differ from the snapshot
    history records."""
    try:
        copy = bundle.call_snapshot()
    except ValueError as error:
        return f"the bundle's snapshot is not a snapshot: {str(error).splitlines()[0]}"
    if recorded is None:
        return None if copy is None else "the bundle holds a snapshot, but history pins none"
    pinned = recorded.content_hash
    if copy is None:
        return f"the bundle lacks the snapshot the call pinned ({pinned[:12]})"
    digest = snapshot_digest(copy)
    if digest != copy.content_hash:
        return (
            f"the bundle's snapshot hashes to {digest[:12]}, not the {copy.content_hash[:12]} "
            "it names"
        )
    if copy.content_hash != pinned:
        return (
            f"the bundle's snapshot is {copy.content_hash[:12]}, but the call pinned "
            f"{pinned[:12]} (its history's load_call_snapshot result)"
        )
    if bundle.snapshot_hash and bundle.snapshot_hash != pinned:
        return (
            f"the bundle names snapshot {bundle.snapshot_hash[:12]}, the call pinned {pinned[:12]}"
        )
    return None


def check_handoffs(
    snapshot: CallSnapshot | None,
    snapshot_problem: str | None,
    decisions: list[RecordedDecision],
    replay_failure: str | None,
) -> Check:
    if snapshot_problem is not None:
        return Check("handoffs", False, snapshot_problem)
    if snapshot is None:
        if decisions:
            return Check("handoffs", False, "handoffs were decided, but no snapshot was pinned")
        return Check("handoffs", True, "no scenario was pinned, so no handoff could be decided")
    for number, decision in enumerate(decisions, start=1):
        mismatch = _compare(decision, _derive(snapshot, decision))
        if decision.request.scenario != snapshot.scenario:
            # The replayed call decided from another scenario than the one the bundle pins.
            mismatch = "the call asked with a scenario other than the pinned snapshot's"
        if mismatch is not None:
            request = decision.request
            where = f"handoff {number} (run {decision.run}, {request.source_agent} via "
            return Check("handoffs", False, f"{where}{request.tool_name}): {mismatch}")
    pinned = f"snapshot {snapshot.content_hash[:12]} hashes to the hash the call pinned"
    if replay_failure is not None:
        # Decisions are read while replaying: those after the failure were never seen.
        return Check(
            "handoffs",
            False,
            f"not all read: the replay stopped after {_count(len(decisions), 'decision')}, "
            "all matching",
        )
    if not decisions:
        return Check("handoffs", True, f"no handoff was decided; {pinned}")
    changed = max(len(d.request.route_changes) for d in decisions)
    live = f" with {_count(changed, 'live route change')}" if changed else ""
    return Check(
        "handoffs",
        True,
        f"{_count(len(decisions), 'decision')} derived again from the pinned snapshot{live} "
        f"{'matches' if len(decisions) == 1 else 'match'}; {pinned}",
    )


def _derive(snapshot: CallSnapshot, decision: RecordedDecision) -> HandoffResult | str:
    """The HandoffService's decision on the recorded request, with the scenario, agents and
    tool map taken from the pinned snapshot (the request keeps the call's live route changes,
    rebuilt by the replay from history); a render failure as its error type."""
    request = decision.request.model_copy(
        update={
            "scenario": snapshot.scenario,
            "agents": snapshot.agent_configs(),
            "handoff_map": dict(snapshot.handoff_map),
        }
    )
    try:
        return decide_handoff(request)
    except TemplateRenderError:
        return TEMPLATE_RENDER_ERROR


def _compare(recorded: RecordedDecision, derived: HandoffResult | str) -> str | None:
    """What differs between the recorded and the derived decision, None when nothing does."""
    if recorded.result is None or isinstance(derived, str):
        said = recorded.failure or "a decision"
        got = derived if isinstance(derived, str) else _decision(derived)
        same = isinstance(derived, str) and (recorded.failure or "").startswith(derived)
        return None if same else f"history records {said}; the snapshot gives {got}"
    fields = (_decision(recorded.result), recorded.result.greeting)
    again = (_decision(derived), derived.greeting)
    if fields[0] != again[0]:
        return f"history records {fields[0]}; the snapshot gives {again[0]}"
    if fields[1] != again[1]:
        return "the recorded greeting is not the one the snapshot gives"
    return None


def _decision(result: HandoffResult) -> str:
    r = result.resolution
    if not r.success:
        return f"a refusal ({r.error})"
    visit = "return visit" if result.is_return else "first visit"
    return f"→ {r.target_agent} ({r.handoff_type}, {visit})"


async def check_tools(
    snapshot: CallSnapshot | None,
    histories: list[WorkflowHistory],
    requests: ModelRequests,
    reader: PayloadReader,
) -> Check:
    """Reads the scheduled model and tool activities in order: a tool runs right after the
    model response that asked for it, so the last model request names the agent. `snapshot`
    is the one check 3 verified against history."""
    agent, asked = "", []  # the agent whose model spoke last, and the tools it asked for
    models: dict[tuple[int, int], str] = {}
    keys: Counter[str] = Counter()
    ran: Counter[str] = Counter()
    mutating = 0
    for run, history in enumerate(histories, start=1):
        for event in history.events:
            if event.event_type == COMPLETED:
                done = event.activity_task_completed_event_attributes
                if (run, done.scheduled_event_id) in models:
                    reply = await reader.value(done.result.payloads, AgentTurnResult)
                    asked = [call.name for call in reply.tool_calls]
                continue
            if event.event_type != SCHEDULED:
                continue
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == GENERATE_AGENT_REPLY:
                request = requests[(run, event.event_id)]
                agent = request.agent_name or (request.agent.name if request.agent else "")
                models[(run, event.event_id)], asked = agent, []
                continue
            if attrs.activity_type.name != RUN_BUSINESS_TOOL:
                continue
            tool = await reader.value(attrs.input.payloads, ToolRequest)
            where = f"run {run} {describe_event(event)}: {tool.tool}"
            problem = _tool_problem(snapshot, agent, asked, tool)
            if problem is not None:
                return Check("tools", False, f"{where} {problem}")
            ran[tool.tool] += 1
            spec = snapshot.tool_specs[tool.tool] if snapshot else None
            if spec is not None and spec.mutates:
                mutating += 1
                if not tool.idempotency_key:
                    return Check("tools", False, f"{where} changes data but had no idempotency key")
                keys[tool.idempotency_key] += 1
                if keys[tool.idempotency_key] > 1:
                    return Check(
                        "tools",
                        False,
                        f"{where} reused idempotency key {tool.idempotency_key!r}: one effect "
                        "would stand for two calls",
                    )
    if not ran:
        return Check("tools", True, "no business tool ran")
    names = ", ".join(f"{name} ×{count}" for name, count in sorted(ran.items()))
    changes = (
        f"; {_count(mutating, 'call')} changing data, each once under its own idempotency key"
        if mutating
        else "; none changed data"
    )
    return Check(
        "tools",
        True,
        f"{_count(sum(ran.values()), 'tool call')} ({names}), each offered to the agent whose "
        f"model asked for it{changes}",
    )


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _tool_problem(
    snapshot: CallSnapshot | None, agent: str, asked: list[str], tool: ToolRequest
) -> str | None:
    if snapshot is None:
        return "ran, but the call pinned no scenario"
    brief = snapshot.agents.get(agent)
    if brief is None:
        return f"ran with no agent of the scenario active ({agent or 'none'})"
    offered = {schema.name for schema in brief.tools}
    if tool.tool not in offered:
        return f"is not one of {agent}'s tools ({', '.join(sorted(offered)) or 'none'})"
    if tool.tool not in asked:
        return f"ran though {agent}'s model response did not ask for it"
    if tool.tool not in snapshot.tool_specs:
        return "is not a tool of the pinned scenario"
    return None


def report_lines(checks: list[Check]) -> list[str]:
    lines = [check.line() for check in checks]
    failed = [check.name for check in checks if not check.passed]
    lines.append(f"FAILED: {', '.join(failed)}" if failed else "verified: all checks passed")
    return lines
