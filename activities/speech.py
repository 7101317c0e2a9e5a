"""Speech activities (speech queue): speak a reply to the caller, transcribe a caller segment.

Audio travels over the gateway's gRPC media plane, never through Temporal: `synthesize_speech`
streams the synthesizer's audio to the gateway holding the call as it is produced (sentence by
sentence, so the caller hears the first words before the last are synthesized) and returns what
the caller actually heard. It heartbeats while the reply plays, so a barge-in's cancellation
reaches it within a heartbeat and cancelling the RPC stops playback on the gateway.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator

import grpc
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeats import with_heartbeats
from activities.media_channels import MediaChannels, media_error
from activities.provider_errors import ProviderError, named, to_application_error
from activities.speech_providers.base import Recognition, SpeechRecognizer, SpeechSynthesizer
from activities.speech_providers.requested_fallbacks import RequestedFallbacks
from activities.speech_providers.voices import voice_for
from activities.word_reports import report_words
from contracts.proto import media_pb2
from contracts.proto.media_pb2_grpc import MediaPlaneStub
from contracts.speech import (
    REPLY_STARTED_METADATA,
    SYNTHESIZE_SPEECH,
    TRANSCRIBE_SEGMENT,
    SynthesisRequest,
    SynthesisResult,
    TranscriptionRequest,
    TranscriptionResult,
)
from runtime.baton_metrics import observe_stage

#: Well inside the workflow's two-second heartbeat timeout, even on a busy worker.
HEARTBEAT_SECONDS = 0.5
#: The error type Temporal records when a speech provider fails.
FAILURE_TYPE = "SpeechProvider"


class SpeechActivities:
    """The speech queue's activities, bound to this worker's providers."""

    def __init__(self, recognizer: SpeechRecognizer, synthesizer: SpeechSynthesizer) -> None:
        self.recognizer = recognizer
        self.synthesizer = synthesizer
        #: The same providers paired with the fallback a request names (speech_fallback).
        self.fallbacks = RequestedFallbacks(recognizer, synthesizer)
        self.channels = MediaChannels()

    @activity.defn(name=SYNTHESIZE_SPEECH)
    async def synthesize_speech(self, request: SynthesisRequest) -> SynthesisResult:
        """Play `text` (or the followed reply) to the caller; returns how much was heard."""
        stub = self.channels.stub(request.gateway_address)
        if not request.follow_reply_id:
            return await self._play(stub, request, _just(request.text))
        began = activity.info().scheduled_time.timestamp()  # the first attempt's, on retries too
        following = stub.FollowReplyText(
            media_pb2.FollowRequest(call_id=request.call_id, reply_id=request.follow_reply_id),
            metadata=((REPLY_STARTED_METADATA, f"{began:.3f}"),),
        )
        pieces = _pieces(following)
        try:
            # Nothing to say until the model writes something; it may only call tools.
            first = await with_heartbeats(anext(pieces, ""), every=HEARTBEAT_SECONDS)
            if not first:
                return SynthesisResult(chars_played=0, played_ms=0, completed=True)
            return await self._play(stub, request, _prepend(first, pieces))
        except grpc.aio.AioRpcError as error:
            raise media_error(error, f"following reply of call {request.call_id}") from error
        finally:
            following.cancel()

    async def _play(
        self,
        stub: MediaPlaneStub,
        request: SynthesisRequest,
        pieces: AsyncIterable[str],
    ) -> SynthesisResult:
        """Synthesize the pieces one after another into one reply played at the gateway."""
        info = activity.info()
        synthesizer = self.fallbacks.synthesizer(request.fallback_provider)
        failure: list[ProviderError] = []
        spoken = ""

        async def audio() -> AsyncIterator[media_pb2.ReplyAudio]:
            nonlocal spoken
            try:
                async for piece in pieces:
                    # The stream's first message names the reply; each later piece's first
                    # message adds its text, so the gateway always knows what it is playing.
                    head: media_pb2.ReplyAudio | None = (
                        media_pb2.ReplyAudio(text_more=piece)
                        if spoken
                        else media_pb2.ReplyAudio(
                            call_id=request.call_id,
                            reply_id=f"{info.workflow_id}/{info.activity_id}",
                            agent=request.agent,
                            text=piece,
                        )
                    )
                    base = len(spoken)
                    spoken += piece
                    asked = time.monotonic()
                    stream = synthesizer.synthesize(
                        piece, voice=voice_for(request.voice, request.locale), rate=request.rate
                    )
                    async for chunk in stream:
                        if not base and head is not None:  # the reply's first audio
                            observe_stage("tts_first_byte", time.monotonic() - asked)
                        message = media_pb2.ReplyAudio(
                            pcm16_16k=chunk.pcm16_16k, text_end=base + chunk.text_end
                        )
                        if head is not None:
                            message.MergeFrom(head)
                            head = None
                        yield message
                    if head is not None:  # nothing to hear in this piece (a line break)
                        head.text_end = len(spoken)
                        yield head
            except ProviderError as error:  # reported once the RPC ends; the audio just stops
                failure.append(named(error, synthesizer.name))

        call = stub.PlayReply(audio())
        try:
            outcome = await with_heartbeats(call, every=HEARTBEAT_SECONDS)
        except grpc.aio.AioRpcError as error:
            raise media_error(error, f"speaking to call {request.call_id}") from error
        except asyncio.CancelledError:
            call.cancel()  # stops playback on the gateway at once
            raise
        if failure and not outcome.barged_in:
            raise to_application_error(
                failure[0],
                failure_type=FAILURE_TYPE,
                context=f"synthesizing for call {request.call_id}",
            )
        return SynthesisResult(
            chars_played=outcome.chars_played,
            played_ms=outcome.played_ms,
            completed=outcome.completed,
            barged_in=outcome.barged_in,
            spoken_text=spoken if request.follow_reply_id else "",
        )

    @activity.defn(name=TRANSCRIBE_SEGMENT)
    async def transcribe_segment(self, request: TranscriptionRequest) -> TranscriptionResult:
        """Fetch a caller segment from the gateway and recognize it.

        A provisional segment is recognized as soon as it arrives, while the gateway is still
        making sure the caller has finished; if the final audio is unchanged, that result
        stands and the endpointer's wait cost nothing. Heartbeats show the worker is alive, so
        a killed one is replaced within the heartbeat timeout.
        """
        return await with_heartbeats(self._transcribe(request), every=HEARTBEAT_SECONDS)

    async def _transcribe(self, request: TranscriptionRequest) -> TranscriptionResult:
        stub = self.channels.stub(request.gateway_address)
        where = f"segment {request.segment_ref}"
        early: asyncio.Task[Recognition] | None = None
        try:
            async for part in stub.FetchSegment(
                media_pb2.SegmentRequest(call_id=request.call_id, segment_ref=request.segment_ref),
                timeout=60,
            ):
                if not part.final:  # provisional audio, or a later pause's revision of it
                    if early is not None:
                        early.cancel()
                    early = asyncio.ensure_future(self._recognize_early(stub, part, request, where))
                    continue
                final_at = time.monotonic()  # the caller has finished: recognition is waited on
                if part.unchanged and early is not None:
                    result = await early
                else:
                    if early is not None:
                        early.cancel()
                    result = await self._recognize(part.pcm16_16k, request, where)
                observe_stage("stt", time.monotonic() - final_at)
                activity.logger.info(  # the words are the caller's: their length only
                    "%s recognized by %s (%d ms, early: %s): %d characters",
                    where,
                    self.fallbacks.recognizer(request.fallback_provider).name,
                    part.duration_ms,
                    part.unchanged,
                    len(result.text),
                )
                # Said over a paused reply: the gateway's answer says if it was resumed (and
                # decides now, on the final words, if the provisional ones were not enough).
                held = request.backchannels is not None
                resumed = held and await report_words(stub, request, result.text, final=True)
                return TranscriptionResult(
                    text=result.text, confidence=result.confidence, backchannel=resumed
                )
        except grpc.aio.AioRpcError as error:
            raise media_error(error, f"fetching {where}") from error
        finally:
            if early is not None and not early.done():
                early.cancel()
        raise ApplicationError(f"{where}: the gateway sent no final audio", type="MediaPlane")

    async def _recognize_early(
        self,
        stub: MediaPlaneStub,
        part: media_pb2.SegmentAudio,
        request: TranscriptionRequest,
        where: str,
    ) -> Recognition:
        """Recognize the provisional audio and tell the gateway what the words mean while it
        is still waiting: its endpointer and a reply paused under them go by them."""
        result = await self._recognize(part.pcm16_16k, request, where)
        await report_words(stub, request, result.text, final=False, revision=part.revision)
        return result

    async def _recognize(
        self, pcm16_16k: bytes, request: TranscriptionRequest, where: str
    ) -> Recognition:
        recognizer = self.fallbacks.recognizer(request.fallback_provider)
        try:
            return await recognizer.recognize(
                pcm16_16k, locale=request.locale, expected=request.backchannels or ()
            )
        except ProviderError as error:
            raise to_application_error(
                named(error, recognizer.name),
                failure_type=FAILURE_TYPE,
                context=f"recognizing {where}",
            ) from error


async def _pieces(
    following: AsyncIterable[media_pb2.ReplyText],
) -> AsyncIterator[str]:
    async for message in following:
        if message.end:
            return
        yield message.piece


async def _just(text: str) -> AsyncIterator[str]:
    yield text


async def _prepend(first: str, rest: AsyncIterator[str]) -> AsyncIterator[str]:
    yield first
    async for piece in rest:
        yield piece
