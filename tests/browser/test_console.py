"""The human-agent console end to end: a browser call asks for a person, the workflow escalates
and offers it to the gateway's console, the caller hears hold audio on an open line, a person
takes the call in the console page (headless Chromium), the workflow ends `transferred`, and
audio then flows both ways between the page's (fake) microphone and the caller until the person
hangs up. The caller speaks the browser protocol from Python, so every byte it hears is checked.
"""

from __future__ import annotations

import asyncio
import wave
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, expect
from temporalio.client import Client

from contracts.calls import CallOutcome
from contracts.temporal import workflow_id_for
from media_gateway.hold_audio import hold_cycle
from media_gateway.vad import BYTES_PER_MS, SAMPLE_RATE
from tests.browser.conftest import PAGE_TIMEOUT_MS, chromium_with_microphone
from tests.gateway.conftest import BrowserCaller, GatewayStack, browser_caller, speech_pcm
from tests.gateway.test_console_transfer import SOUND_RMS, rms

ASK_FOR_A_PERSON = "Can I speak to a real person please"
PERSON_SAYS = "Hello, you are through to the private banking desk. How can I help?"


@pytest_asyncio.fixture
async def person_wav(tmp_path: Path) -> Path:
    """What the console's fake microphone says: the person's greeting, then a pause."""
    pcm = await speech_pcm(PERSON_SAYS) + bytes(2000 * BYTES_PER_MS)
    path = tmp_path / "person.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes(pcm)
    return path


@pytest_asyncio.fixture
async def console_browser(chromium_path: str, person_wav: Path) -> AsyncIterator[Browser]:
    async with chromium_with_microphone(chromium_path, person_wav) as launched:
        yield launched


async def console_page(browser: Browser, stack: GatewayStack, key: str) -> Page:
    context = await browser.new_context()
    page = await context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    await page.goto(f"http://{stack.base}/console#key={key}")
    return page


async def call_on_hold(stack: GatewayStack) -> BrowserCaller:
    """A browser call that asked for a person, once its escalation is on the console."""
    caller = await browser_caller(stack)
    call = None
    async with asyncio.timeout(30):
        while call is None or call.playback.current is None:  # the greeting starts...
            call = stack.gateway.registry.get(caller.call_id)
            await asyncio.sleep(0.05)
        while call.playback.current is not None:  # ...and ends: then the caller asks
            await asyncio.sleep(0.05)
    await caller.say(await speech_pcm(ASK_FOR_A_PERSON))
    desk = stack.gateway.front.console
    assert desk is not None
    async with asyncio.timeout(45):
        while caller.call_id not in desk.calls:
            await asyncio.sleep(0.1)
    return caller


def hold_audio_in(pcm: bytes | bytearray) -> bool:
    return bytes(pcm) in hold_cycle() + hold_cycle()


async def outcome(client: Client, call_id: str) -> CallOutcome:
    handle = client.get_workflow_handle(workflow_id_for(call_id), result_type=CallOutcome)
    async with asyncio.timeout(45):
        result: CallOutcome = await handle.result()
    return result


@pytest.mark.timeout(150)
async def test_a_person_takes_an_escalated_browser_call_from_the_console(
    console_browser: Browser, gateway_stack: GatewayStack
) -> None:
    stack = gateway_stack
    page = await console_page(console_browser, stack, stack.operator_key)
    await expect(page.get_by_test_id("queue-empty")).to_be_visible()
    caller = await call_on_hold(stack)

    # On hold: the generated hold pattern, not silence, and the caller's line stays open.
    async with asyncio.timeout(30):
        while not hold_audio_in(recent := caller.audio[-1000 * BYTES_PER_MS :]):
            await caller.heard(len(caller.audio) // BYTES_PER_MS + 200)
    assert rms(recent) > SOUND_RMS
    assert caller.ws.close_code is None

    # The console shows the call with its ticket.
    waiting = page.locator(f"[data-testid=waiting-call][data-call-id='{caller.call_id}']")
    await expect(waiting.get_by_test_id("ticket-reason")).not_to_be_empty()
    desk = stack.gateway.front.console
    assert desk is not None
    ticket = desk.calls[caller.call_id].ticket
    await expect(waiting.get_by_test_id("ticket-reason")).to_have_text(ticket.reason)
    await expect(waiting.get_by_test_id("ticket-summary")).to_have_text(ticket.summary)
    await expect(waiting.get_by_test_id("ticket-utterances")).to_contain_text("real person")
    await expect(waiting).to_contain_text("Private banking desk")  # the scenario's target

    # A page with the wrong key sees nothing of it.
    stranger = await console_page(console_browser, stack, "not-the-key")
    await expect(stranger.get_by_test_id("status")).to_contain_text("operator key is required")
    await expect(stranger.get_by_test_id("waiting-call")).to_have_count(0)

    # A person takes the call: the workflow ends `transferred`, the line stays open.
    await page.get_by_test_id("operator").fill("agent-7")
    await waiting.get_by_test_id("take-button").click()
    await expect(page.get_by_test_id("status")).to_have_text(f"On the line with {caller.call_id}.")
    result = await outcome(stack.client, caller.call_id)
    assert result.status == "transferred"
    assert caller.ws.close_code is None

    # A second person sees who has it, and no take button.
    other = await console_page(console_browser, stack, stack.operator_key)
    taken = other.locator(f"[data-testid=waiting-call][data-call-id='{caller.call_id}']")
    await expect(taken.get_by_test_id("taken-by")).to_have_text("Taken by agent-7")
    await expect(taken.get_by_test_id("take-button")).to_have_count(0)

    # The person's microphone reaches the caller: sound, and no longer the hold pattern.
    start = len(caller.audio)
    await caller.heard(start // BYTES_PER_MS + 3000)
    after = caller.audio[start:]
    assert rms(after) > SOUND_RMS
    assert not hold_audio_in(after[-500 * BYTES_PER_MS :])

    # The caller's words reach the person's page.
    before = await page.evaluate("window.agentConsole.soundFramesReceived")
    await caller.say(await speech_pcm("Thank you, I need help with my card."))
    await page.wait_for_function(
        f"window.agentConsole.soundFramesReceived > {before + 25}", timeout=PAGE_TIMEOUT_MS
    )

    # The person hangs up: the caller's line closes and the console queue is empty.
    await page.get_by_test_id("hangup-button").click()
    async with asyncio.timeout(10):
        await caller.ws.wait_closed()
    await expect(page.get_by_test_id("waiting-call")).to_have_count(0)


@pytest.mark.timeout(120)
async def test_a_caller_hanging_up_on_hold_leaves_the_console(
    console_browser: Browser, gateway_stack: GatewayStack
) -> None:
    stack = gateway_stack
    page = await console_page(console_browser, stack, stack.operator_key)
    caller = await call_on_hold(stack)
    waiting = page.locator(f"[data-testid=waiting-call][data-call-id='{caller.call_id}']")
    await expect(waiting.get_by_test_id("take-button")).to_be_enabled()
    await caller.ws.send('{"type": "stop"}')
    await caller.close()
    await expect(waiting).to_have_count(0)
    await expect(page.get_by_test_id("queue-empty")).to_be_visible()
    assert (await outcome(stack.client, caller.call_id)).status == "hung_up"
