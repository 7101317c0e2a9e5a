"""When a provider is slow or down: what fills the caller's wait, which model answers instead,
and what the caller is told when nothing does.

* A model, tool round or recognizer still busy after the scenario's `filler_after_seconds`
  (1.5 s) gets a filler spoken ("One moment, please."), recorded as a `FillerItem`. The model's
  own filler is said by the LLM worker through the reply it publishes (activities.agent_reply);
  the other two are said here.
* A model attempt that has written nothing for the caller after `max_silence_seconds` (8 s;
  half of it when a fallback model is left to try) fails without a retry and counts as
  failed; the LLM worker keeps that bound, since only it sees the first words arrive, so a
  long reply being written is never cut.
* A failed model call (provider error after Temporal's retries, timeout, silence bound) is tried
  once on the agent's `model.fallback` (or the scenario's `model_fallback`): another model or
  deployment, which then gets what is left of the bound, or `offline`, which hands the caller
  to a person with a ticket at once.
* When nothing answered, the caller hears that the trouble is on our side, never "I didn't
  catch that", which stays for audio that was not understood.

Each behaviour change has its own patch, asked before the activity whose outcome it decides.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from contracts.transcript import FillerItem, ModelFallbackItem
    from workflows.listening import transcribe
    from workflows.live_call import LiveCall
    from workflows.speech import Speaker

#: Patch ids, one per behaviour change.
HONEST_APOLOGY = "honest-apology"
SILENCE_BOUND = "turn-silence-bound"
MODEL_FALLBACK = "model-fallback"
SLOW_WORK_FILLER = "slow-work-filler"

TROUBLE_APOLOGY = (
    "I'm sorry, I'm having trouble on my side right now. Could you say that again in a moment?"
)
FILLER = "One moment, please."
#: The fallback that is no model: a person takes the call.
OFFLINE = "offline"

T = TypeVar("T")


@dataclass(frozen=True)
class OutagePlan:
    """How one model call of a turn copes with a slow or failing provider, fixed before the
    call starts (its patches are asked then)."""

    #: A failure is apologised for honestly (False: the old "didn't catch that").
    honest: bool
    #: The caller's silence on this call is bounded (None: Temporal's timeouts alone).
    max_silence: float | None
    filler_after: float | None
    #: The fallback model, OFFLINE, or "" for none.
    fallback: str

    def primary_share(self) -> float | None:
        """The primary model's part of the silence bound: half when a fallback model is left
        to try (so it gets the other half), all of it otherwise."""
        if self.max_silence is None:
            return None
        has_model_fallback = bool(self.fallback) and self.fallback != OFFLINE
        return self.max_silence / 2 if has_model_fallback else self.max_silence


def plan_for(live: LiveCall, agent: str) -> OutagePlan:
    """The plan for `agent`'s next model call. Call before starting the model activity."""
    scenario = live.snapshot.scenario
    brief = live.snapshot.agents.get(agent)
    honest = workflow.patched(HONEST_APOLOGY)
    bounded = workflow.patched(SILENCE_BOUND)
    with_fallback = workflow.patched(MODEL_FALLBACK)
    fallback = (brief.config.model.fallback if brief else None) or scenario.model_fallback
    return OutagePlan(
        honest=honest,
        max_silence=scenario.max_silence_seconds if bounded else None,
        filler_after=scenario.filler_after_seconds if bounded else None,
        fallback=(fallback or "") if with_fallback else "",
    )


def filler_before(error: ActivityError) -> str:
    """The filler the LLM worker said before its model failed ("" if none): it sends it as
    the failure's detail (activities.agent_reply)."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.details:
        detail = cause.details[0]
        return detail if isinstance(detail, str) else ""
    return ""


def record_fallback(live: LiveCall, agent: str, fallback: str, reason: str) -> ModelFallbackItem:
    item = ModelFallbackItem(
        at=workflow.now(), turn=live.state.turn, agent=agent, fallback=fallback, reason=reason
    )
    live.state.transcript.append(item)
    return item


def record_filler(live: LiveCall, agent: str, waiting_for: str, text: str = FILLER) -> None:
    live.state.transcript.append(
        FillerItem(
            at=workflow.now(),
            turn=live.state.turn,
            agent=agent,
            text=text,
            waiting_for=waiting_for,
        )
    )


async def with_filler(live: LiveCall, speaker: Speaker, work: Awaitable[T], waiting_for: str) -> T:
    """Await `work` (a tool round, a transcription); on a voice call still waiting after the
    scenario's filler threshold, the caller hears a filler meanwhile."""
    if not live.has_voice or live.state.snapshot is None or not workflow.patched(SLOW_WORK_FILLER):
        return await work
    task = asyncio.ensure_future(work)
    wait = timedelta(seconds=live.snapshot.scenario.filler_after_seconds)
    try:
        await workflow.wait_condition(task.done, timeout=wait)
    except TimeoutError:
        if not live.interrupted():
            agent = live.state.active_agent
            record_filler(live, agent, waiting_for)
            speech = speaker.start_speech(agent, FILLER)
            result = await task
            # Said, cut off by the caller or lost with the gateway, it is only a filler: its
            # outcome changes nothing.
            with contextlib.suppress(ActivityError):
                await speech
            return result
    return await task


async def hear(live: LiveCall, speaker: Speaker, segment_ref: str) -> tuple[str, bool]:
    """The caller's words in a recorded segment, in the active agent's language, and whether
    the recognizer worked (False: it failed, and the caller is told the trouble is ours)."""
    honest = workflow.patched(HONEST_APOLOGY)
    agent = live.state.active_agent
    brief = live.snapshot.agents.get(agent) if live.state.snapshot else None
    locale = brief.config.language if brief else "en-US"
    text = await with_filler(live, speaker, transcribe(live, segment_ref, locale), "speech")
    return (text or ""), (text is not None or not honest)
