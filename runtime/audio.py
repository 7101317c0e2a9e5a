"""Exact, cheap audio conversions on ``bytes``: G.711 μ-law and PCM16 resampling.

Everything here is pure and state-free: one call converts one frame. PCM is always signed
16-bit little-endian mono, whatever the host byte order.

Filters (honest limits, since there is no NumPy and every sample costs Python time):

* Factor 2, both directions, uses the 7-tap half-band kernel ``[-1, 0, 9, 16, 9, 0, -1] / 32``
  (cubic Lagrange interpolation when upsampling). At the low rate ``fs`` its passband is
  flat within 0.1 dB up to ``0.06 fs`` (e.g. 440 Hz at 8 kHz) but droops to about -3.5 dB
  at ``0.425 fs`` (3.4 kHz at 8 kHz); when decimating, content just above the new Nyquist
  aliases with only 6 dB of attenuation at the Nyquist itself, rising to about 25 dB at
  ``0.75 fs`` and 47 dB at ``0.875 fs``. Fine for telephone speech, not for music.
* Factor 3 uses the triangular kernel ``[1, 2, 3, 2, 1] / 9`` (linear interpolation when
  upsampling). Its nulls sit on the images of DC, but attenuation near the new Nyquist is
  only about 7 dB, so 24/48 kHz paths are usable for speech and nothing more demanding.
* Being state-free, each frame's edges are filtered against replicated edge samples, which
  adds a small error in the first and last two or three samples of every frame.
"""

from __future__ import annotations

import math
import sys
from array import array
from math import gcd

__all__ = [
    "SUPPORTED_RATES",
    "downsample_16k_to_8k",
    "frame_bytes",
    "pcm16_rms",
    "resample",
    "ulaw_decode",
    "ulaw_encode",
    "upsample_8k_to_16k",
]

SUPPORTED_RATES: frozenset[int] = frozenset({8000, 16000, 24000, 48000})

_BIG_ENDIAN_HOST = sys.byteorder == "big"
_ULAW_BIAS = 0x84
_ULAW_CLIP = 32635


def _ulaw_to_linear(code: int) -> int:
    """Decode one μ-law code the ITU-T G.711 way (the classic Sun reference algorithm)."""
    u = ~code & 0xFF
    t = (((u & 0x0F) << 3) + _ULAW_BIAS) << ((u & 0x70) >> 4)
    return _ULAW_BIAS - t if u & 0x80 else t - _ULAW_BIAS


def _linear_to_ulaw(sample: int) -> int:
    """Encode one signed 16-bit sample with the standard segment search."""
    sign = 0x80 if sample < 0 else 0
    magnitude = min(-sample if sign else sample, _ULAW_CLIP) + _ULAW_BIAS
    exponent = magnitude.bit_length() - 8  # biased magnitude is always >= 0x84, so >= 0
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return ~(sign | (exponent << 4) | mantissa) & 0xFF


_DECODE_TABLE: tuple[int, ...] = tuple(_ulaw_to_linear(code) for code in range(256))
# Split the decoded value into its two little-endian bytes so decoding is two C-level
# ``bytes.translate`` calls and an interleave, with no per-sample Python objects at all.
_DECODE_LO = bytes(v & 0xFF for v in _DECODE_TABLE)
_DECODE_HI = bytes((v >> 8) & 0xFF for v in _DECODE_TABLE)
# Indexed by the *unsigned* 16-bit view of a sample, so an ``array('H')`` can index it.
_ENCODE_TABLE = bytes(_linear_to_ulaw(u - 0x10000 if u & 0x8000 else u) for u in range(0x10000))


def _check_pcm16(pcm: bytes) -> None:
    if len(pcm) % 2:
        raise ValueError(f"PCM16 needs an even number of bytes, got {len(pcm)}")


def ulaw_decode(ulaw: bytes) -> bytes:
    """Decode G.711 μ-law bytes to PCM16 little-endian (one 16-bit sample per input byte).

    Values match the ITU-T G.711 reference: 0xFF and 0x7F -> 0, 0x00 -> -32124, 0x80 -> 32124.
    """
    out = bytearray(2 * len(ulaw))
    out[0::2] = ulaw.translate(_DECODE_LO)
    out[1::2] = ulaw.translate(_DECODE_HI)
    return bytes(out)


def ulaw_encode(pcm: bytes) -> bytes:
    """Encode PCM16 little-endian to G.711 μ-law, one byte per sample.

    Samples beyond +/-32635 are clipped as G.711 specifies. Zero encodes to 0xFF (positive
    zero), so ``ulaw_encode(ulaw_decode(b)) == b`` for every code except 0x7F (negative zero),
    which comes back as 0xFF. Raises ValueError for an odd byte length.
    """
    _check_pcm16(pcm)
    samples = array("H", pcm)
    if _BIG_ENDIAN_HOST:
        samples.byteswap()
    # One C-level map over a 64 KiB table; results are small cached ints, so no allocation.
    return bytes(map(_ENCODE_TABLE.__getitem__, samples))


def _to_samples(pcm: bytes) -> list[int]:
    samples = array("h", pcm)
    if _BIG_ENDIAN_HOST:
        samples.byteswap()
    return samples.tolist()


def _to_bytes(samples: list[int]) -> bytes:
    out = array("h", samples)
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


def frame_bytes(rate: int, ms: int, sample_width: int = 2) -> int:
    """Bytes in one mono frame of ``ms`` milliseconds at ``rate`` Hz (20 ms at 8 kHz -> 320).

    Raises ValueError if the frame is not a whole number of samples or an argument is not
    positive.
    """
    if rate <= 0 or ms <= 0 or sample_width <= 0:
        raise ValueError(
            f"rate, ms and sample_width must be positive: {rate}, {ms}, {sample_width}"
        )
    samples, remainder = divmod(rate * ms, 1000)
    if remainder:
        raise ValueError(f"{ms} ms at {rate} Hz is not a whole number of samples")
    return samples * sample_width


def pcm16_rms(pcm: bytes) -> float:
    """Root-mean-square level of PCM16 little-endian audio, in sample units (0.0 if empty)."""
    _check_pcm16(pcm)
    samples = _to_samples(pcm)
    if not samples:
        return 0.0
    return math.sqrt(math.fsum(s * s for s in samples) / len(samples))
