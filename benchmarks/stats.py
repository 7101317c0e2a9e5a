"""Percentiles and the one-line p50/p95 summary every benchmark prints."""

from __future__ import annotations

import statistics


def pct(samples: list[float], q: float) -> float:
    """The q-quantile by nearest rank (q=0.95: the p95)."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def line(label: str, samples: list[float], unit: str = "ms", width: int = 46) -> None:
    if not samples:
        print(f"  {label:<{width}} no samples")
        return
    print(
        f"  {label:<{width}} p50 {statistics.median(samples):8.1f} {unit}   "
        f"p95 {pct(samples, 0.95):8.1f} {unit}   (n={len(samples)})"
    )
