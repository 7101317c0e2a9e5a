"""`baton worker`, `baton dev`, `baton call` and `baton demo`: running calls for real."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from baton import audit_commands, text_call
from baton.call_client import CallSession
from baton.codec_command import start_codec_server
from baton.gateway_command import add_gateway_options, seconds_arg, serve_gateway
from baton.ops_options import add_metrics_options, prepare_observability, serving_ops
from baton.preflight import (
    connect_or_explain,
    providers_in_use,
    require_provider_settings,
    require_scenario,
)
from baton.scenario_commands import add_registry_option
from baton.supervise_command import add_supervise_parser
from baton.temporal_server import DevServerOptions, EmbeddedTemporal, default_db_file, free_port
from contracts.calls import CallInput
from registries.errors import BatonError
from runtime.codec import new_key_line
from runtime.paths import create_private_file, data_dir
from runtime.settings import settings
from runtime.temporal_client import connect, temporal_address
from workers.tuning import SHUTDOWN_SLACK_SECONDS, WorkerTuning

DEMO_SCRIPT = Path(__file__).parent / "demo_scripts" / "banking.txt"
#: The voice demo's script: the same call, ending in a transfer to a person on the console
#: (a text call has no line to hand over, so `--text` keeps the script ending in goodbye).
VOICE_DEMO_SCRIPT = Path(__file__).parent / "demo_scripts" / "banking_transfer.txt"
ALL_QUEUES = ["calls", "llm", "speech", "tools"]
DEMO_PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}


def add_parsers(commands: Any) -> None:
    worker = commands.add_parser("worker", help="serve worker queues against a Temporal server")
    worker.add_argument(
        "--queues",
        default="calls,llm,speech,tools",
        help="comma-separated: calls, llm, speech, tools (default: all)",
    )
    worker.add_argument(
        "--address", help="Temporal address (default $BATON_TEMPORAL_ADDRESS or 127.0.0.1:7233)"
    )
    add_worker_tuning_options(worker)
    add_metrics_options(worker)
    worker.set_defaults(handler=run_worker_command)

    dev = commands.add_parser(
        "dev", help="embedded Temporal server, every worker queue and the media gateway"
    )
    dev.add_argument("--port", type=int, default=7233)
    dev.add_argument("--ui", action="store_true", help="also serve the Temporal Web UI")
    dev.add_argument("--db-file", type=Path, default=None, help="SQLite file for calls")
    add_gateway_options(dev)
    dev.add_argument(
        "--no-softphone", action="store_true", help="do not serve the web softphone or /api/calls"
    )
    add_registry_option(dev)
    dev.set_defaults(handler=run_dev_command)

    call = commands.add_parser("call", help="a text call in the terminal")
    call.add_argument("--scenario", default="banking")
    call.add_argument("--script", type=Path, help="one caller utterance per line")
    call.add_argument("--json", action="store_true", help="print final state and timeline")
    call.add_argument(
        "--profile",
        default=json.dumps(DEMO_PROFILE),
        help="caller profile as JSON (default: demo customer C1001)",
    )
    call.add_argument("--call-id", default=None)
    call.add_argument("--address", help="Temporal address")
    add_registry_option(call)
    call.set_defaults(handler=run_call_command)
    add_supervise_parser(call)

    demo = commands.add_parser(
        "demo", help="embedded stack + a scripted banking call, timeline printed live"
    )
    demo.add_argument(
        "--script",
        type=Path,
        help="the caller's lines (default: a call that ends in a transfer to a person on the "
        "console; with --text, one that ends in goodbye)",
    )
    demo.add_argument("--scenario", default="banking")
    demo.add_argument(
        "--text", action="store_true", help="type the script instead of speaking it (no audio)"
    )
    demo.add_argument(
        "--export",
        type=Path,
        metavar="FILE",
        help="write the call's audit bundle here before the demo's server stops "
        "(then: baton audit report FILE)",
    )
    add_registry_option(demo)
    demo.set_defaults(handler=run_demo_command)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def add_worker_tuning_options(parser: argparse.ArgumentParser) -> None:
    """`baton worker`'s limits (defaults and the measurements behind them: PERFORMANCE.md)."""
    default = WorkerTuning()
    tuning = parser.add_argument_group("tuning (per process; see docs/PERFORMANCE.md)")
    tuning.add_argument(
        "--max-workflow-tasks",
        type=_positive,
        default=default.max_workflow_tasks,
        help="calls queue: workflow tasks run at once (default %(default)s)",
    )
    tuning.add_argument(
        "--max-activities",
        type=_positive,
        default=default.max_activities,
        help="activities run at once on each activity queue served "
        "(default: 100; tools: 16 threads)",
    )
    tuning.add_argument(
        "--pollers",
        type=_positive,
        default=default.pollers,
        help="long polls held open per queue and task kind (default %(default)s)",
    )
    tuning.add_argument(
        "--sticky-cache",
        type=_positive,
        default=default.sticky_cache,
        help="calls kept in memory between turns, about 120 KB each (default %(default)s)",
    )
    tuning.add_argument(
        "--drain-seconds",
        type=seconds_arg,
        default=default.drain_seconds,
        help="on SIGTERM: stop polling and give held activities this long to finish "
        "(default %(default)s)",
    )


