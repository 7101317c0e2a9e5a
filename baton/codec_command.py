"""`baton codec-server`: the Temporal Web UI's remote codec, so people with the token see a
call's payloads decrypted in the UI while the store keeps ciphertext."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from aiohttp import web

from registries.errors import BatonError
from runtime.codec import EncryptionCodec, load_keys
from runtime.codec_server import codec_app
from runtime.settings import settings

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def add_parser(commands: Any) -> None:
    codec = commands.add_parser(
        "codec-server", help="serve the Web UI's codec endpoint (decrypts payloads for the UI)"
    )
    codec.add_argument("--host", default="127.0.0.1")
    codec.add_argument("--port", type=int, default=8081)
    codec.add_argument(
        "--ui-origin",
        default="http://127.0.0.1:8233",
        help="the Web UI's origin, the only one CORS lets in",
    )
    codec.set_defaults(handler=run_codec_command)


def run_codec_command(args: argparse.Namespace) -> int:
    token = settings().codec_server_token
    if token is None and args.host not in LOOPBACK:
        raise BatonError(
            "a codec server off loopback decrypts calls for anyone who reaches it; set "
            "BATON_CODEC_SERVER_TOKEN and give the same token to the UI"
        )

    async def main() -> None:
        runner = await start_codec_server(args.host, args.port, token, args.ui_origin)
        print(f"codec server at http://{args.host}:{args.port} for {args.ui_origin}", flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
    return 0


async def start_codec_server(
    host: str, port: int, token: str | None, ui_origin: str | None
) -> web.AppRunner:
    """Serve the codec endpoint until the returned runner is cleaned up."""
    app = codec_app(EncryptionCodec(load_keys(settings())), token=token, ui_origin=ui_origin)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
