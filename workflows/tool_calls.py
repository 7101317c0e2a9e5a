"""The tool calls of one model response: handoffs, business tools, and refusals the model can
correct (unknown tools, arguments that are not a JSON object)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.agent_reply import ToolCall
    from contracts.handoff import TOOL_HANDOFF_FIELDS, HandoffResult
    from contracts.registry import HANDOFF_TOOL, HandoffEdge, ToolResultRule
    from contracts.temporal import TOOLS_QUEUE
    from contracts.tools import RUN_BUSINESS_TOOL, ToolRequest, ToolResult
    from contracts.transcript import ToolCallItem, ToolResultItem
    from workflows import policies, summaries
    from workflows.failures import went_unserved
    from workflows.handoffs import Handoffs, RoundOutcome, Trigger
    from workflows.live_call import LiveCall


def parse_arguments(raw: str) -> dict[str, Any] | None:
    """Tool arguments as a dict, or None when the model sent something else."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class ToolCalls:
    """Runs a model response's tool calls in order and records each call and result."""

    def __init__(
        self,
        call: LiveCall,
        handoffs: Handoffs,
        *,
        end_by_tool: Callable[[str, dict[str, Any]], Awaitable[None]],
    ) -> None:
        self.call = call
        self.handoffs = handoffs
        #: Ends the call when a tool that ends it (end_call, escalate_human) succeeded.
        self.end_by_tool = end_by_tool
        #: Why each call of the last round was refused, when every one of them was.
        self.refusals: list[str] = []
        #: The handoff fields of the latest business tool that returned some, and its turn:
        #: the next handoff of that turn takes them (a tool prepares the handoff it precedes).
        self._handoff_fields: tuple[int, dict[str, Any]] | None = None

    def hands_off(self, calls: list[ToolCall]) -> bool:
        """Whether running `calls` may ask the handoff service (a local activity): a handoff
        tool, or a business tool that a route's `on_tool_result` rule watches."""
        handoff_map = self.call.snapshot.handoff_map
        watched = {rule.tool for _, rule in self._rule_routes()}
        return any(
            c.name == HANDOFF_TOOL or c.name in handoff_map or c.name in watched for c in calls
        )

    def _rule_routes(self) -> list[tuple[HandoffEdge, ToolResultRule]]:
        """The active agent's routes taken by a tool's result, when this run follows them."""
        if not self.handoffs.tool_result_rules:
            return []
        agent = self.call.state.active_agent
        return [
            (edge, edge.on_tool_result)
            for edge in self.call.snapshot.scenario.handoffs
            if edge.from_agent == agent and edge.on_tool_result is not None
        ]

    async def run(self, calls: list[ToolCall], round_id: int, utterance: str) -> RoundOutcome:
        state, agent, snapshot = self.call.state, self.call.state.active_agent, self.call.snapshot
        now = workflow.now()
        for call in calls:
            state.transcript.append(
                ToolCallItem(
                    at=now,
                    turn=state.turn,
                    agent=agent,
                    tool_call_id=call.id,
                    tool=call.name,
                    arguments=call.arguments,
                    round=round_id,
                )
            )
        offered = {tool.name for tool in snapshot.agents[agent].tools}
        if state.route_changes:  # a route added live may be this agent's first: the service judges
            offered.add(HANDOFF_TOOL)
        switched: HandoffResult | None = None
        trigger: Trigger = "llm"
        ending: dict[str, Any] | None = None
        refusals: list[str] = []
        for call in calls:
            if switched is not None or ending is not None or self.call.hang_up is not None:
                self._record_result(agent, call, {"skipped": "the call moved on before this ran"})
                continue
            args = parse_arguments(call.arguments)
            #: Set when the model asked for something it may not have (a correctable mistake).
            refused: str | None = None
            if call.name not in offered:
                names = ", ".join(sorted(offered)) or "none"
                refused = f"unknown tool {call.name!r}; tools: {names}"
                content: dict[str, Any] = {"error": refused}
            elif call.name == HANDOFF_TOOL or call.name in snapshot.handoff_map:
                result = await self.handoffs.request(
                    agent, call.name, args, utterance, "llm", self._fields_for_handoff()
                )
                resolution = result.resolution
                if resolution.success:
                    self._handoff_fields = None  # used: the agent after this one starts clean
                    switched = result
                    content = {"success": True, "target_agent": resolution.target_agent}
                else:
                    refused = resolution.error
                    content = {"success": False, "error": resolution.error}
            elif args is None:
                refused = "the arguments were not a JSON object"
                content = {"error": f"{refused}; call the tool again with valid JSON arguments"}
            else:
                content, refused = await self._business_tool(call.name, args)
                if snapshot.tool_specs[call.name].ends_conversation and "error" not in content:
                    ending = {"tool": call.name, **content}
            self._record_result(agent, call, content)
            if refused is not None:
                refusals.append(f"{call.name}: {refused}")
            elif switched is None and ending is None and "error" not in content:
                switched = await self._follow_rule(agent, call.name, content, utterance)
                trigger = "rule" if switched is not None else trigger
        self.refusals = refusals if len(refusals) == len(calls) else []
        if switched is not None:
            return await self.handoffs.switch(switched, trigger)
        if ending is not None:
            await self.end_by_tool(agent, ending)
            return "done"
        return "continue"

    async def _follow_rule(
        self, agent: str, tool: str, content: dict[str, Any], utterance: str
    ) -> HandoffResult | None:
        """Hand off, with no model decision, along the first route whose `on_tool_result`
        matches what `tool` returned; the HandoffService still decides (the route may have
        been closed for this call) and the decision is recorded with trigger "rule"."""
        for edge, rule in self._rule_routes():
            if not rule.matches(tool, content):
                continue
            args = {"target_agent": edge.to_agent, "reason": rule.describe()}
            fields = self._fields_for_handoff()
            result = await self.handoffs.request(
                agent, HANDOFF_TOOL, args, utterance, "rule", fields
            )
            if not result.resolution.success:
                return None  # refused: the model carries on with the tool's result
            self._handoff_fields = None
            return result
        return None

    def _record_result(self, agent: str, call: ToolCall, content: dict[str, Any]) -> None:
        state = self.call.state
        state.transcript.append(
            ToolResultItem(
                at=workflow.now(),
                turn=state.turn,
                agent=agent,
                tool_call_id=call.id,
                tool=call.name,
                content=json.dumps(content, sort_keys=True, default=str),
            )
        )

    async def _business_tool(
        self, name: str, args: dict[str, Any]
    ) -> tuple[dict[str, Any], str | None]:
        """The tool's result, and why its arguments were refused (None when they were not)."""
        state = self.call.state
        state.tool_seq += 1
        request = ToolRequest(
            call_id=state.call.call_id,
            tool=name,
            arguments=args,
            idempotency_key=f"{state.call.call_id}/tool-{state.tool_seq}",
            system_vars=state.system_vars,
            registry=self.call.snapshot.registry,
        )
        try:
            outcome: ToolResult = await workflow.execute_activity(
                RUN_BUSINESS_TOOL,
                request,
                result_type=ToolResult,
                task_queue=TOOLS_QUEUE,
                start_to_close_timeout=policies.TOOL.start_to_close,
                heartbeat_timeout=policies.TOOL.heartbeat,
                schedule_to_start_timeout=policies.TOOL.schedule_to_start,
                retry_policy=policies.TOOL.retry,
                summary=summaries.tool(name),
            )
        except ActivityError as error:
            if went_unserved(error):
                self.call.unserved = "tools"
            return {
                "error": f"{name} failed: {error.cause or error}; tell the caller and offer "
                "another way to help"
            }, None
        if outcome.error:
            return {"error": outcome.error}, outcome.error
        self.handoffs.note_progress()
        self._learn_identity(outcome.result)
        fields = {key: outcome.result[key] for key in TOOL_HANDOFF_FIELDS if key in outcome.result}
        if fields:
            self._handoff_fields = (state.turn, fields)
        return outcome.result, None

    def _fields_for_handoff(self) -> dict[str, Any] | None:
        """The handoff fields a business tool returned earlier in this turn, if any."""
        if self._handoff_fields is None or self._handoff_fields[0] != self.call.state.turn:
            return None
        return self._handoff_fields[1]

    def _learn_identity(self, result: dict[str, Any]) -> None:
        """A successful identity check tells every later tool and agent who is calling."""
        if result.get("verified") is True and result.get("client_id"):
            system_vars = self.call.state.system_vars
            profile = dict(system_vars.get("session_profile") or {})
            profile["client_id"] = result["client_id"]
            if result.get("name"):
                profile["name"] = result["name"]
            system_vars["client_id"] = result["client_id"]
            system_vars["session_profile"] = profile
