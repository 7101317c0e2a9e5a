"""Benchmark `baton audit verify` on a long call; prints figures, asserts nothing.

    python -m benchmarks.bench_audit_verify [--turns 500] [--bundle FILE] [--keep FILE]

Records one call of `--turns` caller turns (two handoffs, then tool turns with the Concierge)
on an embedded dev server with in-process workers, stops the workers, exports the call's
bundle (or reads `--bundle`), then measures with no worker running:
* baseline: Temporal's plain Replayer in the SDK's stock sandbox over the runs, one
  `replay_workflow` each, and the same Replayer given all runs in one `replay_workflows` call;
* the same Replayer in Baton's runner (workflows.runner: the sandbox the workers and verify
  use), and for scale without any sandbox;
* the replay check (Baton's runner, recording every handoff decision) and the whole verify
  (all four checks), each as turns per second of CPU time and as a ratio to the baseline.
The goal is at least 200 replayed turns per second per core. Each figure carries the machine's
load and CPU steal while it was taken (the machine is shared). Loopback only, bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from audit.bundle import CallBundle, load_call, write_bundle
from audit.replay_audit import replay_runs
from audit.verify import verify_call
from benchmarks.long_call import record_call
from benchmarks.machine import MachineWindow
from runtime.logs import configure_logging
from runtime.paths import data_dir
from runtime.temporal_client import data_converter
from workflows.call_session import CallSessionWorkflow
from workflows.runner import workflow_runner

REPEATS = 3


async def best_cpu(job: Callable[[], Awaitable[object]]) -> tuple[float, str]:
    """The least CPU time of `REPEATS` runs of `job` (the machine is shared), and the
    machine's steal and load over them."""
    times = []
    window = MachineWindow()
    for _ in range(REPEATS):
        start = time.process_time()
        await job()
        times.append(time.process_time() - start)
    return min(times), window.summary()


async def _in_order(histories: list[WorkflowHistory]) -> AsyncIterator[WorkflowHistory]:
    for history in histories:
        yield history


def _parse(bundle: CallBundle) -> Callable[[], Awaitable[object]]:
    async def parse() -> object:
        return bundle.histories()

    return parse


async def measure(bundle: CallBundle) -> None:
    histories = bundle.histories()
    events = sum(len(h.events) for h in histories)
    # Each caller turn arrived as one accepted Update (`submit_utterance`).
    turns = sum(
        1
        for h in histories
        for e in h.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED
    )
    print(f"call {bundle.call_id}: {len(histories)} run(s), {events} events, {turns} turns")

    async def plain(sandbox: str = "stock", one_call: bool = False) -> None:
        # Workers and verify run the workflow in Baton's runner (the SDK's sandbox, leaner);
        # the stock sandbox is the baseline, no sandbox shows what any sandbox costs.
        runner: WorkflowRunner = {
            "stock": SandboxedWorkflowRunner,
            "baton": workflow_runner,
            "none": UnsandboxedWorkflowRunner,
        }[sandbox]()
        replayer = Replayer(
            workflows=[CallSessionWorkflow], data_converter=data_converter(), workflow_runner=runner
        )
        if one_call:
            results = await replayer.replay_workflows(
                _in_order(histories), raise_on_replay_failure=False
            )
            assert not results.replay_failures, results.replay_failures
            return
        for history in histories:
            result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
            assert result.replay_failure is None, result.replay_failure

    async def verify() -> None:
        checks = await verify_call(bundle)
        failed = [check.line() for check in checks if not check.passed]
        assert not failed, failed

    baseline, baseline_load = await best_cpu(plain)
    figures = [
        ("plain Replayer", baseline, baseline_load),
        ("  one call", *await best_cpu(lambda: plain(one_call=True))),
        ("  Baton's runner", *await best_cpu(lambda: plain(sandbox="baton"))),
        ("  no sandbox", *await best_cpu(lambda: plain(sandbox="none"))),
        ("replay check", *await best_cpu(lambda: replay_runs(histories))),
        ("verify", *await best_cpu(verify)),
        # Part of verify: the SDK's JSON-to-protobuf parse of the runs the Replayer reads.
        ("  history parse", *await best_cpu(_parse(bundle))),
    ]
    for label, seconds, load in figures:
        print(
            f"  {label:<16} {seconds * 1000:8.0f} ms CPU   {turns / seconds:7.0f} turns/s/core   "
            f"x{seconds / baseline:.2f} of the plain Replayer  {load}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--bundle", type=Path, help="measure this bundle instead of recording")
    parser.add_argument("--keep", type=Path, help="write the recorded bundle here")
    args = parser.parse_args()
    configure_logging("WARNING")
    if args.bundle:
        bundle = await load_call(str(args.bundle))
    else:
        bundle = await record_call(args.turns)
        if args.keep:
            write_bundle(bundle, args.keep)
            keys = data_dir() / "codec-keys"
            if keys.exists():  # this run's own key, gone with its temporary data folder
                shutil.copyfile(keys, f"{args.keep}.keys")
                print(f"kept {args.keep}; read it with BATON_CODEC_KEY_FILE={args.keep}.keys")
    await measure(bundle)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as data:
        os.environ.setdefault("BATON_DATA_DIR", data)
        asyncio.run(main())
