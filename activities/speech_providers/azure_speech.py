"""Azure AI Speech (the `azure.cognitiveservices.speech` SDK) behind the speech protocols.

The SDK reports through callbacks on its own threads. Callbacks here only copy plain values
out and hand them to the event loop (`call_soon_threadsafe`); SDK objects are built, stopped
and destroyed on worker threads, so the event loop never waits on the SDK.

* `AzureRecognizer` pushes the finished segment (16 kHz, 16-bit mono) and runs continuous
  recognition until the service ends the turn, so every phrase of the segment counts; the
  confidence is the mean of the phrases' detailed-format confidences.
* `AzureSynthesizer` asks for `Raw16Khz16BitMonoPcm` and yields audio from the `synthesizing`
  event as it arrives. A chunk's `text_end` is the end of the last word (from the word
  boundary events) whose audio has fully played with that chunk; a final, possibly empty,
  chunk reaches `len(text)`. A rate other than `+0%` goes as SSML prosody.

Cancellations map to `ProviderError`: a bad key, forbidden or bad request never retries;
connection failures, timeouts, throttling and service errors do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any
from xml.sax.saxutils import quoteattr

import azure.cognitiveservices.speech as speechsdk  # type: ignore[import-untyped]

from activities.provider_errors import ProviderError
from activities.speech_providers.base import SAMPLE_RATE, Recognition, SpeechChunk

DEFAULT_VOICE = "en-US-AvaMultilingualNeural"
DEFAULT_TIMEOUT_SECONDS = 30.0
#: 100-nanosecond ticks (the SDK's audio clock) per byte of 16 kHz PCM16.
TICKS_PER_BYTE = 10_000_000 / (SAMPLE_RATE * 2)
#: `CancellationErrorCode`s a later attempt can get past; the rest (AuthenticationFailure,
#: Forbidden, BadRequest, RuntimeError, ...) fail the same way every time.
RETRYABLE_CODES = frozenset({
    "ConnectionFailure", "ServiceTimeout", "ServiceUnavailable", "TooManyRequests",
    "ServiceError", "ServiceRedirectTemporary",
})  # fmt: skip
#: The SDK raises a word's boundary event just before or just after the audio that speaks it
#: (its threads race), so audio waits this long for late boundaries before it is handed out.
BOUNDARY_GRACE_SECONDS = 0.03
#: How long a call waits for the SDK to stop and let go of a session (see `_release_soon`).
RELEASE_WAIT_SECONDS = 1.0
_RATE = re.compile(r"^[+-]?\d{1,3}%$")
_XML_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}


@dataclass(frozen=True)
class AzureSpeechSettings:
    """Where and how to reach the service: a key plus an endpoint, a host or a region.

    `endpoint` is a full URL (wss://... for one role, as the SDK takes it); `host` is scheme,
    host and port only, and the SDK adds the role's path. The first one set wins.
    """

    key: str
    region: str | None = None
    endpoint: str | None = None
    host: str | None = None

    def speech_config(self) -> Any:
        """A fresh `SpeechConfig` (each call configures its own language, voice and format)."""
        if self.endpoint:
            return speechsdk.SpeechConfig(subscription=self.key, endpoint=self.endpoint)
        if self.host:
            return speechsdk.SpeechConfig(subscription=self.key, host=self.host)
        if self.region:
            return speechsdk.SpeechConfig(subscription=self.key, region=self.region)
        raise ProviderError("Azure Speech needs a region, an endpoint or a host", retryable=False)


def is_retryable_code(error_code: Any) -> bool:
    """Whether a `CancellationErrorCode` (enum or its name) is worth another attempt."""
    return str(getattr(error_code, "name", error_code)) in RETRYABLE_CODES


def cancellation_error(details: Any, *, what: str) -> ProviderError | None:
    """A `ProviderError` for a cancellation's details, or None when it is not an error."""
    if details.reason != speechsdk.CancellationReason.Error:
        return None  # EndOfStream (the pushed audio ran out) or CancelledByUser
    # Recognition details name it `code`, synthesis details `error_code`.
    code = details.error_code if hasattr(details, "error_code") else details.code
    name = str(getattr(code, "name", code))
    detail = str(details.error_details or "").strip() or "no details"
    return ProviderError(
        f"Azure Speech {what} failed ({name}): {detail}", retryable=is_retryable_code(code)
    )


def _poster(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Any]) -> Callable[[Any], None]:
    """A thread-safe `put` for SDK callbacks; once the loop has closed nobody listens."""

    def post(item: Any) -> None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, item)

    return post


