"""How busy the machine was while a figure was taken: CPU steal and load, from /proc.

Absolute figures from shared machines do not travel (a neighbour's load, a hypervisor's
steal), so every figure the call bench prints carries the window's steal and load beside it.
"""

from __future__ import annotations

import os
from pathlib import Path


def _cpu_ticks() -> tuple[int, int] | None:
    """(all ticks, stolen ticks) of the machine so far; None off Linux."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    # cpu user nice system idle iowait irq softirq steal [guest guest_nice: inside user/nice]
    ticks = [int(value) for value in fields[1:9]]
    return sum(ticks), ticks[7]


class MachineWindow:
    """Steal and load over one measurement, from its start to `summary()`."""

    def __init__(self) -> None:
        self._start = _cpu_ticks()

    def steal_percent(self) -> float | None:
        end = _cpu_ticks()
        if self._start is None or end is None or end[0] == self._start[0]:
            return None
        return 100.0 * (end[1] - self._start[1]) / (end[0] - self._start[0])

    def summary(self) -> str:
        steal = self.steal_percent()
        load = os.getloadavg()[0]
        stolen = "n/a" if steal is None else f"{steal:.0f}%"
        return f"[steal {stolen}, load {load:.2f} on {os.cpu_count()} CPUs]"
