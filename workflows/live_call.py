"""What one run of a call holds besides its durable state.

`LiveCall` is shared by the call's steps (speech, turn, tool calls, handoffs, ending): the
durable `CallState` plus what only this run knows — the model and speech work a barge-in or a
hang-up may cancel, the interruption itself, and what this turn has said so far. Nothing here
outlives the run: continue-as-new carries only `state`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.calls import BargeIn, HangUp, SpokenLine
    from contracts.registry import SpeechFallback
    from contracts.snapshot import CallSnapshot
    from workflows.policies import CallLimits
    from workflows.state import CallState


@dataclass
class LiveCall:
    state: CallState
    limits: CallLimits
    #: LLM and TTS activities a barge-in or a hang-up cancels (business tools never are).
    inflight: list[workflow.ActivityHandle[Any]] = field(default_factory=list)
    barge_in: BargeIn | None = None
    hang_up: HangUp | None = None
    #: When the reply being spoken started, to estimate what was heard if the gateway is silent.
    speaking_since: datetime | None = None
    #: Greetings and replies said this turn, in order (the Update's result).
    turn_spoken: list[SpokenLine] = field(default_factory=list)
    #: Handoffs made this turn, one line each (the Update's result).
    turn_handoffs: list[str] = field(default_factory=list)
    #: A queue no worker picked work up from ("llm", "speech", "tools"): the call escalates.
    unserved: str | None = None
    #: Speech requests name the agent's (or scenario's) speech fallback: patch
    #: "speech-fallback-per-agent", asked at the run's start (workflows.speech).
    speech_fallbacks: bool = False

    @property
    def snapshot(self) -> CallSnapshot:
        assert self.state.snapshot is not None, "the call has not loaded its scenario"
        return self.state.snapshot

    @property
    def has_voice(self) -> bool:
        """The caller listens through a media gateway (replies are synthesized)."""
        call = self.state.call
        return bool(call.gateway_address) and call.channel != "text"

    def speech_fallback(self, agent: str) -> SpeechFallback:
        """The recognizer and synthesizer that cover `agent`'s speech when the worker's fail:
        the agent's own, else the scenario's (none for runs from before the patch)."""
        snapshot = self.state.snapshot
        if not self.speech_fallbacks or snapshot is None:
            return SpeechFallback()
        brief = snapshot.agents.get(agent)
        own = brief.config.speech_fallback if brief else SpeechFallback()
        return own.over(snapshot.scenario.speech_fallback)

    def interrupted(self) -> bool:
        return (
            self.barge_in is not None or self.hang_up is not None or self.state.status != "active"
        )

    def new_turn(self) -> None:
        self.barge_in, self.turn_spoken, self.turn_handoffs = None, [], []

    def cancel_inflight(self) -> None:
        for handle in list(self.inflight):
            handle.cancel()

    async def interruptible(self, handle: workflow.ActivityHandle[Any]) -> Any:
        """Await an LLM or TTS activity that a barge-in or hang-up may cancel."""
        self.inflight.append(handle)
        try:
            return await handle
        finally:
            self.inflight.remove(handle)
