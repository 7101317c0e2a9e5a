"""`baton audit verify CALL_ID|FILE`: one line per check of `audit.verify`, exit 1 on any
failure. A call id is read from Temporal (any call, finished or live, no worker needed); a file
(a bundle from `baton history export`, or a bare Temporal history) reads nothing else."""

from __future__ import annotations

import argparse
import asyncio
import logging
from typing import Any

from audit.bundle import load_call
from audit.verify import report_lines, verify_call
from runtime.logs import SDK_CORE_LOGGER


class _ReplayFailureReported(logging.Filter):
    """The SDK core logs a warning for each workflow task a replay fails (a bisecting replay
    fails many); the replay check's own line already names the failure and its first event."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failing workflow task" not in record.getMessage()


def add_parser(audit_commands: Any) -> None:
    """Add `verify` to the `baton audit` subcommands."""
    verify = audit_commands.add_parser(
        "verify",
        help="check that a call followed its rules (hashes, replay, handoffs, tools)",
        description=(
            "Check a call from its history alone: the bundle's hashes match, every run replays "
            "against this workflow code, every handoff decision is derived again from the "
            "pinned scenario, and every tool ran for an agent that had it (mutating tools "
            "once, under their own idempotency key). Exit 1 when any check fails."
        ),
    )
    verify.add_argument("call", metavar="CALL_ID|FILE", help="a call id, or a bundle or history")
    verify.add_argument("--address", help="Temporal address for a call id (host:port)")
    verify.set_defaults(handler=run_verify)


def run_verify(args: argparse.Namespace) -> int:
    # Only in this command's own process: a worker's failing tasks must still be logged.
    logging.getLogger(SDK_CORE_LOGGER).addFilter(_ReplayFailureReported())
    bundle = asyncio.run(load_call(args.call, address=args.address))
    checks = asyncio.run(verify_call(bundle))
    print(f"call {bundle.call_id}")
    print("\n".join(report_lines(checks)))
    return 1 if any(not check.passed for check in checks) else 0
