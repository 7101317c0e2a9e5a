"""Temporal's remote codec endpoint, so the Web UI (or `temporal` CLI) can show decrypted
payloads to those allowed to read them.

`POST /decode` and `POST /encode` take and return `{"payloads": [...]}` in protobuf JSON, as
the Temporal Web UI sends it. Every request but a CORS preflight needs the bearer token when
one is configured; CORS answers only the configured UI origin.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web
from cryptography.exceptions import InvalidTag
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_MAX_BODY = 4 * 1024 * 1024  # Temporal payloads are at most 2 MB each; a UI batch stays small


def codec_app(codec: PayloadCodec, *, token: str | None, ui_origin: str | None) -> web.Application:
    """The codec endpoint as an aiohttp application."""

    @web.middleware
    async def cors_and_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        allowed = ui_origin is not None and request.headers.get("Origin") == ui_origin
        if request.method == "OPTIONS":
            response: web.StreamResponse = web.Response(status=204 if allowed else 403)
        elif token is not None and not _bearer_matches(request, token):
            response = web.json_response({"error": "a valid bearer token is required"}, status=401)
        else:
            response = await handler(request)
        if allowed:
            response.headers.update(
                {
                    "Access-Control-Allow-Origin": ui_origin or "",
                    "Access-Control-Allow-Methods": "POST, OPTIONS",
                    "Access-Control-Allow-Headers": "Content-Type, Authorization, X-Namespace",
                    "Access-Control-Allow-Credentials": "true",
                    "Vary": "Origin",
                }
            )
        return response

    async def transform(request: web.Request, encode: bool) -> web.Response:
        try:
            payloads = json_format.Parse(await request.text(), Payloads())
        except json_format.ParseError as error:
            return web.json_response({"error": f"not a Payloads message: {error}"}, status=400)
        work = codec.encode if encode else codec.decode
        try:
            result = await work(list(payloads.payloads))
        except (ValueError, InvalidTag) as error:  # a key that is missing, or tampered data
            return web.json_response({"error": str(error)}, status=422)
        body = json_format.MessageToJson(Payloads(payloads=result))
        return web.Response(text=body, content_type="application/json")

    async def decode(request: web.Request) -> web.Response:
        return await transform(request, encode=False)

    async def encode(request: web.Request) -> web.Response:
        return await transform(request, encode=True)

    app = web.Application(middlewares=[cors_and_auth], client_max_size=_MAX_BODY)
    app.router.add_post("/decode", decode)
    app.router.add_post("/encode", encode)
    app.router.add_route("OPTIONS", "/{tail:.*}", decode)  # answered by the middleware
    return app


def _bearer_matches(request: web.Request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)
