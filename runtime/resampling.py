"""Streaming PCM16 resampling with soxr: one resampler per stream (a call's direction).

A stream goes through one `StreamResampler` for its whole life, so the filter sees each
frame's neighbours. Resampling frame by frame without state (what Baton did before) filtered
every 20 ms edge against made-up samples with filters short enough for pure Python: 41 dB SNR
for a 1 kHz tone going 8 -> 16 kHz, 11 dB at 3 kHz, a 4.4 kHz tone aliased at -8 dB going
16 -> 8 kHz, and ~53 µs of CPU per frame.

The setting is chosen by measurement (`python -m benchmarks.bench_resample`): every soxr
setting reaches PCM16's own noise floor here (about 83 dB SNR, aliases 83 dB down), so delay
and CPU decide. soxr's fixed-rate engines work in blocks: fed 20 ms frames at 8 <-> 16 kHz
they return nothing for several frames and then ~100 ms at once, holding up to 61 ms (LQ) to
115 ms (MQ/HQ) of audio, which would hold back barge-in detection by as much. Its
variable-rate engine returns every frame as it comes, a constant 240 input samples behind
(30 ms at 8 kHz, 15 ms at 16 kHz, 11 ms at 22.05 kHz), passes 3.6 kHz flat and stops
everything above the new Nyquist, for 10-20 µs a frame. So streams use it (``vr=True``) at a
fixed ratio.

A resampler holds those samples back until later input pushes them out: a stream that ends
is flushed (``process(..., last=True)``) and one whose audio is thrown away (a barge-in) is
reset, so nothing stale leaks into the next.
"""

from __future__ import annotations

from typing import Final, Literal

import numpy as np
import soxr  # type: ignore[import-untyped]

__all__ = ["DEFAULT_SETTING", "Setting", "StreamResampler"]

#: soxr's fixed-rate qualities, and "VR" for its variable-rate engine (see the module doc).
Setting = Literal["LQ", "MQ", "HQ", "VHQ", "VR"]

DEFAULT_SETTING: Final[Setting] = "VR"

# PCM on the wire is little-endian whatever the host. soxr works in float32 here: its int16
# output adds TPDF dither, which made silence hiss at +/-1 and the same input come out
# differently twice; rounding ourselves keeps both exact.
_WIRE: Final = np.dtype("<i2")


class StreamResampler:
    """Resamples one continuous PCM16 mono little-endian stream, piece by piece.

    Pieces of any even length go in; out comes what the filter has finished, which over a
    flushed stream adds up to ``samples * to_rate / from_rate``.
    """

    def __init__(self, from_rate: int, to_rate: int, *, setting: Setting = DEFAULT_SETTING):
        if from_rate <= 0 or to_rate <= 0:
            raise ValueError(f"sample rates must be positive, got {from_rate} -> {to_rate}")
        self.from_rate, self.to_rate, self.setting = from_rate, to_rate, setting
        variable = setting == "VR"
        self._stream = soxr.ResampleStream(
            from_rate,
            to_rate,
            1,
            dtype="float32",
            quality="HQ" if variable else setting,
            vr=variable,
        )
        self._fresh = True  # nothing put in since the start, the last flush or reset

    def process(self, pcm: bytes, *, last: bool = False) -> bytes:
        """Resample the next piece; ``last`` also flushes what the filter holds and readies the
        resampler for a new stream. Raises ValueError for an odd byte length."""
        if len(pcm) % 2:
            raise ValueError(f"PCM16 needs an even number of bytes, got {len(pcm)}")
        if not pcm and (not last or self._fresh):
            return b""  # nothing in, nothing held: no call into soxr
        samples = np.frombuffer(pcm, dtype=_WIRE).astype(np.float32)
        return self.process_samples(samples, last=last).tobytes()

    def process_samples(self, samples: np.ndarray, *, last: bool = False) -> np.ndarray:
        """`process` on float32 samples at PCM16's scale (a 1-D array, e.g. decoded μ-law);
        returns little-endian int16 samples. Lets a transport skip a bytes round trip."""
        if not len(samples) and (not last or self._fresh):
            return np.empty(0, dtype=_WIRE)
        # A call's stream comes here every 20 ms (Twilio: 8 -> 16 kHz was a quarter of the
        # gateway's CPU per call, half of it this wrapping), so the array work is kept to
        # ufuncs in place: a (samples, 1) array needs no squeeze in soxr's wrapper, and
        # np.clip's Python dispatch cost more than the clipping. Same bytes as before.
        out: np.ndarray = self._stream.resample_chunk(samples.reshape(-1, 1), last=last)
        if last:
            self._stream.clear()
        self._fresh = last
        np.rint(out, out=out)
        np.minimum(out, 32767.0, out=out)
        np.maximum(out, -32768.0, out=out)
        return out.reshape(-1).astype(_WIRE)

    def flush(self) -> bytes:
        """The stream has ended: the audio still held back, and a fresh start after it."""
        return self.process(b"", last=True)

    def reset(self) -> None:
        """Throw away what the filter holds (audio nobody will hear) and start over."""
        if not self._fresh:
            self._stream.clear()
            self._fresh = True
