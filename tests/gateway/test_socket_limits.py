"""The gateway's sockets on aiohttp: what the old hand-written server got right (masking,
fragmentation, answering pings, refusing before the upgrade) and the bounds it lacked (open and
idle timeouts, heartbeats, write timeouts). Raw frames come from `raw_peer`."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import ssl
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import trustme
from structlog.testing import capture_logs
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidMessage

from baton.call_client import CallSession
from contracts.calls import CallInput
from media_gateway.admission import SocketLimits
from media_gateway.calls import KEYPAD_BURST, UTTERANCE_BURST
from media_gateway.connection import MAX_BAD_FRAMES, Connection
from media_gateway.gateway_config import GatewayConfig
from media_gateway.server import Gateway, start_gateway, tls_context
from tests.gateway.conftest import GatewayStack, browser_caller, speech_pcm
from tests.gateway.raw_peer import STEP, client_frame, close_code, open_raw, read_server_frame
from tests.workflow.conftest import items_of

TIGHT = SocketLimits(open_timeout_s=1.0, idle_timeout_s=1.0, heartbeat_s=60.0)
CONNECTED = json.dumps({"event": "connected", "protocol": "Call", "version": "1.0.0"}).encode()


@pytest_asyncio.fixture
async def tight(gateway_stack: GatewayStack) -> AsyncIterator[Gateway]:
    """A second gateway with short timeouts, served by the stack's workers."""
    config = GatewayConfig(media_address="127.0.0.1:0")
    gateway = await start_gateway(
        gateway_stack.client, config, gateway_stack.secret, http_port=0, limits=TIGHT
    )
    try:
        yield gateway
    finally:
        await gateway.close()


async def test_a_masked_fragmented_message_is_reassembled_and_pings_are_answered(
    tight: Gateway,
) -> None:
    status, reader, writer = await open_raw(tight.http_port, "/media/twilio")
    assert status == 101
    half = len(CONNECTED) // 2
    writer.write(client_frame(0x1, CONNECTED[:half], fin=False))
    writer.write(client_frame(0x9, b"are you there"))  # a control frame between the fragments
    writer.write(client_frame(0x0, CONNECTED[half:]))
    assert await read_server_frame(reader) == (0xA, b"are you there")
    # The reassembled `connected` was accepted; a fragmented `media` is refused as a whole.
    media = json.dumps({"event": "media", "media": {"payload": ""}}).encode()
    writer.write(client_frame(0x1, media[:10], fin=False) + client_frame(0x0, media[10:]))
    code, reason = await close_code(reader)
    assert (code, reason) == (1008, "start with a valid token first")
    writer.close()


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (client_frame(0x2, b"abc", rsv=0x40), 1002),
        (client_frame(0x9, b"ping", fin=False), 1002),
        (client_frame(0x3, b"?"), 1002),
        (client_frame(0x1, b"ok \xff\xfe"), 1007),
    ],
    ids=["reserved-bit", "fragmented-control", "unknown-opcode", "bad-utf8"],
)  # fmt: skip
# An oversized message (1009) is in test_transports. aiohttp reads unmasked client frames too
# (RFC 6455 says fail them); masking guards proxies' caches against browser-made frames, not
# the server, and every frame above is masked, so unmasking is exercised by each test here.
async def test_protocol_violations_close_with_their_code(
    tight: Gateway, frame: bytes, code: int
) -> None:
    _, reader, writer = await open_raw(tight.http_port, "/media/twilio")
    writer.write(frame)
    assert (await close_code(reader))[0] == code
    writer.close()


async def test_a_socket_that_never_authenticates_is_closed_at_the_open_timeout(
    tight: Gateway,
) -> None:
    _, reader, writer = await open_raw(tight.http_port, "/media/twilio")
    writer.write(client_frame(0x1, CONNECTED))  # allowed, but not a token
    assert await close_code(reader, timeout=TIGHT.open_timeout_s + STEP) == (
        1008,
        "no valid token in time",
    )
    writer.close()
    await _until(lambda: tight.front.admission.total == 0)


