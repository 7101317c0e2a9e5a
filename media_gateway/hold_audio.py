"""Hold audio: what a caller waiting for a person on the console hears.

Generated here (numpy), never downloaded: a quiet two-note pad that never stops, so the caller
never mistakes the wait for a dropped line, and a soft rising three-note chime every few seconds
that says "you are on hold" the way contact-center queues do. It plays through the call's own
playback (media_gateway.playback), one cycle at a time: a reply the workflow sends meanwhile
(the apology when nobody could take the call) cuts the cycle and plays at once, and stopping it
the moment a person takes the call clears what the caller's side still had queued.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from functools import cache

import numpy as np

from media_gateway.playback import Chunk, Playback
from media_gateway.vad import SAMPLE_RATE

CYCLE_SECONDS = 4.0
#: Pad and chime levels: clearly audible, well under speech (speech peaks near -6 dBFS).
PAD_DBFS = -36.0
CHIME_DBFS = -22.0
PAD_HZ = (220.0, 329.63)  # A3 and E4: an open fifth, neither happy nor sad
CHIME_HZ = (523.25, 659.25, 783.99)  # C5 E5 G5, rising
CHIME_STEP_SECONDS = 0.35
CHIME_NOTE_SECONDS = 0.9


def _amplitude(dbfs: float) -> float:
    return float(10 ** (dbfs / 20))


@cache
def hold_cycle() -> bytes:
    """One cycle of hold audio, PCM16 mono 16 kHz; cycles join without a click (the pad's
    tones complete whole periods over a cycle, the chime has decayed by its end)."""
    t = np.arange(int(CYCLE_SECONDS * SAMPLE_RATE)) / SAMPLE_RATE
    pad = np.zeros_like(t)
    for hz in PAD_HZ:
        whole = round(hz * CYCLE_SECONDS) / CYCLE_SECONDS  # a whole number of periods per cycle
        pad += np.sin(2 * np.pi * whole * t)
    # A slow swell (one per cycle) keeps the pad from sounding like a stuck tone.
    swell = 0.75 + 0.25 * np.cos(2 * np.pi * t / CYCLE_SECONDS)
    signal = pad / len(PAD_HZ) * swell * _amplitude(PAD_DBFS)
    note_len = int(CHIME_NOTE_SECONDS * SAMPLE_RATE)
    note_t = np.arange(note_len) / SAMPLE_RATE
    # A bell-like note: 10 ms attack, exponential decay, a little second harmonic.
    envelope = np.minimum(note_t / 0.01, 1.0) * np.exp(-note_t * 5.0)
    for index, hz in enumerate(CHIME_HZ):
        tone = np.sin(2 * np.pi * hz * note_t) + 0.2 * np.sin(4 * np.pi * hz * note_t)
        start = int((0.2 + index * CHIME_STEP_SECONDS) * SAMPLE_RATE)
        signal[start : start + note_len] += tone / 1.2 * envelope * _amplitude(CHIME_DBFS)
    return (np.clip(signal, -1.0, 1.0) * 32767).astype("<i2").tobytes()


class HoldMusic:
    """Plays hold audio on one call's playback until `stop`."""

    def __init__(self, playback: Playback) -> None:
        self.playback = playback
        self._stopped = False
        self._reply_id = ""
        self._cycles = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while not self._stopped:
            self._cycles += 1
            self._reply_id = f"hold-{self._cycles}"
            await self.playback.play(self._reply_id, "", self._one_cycle())

    async def _one_cycle(self) -> AsyncIterator[Chunk]:
        # Checked as the cycle starts, not when it was queued: a cycle that waited behind a
        # reply while the call was taken plays nothing.
        if not self._stopped:
            yield Chunk(hold_cycle(), 0)

    def make_way(self) -> None:
        """A reply is coming (a filler, or the apology when nobody took the call): cut the
        cycle playing, so the reply, queued first, plays at once; the hold carries on after."""
        current = self.playback.current
        if current is not None and current.reply_id == self._reply_id:
            self.playback.cancel()

    async def stop(self) -> None:
        """Stop now; what the caller's side had queued is cleared."""
        self._stopped = True
        self.make_way()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
