"""`baton call supervise CALL_ID`: a supervisor's hand on a live call from the terminal.

Exactly one action: `--transfer AGENT`, `--add-route A:B`, `--remove-route A:B`,
`--retarget A:B:C` (the route A -> B now leads to C) or `--hang-up`. Route changes apply to this
call only, from its next handoff on; the call refuses what cannot apply and says why (exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from baton.call_status_command import add_status_parser
from baton.preflight import CommandFailedError, connect_or_explain
from runtime.supervision import SupervisionError, parse_action, supervise


def add_supervise_parser(call: argparse.ArgumentParser) -> None:
    """`supervise` (and `status`) under `baton call` (a plain `baton call` still places a text
    call)."""
    commands = call.add_subparsers(dest="call_command", metavar="{supervise,status}")
    add_status_parser(commands)
    supervise_parser = commands.add_parser(
        "supervise", help="transfer, change routes of, or hang up a live call"
    )
    supervise_parser.add_argument("call_id", metavar="CALL_ID")
    action = supervise_parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--transfer", metavar="AGENT", help="move the caller to AGENT now")
    action.add_argument("--add-route", metavar="FROM:TO", help="allow handoffs FROM -> TO")
    action.add_argument("--remove-route", metavar="FROM:TO", help="refuse handoffs FROM -> TO")
    action.add_argument(
        "--retarget", metavar="FROM:TO:NEW", help="the route FROM -> TO leads to NEW instead"
    )
    action.add_argument("--hang-up", action="store_true", help="end the call")
    supervise_parser.add_argument(
        "--type", choices=("announced", "discrete"), help="with --add-route: the route's type"
    )
    supervise_parser.add_argument(
        "--condition", default="", help="with --add-route: when the agent should take it"
    )
    supervise_parser.add_argument("--reason", default="", help="why (kept in the call's record)")
    supervise_parser.add_argument("--supervisor", default="supervisor", help="who acts")
    supervise_parser.add_argument("--address", help="Temporal address")
    supervise_parser.set_defaults(handler=run_supervise_command)


def run_supervise_command(args: argparse.Namespace) -> int:
    fields: dict[str, Any] = {
        "transfer": args.transfer,
        "add_route": args.add_route,
        "remove_route": args.remove_route,
        "retarget": args.retarget,
        "hang_up": args.hang_up,
        "type": args.type,
        "condition": args.condition,
    }
    try:
        action = parse_action(fields, args.reason, args.supervisor)
    except SupervisionError as error:
        raise CommandFailedError(str(error)) from None

    async def main() -> int:
        client = await connect_or_explain(args.address)
        try:
            outcome = await supervise(client, args.call_id, action)
        except SupervisionError as error:
            raise CommandFailedError(f"refused: {error}") from None
        print(outcome.message)
        if outcome.routes:
            print(f"routes of call {args.call_id}:")
            for route in outcome.routes:
                origin = "" if route.origin == "scenario" else f"  [{route.origin}]"
                print(f"  {route.from_agent} -> {route.to_agent} ({route.type}){origin}")
        return 0

    return asyncio.run(main())
