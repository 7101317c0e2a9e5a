"""`baton gateway`: callers' audio (browser, Twilio, ACS) and the speech workers' media plane."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import secrets
import socket
from pathlib import Path
from typing import Any

from baton.ops_options import OpsPlan, add_metrics_options, prepare_observability, serving_ops
from baton.preflight import connect_or_explain
from baton.scenario_commands import add_registry_option
from registries.errors import BatonError
from runtime.settings import settings


def add_parser(commands: Any) -> None:
    gateway = commands.add_parser("gateway", help="the media gateway (caller audio, web softphone)")
    add_gateway_options(gateway)
    gateway.add_argument(
        "--softphone",
        action="store_true",
        help="also serve the web softphone and POST /api/calls, which mints call tokens "
        "(needs BATON_OPERATOR_KEY unless --host is loopback)",
    )
    gateway.add_argument("--address", help="Temporal address")
    gateway.add_argument(
        "--event-loop",
        choices=("uvloop", "asyncio"),
        default="uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        help="uvloop (the default where installed) wakes for each 20 ms frame for less CPU: "
        "0.8-0.9x the gateway's CPU per call stream (docs/PERFORMANCE.md)",
    )
    add_registry_option(gateway)
    add_metrics_options(gateway)
    gateway.set_defaults(handler=run_gateway_command)


def add_gateway_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="HTTP/WebSocket listen host")
    parser.add_argument("--http-port", type=int, default=8765)
    parser.add_argument(
        "--media-address",
        default="127.0.0.1:8766",
        help="gRPC address speech workers reach this gateway on (it travels with each call); "
        f"host {AUTO_HOST!r} advertises this machine's own address, so replicas started alike "
        "each advertise themselves",
    )
    parser.add_argument(
        "--media-listen",
        metavar="HOST:PORT",
        help="where the media plane binds (default: --media-address; 0.0.0.0 for 'auto')",
    )
    parser.add_argument("--scenario", default="banking", help="scenario for new calls")
    parser.add_argument(
        "--min-barge-in-ms",
        type=int,
        default=160,
        help="caller speech over a reply shorter than this pauses it but does not interrupt",
    )
    parser.add_argument(
        "--endpointing",
        choices=("adaptive", "fixed"),
        default="adaptive",
        help="adaptive: quiet ends an utterance sooner after a finished sentence, later after "
        "a trailing 'and' (by its provisional words); fixed: 400 ms of quiet always",
    )
    parser.add_argument(
        "--word-wait-ms",
        type=int,
        default=2000,
        help="how long a reply paused under caller speech waits at least, once the caller "
        "pauses, for the recognizer's words before it is cut; the wait follows the "
        "recognizer's recent pace up to --max-word-wait-ms (default %(default)s)",
    )
    parser.add_argument(
        "--max-word-wait-ms",
        type=int,
        default=6000,
        help="the longest a paused reply waits for the words, however slow the recognizer "
        "has lately been (default %(default)s)",
    )
    parser.add_argument(
        "--cut-at-once",
        action="store_true",
        help="speech over a reply cuts it as soon as it lasts, without waiting for the words "
        "(by default a backchannel such as 'mm-hmm' resumes the reply instead)",
    )
    parser.add_argument("--tls-cert", help="PEM certificate: serve https:// and wss:// callers")
    parser.add_argument("--tls-key", help="PEM private key for --tls-cert")
    parser.add_argument(
        "--drain-seconds",
        type=seconds_arg,
        default=GATEWAY_DRAIN_SECONDS,
        help="on SIGTERM: refuse new calls, keep live ones this long, then hand the rest back "
        "once their current reply has played (default %(default)s)",
    )


AUTO_HOST = "auto"


def media_addresses(advertised: str, listen: str | None) -> tuple[str, str]:
    """(address calls carry, address the media plane binds) for the media options.

    With host `auto` a gateway advertises the address its own host name resolves to: in a
    container that is the container's address on its network, so replicas of one compose
    service or pod template, started with identical flags, each hand speech workers their own.
    """
    host, sep, port = advertised.rpartition(":")
    if not sep or not port.isdigit():
        raise BatonError(f"--media-address {advertised!r} is not HOST:PORT")
    if host != AUTO_HOST:
        return advertised, listen or advertised
    if port == "0":
        raise BatonError("--media-address auto needs a fixed port (workers dial it)")
    try:
        own = socket.gethostbyname(socket.gethostname())
    except OSError as exc:
        raise BatonError(
            f"--media-address auto: this host's name does not resolve ({exc}); give the "
            "address speech workers reach this gateway on"
        ) from exc
    return f"{own}:{port}", listen or f"0.0.0.0:{port}"


#: Calls last minutes, so a drain cannot wait for all of them; those left are handed back.
GATEWAY_DRAIN_SECONDS = 30.0
#: The process exits this long after SIGTERM whatever happens: the drain, then each call's
#: hand-back (media_gateway.drain.HANDBACK_SECONDS), then the close, with room to spare.
EXIT_SLACK_SECONDS = 25.0


def seconds_arg(text: str) -> float:
    """An option's number of seconds, refused (as a usage error) unless 0 to 3600."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 3600")
    return value