async def test_a_silent_authenticated_socket_is_closed_at_the_idle_timeout(
    gateway_stack: GatewayStack, tight: Gateway
) -> None:
    token = gateway_stack.token(f"idle-{uuid.uuid4().hex[:8]}")
    _, reader, writer = await open_raw(tight.http_port, f"/media/browser?token={token}")
    code, reason = await close_code(reader, timeout=TIGHT.idle_timeout_s + STEP)
    assert (code, reason) == (1008, "idle")
    writer.close()


async def test_a_socket_that_keeps_talking_outlives_the_idle_timeout(
    gateway_stack: GatewayStack, tight: Gateway
) -> None:
    token = gateway_stack.token(f"talk-{uuid.uuid4().hex[:8]}")
    _, reader, writer = await open_raw(tight.http_port, f"/media/browser?token={token}")
    closed = asyncio.create_task(close_code(reader, timeout=STEP))
    for _ in range(round(2.5 * TIGHT.idle_timeout_s / 0.2)):  # frames for 2.5 idle timeouts
        writer.write(client_frame(0x2, bytes(640)))
        await asyncio.sleep(0.2)
    assert not closed.done()  # every frame moved the deadline on
    assert await closed == (1008, "idle")  # and silence still ends it
    writer.close()


async def test_a_peer_that_stops_answering_pings_is_dropped(gateway_stack: GatewayStack) -> None:
    limits = SocketLimits(heartbeat_s=0.5, idle_timeout_s=60.0)
    config = GatewayConfig(media_address="127.0.0.1:0")
    gateway = await start_gateway(
        gateway_stack.client, config, gateway_stack.secret, http_port=0, limits=limits
    )
    try:
        token = gateway_stack.token(f"deaf-{uuid.uuid4().hex[:8]}")
        _, reader, writer = await open_raw(gateway.http_port, f"/media/browser?token={token}")
        pinged = False
        async with asyncio.timeout(STEP):
            while True:  # frames until the gateway hangs up; no pong is ever sent back
                try:
                    opcode, _ = await read_server_frame(reader)
                except asyncio.IncompleteReadError:
                    break
                pinged = pinged or opcode == 0x9
        assert pinged
        await _until(lambda: not gateway.front.connections)
        writer.close()
    finally:
        await gateway.close()


class StuckSocket:
    """Stands in for aiohttp's WebSocketResponse to a peer whose receive window never opens:
    a real one would block in `drain()` for as long as the peer does not read."""

    closed = False
    close_code = None

    async def send_bytes(self, data: bytes) -> None:
        await asyncio.Event().wait()

    async def send_str(self, data: str) -> None:
        await asyncio.Event().wait()


async def test_a_send_that_waits_past_the_write_timeout_drops_the_socket() -> None:
    aborted = asyncio.Event()
    connection = Connection(
        StuckSocket(),  # type: ignore[arg-type]
        "browser",
        registry=Any,  # type: ignore[arg-type]
        authorize=lambda token, call: pytest.fail("no token here"),
        limits=SocketLimits(write_timeout_s=0.2),
        abort=aborted.set,
    )
    writer = asyncio.create_task(connection._write_out())
    connection.send_audio(bytes(640))
    await asyncio.wait_for(aborted.wait(), STEP)
    await asyncio.wait_for(writer, STEP)  # and the writer gave up rather than hanging on


async def _until(condition: Any) -> None:
    async with asyncio.timeout(STEP):
        while not condition():
            await asyncio.sleep(0.02)


async def test_callers_reach_a_tls_gateway_over_wss_and_plaintext_is_refused(
    gateway_stack: GatewayStack, tmp_path: Path
) -> None:
    authority = trustme.CA()
    certificate = authority.issue_cert("127.0.0.1", "localhost")
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    certificate.cert_chain_pems[0].write_to_path(cert_file)
    certificate.private_key_pem.write_to_path(key_file)
    config = GatewayConfig(media_address="127.0.0.1:0")
    gateway = await start_gateway(
        gateway_stack.client,
        config,
        gateway_stack.secret,
        http_port=0,
        tls=tls_context(str(cert_file), str(key_file)),
    )
    trusting = ssl.create_default_context()
    authority.configure_trust(trusting)
    call_id = f"tls-{uuid.uuid4().hex[:8]}"
    url = f"wss://127.0.0.1:{gateway.http_port}/media/browser?token={gateway_stack.token(call_id)}"
    try:
        async with connect(url, ssl=trusting) as ws:
            await ws.send(json.dumps({"type": "ping"}))
            async with asyncio.timeout(STEP):
                while True:  # greeting audio (bytes) and page events come first
                    message = await ws.recv()
                    if isinstance(message, str) and json.loads(message)["type"] == "pong":
                        break
            await ws.send(json.dumps({"type": "stop"}))
        with pytest.raises(ssl.SSLCertVerificationError):
            await connect(url, ssl=ssl.create_default_context())  # a CA it does not trust
        with pytest.raises((InvalidMessage, ConnectionError, EOFError)):
            await connect(url.replace("wss://", "ws://"), open_timeout=STEP)
    finally:
        await gateway.close()


