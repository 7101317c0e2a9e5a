"""The web softphone end to end: Chromium's (fake) microphone speaks, the page streams it to the
gateway, the workflow hands the caller to the fraud desk, and the caller talks over its greeting.

What the caller says and when is fixed by the WAV `caller_script` builds; see its timings.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from playwright.async_api import Page, expect
from playwright.async_api import TimeoutError as PlaywrightTimeout
from temporalio.client import Client

from contracts.calls import QUERY_TRANSCRIPT
from contracts.temporal import workflow_id_for
from tests.browser.conftest import PAGE_TIMEOUT_MS, CallerScript
from tests.gateway.conftest import GatewayStack

Item = dict[str, Any]


async def transcript(client: Client, call_id: str) -> list[Item]:
    handle = client.get_workflow_handle(workflow_id_for(call_id))
    items: list[Item] = await handle.query(QUERY_TRANSCRIPT, result_type=list)
    return items


async def wait_for_item(
    client: Client, call_id: str, match: Callable[[Item], bool], timeout: float = 15.0
) -> tuple[Item, list[Item]]:
    """The first transcript item matching `match` (and the whole transcript), polling the
    workflow; fails after `timeout` seconds with what the transcript held."""
    items: list[Item] = []
    try:
        async with asyncio.timeout(timeout):
            while True:
                items = await transcript(client, call_id)
                found = next((item for item in items if match(item)), None)
                if found is not None:
                    return found, items
                await asyncio.sleep(0.2)
    except TimeoutError:
        kinds = [item["type"] for item in items]
        pytest.fail(f"no matching transcript item within {timeout}s; transcript: {kinds}")


async def summary(client: Client, call_id: str) -> list[str]:
    """The transcript in brief, to say in a failure what the call did instead."""
    items = await transcript(client, call_id)
    return [
        f"{i['type']}: {i.get('text') or i.get('target') or i.get('heard_text')}" for i in items
    ]


async def counter(page: Page, name: str) -> int:
    value: int = await page.evaluate(f"window.softphone.{name}")
    return value


@pytest.mark.timeout(90)
async def test_softphone_call_is_handed_to_the_fraud_desk_and_the_caller_barges_in(
    softphone: Page, gateway_stack: GatewayStack, caller_script: CallerScript
) -> None:
    page, client = softphone, gateway_stack.client
    await expect(page.get_by_test_id("status")).to_have_text("Ready to call.")
    await page.get_by_test_id("call-button").click()
    # The keypad only works on a started stream: enabled means the socket is open and started.
    await expect(page.get_by_test_id("dtmf-1")).to_be_enabled(timeout=PAGE_TIMEOUT_MS)
    await expect(page.get_by_test_id("hangup-button")).to_be_enabled()
    call_id: str = await page.evaluate("window.softphone.callId")
    assert call_id.startswith("web-")

    # 1. The first utterance reaches the concierge, who hands the caller to the fraud desk.
    try:
        await expect(page.get_by_test_id("active-agent")).to_have_text(
            "FraudAgent", timeout=PAGE_TIMEOUT_MS
        )
    except AssertionError as error:
        raise AssertionError(
            f"{error}\nworkflow transcript: {await summary(client, call_id)}"
        ) from error
    handoff, items = await wait_for_item(
        client, call_id, lambda i: i["type"] == "handoff" and i["target"] == "FraudAgent"
    )
    assert handoff["source"] == "Concierge"
    assert handoff["success"] is True
    assert handoff["handoff_type"] == "announced"  # the banking scenario's Concierge->Fraud edge
    assert handoff["reason"]
    said = [i["text"] for i in items if i["type"] == "user_turn"]
    assert said and said[0], "the microphone's first utterance was not recognized at all"
    # The page's timeline shows the same handoff, with its type and reason.
    shown = page.get_by_test_id("timeline").locator("li[data-type=handoff]").first
    await expect(shown.locator("[data-field=route]")).to_have_text("Concierge → FraudAgent")
    await expect(shown.locator("[data-field=handoff-type]")).to_have_text("announced")
    await expect(shown.locator("[data-field=reason]")).to_have_text(handoff["reason"])
    assert await counter(page, "framesSent") > 0
    assert await counter(page, "audioFramesReceived") > 0  # greetings were played

    # 2. The second utterance talks over the fraud desk: the gateway tells the page to stop
    # playback, the page cuts the audio it had scheduled, and the workflow records the barge-in.
    try:
        await page.wait_for_function("window.softphone.clears > 0", timeout=PAGE_TIMEOUT_MS)
    except PlaywrightTimeout as error:
        spoken_at = caller_script.second_at_ms / 1000
        raise AssertionError(
            f"no clear: the second utterance (mic at {spoken_at:.1f} s) did not interrupt "
            f"playback; workflow transcript: {await summary(client, call_id)}"
        ) from error
    assert await counter(page, "sourcesStopped") > 0, "clear arrived with no audio playing"
    barge, items = await wait_for_item(client, call_id, lambda i: i["type"] == "barge_in")
    assert barge["agent"] == "FraudAgent"
    heard, interrupted = barge["heard_text"], barge["interrupted_text"]
    assert len(heard) < len(interrupted), barge
    assert interrupted.startswith(heard), barge
    shown_barge = page.get_by_test_id("timeline").locator("li[data-type=barge_in]").first
    await expect(shown_barge.locator("[data-field=heard]")).to_contain_text(heard)

    # The keypad reaches the workflow as DTMF.
    await page.get_by_test_id("dtmf-1").click()
    await wait_for_item(client, call_id, lambda i: i["type"] == "dtmf" and i["digits"] == "1")

    # Hanging up ends the workflow's call, not just the page's socket.
    await page.get_by_test_id("hangup-button").click()
    await expect(page.get_by_test_id("call-button")).to_be_enabled()
    assert await page.evaluate("window.softphone.state") == "idle"
    ended, _ = await wait_for_item(client, call_id, lambda i: i["type"] == "call_end")
    assert ended["reason"] == "caller hung up"
