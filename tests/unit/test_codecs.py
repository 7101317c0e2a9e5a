"""G.711 μ-law, frame sizes and levels: reference values, exact lengths, bounded error."""

from __future__ import annotations

import math
import struct
from array import array

import numpy as np
import pytest

from runtime.audio import (
    frame_bytes,
    pcm16_rms,
    ulaw_decode,
    ulaw_decode_samples,
    ulaw_encode,
    ulaw_encode_samples,
)

ALL_CODES = bytes(range(256))


def pack(samples: list[int]) -> bytes:
    return struct.pack(f"<{len(samples)}h", *samples)


def unpack(pcm: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(pcm) // 2}h", pcm))


def sine(freq: float, rate: int, seconds: float = 1.0, amplitude: float = 10000.0) -> bytes:
    n = round(rate * seconds)
    return pack([round(amplitude * math.sin(2 * math.pi * freq * i / rate)) for i in range(n)])


def reference_encode(sample: int) -> int:
    """The classic table-driven G.711 μ-law encoder, written independently of the module."""
    exp_lut = [0, 0, 1, 1] + [2] * 4 + [3] * 8 + [4] * 16 + [5] * 32 + [6] * 64 + [7] * 128
    sign = (sample >> 8) & 0x80
    if sign:
        sample = -sample
    sample = min(sample, 32635) + 0x84
    exponent = exp_lut[(sample >> 7) & 0xFF]
    mantissa = (sample >> (exponent + 3)) & 0x0F
    return ~(sign | (exponent << 4) | mantissa) & 0xFF


# --- G.711 μ-law ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "value"),
    [
        (0xFF, 0),
        (0x7F, 0),
        (0x00, -32124),
        (0x80, 32124),
        (0xFE, 8),
        (0x7E, -8),
        (0xF0, 120),
        (0xEF, 132),
        (0x70, -120),
        (0x8F, 16764),
        (0x90, 15996),
    ],
)
def test_decode_matches_g711_reference(code: int, value: int) -> None:
    assert unpack(ulaw_decode(bytes([code]))) == [value]


def test_decode_is_little_endian_two_bytes_per_code() -> None:
    assert ulaw_decode(bytes([0x00, 0x80])) == (-32124).to_bytes(2, "little", signed=True) + (
        32124
    ).to_bytes(2, "little", signed=True)
    assert len(ulaw_decode(ALL_CODES)) == 512
    assert ulaw_decode(b"") == b""


def test_decode_table_is_sign_symmetric_and_monotonic() -> None:
    values = unpack(ulaw_decode(ALL_CODES))
    for code in range(128):
        assert values[code] == -values[code | 0x80]
    # 0x80..0xFF run from the largest positive value down to zero.
    positives = values[0x80:]
    assert positives == sorted(positives, reverse=True)


def test_round_trip_over_every_code_except_negative_zero() -> None:
    back = ulaw_encode(ulaw_decode(ALL_CODES))
    for code in range(256):
        expected = 0xFF if code == 0x7F else code
        assert back[code] == expected, hex(code)


def test_encode_matches_reference_over_the_whole_16_bit_range() -> None:
    every_sample = array("h", range(-32768, 32768))
    encoded = ulaw_encode(pack(every_sample.tolist()))
    assert len(encoded) == 65536
    for sample, code in zip(every_sample, encoded, strict=True):
        assert code == reference_encode(sample), sample


def test_quantisation_error_is_within_half_a_segment_step() -> None:
    samples = list(range(-32768, 32768))
    decoded = unpack(ulaw_decode(ulaw_encode(pack(samples))))
    for x, y in zip(samples, decoded, strict=True):
        magnitude = min(abs(x), 32635)
        exponent = (magnitude + 0x84).bit_length() - 8
        half_step = 4 << exponent
        clipped_by = abs(x) - magnitude  # G.711 clips beyond 32635
        assert abs(y - x) <= half_step + clipped_by, (x, y)


def test_encode_zero_and_extremes() -> None:
    assert ulaw_encode(pack([0, 32767, -32768, -1])) == bytes([0xFF, 0x80, 0x00, 0x7F])


def test_the_array_forms_give_the_same_values_as_the_bytes_forms() -> None:
    # The gateway's Twilio path decodes straight to the resampler's float32 and encodes its
    # int16 output: every code and every sample must come out as the bytes forms say.
    decoded = ulaw_decode_samples(ALL_CODES)
    assert decoded.dtype == np.float32
    assert decoded.tolist() == unpack(ulaw_decode(ALL_CODES))
    every_sample = np.arange(-32768, 32768, dtype="<i2")
    assert ulaw_encode_samples(every_sample) == ulaw_encode(every_sample.tobytes())
    assert ulaw_encode_samples(every_sample.astype(">i2")) == ulaw_encode(every_sample.tobytes())
    assert ulaw_decode_samples(b"").size == 0 and ulaw_encode_samples(every_sample[:0]) == b""


def test_encode_rejects_odd_length() -> None:
    with pytest.raises(ValueError, match="even number of bytes"):
        ulaw_encode(b"\x00\x01\x02")
    assert ulaw_encode(b"") == b""


def test_rms_refuses_an_odd_byte_length() -> None:
    with pytest.raises(ValueError, match="even number of bytes"):
        pcm16_rms(b"\x00\x00\x00")


# --- helpers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rate", "ms", "width", "expected"),
    [
        (8000, 20, 2, 320),
        (16000, 20, 2, 640),
        (24000, 20, 2, 960),
        (48000, 10, 2, 960),
        (8000, 20, 1, 160),
    ],
)
def test_frame_bytes(rate: int, ms: int, width: int, expected: int) -> None:
    assert frame_bytes(rate, ms, width) == expected


def test_frame_bytes_rejects_fractional_and_non_positive() -> None:
    with pytest.raises(ValueError, match="whole number of samples"):
        frame_bytes(44100, 1)
    with pytest.raises(ValueError, match="positive"):
        frame_bytes(8000, 0)


def test_pcm16_rms() -> None:
    assert pcm16_rms(b"") == 0.0
    assert pcm16_rms(pack([1000, -1000] * 10)) == pytest.approx(1000)
    assert pcm16_rms(sine(440, 8000)) == pytest.approx(10000 / math.sqrt(2), rel=0.001)
