"""The call workflow's queries: what a client, the gateway or an auditor may read of a live
call without changing it. A base class of `CallSessionWorkflow`, kept apart so the workflow's
module holds only what changes the call."""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.calls import (
        QUERY_HANDOFF_HISTORY,
        QUERY_STATE,
        QUERY_SUMMARY,
        QUERY_TOKEN_USAGE,
        QUERY_TRANSCRIPT,
        QUERY_TRANSCRIPT_SINCE,
        AgentUsage,
        CallSummary,
        TranscriptSlice,
    )
    from contracts.handoff import HandoffStep
    from contracts.transcript import TranscriptItem
    from workflows.state import CallState


class CallQueries:
    """Read-only views of `state`, which the workflow sets up in its init."""

    state: CallState

    @workflow.query(name=QUERY_STATE)
    def get_state(self) -> CallState:
        return self.state

    @workflow.query(name=QUERY_SUMMARY)
    def get_summary(self) -> CallSummary:
        state = self.state
        return CallSummary(
            status=state.status,
            active_agent=state.active_agent,
            visited=list(state.visited),
            turn=state.turn,
            end_reason=state.end_reason,
            gateway=state.lease_holder,
        )

    @workflow.query(name=QUERY_TRANSCRIPT)
    def get_transcript(self) -> list[TranscriptItem]:
        return list(self.state.transcript)

    @workflow.query(name=QUERY_TRANSCRIPT_SINCE)
    def get_transcript_since(self, start: int) -> TranscriptSlice:
        items = self.state.transcript
        start = max(0, start)
        return TranscriptSlice(start=start, items=items[start:], total=len(items))

    @workflow.query(name=QUERY_HANDOFF_HISTORY)
    def get_handoff_history(self) -> list[HandoffStep]:
        return list(self.state.handoffs)

    @workflow.query(name=QUERY_TOKEN_USAGE)
    def get_token_usage(self) -> dict[str, AgentUsage]:
        return dict(self.state.usage)