async def _next(queue: asyncio.Queue[Any], timeout: float, what: str, quiet: bool = False) -> Any:
    """The next SDK event; after `timeout` seconds None if `quiet`, else a retryable error."""
    try:
        return await asyncio.wait_for(queue.get(), timeout)
    except TimeoutError:
        if quiet:
            return None
        message = f"Azure Speech {what} timed out after {timeout:g}s"
        raise ProviderError(message, retryable=True) from None


def _phrase(result: Any) -> tuple[str, float] | None:
    """Text and confidence of a recognized phrase (None for silence or noise)."""
    if result.reason != speechsdk.ResultReason.RecognizedSpeech:
        return None
    confidence = 0.0
    raw = result.properties.get(speechsdk.PropertyId.SpeechServiceResponse_JsonResult, "")
    try:
        best = json.loads(raw)["NBest"][0]
        confidence = min(1.0, max(0.0, float(best["Confidence"])))
    except (ValueError, KeyError, IndexError, TypeError):
        pass  # the simple format has no NBest; report no confidence rather than invent one
    return str(result.text), confidence


class _AzureSpeech:
    name = "azure"

    def __init__(
        self, settings: AzureSpeechSettings, *, timeout: float = DEFAULT_TIMEOUT_SECONDS
    ) -> None:
        """`timeout` bounds the wait for each service event (seconds)."""
        self.settings = settings
        self.timeout = timeout