def gateway_secret() -> bytes:
    """BATON_GATEWAY_SECRET, or a fresh random one for this process (tokens die with it)."""
    from media_gateway.tokens import secret_from_env

    if not settings().gateway_secret:
        return secrets.token_bytes(32)
    try:
        return secret_from_env()
    except ValueError as exc:
        raise BatonError(str(exc)) from exc


OFFLINE_TTS = "activities.speech_providers.offline_tts"


async def offline_voice(text: str) -> bytes:
    """`text` in the offline voice (espeak-ng, in this process): the gateway's own voice for
    the notices it says when no worker serves a call (media_gateway.unserved)."""
    # Imported off the event loop: the gateway is already taking its callers back meanwhile.
    tts = await asyncio.to_thread(importlib.import_module, OFFLINE_TTS)
    return b"".join([chunk.pcm16_16k async for chunk in tts.EspeakSynthesizer().synthesize(text)])


async def serve_gateway(
    args: argparse.Namespace,
    temporal_address: str | None,
    stop: asyncio.Event,
    *,
    softphone: bool,
    ops: OpsPlan | None = None,
) -> None:
    from media_gateway.gateway_config import (
        ADAPTIVE_ENDPOINTING,
        FIXED_ENDPOINTING,
        GatewayConfig,
    )
    from media_gateway.server import (
        SoftphoneAccess,
        check_softphone_access,
        start_gateway,
        tls_context,
    )
    from media_gateway.silero_vad import SileroModelError, load_session

    # Every refusal of the options comes before anything connects or listens.
    if bool(args.tls_cert) != bool(args.tls_key):
        raise BatonError("--tls-cert and --tls-key go together: give both, or neither")
    access = SoftphoneAccess(softphone, settings().operator_key)
    try:
        check_softphone_access(args.host, access)
        tls = tls_context(args.tls_cert, args.tls_key) if args.tls_cert else None
    except (OSError, ValueError) as exc:
        raise BatonError(str(exc)) from exc
    media_address, media_listen = media_addresses(args.media_address, args.media_listen)
    registry = getattr(args, "registry", None)
    try:
        config = GatewayConfig(
            media_address=media_address,
            scenario=args.scenario,
            registry=str(Path(registry).resolve()) if registry else None,
            min_barge_in_ms=args.min_barge_in_ms,
            endpointing=(
                ADAPTIVE_ENDPOINTING if args.endpointing == "adaptive" else FIXED_ENDPOINTING
            ),
            hold_for_words=not args.cut_at_once,
            word_wait_ms=args.word_wait_ms,
            max_word_wait_ms=args.max_word_wait_ms,
            vad=settings().vad or "offline",
        )
        if config.vad == "offline":
            load_session()  # a missing or altered model refuses to start, not the first call
    except (ValueError, SileroModelError) as exc:
        raise BatonError(f"BATON_VAD: {exc}") from exc
    client = await connect_or_explain(temporal_address)
    gateway = await start_gateway(
        client,
        config,
        gateway_secret(),
        host=args.host,
        http_port=args.http_port,
        media_listen=media_listen,
        softphone=access,
        tls=tls,
        notice_voice=offline_voice,
    )
    where = f"{'https' if tls else 'http'}://{args.host}:{gateway.http_port}/"
    media = gateway.registry.config.media_address
    front = f"softphone {where}, console {where}console" if softphone else where
    print(f"media gateway: {front}, media plane {media}", flush=True)
    async with serving_ops(ops, gateway.is_ready):
        try:
            await stop.wait()
        except BaseException:
            await gateway.close()
            raise
        await gateway.drain(args.drain_seconds)


def run_gateway_command(args: argparse.Namespace) -> int:
    from workers.worker import stop_on_signals

    ops = prepare_observability(args, "baton-gateway")

    async def main() -> None:
        stop = asyncio.Event()
        stop_on_signals(stop, exit_after=args.drain_seconds + EXIT_SLACK_SECONDS)
        await serve_gateway(args, args.address, stop, softphone=args.softphone, ops=ops)

    if args.event_loop == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())
    return 0
