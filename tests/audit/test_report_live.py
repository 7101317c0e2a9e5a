"""`baton audit report` on a real call from a dev server, read after every worker has stopped:
by call id and from the bundle `baton history export` wrote, and the HTML report looked at in
headless Chromium."""

from __future__ import annotations

import json
import os
from pathlib import Path

from playwright.async_api import async_playwright
from temporalio.client import Client

from baton.temporal_server import EmbeddedTemporal
from tests.audit.cli import baton
from tests.workflow.conftest import Stack, started

FRAUD = "Someone used my card abroad, I think it's fraud"
BLOCK = "Please block my card ending in 8832"
#: Debian's chromium package (scripts/test.sh installs it); Playwright never downloads one.
CHROMIUM = os.environ.get("BATON_CHROMIUM", "/usr/bin/chromium")


async def test_a_finished_call_reads_the_same_by_id_and_from_its_bundle_with_no_worker(
    temporal_client: Client, temporal_server: EmbeddedTemporal, tmp_path: Path
) -> None:
    stack = Stack(temporal_client)
    await stack.start_workers()
    session = stack.call()
    try:
        await started(session)
        await session.say(FRAUD)
        await session.say(BLOCK)
        await session.hang_up()
        await session.handle.result()
    finally:
        await stack.stop_workers()
    address = ["--address", temporal_server.address]
    call_id = session.call.call_id

    by_id = baton("audit", "report", call_id, "--format", "json", *address)
    assert by_id.returncode == 0, by_id.stderr
    report = json.loads(by_id.stdout)
    assert report["call"]["status"] == "hung_up"
    assert report["call"]["visited"] == ["Concierge", "FraudAgent"]
    said = [i["text"] for i in report["items"] if i["kind"] == "utterance"]
    assert said == [FRAUD, BLOCK]
    (handoff,) = [i["handoff"] for i in report["items"] if i["kind"] == "handoff"]
    assert (handoff["source"], handoff["target"], handoff["success"]) == (
        "Concierge",
        "FraudAgent",
        True,
    )
    assert handoff["rule"] == "edge Concierge → FraudAgent"
    greetings = [i for i in report["items"] if i["kind"] == "greeting"]
    assert [(g["speaker"], g["details"]["visit"]) for g in greetings] == [
        ("Concierge", "first visit"),
        ("FraudAgent", "first visit"),
    ]
    (block,) = [
        i["tool"]
        for i in report["items"]
        if i["kind"] == "tool_call" and i["tool"]["name"] == "block_card"
    ]
    assert block["idempotency_key"] == f"{call_id}/tool-1" and block["attempts"] == 1
    assert block["result"]["last4"] == "8832"
    assert set(report["tokens"]) == {"Concierge", "FraudAgent"}
    assert [t["turn"] for t in report["turns"]] == [1, 2]
    assert report["turns"][1]["tool_ms"] > 0 and report["turns"][1]["model_calls"] == 2

    bundle = tmp_path / "call.bundle.json"
    exported = baton("history", "export", call_id, "-o", str(bundle), *address)
    assert exported.returncode == 0, exported.stderr
    from_file = baton("audit", "report", str(bundle), "--format", "json")
    assert from_file.returncode == 0, from_file.stderr
    assert json.loads(from_file.stdout) == report

    html = tmp_path / "report.html"
    written = baton("audit", "report", str(bundle), "--format", "html", "-o", str(html))
    assert written.returncode == 0, written.stderr
    await _look_at(html, call_id, tmp_path / "report.png")


async def _look_at(html: Path, call_id: str, screenshot: Path) -> None:
    """Open the report in headless Chromium: it shows the call and asks the network for
    nothing (one self-contained file)."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            page = await browser.new_page()
            requested: list[str] = []
            page.on("request", lambda request: requested.append(request.url))
            await page.goto(html.as_uri(), timeout=30_000)
            await page.screenshot(path=str(screenshot), full_page=True)
            assert await page.locator("h1").inner_text() == f"Call {call_id}"
            timeline = page.locator("table.timeline")
            assert await timeline.is_visible()
            handoff_row = timeline.locator("tr.handoff")
            assert "Concierge → FraudAgent, announced" in await handoff_row.inner_text()
            assert await page.get_by_text("tool block_card", exact=False).is_visible()
            assert requested == [html.as_uri()]
        finally:
            await browser.close()
    assert screenshot.stat().st_size > 10_000
