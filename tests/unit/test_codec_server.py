"""The Web UI's codec endpoint decrypts for token holders only, and speaks protobuf JSON."""

from __future__ import annotations

import base64
import hmac
import json
import time
from collections.abc import AsyncIterator
from hashlib import sha256
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio
from temporalio.api.common.v1 import Payload

from baton.temporal_server import DevServerOptions, server_command
from runtime.codec import EncryptionCodec, new_key_line, parse_keys
from runtime.codec_server import codec_app

UI = "http://127.0.0.1:8233"
CODEC = EncryptionCodec(parse_keys(new_key_line("k1"), "test"))


@pytest_asyncio.fixture
async def base_url() -> AsyncIterator[str]:
    runner = aiohttp.web.AppRunner(codec_app(CODEC, token="s3cret", ui_origin=UI))
    await runner.setup()
    site = aiohttp.web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def as_json(payload: Payload) -> dict[str, object]:
    return {
        "metadata": {k: base64.b64encode(v).decode() for k, v in payload.metadata.items()},
        "data": base64.b64encode(payload.data).decode(),
    }


async def test_the_ui_gets_plaintext_back_with_the_token(base_url: str) -> None:
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'{"text": "my card"}')
    [sealed] = await CODEC.encode([plain])
    headers = {"Authorization": "Bearer s3cret", "Origin": UI, "X-Namespace": "default"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{base_url}/decode", json={"payloads": [as_json(sealed)]}, headers=headers
        ) as reply,
    ):
        assert reply.status == 200
        assert reply.headers["Access-Control-Allow-Origin"] == UI
        body = json.loads(await reply.text())
    [decoded] = body["payloads"]
    assert base64.b64decode(decoded["data"]) == b'{"text": "my card"}'
    assert base64.b64decode(decoded["metadata"]["encoding"]) == b"json/plain"


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Basic s3cret"])
async def test_without_the_token_nothing_is_decrypted(
    base_url: str, authorization: str | None
) -> None:
    [sealed] = await CODEC.encode([Payload(data=b"secret")])
    headers = {"Authorization": authorization} if authorization else {}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base_url}/decode", json={"payloads": [as_json(sealed)]}, headers=headers) as r,
    ):
        assert r.status == 401
        assert b"secret" not in await r.read()


async def test_cors_preflight_answers_the_ui_origin_only(base_url: str) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.options(f"{base_url}/decode", headers={"Origin": UI}) as ok:
            assert ok.status == 204
            assert ok.headers["Access-Control-Allow-Origin"] == UI
            assert "Authorization" in ok.headers["Access-Control-Allow-Headers"]
        other = {"Origin": "http://evil.example"}
        async with http.options(f"{base_url}/decode", headers=other) as refused:
            assert refused.status == 403
            assert "Access-Control-Allow-Origin" not in refused.headers


async def test_a_body_that_is_not_payloads_is_a_clear_400(base_url: str) -> None:
    headers = {"Authorization": "Bearer s3cret"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{base_url}/encode", data="{not json", headers=headers) as reply,
    ):
        assert reply.status == 400
        assert "not a Payloads message" in (await reply.json())["error"]


def test_the_dev_servers_ui_is_pointed_at_the_codec_endpoint() -> None:
    options = DevServerOptions(ui=True, ui_codec_endpoint="http://127.0.0.1:8081")
    command = server_command(Path("temporal"), options, 7233, 8233)
    at = command.index("--ui-codec-endpoint")
    assert command[at + 1] == "http://127.0.0.1:8081"
    headless = server_command(Path("temporal"), DevServerOptions(), 7233, 8233)
    assert "--ui-codec-endpoint" not in headless


async def decode_status(base_url: str, cookies: dict[str, str]) -> int:
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"x"')
    [sealed] = await CODEC.encode([plain])
    async with (
        aiohttp.ClientSession(cookies=cookies) as http,
        http.post(
            f"{base_url}/decode", json={"payloads": [as_json(sealed)]}, headers={"Origin": UI}
        ) as reply,
    ):
        return reply.status


async def test_a_person_signs_in_once_and_the_ui_decodes_with_the_session_cookie(
    base_url: str,
) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base_url}/login") as form:
            assert form.status == 200 and 'name="token"' in await form.text()
        async with http.post(f"{base_url}/login", data={"token": "wrong"}) as refused:
            assert refused.status == 401
            assert "baton_codec_session" not in refused.cookies
        async with http.post(f"{base_url}/login", data={"token": "s3cret"}) as signed_in:
            assert signed_in.status == 200
            cookie = signed_in.cookies["baton_codec_session"]
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    assert "s3cret" not in cookie.value
    assert await decode_status(base_url, {"baton_codec_session": cookie.value}) == 200
    assert await decode_status(base_url, {}) == 401


async def test_a_forged_or_expired_session_cookie_is_refused(base_url: str) -> None:
    past = str(int(time.time()) - 1)
    expired = f"{past}.{hmac.new(b's3cret', f'codec-session:{past}'.encode(), sha256).hexdigest()}"
    far = str(int(time.time()) + 3600)
    forged = f"{far}.{hmac.new(b'guess', f'codec-session:{far}'.encode(), sha256).hexdigest()}"
    for value in (expired, forged, "", "garbage"):
        assert await decode_status(base_url, {"baton_codec_session": value}) == 401
