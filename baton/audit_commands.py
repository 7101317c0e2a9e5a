"""`baton history export` and `baton audit ...`: a call read from its Temporal history alone.

`audit` is a subcommand group: `report` lives here, and each further audit command adds its
own parser to the group in `add_parsers`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from temporalio.client import Client

from audit.bundle import export_call, load_call, write_bundle
from audit.report import FORMATS, render
from audit.timeline import read_timeline
from baton import verify_command


def add_parsers(commands: Any) -> None:
    history = commands.add_parser("history", help="export a call's Temporal history")
    history_actions = history.add_subparsers(dest="history_action", required=True, metavar="ACTION")
    export = history_actions.add_parser(
        "export",
        help="write every run of a call, its pinned snapshot and their hashes to one file",
    )
    export.add_argument("call_id", metavar="CALL_ID")
    export.add_argument(
        "-o", "--output", metavar="FILE", help="where to write (default CALL_ID.bundle.json)"
    )
    export.add_argument("--address", help="Temporal address (default: as `baton server`)")
    export.set_defaults(handler=run_export)

    audit = commands.add_parser("audit", help="read and check a call from its history alone")
    audit_actions = audit.add_subparsers(dest="audit_action", required=True, metavar="ACTION")
    report = audit_actions.add_parser(
        "report", help="the call as a timeline (Markdown, one HTML file, or JSON)"
    )
    report.add_argument("source", metavar="CALL_ID|FILE", help="a call id or a bundle file")
    report.add_argument("--format", choices=FORMATS, default="md")
    report.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    report.add_argument("--address", help="Temporal address, for a call id")
    report.set_defaults(handler=run_report)
    verify_command.add_parser(audit_actions)


def run_export(args: argparse.Namespace) -> int:
    bundle = asyncio.run(export_call(args.call_id, address=args.address))
    path = Path(args.output or f"{args.call_id}.bundle.json")
    write_bundle(bundle, path)
    events = sum(len(run.history.get("events", [])) for run in bundle.runs)
    print(f"wrote {path}: {len(bundle.runs)} run(s), {events} events", file=sys.stderr)
    return 0


async def export_to_file(client: Client, call_id: str, path: Path) -> None:
    """Export one call while its server still runs (`baton demo --export`)."""
    bundle = await export_call(call_id, client=client)
    write_bundle(bundle, path)
    print(f"\ncall {bundle.call_id} exported to {path}: baton audit report {path}", flush=True)


def run_report(args: argparse.Namespace) -> int:
    async def read() -> str:
        bundle = await load_call(args.source, address=args.address)
        return render(await read_timeline(bundle), args.format)

    text = asyncio.run(read())
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