class AzureRecognizer(_AzureSpeech):
    """Speech to text with Azure Speech continuous recognition over one pushed segment."""

    async def recognize(
        self, pcm16_16k: bytes, *, locale: str = "en-US", expected: Sequence[str] = ()
    ) -> Recognition:
        if len(pcm16_16k) < 2:
            return Recognition(text="", confidence=0.0)
        queue: asyncio.Queue[Any] = asyncio.Queue()
        post = _poster(asyncio.get_running_loop(), queue)
        sdk: dict[str, Any] = {}
        phrases: list[tuple[str, float]] = []
        try:
            await asyncio.to_thread(self._start, sdk, post, pcm16_16k, locale, expected)
            while True:
                kind, payload = await _next(queue, self.timeout, "recognition")
                if kind == "phrase" and payload is not None and payload[0].strip():
                    phrases.append(payload)
                elif kind == "end":
                    sdk.pop("stop", None)  # the session is over: nothing left to stop
                    if payload is not None:
                        raise payload
                    break
        finally:
            await _release_soon(sdk)
        if not phrases:
            return Recognition(text="", confidence=0.0)
        return Recognition(
            text=" ".join(text.strip() for text, _ in phrases),
            confidence=fmean(confidence for _, confidence in phrases),
        )

    def _start(
        self,
        sdk: dict[str, Any],
        post: Callable[[Any], None],
        pcm: bytes,
        locale: str,
        expected: Sequence[str],
    ) -> None:
        """Build the SDK objects into `sdk` and start recognizing (runs in a worker thread)."""
        config = self.settings.speech_config()
        config.speech_recognition_language = locale
        config.output_format = speechsdk.OutputFormat.Detailed  # for per-phrase confidence
        stream_format = speechsdk.audio.AudioStreamFormat(
            samples_per_second=SAMPLE_RATE, bits_per_sample=16, channels=1
        )
        stream = speechsdk.audio.PushAudioInputStream(stream_format)
        recognizer = speechsdk.SpeechRecognizer(
            speech_config=config, audio_config=speechsdk.audio.AudioConfig(stream=stream)
        )
        sdk["recognizer"] = recognizer
        if expected:  # the service's own biasing: a phrase list, sent with the audio's context
            phrase_list = speechsdk.PhraseListGrammar.from_recognizer(recognizer)
            for phrase in expected:
                phrase_list.addPhrase(phrase)
        sdk["signals"] = (recognizer.recognized, recognizer.canceled, recognizer.session_stopped)

        def on_canceled(evt: Any) -> None:
            post(("end", cancellation_error(evt.cancellation_details, what="recognition")))

        recognizer.recognized.connect(lambda evt: post(("phrase", _phrase(evt.result))))
        recognizer.canceled.connect(on_canceled)
        recognizer.session_stopped.connect(lambda evt: post(("end", None)))
        # The whole segment is known up front; closing the stream tells the service it ended.
        stream.write(pcm[: len(pcm) // 2 * 2])
        stream.close()
        recognizer.start_continuous_recognition_async().get()
        sdk["stop"] = recognizer.stop_continuous_recognition_async


async def _release_soon(sdk: dict[str, Any]) -> None:
    """Stop what runs, unhook callbacks and drop the SDK objects, off the event loop.

    Dropping the last reference to an SDK object runs its native destructor, and after a
    failure or an unanswered session stopping and destroying can take the SDK ten seconds or
    more. A daemon thread (not the loop's executor, whose shutdown would wait for it) lets
    that finish on its own; the caller waits for it only `RELEASE_WAIT_SECONDS`.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def release() -> None:
        # The call's outcome is already decided; a failure to clean up cannot change it.
        with contextlib.suppress(Exception):
            stop = sdk.pop("stop", None)
            if stop is not None:
                stop().get()
            for signal in sdk.get("signals", ()):
                signal.disconnect_all()  # late SDK callbacks must not reach a finished call
        sdk.clear()
        with contextlib.suppress(RuntimeError):  # the loop may be gone by now
            loop.call_soon_threadsafe(settle)

    def settle() -> None:
        if not done.done():  # the caller may have stopped waiting
            done.set_result(None)

    threading.Thread(target=release, name="azure-speech-release", daemon=True).start()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(done, RELEASE_WAIT_SECONDS)


class _Progress:
    """How far into the text the audio so far reaches, from word boundaries."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.played = self.reached = 0  # bytes of audio handed out; text offset reached
        #: (audio ticks at which the word has been spoken, text offset just past the word)
        self.words: list[tuple[float, int]] = []

    def chunk(self, pcm: bytes) -> SpeechChunk:  # text_end counts only words fully heard
        self.played += len(pcm)
        heard = self.played * TICKS_PER_BYTE
        done = [end for ticks, end in self.words if ticks <= heard]
        self.words = [(ticks, end) for ticks, end in self.words if ticks > heard]
        self.reached = min(self.length, max([self.reached, *done]))
        return SpeechChunk(pcm, self.reached)


class _TextMap:
    """Maps the SDK's word-boundary offsets (into the text or the SSML) back onto the text."""

    def __init__(self, text: str, ssml_prefix: str = "") -> None:
        self.text = text
        self.prefix_length = len(ssml_prefix)
        # Inside SSML the text is XML-escaped: raw_at[i] is the text offset of escaped
        # position i, with one extra entry for the end.
        pieces = [_XML_ENTITIES.get(char, char) if ssml_prefix else char for char in text]
        self.body = "".join(pieces)
        self.raw_at = [index for index, piece in enumerate(pieces) for _ in piece] + [len(text)]
        self._cursor = 0

    def word_end(self, text_offset: int, length: int, word: str) -> int | None:
        """The text offset just past this word, or None if it cannot be placed."""
        local = text_offset - self.prefix_length
        if text_offset >= 0 and local >= 0 and local + length < len(self.raw_at):
            end = self.raw_at[local + length]
        else:  # the SDK could not place the word (-1): find it after the last one
            found = self.text.find(word, self._cursor) if word else -1
            if found < 0:
                return None
            end = found + len(word)
        self._cursor = max(self._cursor, end)
        return end


def _ssml(text: str, voice: str, rate: str) -> tuple[str, _TextMap]:
    language = "-".join(voice.split("-")[:2]) if voice.count("-") >= 2 else "en-US"
    prefix = (
        "<speak version='1.0' xmlns='http://www.w3.org/2001/10/synthesis' "
        f"xml:lang={quoteattr(language)}><voice name={quoteattr(voice)}>"
        f"<prosody rate={quoteattr(rate)}>"
    )
    mapping = _TextMap(text, prefix)
    return f"{prefix}{mapping.body}</prosody></voice></speak>", mapping


class AzureSynthesizer(_AzureSpeech):
    """Text to speech with Azure Speech, streaming raw 16 kHz PCM as the service sends it."""

    def __init__(
        self,
        settings: AzureSpeechSettings,
        *,
        voice: str = DEFAULT_VOICE,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        """`voice` is used when `synthesize` is given none; `timeout` bounds each wait."""
        super().__init__(settings, timeout=timeout)
        self.voice = voice

    async def synthesize(
        self, text: str, *, voice: str = "", rate: str = "+0%"
    ) -> AsyncIterator[SpeechChunk]:
        rate = rate.strip() or "+0%"
        if not _RATE.match(rate):  # also keeps the SSML attribute well-formed
            raise ProviderError(f"rate must look like '+10%', got {rate!r}", retryable=False)
        if not text.strip():
            if text:
                yield SpeechChunk(b"", len(text))
            return
        voice = voice.strip() or self.voice
        ssml, mapping = (
            _ssml(text, voice, rate) if rate.lstrip("+-") != "0%" else ("", _TextMap(text))
        )
        queue: asyncio.Queue[Any] = asyncio.Queue()
        post = _poster(asyncio.get_running_loop(), queue)
        sdk: dict[str, Any] = {}
        progress = _Progress(len(text))
        held = b""  # audio waiting a moment for the word boundaries that describe it
        try:
            await asyncio.to_thread(
                self._start, sdk, post, mapping, voice, ssml or text, bool(ssml)
            )
            while True:
                wait = BOUNDARY_GRACE_SECONDS if held else self.timeout
                item = await _next(queue, wait, "synthesis", bool(held))
                if item is None:  # the grace is over: the held audio's boundaries are in
                    yield progress.chunk(held)
                    held = b""
                    continue
                kind, payload = item
                if kind == "boundary":
                    progress.words.append(payload)
                elif kind == "audio" and payload:
                    if held:
                        yield progress.chunk(held)
                    held = payload
                elif kind == "end":
                    sdk.pop("stop", None)  # the synthesis is over: nothing left to stop
                    if payload is not None:
                        raise payload
                    break
            if held:
                yield progress.chunk(held)
            if progress.reached < len(text):
                yield SpeechChunk(b"", len(text))
        finally:
            # Also after a barge-in (the consumer closed this generator): stop the service.
            await _release_soon(sdk)

    def _start(
        self,
        sdk: dict[str, Any],
        post: Callable[[Any], None],
        mapping: _TextMap,
        voice: str,
        content: str,
        is_ssml: bool,
    ) -> None:
        """Build the SDK objects into `sdk` and start synthesizing (runs in a worker thread)."""
        config = self.settings.speech_config()
        config.set_speech_synthesis_output_format(
            speechsdk.SpeechSynthesisOutputFormat.Raw16Khz16BitMonoPcm
        )
        config.speech_synthesis_voice_name = voice
        synthesizer = speechsdk.SpeechSynthesizer(speech_config=config, audio_config=None)
        sdk["synthesizer"] = synthesizer
        sdk["signals"] = (
            synthesizer.synthesizing,
            synthesizer.synthesis_word_boundary,
            synthesizer.synthesis_completed,
            synthesizer.synthesis_canceled,
        )

        def on_boundary(evt: Any) -> None:
            end = mapping.word_end(int(evt.text_offset), int(evt.word_length), str(evt.text))
            if end is not None:
                ticks = int(evt.audio_offset) + evt.duration.total_seconds() * 10_000_000
                post(("boundary", (ticks, end)))

        def on_canceled(evt: Any) -> None:
            error = cancellation_error(evt.result.cancellation_details, what="synthesis")
            cancelled = ProviderError("Azure Speech synthesis was cancelled", retryable=True)
            post(("end", error or cancelled))

        synthesizer.synthesizing.connect(lambda evt: post(("audio", bytes(evt.result.audio_data))))
        synthesizer.synthesis_word_boundary.connect(on_boundary)
        synthesizer.synthesis_completed.connect(lambda evt: post(("end", None)))
        synthesizer.synthesis_canceled.connect(on_canceled)
        speak = synthesizer.speak_ssml_async if is_ssml else synthesizer.speak_text_async
        # Kept so the SDK's request stays referenced until the stream is released.
        sdk["future"] = speak(content)
        sdk["stop"] = synthesizer.stop_speaking_async
