"""Speech activities (speech queue): speak a reply to the caller, transcribe a caller segment.

Audio travels over the gateway's gRPC media plane, never through Temporal: `synthesize_speech`
streams the synthesizer's audio to the gateway holding the call as it is produced (sentence by
sentence, so the caller hears the first words before the last are synthesized) and returns what
the caller actually heard. It heartbeats while the reply plays, so a barge-in's cancellation
reaches it within a heartbeat and cancelling the RPC stops playback on the gateway.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.payloads import (
    SYNTHESIZE_SPEECH,
    TRANSCRIBE_SEGMENT,
    SynthesisRequest,
    SynthesisResult,
    TranscriptionRequest,
    TranscriptionResult,
)
from activities.speech_providers.base import (
    Recognition,
    SpeechError,
    SpeechRecognizer,
    SpeechSynthesizer,
)
from media_gateway.proto import media_pb2, media_pb2_grpc

HEARTBEAT_SECONDS = 1.0
#: Statuses that mean the gateway may answer on a later attempt.
_RETRYABLE = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.INTERNAL}
)


class MediaChannels:
    """One gRPC channel per gateway address, shared by every call on that gateway."""

    def __init__(self) -> None:
        self._channels: dict[str, grpc.aio.Channel] = {}

    def stub(self, address: str) -> media_pb2_grpc.MediaPlaneStub:
        channel = self._channels.get(address)
        if channel is None:
            channel = grpc.aio.insecure_channel(address)
            self._channels[address] = channel
        return media_pb2_grpc.MediaPlaneStub(channel)  # type: ignore[no-untyped-call]

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close()


def _media_error(error: grpc.aio.AioRpcError, what: str) -> ApplicationError:
    code = error.code()
    return ApplicationError(
        f"{what}: gateway answered {code.name}: {error.details()}",
        type="MediaPlane" + code.name.title().replace("_", ""),
        non_retryable=code not in _RETRYABLE,
    )


def _speech_error(error: SpeechError, what: str) -> ApplicationError:
    return ApplicationError(
        f"{what}: {error}", type="SpeechProvider", non_retryable=not error.retryable
    )


class SpeechActivities:
    """The speech queue's activities, bound to this worker's providers."""

    def __init__(self, recognizer: SpeechRecognizer, synthesizer: SpeechSynthesizer) -> None:
        self.recognizer = recognizer
        self.synthesizer = synthesizer
        self.channels = MediaChannels()

    @activity.defn(name=SYNTHESIZE_SPEECH)
    async def synthesize_speech(self, request: SynthesisRequest) -> SynthesisResult:
        """Play `text` to the caller; returns how much of it was heard."""
        info = activity.info()
        stub = self.channels.stub(request.gateway_address)
        failure: list[SpeechError] = []

        async def audio() -> AsyncIterator[media_pb2.ReplyAudio]:
            first = True
            try:
                stream = self.synthesizer.synthesize(
                    request.text, voice=request.voice, rate=request.rate
                )
                async for chunk in stream:
                    header = {
                        "call_id": request.call_id,
                        "reply_id": f"{info.workflow_id}/{info.activity_id}",
                        "text": request.text,
                        "agent": request.agent,
                    }
                    yield media_pb2.ReplyAudio(
                        pcm16_16k=chunk.pcm16_16k,
                        text_end=chunk.text_end,
                        **(header if first else {}),
                    )
                    first = False
            except SpeechError as error:
                failure.append(error)  # reported once the RPC ends; the audio stream just stops

        call = stub.PlayReply(audio())
        try:
            outcome = await _heartbeating(call)
        except grpc.aio.AioRpcError as error:
            raise _media_error(error, f"speaking to call {request.call_id}") from error
        except asyncio.CancelledError:
            call.cancel()  # stops playback on the gateway at once
            raise
        if failure and not outcome.barged_in:
            raise _speech_error(failure[0], f"synthesizing for call {request.call_id}")
        return SynthesisResult(
            chars_played=outcome.chars_played,
            played_ms=outcome.played_ms,
            completed=outcome.completed,
            barged_in=outcome.barged_in,
        )

    @activity.defn(name=TRANSCRIBE_SEGMENT)
    async def transcribe_segment(self, request: TranscriptionRequest) -> TranscriptionResult:
        """Fetch a caller segment from the gateway and recognize it.

        A provisional segment is recognized as soon as it arrives, while the gateway is still
        making sure the caller has finished; if the final audio is unchanged, that result
        stands and the endpointer's wait cost nothing.
        """
        stub = self.channels.stub(request.gateway_address)
        where = f"segment {request.segment_ref}"
        early: asyncio.Task[Recognition] | None = None
        try:
            async for part in stub.FetchSegment(
                media_pb2.SegmentRequest(call_id=request.call_id, segment_ref=request.segment_ref),
                timeout=60,
            ):
                if not part.final:
                    early = asyncio.ensure_future(self._recognize(part.pcm16_16k, request, where))
                    continue
                if part.unchanged and early is not None:
                    result = await early
                else:
                    if early is not None:
                        early.cancel()
                    result = await self._recognize(part.pcm16_16k, request, where)
                activity.logger.info(
                    "%s recognized by %s (%d ms, early: %s): %r",
                    where,
                    self.recognizer.name,
                    part.duration_ms,
                    part.unchanged,
                    result.text,
                )
                return TranscriptionResult(text=result.text, confidence=result.confidence)
        except grpc.aio.AioRpcError as error:
            raise _media_error(error, f"fetching {where}") from error
        finally:
            if early is not None and not early.done():
                early.cancel()
        raise ApplicationError(f"{where}: the gateway sent no final audio", type="MediaPlane")

    async def _recognize(
        self, pcm16_16k: bytes, request: TranscriptionRequest, where: str
    ) -> Recognition:
        try:
            return await self.recognizer.recognize(pcm16_16k, locale=request.locale)
        except SpeechError as error:
            raise _speech_error(error, f"recognizing {where}") from error


async def _heartbeating(
    call: grpc.aio.StreamUnaryCall[media_pb2.ReplyAudio, media_pb2.PlaybackOutcome],
) -> media_pb2.PlaybackOutcome:
    """Await the RPC, heartbeating so the activity's cancellation is delivered promptly."""
    waiter = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait({waiter}, timeout=HEARTBEAT_SECONDS)
            if done:
                return waiter.result()
            activity.heartbeat()
    finally:
        waiter.cancel()
