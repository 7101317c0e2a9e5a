"""Benchmark the resamplers: quality, delay and CPU per 20 ms frame; prints, asserts nothing.

    python -m benchmarks.bench_resample [--frames 3000]

Each soxr setting (`runtime.resampling`) against the per-frame filters it replaced
(`benchmarks/old_resamplers.py`), fed 20 ms frames as a call feeds them:

* SNR of a 1 kHz and a 3 kHz tone going 8 -> 16 kHz (the tone fitted, the rest is error), and
  the level a 4.4 kHz tone aliases to going 16 -> 8 kHz (to 3.6 kHz, inside the phone band).
* Delay: how far the output runs behind the input, at most and on average over the frames
  (a block-based engine returns nothing for a while, then a burst).
* CPU: µs of process time per frame, median of five runs, for 8 -> 16, 16 -> 8,
  22.05 -> 16 (the offline voice) and 24 -> 16 kHz (ACS, OpenAI speech).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import get_args

import numpy as np

from benchmarks import old_resamplers as old
from runtime.resampling import DEFAULT_SETTING, Setting, StreamResampler

#: Makes a frame-by-frame converter from (from_rate, to_rate).
Converter = Callable[[bytes], bytes]
Factory = Callable[[int, int], Converter]
AMPLITUDE = 10000.0
PAIRS = ((8000, 16000), (16000, 8000), (22050, 16000), (24000, 16000))


def soxr_factory(setting: Setting) -> Factory:
    return lambda src, dst: StreamResampler(src, dst, setting=setting).process


def old_factory(src: int, dst: int) -> Converter:
    """What Baton used for each pair: the state-free filters, and the sinc for 22.05 kHz."""
    if src == old.ESPEAK_RATE:
        return old.Resampler22kTo16k().process
    return lambda pcm: old.resample(pcm, src, dst)


def tone(freq: float, rate: int, seconds: float = 1.0) -> bytes:
    n = np.arange(round(rate * seconds))
    return np.round(AMPLITUDE * np.sin(2 * np.pi * freq * n / rate)).astype("<i2").tobytes()


def frames(pcm: bytes, rate: int) -> list[bytes]:
    size = rate // 50 * 2
    return [pcm[i : i + size] for i in range(0, len(pcm), size)]


def through(make: Factory, src: int, dst: int, pcm: bytes) -> np.ndarray:
    convert = make(src, dst)
    out = b"".join(convert(frame) for frame in frames(pcm, src))
    return np.frombuffer(out, dtype="<i2").astype(np.float64)[dst // 10 : -dst // 10]


def snr_db(make: Factory, freq: float) -> float:
    y = through(make, 8000, 16000, tone(freq, 8000))
    t = np.arange(len(y)) * 2 * np.pi * freq / 16000
    basis = np.stack([np.sin(t), np.cos(t)], axis=1)
    fit = basis @ np.linalg.lstsq(basis, y, rcond=None)[0]
    return float(10 * np.log10(np.sum(fit**2) / np.sum((y - fit) ** 2)))


def alias_db(make: Factory) -> float:
    y = through(make, 16000, 8000, tone(4400, 16000))
    return float(20 * np.log10(np.sqrt(np.mean(y**2)) / (AMPLITUDE / np.sqrt(2)) + 1e-12))


def delay_ms(make: Factory, src: int, dst: int, count: int = 50) -> tuple[float, float]:
    """(most, mean) milliseconds of input not yet out, after each of `count` frames."""
    convert, frame = make(src, dst), tone(440, src, 0.02)
    held, put, got = [], 0, 0
    for _ in range(count):
        got += len(convert(frame)) // 2
        put += len(frame) // 2
        held.append((put / src - got / dst) * 1000)
    return max(held), statistics.mean(held)


def cost_us(make: Factory, src: int, dst: int, count: int) -> float:
    frame = tone(440, src, 0.02)
    runs = []
    for _ in range(5):
        convert = make(src, dst)
        start = time.process_time()
        for _ in range(count):
            convert(frame)
        runs.append((time.process_time() - start) / count * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=3000, help="frames per CPU run")
    args = parser.parse_args()
    settings: list[tuple[str, Factory]] = [("per-frame (old)", old_factory)]
    settings += [(f"soxr {s}", soxr_factory(s)) for s in get_args(Setting)]
    print(
        f"{'':16} {'SNR 1k':>7} {'SNR 3k':>7} {'alias':>7}   delay ms 8>16 / 16>8"
        f" (most, mean)   µs/frame 8>16 16>8 22>16 24>16"
    )
    baseline = 0.0
    for name, make in settings:
        up, down = delay_ms(make, 8000, 16000), delay_ms(make, 16000, 8000)
        costs = [cost_us(make, src, dst, args.frames) for src, dst in PAIRS]
        baseline = baseline or costs[0]
        print(
            f"{name:16} {snr_db(make, 1000):5.1f}dB {snr_db(make, 3000):5.1f}dB "
            f"{alias_db(make):5.1f}dB   {up[0]:5.1f} {up[1]:5.1f} / {down[0]:5.1f} {down[1]:5.1f}"
            f"{'':12} {'  '.join(f'{c:5.1f}' for c in costs)}"
            f"   ({costs[0] / baseline:.2f}x old at 8>16)"
        )
    print(f"Baton uses soxr {DEFAULT_SETTING} (see runtime/resampling.py for why)")


if __name__ == "__main__":
    main()
