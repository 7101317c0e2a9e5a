"""`baton scenario test`: run a scenario's conversation tests on a stack of its own.

It starts an ephemeral embedded Temporal dev server (in memory) and in-process workers running
the real workflow, places one call per test file (files in parallel), prints a pass/fail line
per expectation (with the turn's transcript when one fails), optionally writes JUnit XML, and
exits 1 on any failure. `--repeat N` runs every file N times and reports a pass rate per
expectation, for authors testing against a real language model.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from activities.chat_models.base import ChatModel, ChatModelError
from activities.chat_models.scripted import ScriptedChatModel
from baton.scenario_testing import Check, run_tests
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from registries.conversation_tests import TestFile, load_test_files
from registries.errors import BatonError
from registries.loading import registry_root
from runtime.settings import settings
from runtime.temporal_client import connect

MODELS = ("offline", "scripted", "openai")
#: Text calls need no speech worker.
TEXT_QUEUES = ["calls", "llm", "tools"]


def add_test_parser(sub: Any, add_registry_option: Any) -> None:
    test = sub.add_parser(
        "test",
        help="run conversation tests (scenariostore/<name>/tests/*.yaml) on real calls",
        description="Run conversation test files as real calls on an ephemeral Temporal server "
        "with in-process workers. PATH: test files, tests/ folders, scenario folders or "
        "registries (default: every scenario's tests in the registry).",
    )
    test.add_argument("paths", nargs="*", type=Path, metavar="PATH")
    test.add_argument(
        "--model",
        choices=MODELS,
        default="offline",
        help="offline policy (default); scripted: each turn's declared `model:` steps, no "
        "language model; openai: any OpenAI-compatible endpoint (BATON_OPENAI_BASE_URL, "
        "BATON_OPENAI_API_KEY, BATON_OPENAI_MODEL)",
    )
    test.add_argument("--repeat", type=int, default=1, help="run each file N times (pass rates)")
    test.add_argument(
        "--min-pass-rate",
        type=float,
        default=100.0,
        metavar="PERCENT",
        help="with --repeat: an expectation passing less often than this fails (default 100)",
    )
    test.add_argument("--jobs", type=int, default=4, help="calls run at once (default 4)")
    test.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML here")
    add_registry_option(test)
    test.set_defaults(handler=run_test_command)


def run_test_command(args: argparse.Namespace) -> int:
    if args.repeat < 1 or args.jobs < 1:
        raise BatonError("--repeat and --jobs must be at least 1")
    if not 0 <= args.min_pass_rate <= 100:
        raise BatonError("--min-pass-rate is a percentage between 0 and 100")
    loaded = load_test_files(list(args.paths), registry_root(args.registry))
    files = [f for f in loaded if f.test.written_for(args.model)]
    skipped = len(loaded) - len(files)
    if skipped:
        print(f"{skipped} test file(s) not written for --model {args.model} skipped")
    if not files:
        raise BatonError(
            f"none of the {len(loaded)} test file(s) is written for --model {args.model}"
        )
    model = chat_model_for(args.model)
    # Tools write to a demo database: a fresh one per run (unless the user chose a folder), so
    # a card blocked by one run is not already blocked in the next.
    scratch = None if settings().data_dir else tempfile.TemporaryDirectory()
    if scratch is not None:
        os.environ["BATON_DATA_DIR"] = scratch.name
    try:
        print(
            f"{len(files)} test file(s), model {args.model}, {args.repeat} run(s) each", flush=True
        )
        checks = run_on_own_stack(files, model, repeat=args.repeat, jobs=args.jobs)
    finally:
        if scratch is not None:
            os.environ.pop("BATON_DATA_DIR", None)
            scratch.cleanup()
    failed = report(checks, args.repeat, args.min_pass_rate)
    if args.junit:
        write_junit(args.junit, checks, args.min_pass_rate)
    return 1 if failed else 0


def chat_model_for(name: str) -> ChatModel:
    # Imported here: the offline policy loads its sentence encoder, the factory the OpenAI SDK.
    from activities.chat_models.factory import chat_model_from_env
    from activities.chat_models.offline.policy import OfflineChatModel

    if name == "offline":
        return OfflineChatModel()
    if name == "scripted":
        return ScriptedChatModel()
    try:
        return chat_model_from_env({**os.environ, "BATON_CHAT_PROVIDER": "openai"})
    except ChatModelError as exc:
        raise BatonError(f"--model openai: {exc.message}") from exc


def run_on_own_stack(
    files: Sequence[TestFile], model: ChatModel, *, repeat: int = 1, jobs: int = 4
) -> list[Check]:
    """An in-memory dev server and in-process workers for the length of the run."""
    with EmbeddedTemporal(DevServerOptions(tuned=True)) as server:
        return asyncio.run(run_with_workers(server.address, files, model, repeat=repeat, jobs=jobs))


async def run_with_workers(
    address: str, files: Sequence[TestFile], model: ChatModel, *, repeat: int = 1, jobs: int = 4
) -> list[Check]:
    """In-process workers (calls, llm, tools) on `address` while the files run."""
    from workers.worker import run_workers  # loads the workflow sandbox: only when running

    scripted = model if isinstance(model, ScriptedChatModel) else None
    client = await connect(address)
    stop = asyncio.Event()
    workers = asyncio.create_task(run_workers(client, TEXT_QUEUES, stop, chat_model=model))
    try:
        return await run_tests(client, files, repeat=repeat, jobs=jobs, scripted=scripted)
    finally:
        stop.set()
        await workers


def _grouped(checks: Sequence[Check]) -> dict[tuple[str, int, str], list[Check]]:
    grouped: dict[tuple[str, int, str], list[Check]] = {}
    for check in checks:
        grouped.setdefault(check.key, []).append(check)
    return grouped


def _passes(runs: Sequence[Check], min_pass_rate: float) -> bool:
    return 100.0 * sum(c.passed for c in runs) / len(runs) >= min_pass_rate


def report(checks: Sequence[Check], repeat: int, min_pass_rate: float) -> int:
    """Print one line per expectation (a pass rate with --repeat); returns how many failed."""
    failed = 0
    current = ""
    explained: set[tuple[str, int]] = set()
    for (file, turn, what), runs in _grouped(checks).items():
        if file != current:
            current = file
            print(f"\n{file}: {runs[0].test}")
        ok = _passes(runs, min_pass_rate)
        failed += not ok
        rate = ""
        if repeat > 1:
            passes = sum(c.passed for c in runs)
            rate = f" {passes}/{len(runs)} ({100.0 * passes / len(runs):.0f}%)"
        print(f"  {'PASS' if ok else 'FAIL'}{rate} turn {turn}: {what}")
        if not ok:
            _explain(runs, with_transcript=(file, turn) not in explained)
            explained.add((file, turn))
    total = len(_grouped(checks))
    print(f"\n{total - failed} passed, {failed} failed", flush=True)
    return failed


def _explain(runs: Sequence[Check], *, with_transcript: bool) -> None:
    """What happened instead; the turn's transcript under its first failed expectation."""
    first = next(c for c in runs if not c.passed)
    if first.detail:
        print(f"        got: {first.detail}")
    if not with_transcript:
        return
    print(f"        caller: {first.caller!r}")
    for line in first.transcript:
        print(f"        | {line}")


