"""Tool calls and handoffs: what the model asked for, how the workflow handled each call (a
business tool activity, a HandoffService decision in a local activity's marker, or a refusal),
and the start greeting, which is a local activity too."""

from __future__ import annotations

import json
from collections import deque
from datetime import datetime
from typing import TYPE_CHECKING, Any

from audit.events import Event, failure, payloads
from audit.speech_reader import SpeechReader
from audit.timeline_model import HandoffInfo, TimelineItem, ToolCallInfo
from contracts.agent_reply import ToolCall
from contracts.calls import SupervisorTransfer
from contracts.handoff import RENDER_START_GREETING, RESOLVE_HANDOFF, HandoffResult
from contracts.registry import HANDOFF_TOOL, HandoffEdge
from contracts.routes import RouteChange
from contracts.tools import ToolResult
from registries.handoff_service import HandoffService
from workflows.tool_calls import parse_arguments

if TYPE_CHECKING:
    from audit.reading import Reading, Scheduled


class ToolReader:
    def __init__(self, timeline: Reading, speech: SpeechReader) -> None:
        self.t = timeline
        self.speech = speech
        snapshot = timeline.snapshot
        self.service = (
            HandoffService(snapshot.scenario, snapshot.agent_configs()) if snapshot else None
        )
        #: The call's live route changes so far, and the routes they made (with how).
        self.route_changes: list[RouteChange] = []
        self.live_routes: dict[tuple[str, str], str] = {}
        #: Tool calls of the last model response still waiting for what came of them.
        self.batch: list[TimelineItem] = []
        self.supervisor: deque[SupervisorTransfer] = deque()
        #: A route whose `on_tool_result` rule the last tool result matched, and that tool's
        #: item: the workflow's next handoff decision is that rule's, not the model's.
        self.rule: tuple[HandoffEdge, TimelineItem] | None = None

    def route_changed(self, change: RouteChange) -> None:
        """Later handoffs are decided with `change` applied, as the workflow does."""
        self.route_changes.append(change)
        self.live_routes.pop((change.from_agent, change.to_agent), None)
        if change.action == "add":
            self.live_routes[(change.from_agent, change.to_agent)] = "added"
        elif change.new_to_agent is not None:
            self.live_routes[(change.from_agent, change.new_to_agent)] = "retargeted"
        snapshot = self.t.snapshot
        if snapshot is not None:
            self.service = HandoffService(
                snapshot.scenario, snapshot.agent_configs(), route_changes=self.route_changes
            )

    def expect_supervisor(self, transfer: SupervisorTransfer) -> None:
        self.supervisor.append(transfer)

    # -- the model's tool calls ---------------------------------------------------------------

    def on_model_tool_calls(self, agent: str, calls: list[ToolCall], at: datetime) -> None:
        snapshot = self.t.snapshot
        brief = snapshot.agents.get(agent) if snapshot else None
        offered = {tool.name for tool in brief.tools} if brief else None
        if offered is not None and self.route_changes:
            offered.add(HANDOFF_TOOL)  # as the workflow: a live route may be the agent's first
        handoff_tools = set(snapshot.handoff_map) if snapshot else set()
        self.batch = []
        for call in calls:
            info = ToolCallInfo(call_id=call.id, name=call.name, arguments=call.arguments)
            if offered is not None and call.name not in offered:
                names = ", ".join(sorted(offered)) or "none"
                info.handled_as, info.error = (
                    "refused",
                    f"unknown tool {call.name!r}; tools: {names}",
                )
            elif call.name == HANDOFF_TOOL or call.name in handoff_tools:
                info.handled_as = "handoff"
            elif parse_arguments(call.arguments) is None:
                info.handled_as, info.error = "refused", "the arguments were not a JSON object"
            text = f"{call.name}({call.arguments})"
            self.batch.append(self.t.add(at, agent, "tool_call", text, tool=info))

    def _waiting(self, handled_as: str, name: str | None = None) -> TimelineItem | None:
        for item in self.batch:
            info = item.tool
            if info is None or info.handled_as != handled_as or info.result is not None:
                continue
            if info.error is None and (name is None or info.name == name):
                return item
        return None

    def _skip_after(self, item: TimelineItem) -> None:
        """The workflow runs no call of the batch after a handoff or an ending tool."""
        later = self.batch[self.batch.index(item) + 1 :] if item in self.batch else []
        for skipped in later:
            if skipped.tool is not None:
                skipped.tool.handled_as = "skipped"
                skipped.tool.result = {"skipped": "the call moved on before this ran"}
        self.batch = []

    def skip_unanswered(self, at: datetime) -> None:
        """A new model call: the previous batch's calls that show no outcome never ran."""
        self.rule = None
        for item in self.batch:
            info = item.tool
            if info is not None and info.handled_as != "refused" and info.result is None:
                info.handled_as = "skipped"
        self.batch = []

    def close_at_call_end(self) -> None:
        """Calls of the last batch that show no outcome when the call ended never had one."""
        for item in self.batch:
            info = item.tool
            if info is not None and info.result is None and info.error is None:
                info.error = "no outcome in the history: the call ended first"
        self.batch = []

    async def on_tool_result(self, scheduled: Scheduled, payloads: Any, at: datetime) -> None:
        outcome = await self.t.decode.value(payloads, ToolResult)
        request = scheduled.request
        item = self._waiting("business", request.tool)
        if item is None or item.tool is None:
            return
        info = item.tool
        info.result, info.error = outcome.result, outcome.error
        info.idempotency_key, info.attempts = request.idempotency_key, scheduled.attempt
        snapshot = self.t.snapshot
        spec = snapshot.tool_specs.get(info.name) if snapshot else None
        if spec is not None and spec.ends_conversation and not outcome.error:
            self._skip_after(item)
        elif not outcome.error and "error" not in outcome.result:
            edge = self._rule_route(info.name, outcome.result)
            self.rule = (edge, item) if edge is not None else None

    def _rule_route(self, tool: str, result: Any) -> HandoffEdge | None:
        """The active agent's first route whose `on_tool_result` this result matches, as the
        workflow looks for it (workflows.tool_calls)."""
        snapshot = self.t.snapshot
        if snapshot is None:
            return None
        for edge in snapshot.scenario.handoffs:
            rule = edge.on_tool_result
            if edge.from_agent == self.t.agent and rule is not None and rule.matches(tool, result):
                return edge
        return None

    def on_failed(self, scheduled: Scheduled, why: str, at: datetime) -> None:
        request = scheduled.request
        name = getattr(request, "tool", None)
        item = self._waiting("business", name) if isinstance(name, str) else None
        if item is not None and item.tool is not None:
            item.tool.error = f"{name} {why}"
            item.tool.idempotency_key = request.idempotency_key
            item.tool.attempts = scheduled.attempt

    # -- local activities ---------------------------------------------------------------------

    async def on_marker(self, event: Event, at: datetime) -> None:
        marker = event.attrs
        if marker.get("markerName") != "core_local_activity":
            return
        details = marker.get("details") or {}
        data_payloads = payloads(details.get("data"))
        data = json.loads(data_payloads[0].data) if data_payloads else {}
        activity = data.get("activity_type")
        result = payloads(details.get("result"))
        if activity == RENDER_START_GREETING:
            if result:
                greeting = await self.t.decode.value(result, str)
                self.speech.add_greeting(self.t.agent, greeting, at, is_return=False)
            return
        if activity != RESOLVE_HANDOFF:
            return
        started = self.t.task_started_at
        if started is not None:
            self.t.turns.add_stage(self.t.turns.number, "handoff", started, at, self.t.agent)
        if result:
            await self.on_handoff(await self.t.decode.value(result, HandoffResult), at)
        else:
            message = await self.t.decode.failure_message(failure(marker.get("failure")))
            self.on_handoff_failed(message, at)

    def _requester(self) -> tuple[TimelineItem | None, SupervisorTransfer | None]:
        if self.rule is not None:  # asked by code after the tool, not by a model's call
            return None, None
        item = self._waiting("handoff")
        if item is not None:
            return item, None
        return None, self.supervisor.popleft() if self.supervisor else None

    async def on_handoff(self, result: HandoffResult, at: datetime) -> None:
        r = result.resolution
        item, transfer = self._requester()
        by_rule, self.rule = self.rule, None
        source = self.t.agent
        tool = item.tool.name if item is not None and item.tool else HANDOFF_TOOL
        info = HandoffInfo(
            source=source,
            target=r.target_agent,
            success=r.success,
            handoff_type=r.handoff_type,
            reason=r.reason or (transfer.reason if transfer else ""),
            trigger="rule" if by_rule else "supervisor" if transfer is not None else "llm",
            tool=tool,
            refusal=r.error,
            valid_targets=list(r.valid_targets),
            share_context=r.share_context,
            greeting=result.greeting,
            is_return=result.is_return,
        )
        if r.success and r.target_agent and self.service is not None:
            edge = self.service.route_for(source, r.target_agent, tool)
            info.rule = f"edge {edge.from_agent} → {edge.to_agent}" if edge else "generic handoff"
            live = self.live_routes.get((source, r.target_agent)) if edge else None
            if edge is not None and live is not None:
                info.rule = f"live route {edge.from_agent} → {edge.to_agent} ({live})"
            if by_rule is not None and by_rule[0].on_tool_result is not None:
                edge, because = by_rule[0], by_rule[0].on_tool_result.describe()
                info.rule = f"tool-result rule on {edge.from_agent} → {edge.to_agent}: {because}"
        if item is not None and item.tool is not None:
            item.tool.result = {"success": r.success, "target_agent": r.target_agent}
            item.tool.error = r.error
        speaker = transfer.supervisor if transfer is not None else source
        if r.success:
            text = f"{source} → {r.target_agent} ({r.handoff_type}): {info.reason}"
        else:
            text = f"{source} → {r.target_agent or '?'} refused: {r.error}"
        self.t.add(at, speaker, "handoff", text, handoff=info)
        if not r.success:
            return
        asker = item if item is not None else by_rule[1] if by_rule is not None else None
        if asker is not None:
            self._skip_after(asker)
        self.t.agent = r.target_agent or source
        if r.target_agent and r.target_agent not in self.t.call.visited:
            self.t.call.visited.append(r.target_agent)
        if r.handoff_type == "announced":
            self.speech.add_greeting(
                self.t.agent, result.greeting or "", at, is_return=result.is_return
            )

    def on_handoff_failed(self, failure: str, at: datetime) -> None:
        item, transfer = self._requester()
        by_rule, self.rule = self.rule, None
        source = self.t.agent
        why = f"handoff from {source} could not be rendered: {failure}"
        info = HandoffInfo(source=source, target=None, success=False, refusal=why)
        if transfer is not None:
            info.trigger = "supervisor"
        elif by_rule is not None:
            info.trigger = "rule"
        if item is not None and item.tool is not None:
            item.tool.error = why
        self.t.add(at, source, "handoff", why, handoff=info)
