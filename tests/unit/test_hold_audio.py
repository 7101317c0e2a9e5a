"""The generated hold audio: clearly there all the time, soft, and seamless when it loops."""

from __future__ import annotations

import numpy as np

from media_gateway.hold_audio import CYCLE_SECONDS, hold_cycle
from media_gateway.vad import SAMPLE_RATE


def samples() -> np.ndarray:
    return np.frombuffer(hold_cycle(), dtype="<i2").astype(float) / 32768


def test_a_cycle_is_pcm16_at_16_khz_for_its_length() -> None:
    assert len(hold_cycle()) == int(CYCLE_SECONDS * SAMPLE_RATE) * 2


def test_no_100_ms_of_hold_is_silent_so_the_line_never_sounds_dead() -> None:
    x = samples()
    window = SAMPLE_RATE // 10
    levels = [np.sqrt(np.mean(x[i : i + window] ** 2)) for i in range(0, len(x), window)]
    assert min(levels) > 10 ** (-50 / 20)  # every 100 ms is above -50 dBFS


def test_hold_stays_soft_well_under_speech_level() -> None:
    assert np.max(np.abs(samples())) < 10 ** (-12 / 20)


def test_cycles_join_without_a_click() -> None:
    x = samples()
    # The step from a cycle's last sample to the next cycle's first is no bigger than the
    # steps inside the audio: no discontinuity where the loop restarts.
    join = abs(x[0] - x[-1])
    assert join <= np.max(np.abs(np.diff(x)))
    assert join < 0.01
