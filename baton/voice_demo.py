"""`baton demo` by voice: a scripted caller speaks to the embedded stack through the gateway.

Each script line is spoken by the offline voice (a different one from the agents') and fed to
the gateway in real time, 20 ms at a time, exactly as a connection would: the gateway's VAD
finds the end of the utterance, the speech worker fetches the segment over the media plane and
Whisper recognizes it, the agents answer, and their replies are synthesized and played back at
the speed a caller hears them. The timeline shows what was said, what was recognized, the active
agent, tool calls and handoffs as they happen.

The caller is attached in-process (no socket); the WebSocket transports have their own tests.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from typing import Any

from temporalio.client import Client

from baton.call_client import CallSession, TimelinePrinter
from contracts.calls import Channel
from contracts.gateway_events import GatewayEvent
from media_gateway.calls import CallMedia
from media_gateway.gateway_config import GatewayConfig
from media_gateway.server import SoftphoneAccess, start_gateway
from media_gateway.vad import FRAME_BYTES
from workflows.call_ending import HANDOFF_TO_HUMAN

CALLER_VOICE = "en-US-GuyNeural"
QUIET_S = 0.6


class ScriptedCaller:
    """A `calls.Peer` that listens to the agents and speaks recorded lines."""

    channel: Channel = "browser"

    def __init__(self) -> None:
        self.last_audio = time.monotonic()
        self.live = True

    def send_audio(self, pcm16_16k: bytes) -> None:
        self.last_audio = time.monotonic()  # only when the agents last spoke matters here

    def clear_audio(self) -> None:
        """Nothing is buffered on this side: audio counts as heard the moment it arrives."""

    def end_audio(self) -> None:
        """No resampler on the way: every frame arrived whole."""

    @property
    def playback_frame_ms(self) -> int:
        return 40

    @property
    def playback_marker(self) -> None:
        """No marks: the clock says what was heard."""

    def send_event(self, event: GatewayEvent) -> None:
        """The demo prints the workflow's own timeline instead of the page's events."""

    async def close(self, reason: str, code: int = 1000) -> None:
        """The demo ends the call itself; nothing to close."""

    async def quiet(self) -> None:
        """Wait until the agents have stopped talking."""
        while time.monotonic() - self.last_audio < QUIET_S:
            await asyncio.sleep(0.05)


async def speak(call: CallMedia, line: str) -> None:
    from activities.speech_providers.offline_tts import EspeakSynthesizer

    pcm = b"".join(
        [c.pcm16_16k async for c in EspeakSynthesizer().synthesize(line, voice=CALLER_VOICE)]
    )
    frames = [pcm[i : i + FRAME_BYTES] for i in range(0, len(pcm), FRAME_BYTES)]
    frames += [bytes(FRAME_BYTES)] * 40  # trailing silence lets the endpointer close the turn
    start = time.monotonic()
    for n, frame in enumerate(frames):
        call.caller_audio(frame.ljust(FRAME_BYTES, b"\0"))
        await asyncio.sleep(max(0.0, start + (n + 1) * 0.02 - time.monotonic()))


def escalated(items: list[dict[str, Any]], before: int) -> bool:
    return any(
        i["type"] == "agent_turn" and i["turn"] > before and i["text"] == HANDOFF_TO_HUMAN
        for i in items
    )


async def on_hold(session: CallSession, call: CallMedia) -> bool:
    """After an escalation: True once the console holds the caller (hold audio playing), False
    when the call ended instead (the scenario names no one to transfer to)."""
    async with asyncio.timeout(60):
        while call.console is None:
            if (await session.summary()).status != "active":
                return False
            await asyncio.sleep(0.1)
    return True


async def voice_call(
    client: Client, call_id: str, lines: list[str], scenario: str, registry: str | None
) -> None:
    from baton.gateway_command import gateway_secret, offline_voice

    config = GatewayConfig(media_address="127.0.0.1:0", scenario=scenario, registry=registry)
    # The console (served with the softphone, on loopback) takes the escalated caller.
    operator_key = secrets.token_urlsafe(16)
    access = SoftphoneAccess(enabled=True, operator_key=operator_key)
    gateway = await start_gateway(
        client, config, gateway_secret(), http_port=0, softphone=access, notice_voice=offline_voice
    )
    caller = ScriptedCaller()
    try:
        call = await gateway.registry.open(
            call_id,
            "browser",
            {"name": "Alex Morgan", "client_id": "C1001"},
            scenario,
        )
        await call.connect(caller)
        session = CallSession(client, call.control.call)
        show_new = TimelinePrinter(session, heard_as=True).show_new

        await session.until_greeted()
        await show_new()
        await caller.quiet()
        for line in lines:
            print(f"\ncaller says        : {line}", flush=True)
            turns = (await session.summary()).turn
            await speak(call, line)

            def answered(items: list[dict[str, Any]], before: int = turns) -> bool:
                spoken = ("agent_turn", "greeting", "call_end")
                return any(i["type"] in spoken and i["turn"] > before for i in items)

            items = await session.wait_for(answered, timeout=60)
            if escalated(items, turns) and await on_hold(session, call):
                await show_new()
                from baton.demo_console import take_on_console

                await take_on_console(gateway, call, operator_key)
                await session.handle.result()
                await show_new()
                return
            await caller.quiet()
            await show_new()
            summary = await session.summary()
            if summary.status != "active":
                return
            print(f"{'':19}(active agent: {summary.active_agent})", flush=True)
        await session.hang_up()
        await session.handle.result()
        await show_new()
    finally:
        await gateway.close()
