"""Offline text-to-speech: espeak-ng (shipped by the ``espeakng-loader`` wheel) through ctypes.

No network and no key. espeak-ng is a process-global C library with one voice, one set of
parameters and one callback, so every use goes through `_ENGINE_LOCK`. Synthesis is blocking C
code, so it runs in a worker thread and hands chunks to the event loop as it produces them; the
lock is taken per sentence, so concurrent calls interleave instead of queueing whole replies.

espeak-ng speaks at 22 050 Hz; each sentence is resampled to 16 kHz by its own soxr stream
(`runtime.resampling`), flushed at the sentence's end.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import re
import threading
import zlib
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

import espeakng_loader  # type: ignore[import-untyped]
import structlog

from activities.provider_errors import ProviderError
from activities.speech_providers.base import SAMPLE_RATE, SpeechChunk
from runtime.resampling import StreamResampler

__all__ = ["EspeakSynthesizer", "espeak_voice", "espeak_wpm", "sentences"]

_log = structlog.get_logger(__name__)

ESPEAK_RATE = 22050
DEFAULT_VOICE = "en-us"
#: espeak-ng's own default; Azure's "+0%" maps here.
BASE_WPM = 175
MIN_WPM, MAX_WPM = 80, 450
#: espeak's callback granularity, and the size the stream aims for per chunk.
CHUNK_MS = 100

# espeak-ng constants (speak_lib.h).
_AUDIO_OUTPUT_SYNCHRONOUS = 2
_INITIALIZE_DONT_EXIT = 0x8000  # a bad data path must raise here, not exit() the worker
_POS_CHARACTER = 1
_CHARS_UTF8 = 1
_PARAM_RATE = 1
_EV_LIST_TERMINATED, _EV_WORD, _EV_END = 0, 1, 5

# Azure neural voice names carry no gender; these are the ones Baton's agents use or commonly
# would. Unknown names still work: they simply get the default (male) espeak voice.
_FEMALE = frozenset({"jenny", "aria", "sara", "ava", "emma", "michelle", "nancy", "sonia", "libby"})
_MALE = frozenset({"guy", "davis", "tony", "brian", "andrew", "jason", "eric", "ryan", "thomas"})
# Variants by measured intelligibility (benchmarks/bench_speech_accuracy.py: recognizer WER on
# each); several per gender so agents sound distinct across an announced handoff. f1 is left
# out: both recognizers did clearly worse on it.
_FEMALE_VARIANTS = ("f2", "f3")
_MALE_VARIANTS = ("", "m1", "m3")
_AZURE_NAME = re.compile(r"([a-z]{2,3})-([A-Za-z]{2,4})-([A-Za-z]+?)(?:Multilingual)?Neural\w*")
_NAMED_RATES = {"x-slow": -50, "slow": -36, "medium": 0, "default": 0, "fast": 55, "x-fast": 100}


def espeak_wpm(rate: str) -> int:
    """espeak words per minute for an SSML/Azure rate: '+10%', '-20%', '1.2' or 'fast'."""
    value = rate.strip().lower()
    percent: float | None = _NAMED_RATES.get(value)
    if percent is None and (match := re.fullmatch(r"([+-]?\d+(?:\.\d+)?)%", value)):
        percent = float(match.group(1))
    elif percent is None and re.fullmatch(r"\d+(?:\.\d+)?", value):
        percent = (float(value) - 1) * 100  # Azure's bare multiplier form
    if percent is None:
        if value:
            _log.warning("offline_tts.unknown_rate", rate=rate)
        percent = 0.0
    return max(MIN_WPM, min(MAX_WPM, round(BASE_WPM * (1 + percent / 100))))


def espeak_voice(voice: str) -> list[str]:
    """espeak voice names to try, best first, for an agent's voice name (Azure-style or raw)."""
    match = _AZURE_NAME.fullmatch(voice.strip())
    if not match:
        return [voice.strip().lower(), DEFAULT_VOICE] if voice.strip() else [DEFAULT_VOICE]
    lang, region, speaker = match.group(1), match.group(2).lower(), match.group(3).lower()
    variants: tuple[str, ...]
    if speaker in _FEMALE:
        variants = _FEMALE_VARIANTS
    elif speaker in _MALE:
        variants = _MALE_VARIANTS
    else:
        variants = ("",)
    # Stable across processes (unlike hash()), so an agent keeps its voice between calls.
    variant = variants[zlib.crc32(speaker.encode()) % len(variants)]
    suffix = f"+{variant}" if variant else ""
    return [f"{lang}-{region}{suffix}", f"{lang}{suffix}", DEFAULT_VOICE]