def write_junit(path: Path, checks: Sequence[Check], min_pass_rate: float) -> None:
    """JUnit XML: a testsuite per file, a testcase per expectation."""
    root = ET.Element("testsuites", name="baton scenario test")
    suites: dict[str, ET.Element] = {}
    for (file, turn, what), runs in _grouped(checks).items():
        suite = suites.get(file)
        if suite is None:
            suite = suites[file] = ET.SubElement(root, "testsuite", name=file)
            suite.set("tests", "0")
            suite.set("failures", "0")
        case = ET.SubElement(suite, "testcase", classname=runs[0].test, name=f"turn {turn}: {what}")
        suite.set("tests", str(int(suite.get("tests", "0")) + 1))
        if not _passes(runs, min_pass_rate):
            suite.set("failures", str(int(suite.get("failures", "0")) + 1))
            first = next(c for c in runs if not c.passed)
            passes = sum(c.passed for c in runs)
            failure = ET.SubElement(
                case, "failure", message=f"{first.detail} ({passes}/{len(runs)} runs passed)"
            )
            failure.text = "\n".join([f"caller: {first.caller}", *first.transcript])
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in suites.values())))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in suites.values())))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    except OSError as exc:
        raise BatonError(f"cannot write --junit {path}: {exc}") from exc
