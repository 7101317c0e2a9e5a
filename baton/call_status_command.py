"""`baton call status CALL_ID`: where a call stands, and which media gateway holds it.

One `summary` query: status, active agent, turn, end reason and, for a voice call, the gateway
its lease names (id, media address, since when). `--json` prints the query's result as is.
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import timedelta
from typing import Any

from temporalio.client import WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from baton.preflight import CommandFailedError, connect_or_explain
from contracts.calls import QUERY_SUMMARY, CallSummary
from contracts.temporal import workflow_id_for

#: A running call answers at once; a closed one is replayed by a worker first.
_QUERY_TIMEOUT = timedelta(seconds=15)


def add_status_parser(commands: Any) -> None:
    """`status` beside `supervise` under `baton call`."""
    status = commands.add_parser("status", help="where a call stands and which gateway holds it")
    status.add_argument("call_id", metavar="CALL_ID")
    status.add_argument("--json", action="store_true", help="print the summary as JSON")
    status.add_argument("--address", help="Temporal address")
    status.set_defaults(handler=run_status_command)


def run_status_command(args: argparse.Namespace) -> int:
    async def main() -> int:
        client = await connect_or_explain(args.address)
        handle = client.get_workflow_handle(workflow_id_for(args.call_id))
        try:
            summary = await handle.query(
                QUERY_SUMMARY, result_type=CallSummary, rpc_timeout=_QUERY_TIMEOUT
            )
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise CommandFailedError(f"no call {args.call_id!r} on this server") from None
            raise CommandFailedError(f"call {args.call_id!r} could not be read: {error}") from None
        except WorkflowQueryFailedError as error:
            raise CommandFailedError(f"call {args.call_id!r} could not be read: {error}") from None
        if args.json:
            print(summary.model_dump_json(indent=2))
            return 0
        print(
            f"call {args.call_id}: {summary.status}, agent {summary.active_agent}, "
            f"turn {summary.turn}"
        )
        if summary.end_reason:
            print(f"  ended: {summary.end_reason}")
        holder = summary.gateway
        if holder is None:
            print("  gateway: none named (a text call, or no renewal yet)")
        else:
            print(
                f"  gateway: {holder.gateway_id} at {holder.gateway_address}, holding since "
                f"{holder.since:%Y-%m-%d %H:%M:%S} UTC"
            )
        return 0

    return asyncio.run(main())
