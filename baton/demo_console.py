"""The person at the human-agent console in `baton demo`: takes the escalated call through the
console's own HTTP API and audio line, as the console page does, greets the caller and hangs up.

The demo has no person at a browser, so this stands in for one; everything it touches (the
queue listing, the take, the line that tells the workflow a person took the call) is the
gateway's real console, on loopback, behind the gateway's operator key.
"""

from __future__ import annotations

import asyncio
import json

import aiohttp

from media_gateway.calls import CallMedia
from media_gateway.server import Gateway

OPERATOR = "agent-demo"
GREETING = "Hello, this is Sam from the private banking desk. I have your ticket in front of me."
#: The console line takes at most 100 ms of PCM16 16 kHz per frame.
LINE_FRAME_BYTES = 3200
LINE_FRAME_S = 0.1


async def take_on_console(gateway: Gateway, call: CallMedia, operator_key: str) -> None:
    """List the console's queue, take `call`, say hello over the line, and hang up."""
    base = f"http://127.0.0.1:{gateway.http_port}"
    headers = {"Authorization": f"Bearer {operator_key}"}
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(timeout=timeout) as http:
        async with http.get(f"{base}/api/console/calls", headers=headers) as listing:
            listing.raise_for_status()
            waiting = [c for c in (await listing.json())["calls"] if c["call_id"] == call.call_id]
        if not waiting:
            raise RuntimeError(f"call {call.call_id} is not waiting on the console")
        entry = waiting[0]
        target, ticket = entry["target"], entry["ticket"]
        print(
            f"\nconsole ({target['label'] or target['address']}): call {call.call_id} on hold, "
            f"ticket {ticket['ticket_id']}: {ticket['reason']}",
            flush=True,
        )
        take_url = f"{base}/api/console/calls/{call.call_id}/take"
        async with http.post(take_url, json={"operator": OPERATOR}, headers=headers) as taken:
            taken.raise_for_status()
            token = (await taken.json())["take"]
        async with http.ws_connect(f"{base}/console/line?take={token}") as line:
            await _until_bridged(line)
            print(f"{OPERATOR:<13}: {GREETING}   [person, console line]", flush=True)
            await _say(line, GREETING)
            await line.send_str(json.dumps({"type": "hangup"}))


async def _until_bridged(line: aiohttp.ClientWebSocketResponse) -> None:
    async for message in line:
        if message.type == aiohttp.WSMsgType.TEXT:
            event = json.loads(message.data)
            if event.get("type") == "bridged":
                return
            if event.get("type") == "ended":
                raise RuntimeError(f"the console line closed: {event.get('reason')}")
    raise RuntimeError("the console line closed before the call was bridged")


async def _say(line: aiohttp.ClientWebSocketResponse, text: str) -> None:
    """The person's words in real time, in the offline voice."""
    from activities.speech_providers.offline_tts import EspeakSynthesizer

    pcm = b"".join([c.pcm16_16k async for c in EspeakSynthesizer().synthesize(text)])
    for start in range(0, len(pcm), LINE_FRAME_BYTES):
        await line.send_bytes(pcm[start : start + LINE_FRAME_BYTES])
        await asyncio.sleep(LINE_FRAME_S)
