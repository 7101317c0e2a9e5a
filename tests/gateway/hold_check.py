"""Is this the gateway's hold audio? What a caller's stream received, matched against one
cycle of media_gateway.hold_audio at the stream's rate (telephone or ACS), by normalised
cross-correlation: the pad and chime survive resampling and mu-law nearly unchanged, while
speech or silence correlates with them hardly at all."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np

from media_gateway.hold_audio import hold_cycle
from runtime.audio import ulaw_decode
from runtime.resampling import StreamResampler

#: A window of hold audio matches a cycle at least this well (measured near 0.99 on mu-law).
HOLD_LIKENESS = 0.8


def twilio_audio(messages: list[Any]) -> bytes:
    """PCM16 8 kHz of the `media` messages a Twilio stream received, in order."""
    ulaw = b"".join(
        base64.b64decode(m["media"]["payload"])
        for m in messages
        if isinstance(m, dict) and m.get("event") == "media"
    )
    return ulaw_decode(ulaw)


def acs_audio(messages: list[Any]) -> bytes:
    """PCM16 16 kHz of the `AudioData` messages an ACS stream received, in order."""
    return b"".join(
        base64.b64decode(m["audioData"]["data"])
        for m in messages
        if isinstance(m, dict) and m.get("kind") == "AudioData"
    )


def hold_likeness(pcm16: bytes, rate: int) -> float:
    """How well the last second of `pcm16` (at `rate`) matches somewhere in the hold cycle
    (1.0: the same waveform up to level)."""
    cycle = hold_cycle()
    if rate != 16000:
        cycle = StreamResampler(16000, rate).process(cycle, last=True)
    reference = np.frombuffer(cycle * 2, dtype="<i2").astype(np.float64)
    window = np.frombuffer(pcm16[-2 * rate :], dtype="<i2").astype(np.float64)
    if len(window) < rate or not window.any():
        return 0.0
    # Sliding dot products by FFT, each divided by the norms of the two pieces compared.
    size = len(reference) + len(window)
    dots = np.fft.irfft(np.fft.rfft(reference, size) * np.conj(np.fft.rfft(window, size)), size)
    dots = dots[: len(reference) - len(window) + 1]
    energy = np.convolve(reference**2, np.ones(len(window)), "valid")
    norms = np.sqrt(energy * float(window @ window)) + 1e-9
    return float(np.max(dots / norms))