_ABBREVIATION = re.compile(r"\b(?:mr|mrs|ms|dr|st|vs|etc|e\.g|i\.e|no)\.$", re.IGNORECASE)


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) spans covering `text`; each end includes the whitespace that follows."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in re.finditer(r"[.!?…]+[\"')\]]*\s+|\n\s*", text):
        if _ABBREVIATION.search(text[start : match.start() + 1]):
            continue
        if text[start : match.end()].strip():
            spans.append((start, match.end()))
            start = match.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    elif spans:
        spans[-1] = (spans[-1][0], len(text))
    return spans


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),
    ]


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)


@dataclass
class _Job:
    """One sentence being synthesized: where its chunks go and whether to stop early."""

    emit: Callable[[bytes, int], None]
    offset: int
    length: int
    native: bool  # keep espeak's 22 050 Hz (the benchmark compares the two)
    stop: threading.Event = field(default_factory=threading.Event)
    resampler: StreamResampler = field(
        default_factory=lambda: StreamResampler(ESPEAK_RATE, SAMPLE_RATE)
    )
    pending: bytearray = field(default_factory=bytearray)
    # A full chunk is held back one espeak buffer (well under a millisecond of compute) so the
    # filter's short tail joins the last chunk instead of trailing as a sliver of audio.
    held: bytes | None = None
    held_end: int = 0
    samples: int = 0  # 22 050 Hz samples produced so far
    text_end: int = 0  # within the sentence: text whose audio has been fully produced

    def deliver(self, pcm: bytes, *, final: bool) -> None:
        self.pending += pcm if self.native else self.resampler.process(pcm, last=final)
        if final:
            self.emit((self.held or b"") + bytes(self.pending), self.offset + self.length)
            return
        rate = ESPEAK_RATE if self.native else SAMPLE_RATE
        if len(self.pending) >= rate * 2 * CHUNK_MS * 9 // 10_000:
            if self.held is not None:
                self.emit(self.held, self.offset + self.held_end)
            self.held, self.held_end = bytes(self.pending), self.text_end
            self.pending.clear()


_ENGINE_LOCK = threading.Lock()
_engine: ctypes.CDLL | None = None
_current: _Job | None = None
_warned: set[str] = set()


def _on_audio(wav: ctypes.Array[ctypes.c_short], count: int, events: ctypes.Array[_Event]) -> int:
    job = _current
    if job is None or job.stop.is_set():
        return 1  # non-zero tells espeak to abandon the sentence
    chunk_end = job.samples + max(count, 0)
    index = 0
    while events[index].type != _EV_LIST_TERMINATED:
        event = events[index]
        index += 1
        # A word is heard once the next word (or the clause end) starts: credit the text
        # before that point, never the word still being spoken.
        if event.type in (_EV_WORD, _EV_END) and event.audio_position * ESPEAK_RATE <= (
            chunk_end * 1000
        ):
            job.text_end = max(job.text_end, min(job.length, event.text_position - 1))
    if count > 0:
        job.deliver(ctypes.string_at(wav, count * 2), final=False)
        job.samples = chunk_end
    return 0


_on_audio_c = _CALLBACK(_on_audio)  # module-level so ctypes never frees it


