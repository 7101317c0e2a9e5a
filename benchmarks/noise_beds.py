"""Background noises a caller's microphone picks up, generated with NumPy from a seed.

Each bed is float64 samples at 16 kHz scaled to an RMS of 1.0, so a mix sets its level in one
multiplication. The shapes are simple models of what the energy VAD mistakes for speech: bursts
whose level moves (traffic swells, slams, clinks, typing), voice-like harmonics (babble, music)
and a steady mains buzz; none contains words.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

RATE = 16_000

Bed = Callable[[float, np.random.Generator], np.ndarray]


def _unit_rms(samples: np.ndarray) -> np.ndarray:
    rms = float(np.sqrt(np.mean(samples**2)))
    return samples / rms if rms > 0 else samples


def colored_noise(
    n: int, rng: np.random.Generator, low_hz: float, high_hz: float, tilt: float
) -> np.ndarray:
    """White noise shaped in the frequency domain: a band with a 1/f**tilt slope inside it."""
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / RATE)
    shape = np.where((freqs >= low_hz) & (freqs <= high_hz), 1.0, 0.0)
    shape[1:] /= freqs[1:] ** (tilt / 2)
    return _unit_rms(np.fft.irfft(spectrum * shape, n))


def _bumps(
    n: int, rng: np.random.Generator, every_s: tuple[float, float], width_s: float
) -> np.ndarray:
    """A slowly swelling envelope: one Gaussian bump per event, events every few seconds."""
    t = np.arange(n) / RATE
    envelope = np.full(n, 0.25)
    at = rng.uniform(0, every_s[1])
    while at < n / RATE:
        envelope += rng.uniform(0.5, 1.5) * np.exp(-0.5 * ((t - at) / width_s) ** 2)
        at += rng.uniform(*every_s)
    return envelope


def street(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Traffic: a low rumble and tyre hiss that swell as cars pass, and a distant engine."""
    n = int(seconds * RATE)
    swells = _bumps(n, rng, (2.0, 6.0), 1.2)
    rumble = colored_noise(n, rng, 20, 1500, 1.5)
    hiss = colored_noise(n, rng, 800, 6000, 0.0)
    t = np.arange(n) / RATE
    engine_hz = 38 + 6 * np.sin(2 * np.pi * 0.07 * t)  # an idling engine's firing rate drifts
    engine = np.sin(2 * np.pi * np.cumsum(engine_hz) / RATE) * (0.3 + 0.2 * swells)
    return _unit_rms(swells * (rumble + 0.4 * hiss) + 0.3 * engine)


def clatter(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """A kitchen or office: door slams, dish clinks and bursts of keyboard typing over a room."""
    n = int(seconds * RATE)
    out = 0.05 * colored_noise(n, rng, 50, 4000, 1.0)
    at = rng.uniform(0.0, 1.0)
    while at < seconds - 1.0:
        start, kind = int(at * RATE), rng.integers(3)
        if kind == 0:  # slam: a loud low thump ringing out over ~100 ms
            length = int(0.25 * RATE)
            decay = np.exp(-np.arange(length) / (rng.uniform(0.03, 0.08) * RATE))
            burst = colored_noise(length, rng, 30, 2500, 1.0) * decay * rng.uniform(2, 5)
        elif kind == 1:  # clink: a few damped metallic partials
            length = int(0.3 * RATE)
            t = np.arange(length) / RATE
            burst = np.zeros(length)
            for _ in range(3):
                ring = np.exp(-t / rng.uniform(0.03, 0.12))
                burst += np.sin(2 * np.pi * rng.uniform(1800, 6000) * t) * ring * rng.uniform(1, 3)
        else:  # typing: 1-2 s of 5-10 ms clicks, about eight a second
            length = int(rng.uniform(1.0, 2.0) * RATE)
            burst = np.zeros(length)
            click_at = 0
            while click_at < length - 200:
                click = colored_noise(160, rng, 500, 7000, 0.0) * np.exp(-np.arange(160) / 30)
                burst[click_at : click_at + 160] += click * rng.uniform(0.8, 2)
                click_at += int(rng.uniform(0.08, 0.18) * RATE)
        end = min(n, start + len(burst))
        out[start:end] += burst[: end - start]
        at += rng.uniform(0.6, 2.5)
    return _unit_rms(out)


def _voice_like(n: int, rng: np.random.Generator) -> np.ndarray:
    """One wordless talker: a buzzy source at a drifting pitch, shaped like speech's spectrum,
    switched on and off at syllable rate."""
    t = np.arange(n) / RATE
    f0 = rng.uniform(95, 230) * (1 + 0.08 * np.sin(2 * np.pi * rng.uniform(0.2, 0.6) * t))
    phase = np.cumsum(f0) / RATE
    source = 2 * (phase % 1.0) - 1  # sawtooth: every harmonic, as a glottal pulse train has
    spectrum = np.fft.rfft(source)
    freqs = np.fft.rfftfreq(n, 1 / RATE)
    shape = np.zeros_like(freqs)
    for formant, width in ((rng.uniform(500, 800), 200), (rng.uniform(1200, 1800), 300)):
        shape += np.exp(-0.5 * ((freqs - formant) / width) ** 2)
    voiced = np.fft.irfft(spectrum * (shape + 0.05), n)
    gate = np.zeros(n)
    at = 0
    while at < n:
        length = int(rng.uniform(0.1, 0.3) * RATE)
        if rng.random() < 0.7:
            gate[at : at + length] = np.hanning(len(gate[at : at + length]))
        at += length
    return _unit_rms(voiced * gate)


def babble(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """A crowd of eight wordless talkers (a call center floor, a cafe)."""
    n = int(seconds * RATE)
    return _unit_rms(np.sum([_voice_like(n, rng) for _ in range(8)], axis=0))


def music(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Music or a TV in the room: a harmonic melody over chords and a beat."""
    n = int(seconds * RATE)
    out = np.zeros(n)
    scale = 220.0 * 2 ** (np.array([0, 2, 4, 5, 7, 9, 11, 12]) / 12)
    at = 0
    while at < n:
        length = int(rng.uniform(0.2, 0.5) * RATE)
        t = np.arange(min(length, n - at)) / RATE
        note = rng.choice(scale) * rng.choice([1, 2])
        root = rng.choice(scale[:4]) / 2
        envelope = np.exp(-t / 0.25)
        tone = sum(np.sin(2 * np.pi * note * k * t) / k**1.5 for k in range(1, 6))
        chord = sum(np.sin(2 * np.pi * root * r * t) for r in (1, 1.25, 1.5))
        beat = colored_noise(len(t), rng, 60, 5000, 1.0) * np.exp(-t / 0.04)
        out[at : at + len(t)] = envelope * tone + 0.3 * chord + 0.5 * beat
        at += len(t)
    return _unit_rms(out)


def hum(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Mains buzz with odd harmonics and a fan under it."""
    n = int(seconds * RATE)
    t = np.arange(n) / RATE
    mains = rng.choice([50.0, 60.0])
    buzz = sum(np.sin(2 * np.pi * mains * k * t + rng.uniform(0, 6.3)) / k for k in (1, 3, 5, 7, 9))
    return _unit_rms(buzz + 0.2 * colored_noise(n, rng, 30, 3000, 1.0))


BEDS: dict[str, Bed] = {
    "street": street,
    "clatter": clatter,
    "babble": babble,
    "music/TV": music,
    "hum": hum,
}
