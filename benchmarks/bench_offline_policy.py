"""Bench: how well the offline policy follows scenarios, today's code against a baseline.

Plays every caller line of benchmarks/offline_policy/paraphrases.yaml (labelled with the route
or tool it asks for, and the arguments it must fill) as the first turn of its agent with a
verified caller, through `offline.policy.decide`, and prints for the shipped scenarios and for
the scenarios the policy has never seen (benchmarks/unseen_registry): routing accuracy, tool
accuracy, slot accuracy and the time per turn (p50, p95), with the machine's load average
before and after each measurement. The same lines are measured with the
policy of `--baseline` (a git revision, default the keyword policy before sentence embeddings),
exported to a temporary folder and run in a child process, so both sets of figures come from
the same machine in the same run. Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_offline_policy.py [--baseline REV] [--misses]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PARAPHRASES = HERE / "offline_policy" / "paraphrases.yaml"
UNSEEN_REGISTRY = HERE / "unseen_registry"
#: The keyword policy, the last commit before the sentence-embedding policy.
DEFAULT_BASELINE = "a7a5119"
#: What the baseline child process needs from its revision.
BASELINE_PATHS = ["activities", "contracts", "registries", "runtime", "tests/unit", "tests"]


def measure(paraphrases: Path, only: str | None = None) -> list[dict[str, Any]]:
    """One result per caller line (of the `only` registry, if given), with the code
    importable from sys.path."""
    from activities.chat_models.offline.policy import decide
    from registries.loading import load_registry
    from tests.unit.offline_policy_turns import make_turn

    registries = {"shipped": load_registry(), "unseen": load_registry(UNSEEN_REGISTRY)}
    groups = yaml.safe_load(paraphrases.read_text(encoding="utf-8"))["groups"]
    groups = [g for g in groups if only in (None, g["registry"])]
    results = []
    for group in groups:
        registry = registries[group["registry"]]
        # An agent's first turn with a snapshot reads (and caches) its routes' and tools'
        # texts: a cost per snapshot and agent, not per turn; it is timed apart.
        warm = make_turn(registry, group["scenario"], group["agent"], "hello", verified=True)
        started = time.perf_counter()
        decide(warm)
        results.append(
            {"registry": group["registry"], "warm_ms": 1000 * (time.perf_counter() - started)}
        )
        for label, line, *args in group["lines"]:
            request = make_turn(registry, group["scenario"], group["agent"], line, verified=True)
            started, cpu = time.perf_counter(), time.thread_time()
            decision = decide(request)
            elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
            kind, wanted = next(iter(label.items()))
            got_kind, got, filled = _what_it_did(decision)
            results.append(
                {
                    "registry": group["registry"],
                    "kind": kind,
                    "wanted": wanted,
                    "got": f"{got_kind}:{got}",
                    "right": (got_kind, got) == (kind, wanted),
                    "slots": _slots_right(args[0] if args else {}, filled)
                    if got == wanted
                    else (False if args else None),
                    "line": line,
                    "ms": elapsed * 1000,
                    # CPU of this thread (the model runs on it, one thread): what the turn costs
                    # whatever else the machine is doing.
                    "cpu_ms": cpu * 1000,
                }
            )
    return results


def _what_it_did(decision: Any) -> tuple[str, str, dict[str, Any]]:
    """(route|tool|other, target or tool, the arguments filled) from a policy decision."""
    for name, args in decision.calls:
        if name == "handoff_to_agent":
            return "route", str(args.get("target_agent")), {}
        if name not in {"end_call", "escalate_human"}:
            return "tool", name, dict(args)
    asked = re.match(r"(\w+) needs args", decision.why)
    if asked:  # the tool was chosen; its required arguments were asked for
        return "tool", asked.group(1), {}
    return "other", decision.why, {}


def _slots_right(wanted: dict[str, Any], filled: dict[str, Any]) -> bool | None:
    if not wanted:
        return None
    return all(str(filled.get(key)) == str(value) for key, value in wanted.items())


def _percent(hits: int, total: int) -> str:
    return f"{100.0 * hits / total:5.1f}% ({hits}/{total})" if total else "   n/a"


def summarise(title: str, measured: list[dict[str, Any]]) -> dict[str, float]:
    print(f"\n{title}")
    warm = [r["warm_ms"] for r in measured if "warm_ms" in r]
    results = [r for r in measured if "warm_ms" not in r]
    figures: dict[str, float] = {}
    for registry in ("shipped", "unseen"):
        mine = [r for r in results if r["registry"] == registry]
        if not mine:
            continue
        routes = [r for r in mine if r["kind"] == "route"]
        tools = [r for r in mine if r["kind"] == "tool"]
        slots = [r for r in mine if r["slots"] is not None]
        route_hits = sum(r["right"] for r in routes)
        print(
            f"  {registry:8} routing {_percent(route_hits, len(routes))}   "
            f"tools {_percent(sum(r['right'] for r in tools), len(tools))}   "
            f"slots {_percent(sum(bool(r['slots']) for r in slots), len(slots))}"
        )
        figures[f"{registry}_routing"] = 100.0 * route_hits / max(1, len(routes))
    times = sorted(r["ms"] for r in results)
    p95 = times[int(0.95 * (len(times) - 1))]
    print(
        f"  per turn: p50 {statistics.median(times):.2f} ms, p95 {p95:.2f} ms, "
        f"max {times[-1]:.2f} ms"
    )
    cpu = sorted(r.get("cpu_ms", float("nan")) for r in results)
    cpu_p95 = cpu[int(0.95 * (len(cpu) - 1))]
    print(f"  CPU per turn: p50 {statistics.median(cpu):.2f} ms, p95 {cpu_p95:.2f} ms")
    figures["p50_ms"] = statistics.median(times)
    if warm:  # the first measured group also pays for loading the model
        print(f"  first turn of an agent with a snapshot: median {statistics.median(warm):.1f} ms")
    return figures


def _baseline(revision: str, paraphrases: Path, only: str | None) -> list[dict[str, Any]]:
    """The same measurement with the code of `revision`, in a child process."""
    with tempfile.TemporaryDirectory(prefix="bench-offline-") as folder:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", revision, *sorted(set(BASELINE_PATHS))],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        child = subprocess.run(
            [
                *(sys.executable, __file__, "--measure-only", "--paraphrases", str(paraphrases)),
                *(("--only", only) if only else ()),
            ],
            cwd=folder,
            env={"PYTHONPATH": folder, "PATH": "/usr/bin:/bin", "BATON_LOG_LEVEL": "WARNING"},
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if child.returncode != 0:
            raise SystemExit(f"baseline {revision} failed:\n{child.stderr[-2000:]}")
        results: list[dict[str, Any]] = json.loads(child.stdout.splitlines()[-1])
        return results


def _load() -> float:
    return os.getloadavg()[0]


def _load_during(before: float) -> str:
    """The 1-minute load average before and after a measurement: wall times on a shared
    machine mean little without it."""
    return f"load average {before:.1f} -> {_load():.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision to compare")
    parser.add_argument("--no-baseline", action="store_true", help="measure today's code only")
    parser.add_argument("--misses", action="store_true", help="list the lines it got wrong")
    parser.add_argument("--paraphrases", type=Path, default=PARAPHRASES)
    parser.add_argument(
        "--only",
        choices=["shipped", "unseen"],
        help="play one registry's lines: tune on shipped, keep unseen as the holdout",
    )
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_only:  # the baseline's child: its own code first on sys.path
        sys.path.insert(0, str(Path.cwd()))
        print(json.dumps(measure(args.paraphrases, args.only)))
        return
    sys.path.insert(0, str(ROOT))
    groups = yaml.safe_load(args.paraphrases.read_text())["groups"]
    lines = sum(len(g["lines"]) for g in groups if args.only in (None, g["registry"]))
    print(f"{lines} labelled caller lines ({args.paraphrases.name}, {args.only or 'all'})")
    load_before = _load()
    today = measure(args.paraphrases, args.only)
    mine = summarise(f"today's policy (sentence embeddings), {_load_during(load_before)}", today)
    if not args.no_baseline:
        load_before = _load()
        measured = _baseline(args.baseline, args.paraphrases, args.only)
        before = summarise(f"baseline {args.baseline}, {_load_during(load_before)}", measured)
        ratio = mine["p50_ms"] / before["p50_ms"] if before["p50_ms"] else float("nan")
        for registry in ("shipped", "unseen"):
            if f"{registry}_routing" in mine:
                was, now = before[f"{registry}_routing"], mine[f"{registry}_routing"]
                print(f"\n{registry} routing {was:.1f}% -> {now:.1f}%", end="")
        print(f"; p50 per turn {ratio:.1f}x the baseline's")
    if args.misses:
        print("\nmisses:")
        for r in today:
            if "warm_ms" in r:
                continue
            if not r["right"] or r["slots"] is False:
                print(
                    f"  {r['registry']:7} want {r['kind']}:{r['wanted']:24} got {r['got']:28} "
                    f"{r['line']}"
                )


if __name__ == "__main__":
    main()
