"""CallSessionWorkflow: one phone call, from the first greeting to hang-up or escalation.

Utterances arrive as an Update (`submit_utterance`, returns the reply) or a signal, are queued
in order and answered one turn at a time (see `workflows.turn`). Barge-in and hang-up cancel
the in-flight model and speech work of the current turn; business tools always run to the end
so their effects stay consistent. The whole state is one model carried by continue-as-new.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    # Passed through like the payload models: the steps hold no module state, and one shared
    # copy instead of one per sandboxed run keeps a cached call small.
    from contracts.calls import (
        SIGNAL_BARGE_IN,
        SIGNAL_DTMF,
        SIGNAL_HANG_UP,
        SIGNAL_RENEW_LEASE,
        SIGNAL_SUPERVISOR_TRANSFER,
        SIGNAL_UTTERANCE,
        UPDATE_SUBMIT_UTTERANCE,
        BargeIn,
        CallOutcome,
        Dtmf,
        HangUp,
        LeaseRenewal,
        SupervisorTransfer,
        TurnReply,
        Utterance,
    )
    from contracts.registry import HANDOFF_TOOL
    from contracts.temporal import WORKFLOW_NAME
    from contracts.transcript import DtmfItem, SupervisorItem, UserTurn
    from contracts.transfer import SIGNAL_TRANSFER_SETTLED, TransferSettled
    from runtime.snapshot_cache import shared_snapshot
    from workflows import conversation, outages, policies, summaries
    from workflows.backchannels import HEARING, HeldUtterances
    from workflows.call_ending import CallEnding
    from workflows.call_queries import CallQueries
    from workflows.call_start import start_call
    from workflows.handoffs import Handoffs
    from workflows.lease import GatewayLease
    from workflows.live_call import LiveCall
    from workflows.metrics import count_utterance
    from workflows.resay import Resay
    from workflows.route_changes import RouteChangeUpdate
    from workflows.speech import Speaker
    from workflows.state import CallSessionInput, CallState
    from workflows.tool_calls import ToolCalls
    from workflows.turn import APOLOGY, Turn

REMEMBERED_REPLIES = 50


@workflow.defn(name=WORKFLOW_NAME)
class CallSessionWorkflow(CallQueries):
    """The call's handlers and main loop; the steps of a turn live in their own classes,
    built here around one shared `LiveCall`."""

    @workflow.init
    def __init__(self, input: CallSessionInput) -> None:
        self.state = input.carried or CallState(call=input.call)
        if self.state.snapshot is not None:
            self.state.snapshot = shared_snapshot(self.state.snapshot)
        self.limits = policies.LIMITS
        self.live = LiveCall(self.state, self.limits)
        self.lease = GatewayLease(self.state)
        self.speaker = Speaker(self.live)
        self.resay = Resay(self.live, self.speaker)
        self.ending = CallEnding(self.live, self.speaker)
        self.handoffs = Handoffs(
            self.live,
            self.speaker,
            escalate=self.ending.escalate,
            agent_changed=self.ending.update_search_attributes,
        )
        tool_calls = ToolCalls(self.live, self.handoffs, end_by_tool=self.ending.end_by_tool)
        self.turn = Turn(self.live, self.speaker, tool_calls, escalate=self.ending.escalate)
        RouteChangeUpdate(self.state)  # the Update `change_routes` (workflows.route_changes)
        #: The utterance being answered right now, if any (duplicate detection).
        self._answering: str | None = None
        self.held = HeldUtterances(self.live, REMEMBERED_REPLIES)

    @workflow.run
    async def run(self, input: CallSessionInput) -> CallOutcome:
        self.ending.transfer.decide()  # before any activity: see workflows.transfer
        self.handoffs.decide()
        self.speaker.decide()  # before any activity, too (workflows.speech)
        if self.state.snapshot is None:
            await start_call(self.live, self.speaker, self.ending.escalate)
        self.ending.update_search_attributes()
        self.lease.start(self.live.has_voice)
        self.resay.start()
        while self.state.status == "active":
            lapsed = self.lease.lapsed()
            if lapsed is not None and self.live.hang_up is None:
                self.live.hang_up = lapsed
            if not self._has_work():
                # Not lapsed, so at least a second is left: the wait always gets its timer.
                try:
                    await workflow.wait_condition(self._has_work, timeout=self.lease.time_left())
                except TimeoutError:
                    continue  # the lease ran out while nothing happened: checked at the top
            if self.live.hang_up is not None:
                await self.ending.finish("hung_up", self.live.hang_up.reason)
            elif self.live.unserved is not None:
                await self._escalate_unserved()
            elif self.state.supervisor_transfers:
                await self._supervisor_transfer(self.state.supervisor_transfers.pop(0))
            elif self.resay.due():
                await self.resay.say()
            elif self.state.pending:
                await self._answer(self.state.pending.pop(0))
            elif self._history_is_long():
                # Handlers first: an Update waiting for its reply must get it from this run.
                await workflow.wait_condition(
                    lambda: workflow.all_handlers_finished() or bool(self.state.pending)
                )
                if not self.state.pending:
                    workflow.continue_as_new(
                        CallSessionInput(
                            call=self.state.call,
                            carried=conversation.carry_over(self.state, self.limits),
                        )
                    )
        self.held.cancel()
        self._close_pending()
        await workflow.wait_condition(workflow.all_handlers_finished)
        await self.ending.tickets.settled()  # the webhook's retries outlast the call, not it
        return CallOutcome(
            call_id=self.state.call.call_id,
            status=self.state.status,
            end_reason=self.state.end_reason,
            active_agent=self.state.active_agent,
            visited=self.state.visited,
            ticket=self.state.ticket,
            transfer=self.state.transfer,
        )

    @property
    def answering_utterance(self) -> str | None:
        """The utterance being answered now, or heard on arrival in the task asking: its
        activities join its trace (runtime.turn_traces)."""
        return HEARING.get() or self._answering

    def _has_work(self) -> bool:
        state = self.state
        return bool(
            self.live.hang_up
            or self.live.unserved
            or state.pending
            or state.supervisor_transfers
            or self.resay.due()
            or state.status != "active"
            or self._history_is_long()
        )

    def _history_is_long(self) -> bool:
        info = workflow.info()
        return (
            info.is_continue_as_new_suggested()
            or info.get_current_history_length() >= self.state.call.max_history_events
        )

    # -- turns -----------------------------------------------------------------------------

    async def _answer(self, utterance: Utterance) -> None:
        state = self.state
        self._answering = utterance.utterance_id
        as_heard = await self.held.heard(utterance)
        if as_heard is None:  # a backchannel over a reply that carried on: recorded, not a turn
            self._answering = None
            return
        utterance = as_heard
        state.turn += 1
        workflow.set_current_details(summaries.call_details(state))
        self.live.new_turn()
        text, heard = (utterance.text or "").strip(), True
        if not text and utterance.segment_ref:
            text, heard = await outages.hear(self.live, self.speaker, utterance.segment_ref)
        state.transcript.append(
            UserTurn(
                at=workflow.now(),
                turn=state.turn,
                utterance_id=utterance.utterance_id,
                text=text,
                agent=state.active_agent,
                confidence=utterance.confidence,
            )
        )
        if text:
            self.handoffs.note_progress()  # a new request: a hop after it is no bounce
            await self.turn.converse(text)
        else:  # nothing understood, or (not heard) the recognizer failed
            apology = APOLOGY if heard else outages.TROUBLE_APOLOGY
            await self.speaker.speak(state.active_agent, apology, "reply")
        if self.live.unserved is not None:
            await self._escalate_unserved()  # in this turn: its reply says where the call went
        self._reply(utterance.utterance_id)
        self._answering = None

    async def _escalate_unserved(self) -> None:
        """No worker took this call's work off a queue: no retry can answer, a human must."""
        await self.ending.escalate(
            f"no worker served the {self.live.unserved} queue", "queue_unserved"
        )

    def _reply(self, utterance_id: str, *, duplicate: bool = False) -> TurnReply:
        spoken = list(self.live.turn_spoken)
        reply = TurnReply(
            utterance_id=utterance_id,
            agent=self.state.active_agent,
            text=" ".join(line.text for line in spoken if line.text),
            spoken=spoken,
            handoffs=list(self.live.turn_handoffs),
            status=self.state.status,
            duplicate=duplicate,
        )
        replies = self.state.recent_replies
        replies[utterance_id] = reply
        while len(replies) > REMEMBERED_REPLIES:
            replies.pop(next(iter(replies)))
        return reply

    async def _supervisor_transfer(self, transfer: SupervisorTransfer) -> None:
        state = self.state
        self.live.turn_spoken, self.live.turn_handoffs = [], []
        result = await self.handoffs.request(
            state.active_agent,
            HANDOFF_TOOL,
            {"target_agent": transfer.target_agent, "reason": transfer.reason},
            None,
            "supervisor",
        )
        state.transcript.append(
            SupervisorItem(
                at=workflow.now(),
                turn=state.turn,
                supervisor=transfer.supervisor,
                action="transfer" if result.resolution.success else "transfer_refused",
                target=transfer.target_agent,
                reason=result.resolution.error or transfer.reason,
            )
        )
        if result.resolution.success:
            await self.handoffs.switch(result, "supervisor")

    def _close_pending(self) -> None:
        """Utterances still queued when the call ended are kept, marked unanswered."""
        state = self.state
        for utterance in state.pending:
            state.transcript.append(
                UserTurn(
                    at=workflow.now(),
                    turn=state.turn,
                    utterance_id=utterance.utterance_id,
                    text=(utterance.text or "").strip(),
                    agent=state.active_agent,
                    answered=False,
                )
            )
            self.live.turn_spoken = []
            self._reply(utterance.utterance_id)
        state.pending.clear()

    # -- messages --------------------------------------------------------------------------

    def _accept(self, utterance: Utterance) -> bool:
        """Queue an utterance unless its id was seen before; True when queued."""
        seen = self.state.seen_utterance_ids
        if utterance.utterance_id in seen:
            count_utterance("retried")
            return False
        if len(self.state.pending) >= self.limits.max_pending:
            count_utterance("dropped")
            # Only a signal gets here (the Update's validator refuses first): keypad mashing
            # or a runaway client must not queue an hour of replies.
            workflow.logger.warning(
                "utterance %s dropped: too many waiting", utterance.utterance_id
            )
            return False
        seen.append(utterance.utterance_id)
        del seen[: max(0, len(seen) - self.limits.remembered_utterances)]
        self.state.pending.append(utterance)
        self.held.arrived(utterance)
        return True

    @workflow.update(name=UPDATE_SUBMIT_UTTERANCE)
    async def submit_utterance(self, utterance: Utterance) -> TurnReply:
        """Answer one utterance and return what the caller hears back."""
        duplicate = not self._accept(utterance)
        uid = utterance.utterance_id
        await workflow.wait_condition(
            lambda: uid in self.state.recent_replies or (duplicate and self._forgotten(uid))
        )
        if uid not in self.state.recent_replies:
            return TurnReply(
                utterance_id=uid,
                agent=self.state.active_agent,
                text="",
                status=self.state.status,
                duplicate=True,
            )
        reply = self.state.recent_replies[uid]
        return reply.model_copy(update={"duplicate": True}) if duplicate else reply

    def _forgotten(self, uid: str) -> bool:
        """A duplicate of an utterance answered so long ago its reply is no longer kept
        (not queued, not being answered right now, no reply remembered)."""
        return uid != self._answering and all(u.utterance_id != uid for u in self.state.pending)

    @submit_utterance.validator
    def _validate_utterance(self, utterance: Utterance) -> None:
        self._validate_incoming(utterance)

    def _validate_incoming(self, utterance: Utterance) -> None:
        if self.state.status != "active":
            raise ValueError(f"the call has ended ({self.state.status})")
        if not (utterance.text or "").strip() and not utterance.segment_ref:
            raise ValueError("an utterance needs text or a segment_ref")
        if utterance.segment_ref and not self.state.call.gateway_address:
            raise ValueError("segment_ref needs a call with a media gateway; send text")
        seen = utterance.utterance_id in self.state.seen_utterance_ids
        if not seen and len(self.state.pending) >= self.limits.max_pending:
            count_utterance("dropped")
            raise ValueError(f"{self.limits.max_pending} utterances are already waiting")

    @workflow.signal(name=SIGNAL_UTTERANCE)
    def utterance(self, utterance: Utterance) -> None:
        # Signals cannot be refused, so bad ones are dropped here with a log line.
        try:
            self._validate_incoming(utterance)
        except ValueError as error:
            workflow.logger.warning("utterance %s refused: %s", utterance.utterance_id, error)
            return
        self._accept(utterance)

    @workflow.signal(name=SIGNAL_BARGE_IN)
    def barge_in(self, barge_in: BargeIn) -> None:
        if not self.live.inflight:
            return  # nothing playing or generating: nothing to interrupt
        self.live.barge_in = barge_in
        self.live.cancel_inflight()

    @workflow.signal(name=SIGNAL_DTMF)
    def dtmf(self, dtmf: Dtmf) -> None:
        state = self.state
        state.transcript.append(DtmfItem(at=workflow.now(), turn=state.turn, digits=dtmf.digits))
        if state.status == "active":
            self._accept(
                Utterance(
                    utterance_id=f"dtmf-{len(state.transcript)}", text=f"(keypad) {dtmf.digits}"
                )
            )

    @workflow.signal(name=SIGNAL_HANG_UP)
    def hang_up(self, hang_up: HangUp) -> None:
        self.live.hang_up = hang_up
        self.live.cancel_inflight()

    @workflow.signal(name=SIGNAL_RENEW_LEASE)
    def renew_lease(self, renewal: LeaseRenewal) -> None:
        """The media gateway still holds this call (see `workflows.lease`)."""
        self.lease.renewed(renewal)

    @workflow.signal(name=SIGNAL_SUPERVISOR_TRANSFER)
    def supervisor_transfer(self, transfer: SupervisorTransfer) -> None:
        if self.state.status == "active":
            self.state.supervisor_transfers.append(transfer)

    @workflow.signal(name=SIGNAL_TRANSFER_SETTLED)
    def transfer_settled(self, settled: TransferSettled) -> None:
        self.ending.transfer.settle(settled)
