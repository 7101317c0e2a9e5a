"""The `baton` command: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from baton import (
    audit_commands,
    codec_command,
    gateway_command,
    scenario_commands,
    stack_commands,
    temporal_server,
    temporal_setup,
    ticket_commands,
)
from baton.preflight import CommandFailedError
from registries.errors import BatonError, RegistryError
from runtime.logs import configure_logging
from runtime.settings import settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="baton", description="Durable handoff orchestration for AI voice agents."
    )
    parser.add_argument(
        "--debug", action="store_true", help="show tracebacks (also BATON_LOG_LEVEL=DEBUG)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    scenario_commands.add_parser(commands)
    temporal_server.add_parser(commands)
    temporal_setup.add_parser(commands)
    stack_commands.add_parsers(commands)
    gateway_command.add_parser(commands)
    codec_command.add_parser(commands)
    audit_commands.add_parsers(commands)
    ticket_commands.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; user errors print a clear message and never a traceback."""
    args = build_parser().parse_args(argv)
    # The demo's output is its timeline, a test run's its results, an audit command's its report;
    # their logs only speak up for problems.
    quiet = (
        args.command in ("demo", "history", "audit", "tickets")
        or getattr(args, "scenario_command", None) == "test"
    )
    configure_logging("WARNING" if quiet else "INFO")
    try:
        return int(args.handler(args))
    except RegistryError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s); fix them and run again.", file=sys.stderr)
        return 1
    except CommandFailedError as exc:
        print(f"baton: {exc}", file=sys.stderr)
        return 1
    except BatonError as exc:
        print(f"baton: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if args.debug or (settings().log_level or "").upper() == "DEBUG":
            raise
        print(f"baton: {type(exc).__name__}: {exc}".splitlines()[0][:300], file=sys.stderr)
        print("baton: run with --debug for the traceback", file=sys.stderr)
        return 1


def run() -> None:
    """Console entry point: `main`, then an exit that skips teardown once Temporal was used.

    The SDK's native runtime threads can still call into Python while the interpreter
    finalizes, which sometimes aborts a process whose work finished cleanly (seen here:
    SIGABRT/SIGSEGV after the last output). By now every command has drained its workers,
    stopped its servers and printed everything, so the teardown adds nothing.
    """
    code = main()
    if "temporalio.bridge.runtime" in sys.modules:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