def worker_tuning(args: argparse.Namespace) -> WorkerTuning:
    """The limits `add_worker_tuning_options` parsed."""
    return WorkerTuning(
        max_workflow_tasks=args.max_workflow_tasks,
        max_activities=args.max_activities,
        pollers=args.pollers,
        sticky_cache=args.sticky_cache,
        drain_seconds=args.drain_seconds,
    )


def run_worker_command(args: argparse.Namespace) -> int:
    from workers.worker import ServingState, parse_queues, run_workers, stop_on_signals

    try:
        queues = parse_queues(args.queues)
    except ValueError as exc:
        raise BatonError(str(exc)) from exc
    require_provider_settings(queues)
    tuning = worker_tuning(args)

    ops = prepare_observability(args, "baton-worker")

    async def main() -> None:
        client = await connect_or_explain(args.address)
        stop = asyncio.Event()
        # The last resort comes after run_workers' own bound, so it only ends a stuck drain.
        stop_on_signals(stop, exit_after=tuning.drain_seconds + 2 * SHUTDOWN_SLACK_SECONDS)
        print(f"worker serving {', '.join(queues)} on {temporal_address(args.address)}", flush=True)
        state = ServingState()
        async with serving_ops(ops, state.is_ready):
            await run_workers(client, queues, stop, tuning=tuning, state=state)

    asyncio.run(main())
    return 0


def run_dev_command(args: argparse.Namespace) -> int:
    from workers.worker import run_workers, stop_on_signals

    require_provider_settings(ALL_QUEUES)

    codec_port = free_port() if args.ui else None
    # The codec server decrypts every call for whoever reaches it, and anyone on this machine
    # reaches loopback: it never runs open. Without a configured token, each run makes one.
    codec_token = settings().codec_server_token or secrets.token_urlsafe(32)
    options = DevServerOptions(
        port=args.port,
        ui=args.ui,
        db_filename=args.db_file or default_db_file(),
        # The UI shows decrypted payloads through a codec server on loopback (started below).
        ui_codec_endpoint=f"http://127.0.0.1:{codec_port}" if codec_port else None,
    )
    with EmbeddedTemporal(options) as server:
        print(
            f"Temporal dev server at {server.address}"
            + (f", UI {server.ui_url}" if server.ui_url else "")
            + (f" (decrypting through 127.0.0.1:{codec_port})" if codec_port else ""),
            flush=True,
        )

        async def main() -> None:
            client = await connect(server.address)
            stop = asyncio.Event()
            stop_on_signals(stop)
            codec = None
            if codec_port is not None:
                codec = await start_codec_server(
                    "127.0.0.1", codec_port, codec_token, server.ui_url
                )
                print(_codec_server_use(codec_port, codec_token), flush=True)
            print("workers serving calls, llm, speech, tools. Ctrl-C stops.", flush=True)
            try:
                await asyncio.gather(
                    run_workers(client, ALL_QUEUES, stop),
                    serve_gateway(args, server.address, stop, softphone=not args.no_softphone),
                )
            finally:
                if codec is not None:
                    await codec.cleanup()

        asyncio.run(main())
    return 0


