"""The resamplers soxr replaced, kept only as `bench_resample`'s baseline (not product code).

Baton resampled each 20 ms frame without state: factor-2 steps with a 7-tap half-band kernel,
factor-3 steps with a triangular kernel, edges padded by repeating the end samples; and the
offline voice's 22.05 -> 16 kHz went through a 16-tap Kaiser-windowed sinc in pure Python.
`runtime.resampling` explains what replaced them and why.
"""

from __future__ import annotations

import array
import math
import sys
from math import gcd
from operator import mul

SUPPORTED_RATES: frozenset[int] = frozenset({8000, 16000, 24000, 48000})
ESPEAK_RATE = 22050
_BIG_ENDIAN_HOST = sys.byteorder == "big"


def _check_pcm16(pcm: bytes) -> None:
    if len(pcm) % 2:
        raise ValueError(f"PCM16 needs an even number of bytes, got {len(pcm)}")


def _to_samples(pcm: bytes) -> list[int]:
    samples = array.array("h", pcm)
    if _BIG_ENDIAN_HOST:
        samples.byteswap()
    return samples.tolist()


def _to_bytes(samples: list[int]) -> bytes:
    out = array.array("h", samples)
    if _BIG_ENDIAN_HOST:
        out.byteswap()
    return out.tobytes()


def _clamp16(value: int) -> int:
    return -32768 if value < -32768 else 32767 if value > 32767 else value


def _up2(x: list[int]) -> list[int]:
    """Double the rate: keep every sample, insert cubic midpoints ``(-a + 9b + 9c - d) / 16``."""
    if not x:
        return []
    p = [x[0], *x, x[-1], x[-1]]  # p[i + 1] == x[i]; edges replicated
    mids = [
        _clamp16((9 * (b + c) - a - d + 8) >> 4)
        for a, b, c, d in zip(p, p[1:], p[2:], p[3:], strict=False)
    ]
    out = [0] * (2 * len(x))
    out[0::2] = x
    out[1::2] = mids
    return out


def _down2(x: list[int]) -> list[int]:
    """Halve the rate: half-band low-pass centred on each even sample, then keep it."""
    n = len(x)
    if not n:
        return []
    m = (n + 1) // 2
    p = [x[0]] * 3 + x + [x[-1]] * 4  # p[i + 3] == x[i]
    span = 2 * m
    return [
        _clamp16((16 * c + 9 * (b1 + a1) - (b3 + a3) + 16) >> 5)
        for b3, b1, c, a1, a3 in zip(
            p[0:span:2],
            p[2 : 2 + span : 2],
            p[3 : 3 + span : 2],
            p[4 : 4 + span : 2],
            p[6 : 6 + span : 2],
            strict=True,
        )
    ]


