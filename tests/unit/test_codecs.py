"""G.711 μ-law and PCM16 resampling: reference values, exact lengths, bounded error."""

from __future__ import annotations

import math
import struct
from array import array
from itertools import pairwise

import pytest

from runtime.audio import (
    SUPPORTED_RATES,
    downsample_16k_to_8k,
    frame_bytes,
    pcm16_rms,
    resample,
    ulaw_decode,
    ulaw_encode,
    upsample_8k_to_16k,
)

ALL_CODES = bytes(range(256))


def pack(samples: list[int]) -> bytes:
    return struct.pack(f"<{len(samples)}h", *samples)


def unpack(pcm: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(pcm) // 2}h", pcm))


def sine(freq: float, rate: int, seconds: float = 1.0, amplitude: float = 10000.0) -> bytes:
    n = round(rate * seconds)
    return pack([round(amplitude * math.sin(2 * math.pi * freq * i / rate)) for i in range(n)])


def zero_crossing_hz(pcm: bytes, rate: int) -> float:
    """Frequency from sign changes, which counts two per cycle."""
    samples = unpack(pcm)
    crossings = sum(1 for a, b in pairwise(samples) if (a < 0) != (b < 0))
    return crossings / 2 / (len(samples) / rate)


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


def test_encode_rejects_odd_length() -> None:
    with pytest.raises(ValueError, match="even number of bytes"):
        ulaw_encode(b"\x00\x01\x02")
    assert ulaw_encode(b"") == b""


# --- resampling -----------------------------------------------------------------------------


def test_20ms_lengths_are_exact_between_8k_and_16k() -> None:
    frame_8k = bytes(frame_bytes(8000, 20))
    up = upsample_8k_to_16k(frame_8k)
    assert len(up) == 640  # 320 samples
    assert len(downsample_16k_to_8k(up)) == 320  # 160 samples


@pytest.mark.parametrize("src", sorted(SUPPORTED_RATES))
@pytest.mark.parametrize("dst", sorted(SUPPORTED_RATES))
def test_every_rate_pair_gives_exact_frame_lengths_and_keeps_dc(src: int, dst: int) -> None:
    frame = pack([1234] * (frame_bytes(src, 20) // 2))
    out = resample(frame, src, dst)
    assert len(out) == frame_bytes(dst, 20)
    assert set(unpack(out)) == {1234}


def test_upsampling_keeps_the_original_samples() -> None:
    pcm = sine(440, 8000, 0.02)
    assert unpack(upsample_8k_to_16k(pcm))[0::2] == unpack(pcm)


def test_440hz_survives_8k_to_16k_to_8k() -> None:
    original = sine(440, 8000)
    up = upsample_8k_to_16k(original)
    back = downsample_16k_to_8k(up)

    assert zero_crossing_hz(up, 16000) == pytest.approx(440, abs=1)
    assert zero_crossing_hz(back, 8000) == pytest.approx(440, abs=1)
    assert pcm16_rms(up) == pytest.approx(pcm16_rms(original), rel=0.01)
    assert pcm16_rms(back) == pytest.approx(pcm16_rms(original), rel=0.01)

    # Sample by sample (edges aside) the 16 kHz signal is the ideal 16 kHz sine.
    ideal = unpack(sine(440, 16000))
    errors = [abs(a - b) for a, b in zip(unpack(up), ideal, strict=True)][4:-4]
    assert max(errors) < 0.005 * 10000
    round_trip = [abs(a - b) for a, b in zip(unpack(back), unpack(original), strict=True)][4:-4]
    assert max(round_trip) < 0.005 * 10000


@pytest.mark.parametrize(
    ("src", "dst"),
    [(8000, 24000), (8000, 48000), (16000, 24000), (24000, 16000), (48000, 8000), (48000, 16000)],
)
def test_440hz_keeps_pitch_and_level_across_rates(src: int, dst: int) -> None:
    original = sine(440, src)
    out = resample(original, src, dst)
    assert zero_crossing_hz(out, dst) == pytest.approx(440, abs=2)
    assert pcm16_rms(out) == pytest.approx(pcm16_rms(original), rel=0.03)


def test_decimation_attenuates_content_above_the_new_nyquist() -> None:
    # 7 kHz would alias to 1 kHz at 8 kHz; the half-band filter keeps it ~45 dB down.
    tone = sine(7000, 16000)
    assert pcm16_rms(downsample_16k_to_8k(tone)) < 0.02 * pcm16_rms(tone)


def test_full_scale_square_wave_is_clamped_not_overflowed() -> None:
    square = pack([32767, 32767, -32768, -32768] * 40)
    for out in (upsample_8k_to_16k(square), downsample_16k_to_8k(square)):
        assert all(-32768 <= s <= 32767 for s in unpack(out))
    assert max(unpack(upsample_8k_to_16k(square))) == 32767  # overshoot was clamped


def test_same_rate_is_a_copy_and_empty_stays_empty() -> None:
    pcm = sine(440, 16000, 0.01)
    assert resample(pcm, 16000, 16000) == pcm
    assert resample(b"", 8000, 48000) == b""
    assert upsample_8k_to_16k(b"") == b""
    assert downsample_16k_to_8k(b"") == b""


@pytest.mark.parametrize(("src", "dst"), [(44100, 16000), (16000, 22050), (0, 8000)])
def test_unsupported_rates_raise(src: int, dst: int) -> None:
    with pytest.raises(ValueError, match=r"unsupported (from|to)_rate .*supported rates: 8000"):
        resample(bytes(320), src, dst)


def test_odd_byte_lengths_raise() -> None:
    for convert in (
        upsample_8k_to_16k,
        downsample_16k_to_8k,
        pcm16_rms,
        lambda pcm: resample(pcm, 8000, 16000),
    ):
        with pytest.raises(ValueError, match=r"odd|even number of bytes"):
            convert(b"\x00\x00\x00")


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
