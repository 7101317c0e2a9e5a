"""Benchmark the handoff hot path and registry loading; prints figures, asserts nothing.

    python -m benchmarks.bench_handoff [--iterations N]

`resolve_handoff` runs on every handoff of every call, and a worker loads the registry at
start. The baseline in the same run is building the `HandoffResolution` result alone, the
floor any resolver must pay, so the ratio shows what the graph rules cost on top of it.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from registries.handoff_service import HandoffResolution, HandoffService
from registries.loading import load_registry
from registries.validation import check_registry

PROFILE = {"name": "Alex Morgan", "client_id": "C1001", "investment_tier": "private"}
SYSTEM_VARS = {"session_profile": PROFILE, "client_id": "C1001", "institution_name": "Harbor"}


def per_call_us(fn: Callable[[], object], iterations: int, repeats: int = 7) -> list[float]:
    """Microseconds per call for each of `repeats` batches of `iterations` calls."""
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            fn()
        samples.append((time.perf_counter_ns() - start) / iterations / 1000)
    return samples


def timed_ms(fn: Callable[[], object], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return samples


COLD_LOAD = (
    "import time; t = time.perf_counter(); from registries.loading import load_registry; "
    "load_registry(); print((time.perf_counter() - t) * 1000)"
)


def cold_load_ms(repeats: int) -> list[float]:
    """Import + load in a fresh interpreter each time: what a starting worker pays."""
    return [
        float(
            subprocess.run(
                [sys.executable, "-c", COLD_LOAD],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            ).stdout
        )
        for _ in range(repeats)
    ]


def report(label: str, samples: list[float], unit: str) -> float:
    median = statistics.median(samples)
    print(
        f"{label:<52} median {median:9.2f} {unit}   min {min(samples):9.2f} {unit}"
        f"   max {max(samples):9.2f} {unit}"
    )
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=5000)
    args = parser.parse_args()

    cold = report("import + load shipped registry (fresh process)", cold_load_ms(5), "ms")
    load = report("load shipped registry (warm process)", timed_ms(load_registry, 15), "ms")
    registry = load_registry()
    report(
        "check shipped registry (all rules)", timed_ms(lambda: check_registry(registry), 5), "ms"
    )

    service = HandoffService(registry.require_scenario("banking"), registry.agents)

    def announced() -> object:
        return service.resolve_handoff(
            source_agent="Concierge",
            tool_args={"target_agent": "FraudAgent", "reason": "card stolen"},
            current_system_vars=SYSTEM_VARS,
            user_last_utterance="someone used my card in Lisbon",
        )

    def discrete_with_context_vars() -> object:
        return service.resolve_handoff(
            source_agent="Concierge",
            tool_args={"target_agent": "InvestmentAdvisor", "reason": "retirement"},
            current_system_vars=SYSTEM_VARS,
        )

    def refused() -> object:
        return service.resolve_handoff(
            source_agent="CardRecommendation", tool_args={"target_agent": "FraudAgent"}
        )

    def baseline() -> object:
        return HandoffResolution(
            success=True,
            target_agent="FraudAgent",
            source_agent="Concierge",
            tool_name="handoff_to_agent",
            system_vars=dict(SYSTEM_VARS),
            greet_on_switch=True,
        )

    n = args.iterations
    base = report("baseline: build a HandoffResolution only", per_call_us(baseline, n), "us")
    first = report(
        "resolve_handoff announced (Concierge->FraudAgent)", per_call_us(announced, n), "us"
    )
    second = report(
        "resolve_handoff discrete + context_vars", per_call_us(discrete_with_context_vars, n), "us"
    )
    third = report("resolve_handoff refused route", per_call_us(refused, n), "us")
    greeting = report(
        "select_greeting (first visit, rendered)",
        per_call_us(
            lambda: service.select_greeting(
                agent="FraudAgent",
                is_first_visit=True,
                greet_on_switch=True,
                system_vars=SYSTEM_VARS,
            ),
            n,
        ),
        "us",
    )
    print()
    print(
        f"resolve_handoff median: {first:.1f} us announced, {second:.1f} us with context_vars,"
        f" {third:.1f} us refused (target <= 50 us)"
    )
    print(
        f"ratio to baseline: {first / base:.1f}x, {second / base:.1f}x, {third / base:.1f}x;"
        f" greeting {greeting:.1f} us"
    )
    print(
        f"registry load median: {cold:.1f} ms fresh process, {load:.1f} ms warm (target <= 300 ms)"
    )


if __name__ == "__main__":
    main()
