"""Hearing the caller inside the workflow: a recorded segment becomes text (speech queue)."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.speech import TRANSCRIBE_SEGMENT, TranscriptionRequest, TranscriptionResult
    from contracts.temporal import SPEECH_QUEUE
    from workflows import policies, summaries
    from workflows.failures import went_unserved
    from workflows.live_call import LiveCall


async def transcribe(live: LiveCall, segment_ref: str, locale: str = "en-US") -> str | None:
    """Text of a recorded caller segment ("" when nothing was understood); None when the
    recognizer failed (the turn apologizes either way, for different reasons)."""
    call = live.state.call
    request = TranscriptionRequest(
        call_id=call.call_id,
        segment_ref=segment_ref,
        gateway_address=call.gateway_address or "",
        locale=locale,
        fallback_provider=live.speech_fallback(live.state.active_agent).recognizer or "",
    )
    result = await recognize(live, request)
    return None if result is None else result.text.strip()


async def recognize(live: LiveCall, request: TranscriptionRequest) -> TranscriptionResult | None:
    """The speech worker's answer for one segment; None when it failed (logged without the
    words, and the speech queue marked unserved when no worker took it)."""
    try:
        result: TranscriptionResult = await workflow.execute_activity(
            TRANSCRIBE_SEGMENT,
            request,
            result_type=TranscriptionResult,
            task_queue=SPEECH_QUEUE,
            start_to_close_timeout=policies.STT.start_to_close,
            heartbeat_timeout=policies.STT.heartbeat,
            schedule_to_start_timeout=policies.STT.schedule_to_start,
            retry_policy=policies.STT.retry,
            summary=summaries.STT,
        )
    except ActivityError as error:
        if went_unserved(error):
            live.unserved = "speech"
        workflow.logger.warning("segment %s not transcribed: %s", request.segment_ref, error.cause)
        return None
    return result
