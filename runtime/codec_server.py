"""Temporal's remote codec endpoint, so the Web UI (or `temporal` CLI) can show decrypted
payloads to those allowed to read them.

`POST /decode` and `POST /encode` take and return `{"payloads": [...]}` in protobuf JSON, as
the Temporal Web UI sends it. Every request but a CORS preflight needs the bearer token when
one is configured; CORS answers only the configured UI origin.

The Web UI can send a bearer token only from its own OIDC login, so a person signs in here
once instead: `GET /login` is a form that takes the token, and a right one sets a session
cookie (HttpOnly, SameSite=Strict, 8 hours) which the UI sends with "include cross-origin
credentials" on. The cookie holds an expiry and an HMAC of it under the token, never the
token, so changing the token ends every session.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from cryptography.exceptions import InvalidTag
from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
_MAX_BODY = 4 * 1024 * 1024  # Temporal payloads are at most 2 MB each; a UI batch stays small
SESSION_COOKIE = "baton_codec_session"
SESSION_SECONDS = 8 * 3600
_LOGIN_FORM = """<!doctype html><meta charset="utf-8"><title>Baton codec server</title>
<form method="post" action="login"><label>Codec server token
<input type="password" name="token" autocomplete="off" autofocus></label>
<button>Sign in</button></form>"""


def codec_app(codec: PayloadCodec, *, token: str | None, ui_origin: str | None) -> web.Application:
    """The codec endpoint as an aiohttp application."""

    @web.middleware
    async def cors_and_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        allowed = ui_origin is not None and request.headers.get("Origin") == ui_origin
        if request.method == "OPTIONS":
            response: web.StreamResponse = web.Response(status=204 if allowed else 403)
        elif request.path == "/login":
            response = await handler(request)
        elif token is not None and not (
            _bearer_matches(request, token) or _session_valid(request, token)
        ):
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

    async def login_form(request: web.Request) -> web.Response:
        return web.Response(text=_LOGIN_FORM, content_type="text/html")

    async def login(request: web.Request) -> web.Response:
        given = str((await request.post()).get("token", ""))
        if token is None or not hmac.compare_digest(given.encode(), token.encode()):
            return web.Response(status=401, text="wrong token", content_type="text/plain")
        response = web.Response(text="Signed in: the Web UI can now show decrypted payloads.")
        response.set_cookie(
            SESSION_COOKIE,
            _new_session(token),
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="Strict",
            secure=request.secure,
        )
        return response

    app = web.Application(middlewares=[cors_and_auth], client_max_size=_MAX_BODY)
    app.router.add_get("/login", login_form)
    app.router.add_post("/login", login)
    app.router.add_post("/decode", decode)
    app.router.add_post("/encode", encode)
    app.router.add_route("OPTIONS", "/{tail:.*}", decode)  # answered by the middleware
    return app


def _bearer_matches(request: web.Request, token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


def _session_mac(token: str, expires: str) -> str:
    return hmac.new(token.encode(), f"codec-session:{expires}".encode(), hashlib.sha256).hexdigest()


def _new_session(token: str) -> str:
    expires = str(int(time.time()) + SESSION_SECONDS)
    return f"{expires}.{_session_mac(token, expires)}"


def _session_valid(request: web.Request, token: str) -> bool:
    expires, _, mac = request.cookies.get(SESSION_COOKIE, "").partition(".")
    if not expires.isdigit() or int(expires) < time.time():
        return False
    return hmac.compare_digest(mac, _session_mac(token, expires))