async def test_audio_sockets_decline_compression(gateway_stack: GatewayStack) -> None:
    # The websockets client offers permessage-deflate as browsers do; deflating PCM is all cost.
    call_id = f"nozip-{uuid.uuid4().hex[:8]}"
    async with connect(gateway_stack.url("browser", call_id, gateway_stack.token(call_id))) as ws:
        assert ws.request is not None and ws.response is not None
        assert "permessage-deflate" in ws.request.headers["Sec-WebSocket-Extensions"]
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
        await ws.send(json.dumps({"type": "stop"}))


async def test_a_keypad_flood_is_refused_at_the_gateway_and_costs_the_socket(
    gateway_stack: GatewayStack,
) -> None:
    caller = await browser_caller(gateway_stack)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    for _ in range(KEYPAD_BURST + MAX_BAD_FRAMES + 5):  # far faster than fingers
        await caller.ws.send(json.dumps({"type": "dtmf", "digits": "5"}))
    await asyncio.wait_for(caller.ws.wait_closed(), STEP)
    assert caller.ws.close_code == 1008 and caller.ws.close_reason == "too many bad frames"
    session = CallSession(gateway_stack.client, CallInput(call_id=caller.call_id))
    transcript = await session.transcript()
    assert len(items_of(transcript, "dtmf")) <= KEYPAD_BURST + 1  # the burst, then refused


@pytest_asyncio.fixture
async def light_vad(gateway_stack: GatewayStack) -> AsyncIterator[GatewayStack]:
    """A second gateway with the energy VAD, served by the stack's workers: it ends utterances
    as fast as they arrive (Silero takes a few ms a frame, and would pace the flood itself)."""
    config = GatewayConfig(media_address="127.0.0.1:0", vad="offline-light")
    gateway = await start_gateway(gateway_stack.client, config, gateway_stack.secret, http_port=0)
    try:
        yield dataclasses.replace(gateway_stack, gateway=gateway)
    finally:
        await gateway.close()


async def test_an_utterance_flood_is_refused_at_the_gateway_as_bad_frames(
    light_vad: GatewayStack,
) -> None:
    caller = await browser_caller(light_vad)
    await caller.wait_event(lambda e: e["type"] == "timeline" and e["items"])
    word = await speech_pcm("yes")
    flood = UTTERANCE_BURST + 8
    with capture_logs() as logs:
        # Each a whole utterance (speech, then the quiet that ends it), sent back to back:
        # far more utterances a second than a person can make, however loaded the machine
        # (paced sends, slowed by a busy loop, once let the rate refill the burst).
        for _ in range(flood):
            await caller.say(word, pace=10_000, trailing_silence_ms=800)
    refused = [
        line
        for line in logs
        if line["event"] == "frame refused"
        and line["reason"] == "utterances faster than a person speaks"
    ]
    await asyncio.sleep(0.5)  # the last utterance events reach the page
    said = [e for e in caller.events if e["type"] == "utterance"]
    assert len(refused) >= 4, f"{len(said)} utterances taken, {len(refused)} refused"
    assert len(said) <= UTTERANCE_BURST + 3  # the burst and what the rate refilled meanwhile
    assert len(said) + len(refused) == flood  # every utterance was either taken or refused
    assert all(set(line) <= {"event", "log_level", "call_id", "reason"} for line in refused)
    connection = light_vad.gateway.registry.calls[caller.call_id].peer
    assert isinstance(connection, Connection) and connection.bad_frames == len(refused)
    await caller.ws.send(json.dumps({"type": "stop"}))