def _load_engine() -> ctypes.CDLL:
    """Initialise espeak-ng once per process; caller holds `_ENGINE_LOCK`."""
    global _engine
    if _engine is None:
        try:
            lib = ctypes.CDLL(espeakng_loader.get_library_path())
        except OSError as exc:
            raise ProviderError(f"espeak-ng library unavailable: {exc}", retryable=False) from exc
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p,
            ctypes.c_size_t,
            ctypes.c_uint,
            ctypes.c_int,
            ctypes.c_uint,
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.c_void_p,
        ]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        data = espeakng_loader.get_data_path().encode()
        rate = lib.espeak_Initialize(
            _AUDIO_OUTPUT_SYNCHRONOUS, CHUNK_MS, data, _INITIALIZE_DONT_EXIT
        )
        if rate != ESPEAK_RATE:
            raise ProviderError(f"espeak-ng failed to start (returned {rate})", retryable=False)
        lib.espeak_SetSynthCallback(_on_audio_c)
        _engine = lib
    return _engine


def _set_voice(lib: ctypes.CDLL, candidates: list[str]) -> str:
    for name in candidates:
        if lib.espeak_SetVoiceByName(name.encode()) == 0:
            return name
    raise ProviderError(f"no espeak-ng voice among {candidates}", retryable=False)


def _synthesize_sentence(job: _Job, text: str, voices: list[str], wpm: int) -> None:
    """Blocking: speak one sentence, delivering chunks through `job.emit` (worker thread)."""
    global _current
    with _ENGINE_LOCK:
        lib = _load_engine()
        used = _set_voice(lib, voices)
        if used != voices[0] and voices[0] not in _warned:
            _warned.add(voices[0])  # once per process, not once per sentence
            _log.warning("offline_tts.voice_fallback", wanted=voices[0], using=used)
        lib.espeak_SetParameter(_PARAM_RATE, wpm, 0)
        data = text.encode()
        _current = job
        try:
            status = lib.espeak_Synth(
                data, len(data) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
        finally:
            _current = None
    if status != 0 and not job.stop.is_set():
        raise ProviderError(f"espeak-ng synthesis failed (status {status})", retryable=True)
    if not job.stop.is_set():
        job.deliver(b"", final=True)


def _finished(queue: asyncio.Queue[tuple[bytes, int] | None], worker: asyncio.Future[None]) -> None:
    queue.put_nowait(None)
    if not worker.cancelled():
        # Marks a failure as seen even when the listener already left; `await` still raises it.
        worker.exception()


class EspeakSynthesizer:
    """`SpeechSynthesizer` speaking through the embedded espeak-ng; one per process suffices."""

    name = "offline-espeak-ng"

    def __init__(self, *, native_rate: bool = False) -> None:
        #: True yields espeak's own 22 050 Hz instead of 16 kHz (benchmark comparisons only).
        self.native_rate = native_rate

    async def synthesize(
        self, text: str, *, voice: str = "", rate: str = "+0%"
    ) -> AsyncGenerator[SpeechChunk, None]:
        voices, wpm = espeak_voice(voice), espeak_wpm(rate)
        loop = asyncio.get_running_loop()
        reached = 0
        for start, end in sentences(text):
            queue: asyncio.Queue[tuple[bytes, int] | None] = asyncio.Queue()

            def emit(
                pcm: bytes, text_end: int, queue: asyncio.Queue[tuple[bytes, int] | None] = queue
            ) -> None:
                loop.call_soon_threadsafe(queue.put_nowait, (pcm, text_end))

            job = _Job(emit, start, end - start, self.native_rate)
            worker = asyncio.ensure_future(
                asyncio.to_thread(_synthesize_sentence, job, text[start:end], voices, wpm)
            )
            worker.add_done_callback(functools.partial(_finished, queue))
            try:
                while (item := await queue.get()) is not None:
                    reached = max(reached, item[1])
                    yield SpeechChunk(item[0], reached)
                await worker  # re-raises a ProviderError from the thread
            finally:
                # Caller stopped listening (barge-in) or was cancelled: abandon the sentence;
                # the callback sees this within one chunk and the thread exits on its own.
                job.stop.set()
        if reached < len(text) and text.strip():
            yield SpeechChunk(b"", len(text))