def _up3(x: list[int]) -> list[int]:
    """Triple the rate by linear interpolation (a convex blend, so no clipping is possible)."""
    if not x:
        return []
    out = [0] * (3 * len(x))
    nxt = [*x[1:], x[-1]]
    out[0::3] = x
    # (v + 1) // 3 rounds v / 3 to nearest for every integer v, negatives included.
    out[1::3] = [(2 * a + b + 1) // 3 for a, b in zip(x, nxt, strict=True)]
    out[2::3] = [(a + 2 * b + 1) // 3 for a, b in zip(x, nxt, strict=True)]
    return out


def _down3(x: list[int]) -> list[int]:
    """Third the rate: triangular ``[1, 2, 3, 2, 1] / 9`` low-pass, keep every third sample."""
    n = len(x)
    if not n:
        return []
    m = (n + 2) // 3
    p = [x[0]] * 2 + x + [x[-1]] * 4  # p[i + 2] == x[i]
    span = 3 * m
    return [
        (a + 2 * b + 3 * c + 2 * d + e + 4) // 9
        for a, b, c, d, e in zip(
            p[0:span:3],
            p[1 : 1 + span : 3],
            p[2 : 2 + span : 3],
            p[3 : 3 + span : 3],
            p[4 : 4 + span : 3],
            strict=True,
        )
    ]


def upsample_8k_to_16k(pcm: bytes) -> bytes:
    """Double the sample rate of PCM16 mono (8 kHz -> 16 kHz); output is exactly twice as long."""
    _check_pcm16(pcm)
    return _to_bytes(_up2(_to_samples(pcm)))


def downsample_16k_to_8k(pcm: bytes) -> bytes:
    """Halve the sample rate of PCM16 mono (16 kHz -> 8 kHz) with a half-band anti-alias filter.

    Output has ``ceil(samples / 2)`` samples, so an even-sample frame halves exactly.
    """
    _check_pcm16(pcm)
    return _to_bytes(_down2(_to_samples(pcm)))


def resample(pcm: bytes, from_rate: int, to_rate: int) -> bytes:
    """Resample PCM16 mono between any two of 8000, 16000, 24000 and 48000 Hz.

    Ratios of 2, 3 and 6 run directly; 16 kHz <-> 24 kHz goes via 48 kHz (up, then down).
    Upsampling runs the better half-band stage at the lower rate and decimation runs it
    last, so it guards the final passband. Output length is ``ceil(n * to_rate / from_rate)``
    samples: exact for whole 10 ms frames. Raises ValueError for unsupported rates or an
    odd byte length.
    """
    for label, rate in (("from_rate", from_rate), ("to_rate", to_rate)):
        if rate not in SUPPORTED_RATES:
            supported = ", ".join(str(r) for r in sorted(SUPPORTED_RATES))
            raise ValueError(f"unsupported {label} {rate} Hz; supported rates: {supported}")
    _check_pcm16(pcm)
    if from_rate == to_rate:
        return bytes(pcm)
    common = gcd(from_rate, to_rate)
    up, down = to_rate // common, from_rate // common
    samples = _to_samples(pcm)
    if up % 2 == 0:
        samples = _up2(samples)
    if up % 3 == 0:
        samples = _up3(samples)
    if down % 3 == 0:
        samples = _down3(samples)
    if down % 2 == 0:
        samples = _down2(samples)
    return _to_bytes(samples)


class Resampler22kTo16k:
    """Streaming 22 050 -> 16 000 Hz PCM16 resampler (ratio 320/441), Kaiser-windowed sinc.

    Cutoff sits at 7.4 kHz so little of espeak's 8-11 kHz content aliases back, and what does
    lands above recognizers' and telephony's band. Sixteen taps per output sample keeps a
    pure-Python cost of a few per cent of real time.
    """

    UP, DOWN, HALF = 320, 441, 8

    _phases: tuple[tuple[float, ...], ...] = ()

    def __init__(self) -> None:
        if not Resampler22kTo16k._phases:
            Resampler22kTo16k._phases = self._design()
        # Zero history before the first sample, so output 0 is centred on input 0.
        self._buf: list[int] = [0] * (self.HALF - 1)
        self._base = -(self.HALF - 1)  # input index of self._buf[0]
        self._n = 0  # next output sample index

    @classmethod
    def _design(cls) -> tuple[tuple[float, ...], ...]:
        cutoff = 7400 / ESPEAK_RATE  # cycles per input sample
        beta = 6.0
        i0_beta = _bessel_i0(beta)
        phases = []
        for phase in range(cls.UP):
            frac = phase / cls.UP
            taps = []
            for k in range(-cls.HALF + 1, cls.HALF + 1):
                t = k - frac
                x = 2 * cutoff * t
                sinc = 1.0 if x == 0 else math.sin(math.pi * x) / (math.pi * x)
                r = t / cls.HALF
                window = _bessel_i0(beta * math.sqrt(1 - r * r)) / i0_beta if abs(r) < 1 else 0.0
                taps.append(sinc * window)
            total = sum(taps)  # unity gain at DC for every phase
            phases.append(tuple(tap / total for tap in taps))
        return tuple(phases)

    def process(self, pcm: bytes, *, final: bool = False) -> bytes:
        """Resample the next piece of the stream; `final` flushes the filter's tail."""
        self._buf.extend(memoryview(pcm).cast("h").tolist())
        if final:
            self._buf.extend([0] * self.HALF)
        out: list[int] = []
        phases, half, buf, base = self._phases, self.HALF, self._buf, self._base
        available = base + len(buf)  # one past the last input index held
        n = self._n
        while True:
            pos, phase = divmod(n * self.DOWN, self.UP)
            if pos + half > available:
                break
            lo = pos - half + 1 - base
            value = sum(map(mul, buf[lo : lo + 2 * half], phases[phase]))
            out.append(-32768 if value < -32768 else 32767 if value > 32767 else round(value))
            n += 1
        self._n = n
        keep_from = (n * self.DOWN) // self.UP - half + 1 - base
        if keep_from > 0:
            del buf[:keep_from]
            self._base = base + keep_from
        return _pack(out)


def _bessel_i0(x: float) -> float:
    total, term, k = 1.0, 1.0, 1
    while term > 1e-12 * total:
        term *= (x / (2 * k)) ** 2
        total += term
        k += 1
    return total


def _pack(samples: list[int]) -> bytes:
    data = array.array("h", samples)
    if not _LITTLE_ENDIAN:
        data.byteswap()
    return data.tobytes()


_LITTLE_ENDIAN = memoryview(b"\x01\x00").cast("h")[0] == 1