def _codec_server_use(port: int, token: str) -> str:
    """How a person reads calls decrypted through `baton dev --ui`'s codec server. A token made
    for this run is shown (it is the only way to learn it, and it dies with the run); a
    configured one is named, never printed."""
    if settings().codec_server_token is not None:
        said, shown = "the token in BATON_CODEC_SERVER_TOKEN", "$BATON_CODEC_SERVER_TOKEN"
    else:
        said = shown = token
        said += " (made for this run; set BATON_CODEC_SERVER_TOKEN to keep one)"
    endpoint = f"http://127.0.0.1:{port}"
    return (
        f"codec server token: {said}\n"
        f"  Web UI: sign in once at {endpoint}/login with it, then turn on 'Include cross-origin "
        "credentials' in the UI's codec server settings\n"
        f"  CLI: temporal workflow show -w call-ID --codec-endpoint {endpoint} "
        f"--codec-auth 'Bearer {shown}'"
    )


def _call_input(args: argparse.Namespace) -> CallInput:
    try:
        # `baton demo` has no --profile: it always calls as the demo customer.
        profile = json.loads(args.profile) if getattr(args, "profile", None) else DEMO_PROFILE
    except json.JSONDecodeError as exc:
        raise BatonError(f"--profile is not valid JSON: {exc}") from exc
    return CallInput(
        call_id=getattr(args, "call_id", None) or f"cli-{uuid.uuid4().hex[:10]}",
        scenario=args.scenario,
        caller_profile=profile,
        registry=str(Path(args.registry).resolve()) if args.registry else None,
    )


def run_call_command(args: argparse.Namespace) -> int:
    return text_call.run_call_command(args, _call_input(args))


def run_demo_command(args: argparse.Namespace) -> int:
    """Everything in one process: embedded server (in memory), all workers, one call."""
    from workers.worker import run_workers

    lines = text_call.read_script(args.script or (DEMO_SCRIPT if args.text else VOICE_DEMO_SCRIPT))
    require_scenario(args.scenario, _call_input(args).registry)
    require_provider_settings(ALL_QUEUES)
    # A fresh demo world each run (unless the user chose one), so the story always replays.
    scratch = None if settings().data_dir else tempfile.TemporaryDirectory()
    history_key = None
    if scratch is not None:
        history_key = _keep_history_key_outside_scratch()
        os.environ["BATON_DATA_DIR"] = scratch.name
    with EmbeddedTemporal(DevServerOptions()) as server:
        how = (
            "text (no audio)"
            if args.text
            else "the script is spoken into the media gateway in real time"
        )
        print(
            f"Embedded Temporal dev server at {server.address}; workers: all queues; "
            f"{providers_in_use(settings())}; {how}\n",
            flush=True,
        )

        async def main() -> None:
            client = await connect(server.address)
            stop = asyncio.Event()
            workers = asyncio.create_task(run_workers(client, ALL_QUEUES, stop))
            call = _call_input(args)
            try:
                if args.text:
                    await text_call.converse(CallSession(client, call), lines, worker_here=True)
                else:
                    from baton.voice_demo import voice_call

                    await voice_call(client, call.call_id, lines, args.scenario, call.registry)
            finally:
                stop.set()
                await workers
            if args.export is not None:  # the demo's server keeps nothing once it stops
                await audit_commands.export_to_file(client, call.call_id, args.export)
                if history_key is not None:
                    print(f"its payloads are encrypted with the history key in {history_key}")

        asyncio.run(main())
    if scratch is not None:
        scratch.cleanup()
    sys.stdout.flush()
    return 0


def _keep_history_key_outside_scratch() -> Path | None:
    """The demo's scratch data folder is deleted when it ends, and a history key made there
    would go with it: a bundle the demo exported could then never be read. So, unless keys are
    configured, the demo encrypts with the data folder's own key file (made now if missing,
    mode 0600), the same one `baton dev` and `baton audit` use."""
    config = settings()
    if config.codec_keys or config.codec_key_file:
        return None
    path = data_dir() / "codec-keys"
    create_private_file(path, new_key_line() + "\n")
    os.environ["BATON_CODEC_KEY_FILE"] = str(path)
    return path
