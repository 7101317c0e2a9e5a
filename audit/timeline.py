"""The timeline reader: a call's history events, run by run, read into `CallTimeline`.

Only events are read, never a query, so a call reads the same with no worker alive and years
later. The reader follows what each workflow version records (tests/histories v1 on): the
Update and signals that reached the call, each activity's request and result, the local
activities' markers (handoff decisions, greetings), and how each run closed. What the call
spoke without an activity (a text channel's goodbye) comes from the Update's reply.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from audit.bundle import CallBundle
from audit.events import Event, events_of, failure, payloads
from audit.payloads import PayloadReader
from audit.reading import Reading, Scheduled
from audit.speech_reader import SpeechReader
from audit.timeline_model import CallTimeline, RunInfo, TimelineItem
from audit.tool_reader import ToolReader
from audit.transfer_reader import TransferReader
from audit.turns import QueuedUtterance
from contracts.agent_reply import GENERATE_AGENT_REPLY, AgentReplyRequest, AgentTurnResult
from contracts.calls import (
    SIGNAL_BARGE_IN,
    SIGNAL_DTMF,
    SIGNAL_HANG_UP,
    SIGNAL_RENEW_LEASE,
    SIGNAL_SUPERVISOR_TRANSFER,
    SIGNAL_UTTERANCE,
    BargeIn,
    CallOutcome,
    Dtmf,
    HangUp,
    LeaseHolder,
    LeaseRenewal,
    SupervisorTransfer,
    TurnReply,
    Utterance,
    stale_renewal,
)
from contracts.escalation import FILE_ESCALATION_TICKET, EscalationTicket
from contracts.routes import UPDATE_CHANGE_ROUTES, RouteChange
from contracts.speech import (
    SYNTHESIZE_SPEECH,
    TRANSCRIBE_SEGMENT,
    SynthesisRequest,
    TranscriptionRequest,
    TranscriptionResult,
)
from contracts.tools import RUN_BUSINESS_TOOL, ToolRequest
from contracts.transfer import (
    SIGNAL_TRANSFER_SETTLED,
    START_TRANSFER,
    TransferOutcome,
    TransferSettled,
)
from contracts.transfer_task import TransferTask
from workflows.state import CallSessionInput

#: Escalation reasons the loop guard writes (workflows/loop_guard.py).
LOOP_GUARD_REASONS = ("handoff limit reached", "ping-pong between")
_INPUTS: dict[str, Any] = {
    GENERATE_AGENT_REPLY: AgentReplyRequest,
    RUN_BUSINESS_TOOL: ToolRequest,
    SYNTHESIZE_SPEECH: SynthesisRequest,
    TRANSCRIBE_SEGMENT: TranscriptionRequest,
    FILE_ESCALATION_TICKET: EscalationTicket,
    START_TRANSFER: TransferTask,
}
_CLOSED_AS = {
    "WORKFLOW_EXECUTION_COMPLETED": "completed",
    "WORKFLOW_EXECUTION_FAILED": "failed",
    "WORKFLOW_EXECUTION_TIMED_OUT": "timed_out",
    "WORKFLOW_EXECUTION_TERMINATED": "terminated",
    "WORKFLOW_EXECUTION_CANCELED": "canceled",
    "WORKFLOW_EXECUTION_CONTINUED_AS_NEW": "continued_as_new",
}
_ACTIVITY_CLOSED = (
    "ACTIVITY_TASK_COMPLETED",
    "ACTIVITY_TASK_FAILED",
    "ACTIVITY_TASK_TIMED_OUT",
    "ACTIVITY_TASK_CANCELED",
)


async def read_timeline(bundle: CallBundle, reader: PayloadReader | None = None) -> CallTimeline:
    """The call in `bundle` as a timeline (decoding its payloads with `reader`)."""
    return await TimelineReader(bundle, reader or PayloadReader()).read()


class TimelineReader(Reading):
    def __init__(self, bundle: CallBundle, reader: PayloadReader) -> None:
        super().__init__(bundle, reader)
        self.speech = SpeechReader(self)
        self.tools = ToolReader(self, self.speech)
        self.transfers = TransferReader(self)
        #: Accepted `change_routes` Updates (their completion carries no caller turn).
        self.route_updates: set[int] = set()
        #: The gateway holding the call, read from lease renewals as the workflow reads them.
        self.lease_holder: LeaseHolder | None = None

    async def read(self) -> CallTimeline:
        runs: list[RunInfo] = []
        for number, run in enumerate(self.bundle.runs):
            self.run = number + 1
            info = RunInfo(run_id=run.run_id, events=len(run.history.get("events") or []))
            for event in events_of(run.history):
                await self.on_event(event, info)
            runs.append(info)
        if runs:
            self.call.started_at = runs[0].started_at
        if self.call.visited == [] and self.agent:
            self.call.visited = self.speech.agents_seen()
        return CallTimeline(
            call=self.call,
            runs=runs,
            items=self.items,
            turns=[self.turns.timings[n] for n in sorted(self.turns.timings)],
            tokens=self.turns.tokens,
        )

    # -- dispatch ---------------------------------------------------------------------------

    async def on_event(self, event: Event, run: RunInfo) -> None:
        kind, at, attrs = event.type, event.at, event.attrs
        if kind == "WORKFLOW_EXECUTION_STARTED":
            run.started_at = at
            await self.on_started(event, at)
        elif kind == "WORKFLOW_EXECUTION_UPDATE_ACCEPTED":
            sent = attrs.get("acceptedRequest", {}).get("input", {})
            if sent.get("name") == UPDATE_CHANGE_ROUTES:
                change = await self.decode.value(payloads(sent.get("args")), RouteChange)
                self.route_updates.add(event.id)
                self.on_route_change(change, at)
            else:
                utterance = await self.decode.value(payloads(sent.get("args")), Utterance)
                self.on_utterance(utterance, at, "update")
        elif kind == "WORKFLOW_EXECUTION_UPDATE_COMPLETED":
            if int(attrs.get("acceptedEventId") or 0) not in self.route_updates:
                await self.on_update_completed(event, at)
        elif kind == "WORKFLOW_EXECUTION_SIGNALED":
            await self.on_signal(event, at)
        elif kind == "ACTIVITY_TASK_SCHEDULED":
            await self.on_scheduled(event, at)
        elif kind == "ACTIVITY_TASK_STARTED":
            scheduled = self.scheduled.get(int(attrs.get("scheduledEventId") or 0))
            if scheduled is not None:
                scheduled.attempt = int(attrs.get("attempt") or 1)
        elif kind in _ACTIVITY_CLOSED:
            await self.on_activity_closed(event, at)
        elif kind == "WORKFLOW_TASK_STARTED":
            self.task_started_at = at
        elif kind == "MARKER_RECORDED":
            await self.tools.on_marker(event, at)
        elif kind in _CLOSED_AS:
            run.ended_at, run.closed_as = at, _CLOSED_AS[kind]
            await self.on_closed(event, at, _CLOSED_AS[kind])

    async def on_started(self, event: Event, at: datetime) -> None:
        start = await self.decode.value(payloads(event.attrs.get("input")), CallSessionInput)
        call = start.call
        self.call.scenario, self.call.channel = call.scenario, call.channel
        self.voice = bool(call.gateway_address) and call.channel != "text"
        carried = start.carried
        if carried is not None:
            self.agent, self.turns.number = carried.active_agent, carried.turn
            self.call.visited = list(carried.visited)
            self.turns.seen_ids.update(carried.seen_utterance_ids)
            return
        self.add(
            at,
            "system",
            "call_start",
            f"call {call.call_id} on scenario {call.scenario} ({call.channel})",
            details={
                "scenario": call.scenario,
                "channel": call.channel,
                "voice": self.voice,
                "caller_profile_fields": sorted(call.caller_profile),
            },
        )

    def on_route_change(self, change: RouteChange, at: datetime) -> None:
        """A supervisor's live route change (Update `change_routes`, accepted: refused ones
        never reach history); later handoffs are judged with it."""
        self.tools.route_changed(change)
        why = f": {change.reason}" if change.reason else ""
        details = {"action": change.action, "from": change.from_agent, "to": change.to_agent}
        if change.new_to_agent is not None:
            details["new_to"] = change.new_to_agent
        text = f"{change.describe()}{why}"
        self.add(at, change.supervisor, "route_change", text, details=details)

    def on_utterance(self, utterance: Utterance, at: datetime, via: str) -> None:
        text = (utterance.text or "").strip()
        item = TimelineItem(
            at=at,
            run=self.run,
            turn=-1,
            speaker="caller",
            kind="utterance",
            text=text or "(recorded speech, transcribed below)",
            details={"utterance_id": utterance.utterance_id, "via": via},
        )
        if utterance.confidence is not None:
            item.details["confidence"] = utterance.confidence
        queued = QueuedUtterance(utterance.utterance_id, text, utterance.segment_ref or "", item)
        if self.turns.queue_utterance(queued):
            self.items.append(item)

    async def on_update_completed(self, event: Event, at: datetime) -> None:
        success = event.attrs.get("outcome", {}).get("success")
        if success is None:
            return
        reply = await self.decode.value(payloads(success), TurnReply)
        if not reply.duplicate:
            self.speech.complete_from_reply(reply, at)
            self.turns.close(reply.utterance_id, at)

    async def on_signal(self, event: Event, at: datetime) -> None:
        name, sent = event.attrs.get("signalName"), payloads(event.attrs.get("input"))
        if name == SIGNAL_UTTERANCE:
            self.on_utterance(await self.decode.value(sent, Utterance), at, "signal")
        elif name == SIGNAL_BARGE_IN:
            self.speech.on_barge_in(await self.decode.value(sent, BargeIn), at)
        elif name == SIGNAL_DTMF:
            dtmf = await self.decode.value(sent, Dtmf)
            self.add(at, "caller", "dtmf", dtmf.digits)
            keypad = Utterance(utterance_id=f"dtmf-{event.id}", text=f"(keypad) {dtmf.digits}")
            self.on_utterance(keypad, at, "keypad")
        elif name == SIGNAL_TRANSFER_SETTLED:
            self.transfers.on_settled(await self.decode.value(sent, TransferSettled), at)
        elif name == SIGNAL_HANG_UP:
            hang_up = await self.decode.value(sent, HangUp)
            self.add(at, "caller", "hang_up", hang_up.reason)
        elif name == SIGNAL_RENEW_LEASE:
            self.on_lease_renewal(await self.decode.value(sent, LeaseRenewal), at)
        elif name == SIGNAL_SUPERVISOR_TRANSFER:
            transfer = await self.decode.value(sent, SupervisorTransfer)
            self.tools.expect_supervisor(transfer)
            self.add(
                at,
                transfer.supervisor,
                "supervisor_transfer",
                f"transfer to {transfer.target_agent}: {transfer.reason}",
                details={"target": transfer.target_agent, "reason": transfer.reason},
            )

    def on_lease_renewal(self, renewal: LeaseRenewal, at: datetime) -> None:
        """A gateway move shows when another gateway takes the call over (renewals that name
        no connection, from gateways before holders were named, show nothing)."""
        holder = self.lease_holder
        if renewal.connected_at is None or stale_renewal(renewal, holder):
            return
        if holder is not None and holder.gateway_id != renewal.gateway_id:
            self.add(
                at,
                "system",
                "gateway_move",
                f"the call moved to gateway {renewal.gateway_id} at {renewal.gateway_address}",
                details={
                    "from_gateway": holder.gateway_id,
                    "from_address": holder.gateway_address,
                    "gateway": renewal.gateway_id,
                    "address": renewal.gateway_address,
                },
            )
        self.lease_holder = LeaseHolder(
            gateway_id=renewal.gateway_id,
            gateway_address=renewal.gateway_address,
            connected_at=renewal.connected_at,
            since=at,
        )

    async def on_scheduled(self, event: Event, at: datetime) -> None:
        activity = str(event.attrs.get("activityType", {}).get("name") or "")
        model = _INPUTS.get(activity)
        request = (
            await self.decode.value(payloads(event.attrs.get("input")), model) if model else None
        )
        if isinstance(request, TranscriptionRequest) and request.backchannels is None:
            # (Speech over a paused reply is heard on arrival, before its turn: see on_held.)
            self.turns.begin_if_due(self.run, segment=request.segment_ref)
        elif isinstance(request, AgentReplyRequest):
            self.agent = request.agent_name or (request.agent.name if request.agent else "")
            users = [m.content for m in request.messages if m.role == "user"]
            self.turns.begin_if_due(self.run, text=users[-1] if users else None)
            self.tools.skip_unanswered(at)
        item = None
        if isinstance(request, SynthesisRequest):
            item = self.speech.on_speech_scheduled(request, at)
        elif isinstance(request, EscalationTicket):
            self.on_escalation(request, at)
        elif isinstance(request, TransferTask):
            self.transfers.on_request(request, at)
        agent = request.agent if isinstance(request, SynthesisRequest) else self.agent
        self.scheduled[event.id] = Scheduled(
            activity, at, request, self.turns.number, agent, item=item
        )

    def on_escalation(self, ticket: EscalationTicket, at: datetime) -> None:
        self.speech.drop_unspoken_greeting()
        if ticket.reason.startswith(LOOP_GUARD_REASONS):
            self.add(at, "system", "loop_guard", ticket.reason)
        self.call.ticket_id = ticket.ticket_id
        self.add(
            at,
            "system",
            "escalation",
            ticket.reason,
            details={"ticket_id": ticket.ticket_id, "active_agent": ticket.active_agent},
        )

    async def on_activity_closed(self, event: Event, at: datetime) -> None:
        kind, attrs = event.type, event.attrs
        scheduled = self.scheduled.pop(int(attrs.get("scheduledEventId") or 0), None)
        if scheduled is None:
            return
        stage = {
            GENERATE_AGENT_REPLY: "model",
            RUN_BUSINESS_TOOL: "tool",
            SYNTHESIZE_SPEECH: "tts",
            TRANSCRIBE_SEGMENT: "stt",
        }.get(scheduled.activity)
        if stage:
            self.turns.add_stage(scheduled.turn, stage, scheduled.at, at, scheduled.agent)
        if kind == "ACTIVITY_TASK_COMPLETED":
            await self.on_activity_result(scheduled, payloads(attrs.get("result")), at)
            return
        if kind == "ACTIVITY_TASK_CANCELED":
            self.speech.on_cancelled(scheduled, at)
            return
        why = "timed out"
        if kind == "ACTIVITY_TASK_FAILED":
            message = await self.decode.failure_message(failure(attrs.get("failure")))
            why = f"failed: {message}"
        self.tools.on_failed(scheduled, why, at)
        if scheduled.activity != RUN_BUSINESS_TOOL:
            self.add(at, "system", "failure", f"{scheduled.activity} {why}")

    async def on_activity_result(self, scheduled: Scheduled, payloads: Any, at: datetime) -> None:
        activity = scheduled.activity
        if activity == GENERATE_AGENT_REPLY:
            result = await self.decode.value(payloads, AgentTurnResult)
            usage = result.usage
            self.turns.add_tokens(scheduled.agent, usage.prompt_tokens, usage.completion_tokens)
            self.speech.on_model_reply(scheduled, result, at)
            self.tools.on_model_tool_calls(scheduled.agent, result.tool_calls, at)
        elif activity == RUN_BUSINESS_TOOL:
            await self.tools.on_tool_result(scheduled, payloads, at)
        elif activity == SYNTHESIZE_SPEECH:
            await self.speech.on_speech_result(scheduled, payloads, at)
        elif activity == TRANSCRIBE_SEGMENT:
            heard = await self.decode.value(payloads, TranscriptionResult)
            request = scheduled.request
            if isinstance(request, TranscriptionRequest) and request.backchannels is not None:
                self.speech.on_held(request.segment_ref, heard, at)
            else:
                self.speech.on_transcribed(heard, at)
        elif activity == START_TRANSFER:
            answer = await self.decode.value(payloads, TransferOutcome)
            self.transfers.on_platform(answer, at)

    async def on_closed(self, event: Event, at: datetime, closed_as: str) -> None:
        if closed_as == "continued_as_new":
            self.add(
                at,
                "system",
                "continue_as_new",
                f"history continued in a new run ({self.run + 1})",
                details={"new_run_id": event.attrs.get("newExecutionRunId", "")},
            )
            return
        self.call.ended_at = at
        self.tools.close_at_call_end()
        if closed_as == "completed":
            result = payloads(event.attrs.get("result"))
            outcome = await self.decode.value(result, CallOutcome)
            self.call.status, self.call.end_reason = outcome.status, outcome.end_reason
            self.call.visited = list(outcome.visited)
            if outcome.ticket is not None:
                self.call.ticket_id = outcome.ticket.ticket_id
            if outcome.transfer is not None:
                self.transfers.on_outcome(outcome.transfer, at)
        else:
            self.call.status, self.call.end_reason = closed_as, f"the workflow {closed_as}"
        self.add(
            at,
            "system",
            "call_end",
            f"{self.call.status}: {self.call.end_reason}",
            details={"status": self.call.status, "reason": self.call.end_reason},
        )
