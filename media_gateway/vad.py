"""Offline voice-activity detection and endpointing for PCM16 mono 16 kHz.

:class:`FrameClassifier` decides speech / not speech per 20 ms frame from an energy gate over an
adaptive noise floor, rejecting frames that look like steady noise (noise-like zero-crossing
rate, or energy that has not moved for a while). :class:`Endpointer` turns those decisions into
``SpeechStarted`` / ``SpeechEnded`` / ``NoiseIgnored`` events over arbitrary chunks of audio.
The gateway's default decision is Silero's (``media_gateway.silero_vad``); the energy classifier
here is the ``offline-light`` choice, and the endpointer takes either.

Per-frame work is a few C-level passes over 320 samples: the energy is one NumPy dot product
(summing squares through ``map`` cost ~7x as much, the largest share of a call's gateway CPU),
and a frame below the noise floor stops there; only louder frames go on to the zero-crossing
count (``bytes.translate``, ``int.bit_count``) and the steadiness check.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np

SAMPLE_RATE: Final = 16_000
FRAME_MS: Final = 20
FRAME_SAMPLES: Final = SAMPLE_RATE * FRAME_MS // 1000
FRAME_BYTES: Final = FRAME_SAMPLES * 2
BYTES_PER_MS: Final = SAMPLE_RATE * 2 // 1000

# Maps a little-endian sample's high byte to 1 when the sample is negative.
_SIGN_TABLE: Final = bytes(1 if b >= 0x80 else 0 for b in range(256))
_FULL_SCALE_SQ: Final = 32768.0**2
_SILENCE_DBFS: Final = -100.0


@dataclass(frozen=True)
class VadConfig:
    """Frame-level gate settings. Levels are dB relative to full scale (dBFS)."""

    margin_db: float = 10.0  # how far above the noise floor a speech frame must be
    min_energy_dbfs: float = -50.0  # absolute gate: quieter frames are never speech
    initial_floor_dbfs: float = -65.0
    max_zero_crossing_rate: float = 0.35  # white/hiss noise sits near 0.5, voiced speech < 0.25
    steady_window_ms: int = 400
    steady_range_db: float = 3.0  # energy moving less than this over the window is not speech
    floor_rise_ms: float = 250.0  # time constant for the floor to climb to steady noise
    floor_rise_other_ms: float = 2000.0  # ...to other non-speech (gaps between syllables)
    floor_rise_in_speech_ms: float = 8000.0  # very slow climb so a stuck "speech" state heals
    floor_fall_ms: float = 40.0  # the floor follows quieter frames almost at once


def frame_energy_dbfs(frame: bytes) -> float:
    """Mean-square energy of a PCM16 little-endian frame, in dBFS."""
    # float64 sums 320 squares of 16-bit samples exactly (each < 2**30, the total < 2**53).
    samples = np.frombuffer(frame, dtype="<i2").astype(np.float64)
    if not len(samples):
        return _SILENCE_DBFS
    mean_square = float(samples.dot(samples)) / len(samples)
    return max(_SILENCE_DBFS, 10.0 * math.log10(mean_square / _FULL_SCALE_SQ + 1e-12))


def zero_crossing_rate(frame: bytes) -> float:
    """Fraction of adjacent PCM16 little-endian sample pairs whose signs differ."""
    signs = frame[1::2].translate(_SIGN_TABLE)  # one 0/1 byte per sample
    if len(signs) < 2:
        return 0.0
    # XOR of the two byte strings as big integers has one set bit per sign change.
    crossings = (int.from_bytes(signs[:-1]) ^ int.from_bytes(signs[1:])).bit_count()
    return crossings / (len(signs) - 1)


def _alpha(time_constant_ms: float) -> float:
    return 1.0 - math.exp(-FRAME_MS / time_constant_ms)


class FrameClassifier:
    """Stateful per-frame speech decision with an adaptive noise floor."""

    def __init__(self, config: VadConfig | None = None) -> None:
        self.config = config or VadConfig()
        self.noise_floor_dbfs = self.config.initial_floor_dbfs
        self.last_energy_dbfs = _SILENCE_DBFS
        self._recent: deque[float] = deque(maxlen=max(2, self.config.steady_window_ms // FRAME_MS))
        self._rise = _alpha(self.config.floor_rise_ms)
        self._rise_other = _alpha(self.config.floor_rise_other_ms)
        self._rise_in_speech = _alpha(self.config.floor_rise_in_speech_ms)
        self._fall = _alpha(self.config.floor_fall_ms)

    def is_speech(self, frame: bytes) -> bool:
        """Classify one 20 ms frame and update the noise floor."""
        cfg = self.config
        energy = self.last_energy_dbfs = frame_energy_dbfs(frame)
        self._recent.append(energy)
        loud = energy >= cfg.min_energy_dbfs and energy >= self.noise_floor_dbfs + cfg.margin_db
        if not loud and energy < self.noise_floor_dbfs:
            # Quieter than the floor (most frames between words and calls): not speech, and the
            # floor follows it down whatever its shape, so nothing else needs weighing.
            self.noise_floor_dbfs += self._fall * (energy - self.noise_floor_dbfs)
            return False
        steady = (
            len(self._recent) == self._recent.maxlen
            and max(self._recent) - min(self._recent) < cfg.steady_range_db
        )
        speech = loud and not steady and zero_crossing_rate(frame) <= cfg.max_zero_crossing_rate
        if energy < self.noise_floor_dbfs:
            rate = self._fall
        elif speech:
            rate = self._rise_in_speech
        else:
            # Steady frames are surely noise, so the floor learns a noise bed from them quickly;
            # other rejected frames may be quiet stretches of speech, so it only creeps up.
            rate = self._rise if steady else self._rise_other
        self.noise_floor_dbfs += rate * (energy - self.noise_floor_dbfs)
        return speech


class SpeechClassifier(Protocol):
    """A per-frame speech decision: :class:`FrameClassifier` (energy, ``offline-light``) or
    ``media_gateway.silero_vad.SileroClassifier`` (the default)."""

    config: VadConfig
    last_energy_dbfs: float

    def is_speech(self, frame: bytes) -> bool: ...


@dataclass(frozen=True)
class SpeechStarted:
    """Speech has lasted ``min_speech_ms``; ``at_ms`` is its onset in stream time."""

    at_ms: int


@dataclass(frozen=True)
class SpeechEnded:
    """An utterance ended at ``at_ms``; ``audio`` includes pre-roll and post-roll.

    ``duration_ms`` spans onset to the end of the last speech frame. ``forced`` is set when
    ``max_utterance_ms`` cut the utterance rather than trailing silence.
    """

    at_ms: int
    audio: bytes
    duration_ms: int
    forced: bool = False


@dataclass(frozen=True)
class NoiseIgnored:
    """A burst shorter than ``min_utterance_ms``, or one whose level never moved (a hum or
    buzz that began: the classifier only calls it steady after ``steady_window_ms``), ended at
    ``at_ms`` and was dropped.

    It retracts the ``SpeechStarted`` that preceded it (the barge-in was a false alarm): every
    ``SpeechStarted`` is followed by exactly one ``SpeechEnded`` or ``NoiseIgnored``. Blips
    shorter than ``min_speech_ms`` never announce themselves and produce no event at all.
    """

    at_ms: int
    duration_ms: int


@dataclass(frozen=True)
class SpeechPaused:
    """The caller has been quiet for ``pause_ms`` in an utterance long enough to keep.

    The utterance is probably over, but it is only final at ``SpeechEnded``: speech may resume.
    Sent so work that takes a while (recognition) can start early; sent again at the next pause
    when the caller goes on, carrying all the audio so far (it supersedes the one before).
    """

    at_ms: int
    audio: bytes


VadEvent = SpeechStarted | SpeechEnded | NoiseIgnored | SpeechPaused


#: Pauses an utterance is handed over at: each re-recognizes all of it, so a caller who pauses
#: more often is telling a long story, whose end is recognized once, from scratch.
MAX_HANDOVERS: Final = 4
#: The longest quiet the adaptive endpointer may wait for: past it a caller feels unheard.
MAX_HANGOVER_MS: Final = 1000


@dataclass(frozen=True)
class EndpointerConfig:
    """Utterance timing settings, in milliseconds (rounded down to whole 20 ms frames)."""

    min_speech_ms: int = 60
    min_utterance_ms: int = 200
    hangover_ms: int = 600
    #: Quiet after which ``SpeechPaused`` is announced (0 = never); less than ``hangover_ms``.
    pause_ms: int = 0
    pre_roll_ms: int = 200
    post_roll_ms: int = 100
    max_utterance_ms: int = 30_000
    #: Adaptive endpointing (all 0: off, `hangover_ms` always). Once ``SpeechPaused`` has handed
    #: the utterance to the recognizer, quiet ends it after `wait_for_words_ms` unless its
    #: provisional words come first (`Endpointer.words_end`): then after `complete_hangover_ms`
    #: for a finished sentence or question, `trailing_hangover_ms` when it trails off ("and",
    #: "um", digits being read out), `hangover_ms` when the words do not say.
    complete_hangover_ms: int = 0
    trailing_hangover_ms: int = 0
    wait_for_words_ms: int = 0

    def __post_init__(self) -> None:
        if self.min_speech_ms < FRAME_MS or self.hangover_ms < FRAME_MS:
            raise ValueError(f"min_speech_ms and hangover_ms must be at least {FRAME_MS}")
        adaptive = (self.complete_hangover_ms, self.trailing_hangover_ms, self.wait_for_words_ms)
        if any(adaptive) and not (
            self.pause_ms and all(self.pause_ms < ms <= MAX_HANGOVER_MS for ms in adaptive)
        ):
            raise ValueError(
                "adaptive endpointing needs pause_ms, and hangovers between pause_ms and "
                f"{MAX_HANGOVER_MS} ms"
            )
        if not 0 <= self.pause_ms < self.hangover_ms:
            raise ValueError("pause_ms must be between 0 and hangover_ms (exclusive)")
        if not 0 <= self.post_roll_ms <= self.hangover_ms:
            raise ValueError("post_roll_ms must be between 0 and hangover_ms")
        if self.pre_roll_ms < 0 or self.max_utterance_ms < self.min_speech_ms:
            raise ValueError("pre_roll_ms must be >= 0 and max_utterance_ms >= min_speech_ms")


class Endpointer:
    """Turns a PCM16 mono 16 kHz stream into utterance events; feed it chunks of any size."""

    def __init__(
        self,
        config: EndpointerConfig | None = None,
        vad_config: VadConfig | None = None,
        *,
        classifier: SpeechClassifier | None = None,
    ) -> None:
        self.config = config or EndpointerConfig()
        self.classifier: SpeechClassifier = classifier or FrameClassifier(vad_config)
        cfg = self.config
        self._min_speech = cfg.min_speech_ms // FRAME_MS
        self._post_roll = cfg.post_roll_ms // FRAME_MS
        self._pause = cfg.pause_ms // FRAME_MS
        self._adaptive = bool(cfg.wait_for_words_ms)
        self._max_frames = cfg.max_utterance_ms // FRAME_MS
        self._pending = bytearray()
        self._frame_index = 0  # frames processed so far; frame n covers [20n, 20n + 20) ms
        self._pre_roll: deque[bytes] = deque(maxlen=cfg.pre_roll_ms // FRAME_MS)
        self._reset_utterance()

    def _reset_utterance(self) -> None:
        self._frames: list[bytes] = []  # onset onwards, including trailing non-speech frames
        self._onset = -1  # frame index of the first speech frame; -1 when idle
        self._speech_frames = 0  # frames from onset to the last speech frame
        self._silent_run = 0  # non-speech frames since the last speech frame
        self._started = False
        self._handovers = 0  # SpeechPaused events sent for the utterance under way
        self._spoke_since_pause = False  # the provisional audio no longer holds every word
        self._hangover = self.config.hangover_ms // FRAME_MS  # quiet frames that end this one
        self._lead: bytes = b""  # pre-roll captured when the candidate began
        self._loudest = self._quietest = _SILENCE_DBFS  # levels of its speech frames

    @property
    def speech_ms(self) -> int:
        """Speech so far in the utterance under way (0 before ``SpeechStarted``)."""
        return self._speech_frames * FRAME_MS if self._started else 0

    @property
    def speech_varies(self) -> bool:
        """The utterance's level has moved as speech does (syllables rise and fall by far more
        than a steady noise's few dB); a hum that just started has not."""
        spread = self._loudest - self._quietest
        return spread >= self.classifier.config.steady_range_db

    @property
    def position_ms(self) -> int:
        """Stream time covered by whole frames processed so far."""
        return self._frame_index * FRAME_MS

    def feed(self, chunk: bytes) -> list[VadEvent]:
        """Process a chunk of PCM16 little-endian audio; return the events it completed."""
        events: list[VadEvent] = []
        if not self._pending and len(chunk) == FRAME_BYTES:  # a call's usual 20 ms frame
            self._step(bytes(chunk), events)
            return events
        self._pending += chunk
        whole = len(self._pending) - len(self._pending) % FRAME_BYTES
        for start in range(0, whole, FRAME_BYTES):
            self._step(bytes(self._pending[start : start + FRAME_BYTES]), events)
        del self._pending[:whole]
        return events

    def finish(self) -> list[VadEvent]:
        """End of stream: close any open utterance. A trailing partial frame is dropped."""
        events: list[VadEvent] = []
        if self._started:
            self._close(events, forced=False)
        self._reset_utterance()
        self._pending.clear()
        return events

    def _step(self, frame: bytes, events: list[VadEvent]) -> None:
        speech = self.classifier.is_speech(frame)
        index = self._frame_index
        self._frame_index += 1
        if speech:
            level = self.classifier.last_energy_dbfs
            if self._onset < 0:
                self._loudest = self._quietest = level
            self._loudest, self._quietest = max(self._loudest, level), min(self._quietest, level)
        if self._onset < 0:
            if speech:
                self._onset, self._lead = index, b"".join(self._pre_roll)
                self._frames, self._speech_frames = [frame], 1
                self._maybe_start(events)
            else:
                self._pre_roll.append(frame)
            return
        self._frames.append(frame)
        if speech:
            self._speech_frames = len(self._frames)
            self._silent_run = 0
            if self._handovers and not self._spoke_since_pause:
                # The caller went on: the words on their way are of part of the utterance, and
                # no others come before the next pause, so the plain hangover applies again.
                self._spoke_since_pause = True
                self._hangover = self.config.hangover_ms // FRAME_MS
            self._maybe_start(events)
        else:
            self._silent_run += 1
            self._maybe_paused(events)
        if not self._started and not speech:
            # The onset run broke before min_speech_ms: a blip, dropped without an event since
            # nothing was announced (NoiseIgnored always pairs with a SpeechStarted).
            self._pre_roll.extend(self._frames)
            self._reset_utterance()
        elif self._silent_run >= self._hangover:
            self._close(events, forced=False)
        elif self._speech_frames >= self._max_frames:
            self._close(events, forced=True)

    def _maybe_start(self, events: list[VadEvent]) -> None:
        if not self._started and self._speech_frames >= self._min_speech:
            self._started = True
            events.append(SpeechStarted(at_ms=self._onset * FRAME_MS))

    def _maybe_paused(self, events: list[VadEvent]) -> None:
        if not self._pause or self._silent_run != self._pause:
            return  # every quiet frame comes here: only the pause's own frame goes on
        long_enough = self._speech_frames * FRAME_MS >= self.config.min_utterance_ms
        # The first pause, or a later one after the caller went on (all of it so far again).
        due = not self._handovers or (self._spoke_since_pause and self._handovers < MAX_HANDOVERS)
        if due and long_enough and self._started and self.speech_varies:
            self._handovers, self._spoke_since_pause = self._handovers + 1, False
            if self._adaptive:
                self._hangover = self.config.wait_for_words_ms // FRAME_MS
            events.append(SpeechPaused(self.position_ms, self._utterance_audio()))

    @property
    def awaiting_words(self) -> bool:
        """The utterance under way was handed over at a pause and the caller has not spoken
        since: words recognized from that audio are all of it so far."""
        return bool(self._handovers) and not self._spoke_since_pause

    @property
    def went_on_after_pause(self) -> bool:
        """The caller spoke again after the audio was handed over at a pause: the words that
        cover the whole utterance come only at its next pause or its end."""
        return bool(self._handovers) and self._spoke_since_pause

    def words_end(self, ending: str) -> list[VadEvent]:
        """The recognizer's words for the audio handed over at the pause end like this
        (contracts.words.Ending). With adaptive endpointing on, the quiet that ends the
        utterance becomes the one for that ending, and when the caller has already been quiet
        that long it ends now: the returned ``SpeechEnded``.

        Why by words: a finished question is the turn's end, so waiting 400 ms more only delays
        the answer; "...and", "um" or half an account number means the caller is still going,
        and 400 ms would cut them off. Silence alone cannot tell these apart."""
        if not (self._adaptive and self.awaiting_words):
            return []
        cfg = self.config
        hangover_ms = {"complete": cfg.complete_hangover_ms, "trailing": cfg.trailing_hangover_ms}
        self._hangover = hangover_ms.get(ending, cfg.hangover_ms) // FRAME_MS
        events: list[VadEvent] = []
        if self._silent_run >= self._hangover:
            self._close(events, forced=False)
        return events

    def _utterance_audio(self) -> bytes:
        kept = self._frames[: self._speech_frames + min(self._silent_run, self._post_roll)]
        return self._lead + b"".join(kept)

    def _close(self, events: list[VadEvent], *, forced: bool) -> None:
        duration_ms = self._speech_frames * FRAME_MS
        end_ms = (self._onset + self._speech_frames) * FRAME_MS
        if duration_ms < self.config.min_utterance_ms or not self.speech_varies:
            events.append(NoiseIgnored(at_ms=end_ms, duration_ms=duration_ms))
        else:
            events.append(SpeechEnded(end_ms, self._utterance_audio(), duration_ms, forced))
        if forced:
            # The speaker is still talking: the next utterance continues this one, so seeding
            # its pre-roll would hand the recogniser the same audio twice.
            self._pre_roll.clear()
        else:
            self._pre_roll.extend(self._frames)  # the trailing silence is the next pre-roll
        self._reset_utterance()
