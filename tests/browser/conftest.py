"""Browser tests: the softphone page in headless Debian Chromium, driven by Playwright, against
the same real stack as the gateway tests (dev server, workers with offline speech, gateway).

The browser is never downloaded: Playwright launches the system Chromium (``BATON_CHROMIUM``,
default ``/usr/bin/chromium`` from Debian's ``chromium`` package). Its fake microphone plays a
WAV that Baton's offline TTS speaks at test time, so the caller's words are known exactly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import wave
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

from activities.speech_providers.offline_tts import EspeakSynthesizer
from media_gateway.vad import BYTES_PER_MS, SAMPLE_RATE
from tests.gateway.conftest import GatewayStack, gateway_stack

__all__ = ["CallerScript", "GatewayStack", "gateway_stack"]  # gateway_stack: a shared fixture

DEFAULT_CHROMIUM = "/usr/bin/chromium"  # Debian's `chromium` package
#: Bounds every Playwright wait, so a broken page fails the test instead of hanging it.
PAGE_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class CallerScript:
    """What the fake microphone says, and when (offsets from the moment the mic opens)."""

    wav: Path
    first_text: str
    first_at_ms: int
    first_ms: int
    second_text: str
    second_at_ms: int
    second_ms: int


#: The caller's offline voice: a slower female espeak voice is the one the offline recognizers
#: read best (measured on PocketSphinx, which fails on the default voice; Whisper reads both).
#: "fraud" and "stolen" are words the banking concierge's offline policy routes to the fraud desk.
#: One clause with no quiet in it longer than 60 ms: "Someone stole my card, I want to report
#: fraud." paused 240 ms at the comma, as long as the quiet that ends a finished sentence, and
#: was sometimes taken as two turns, the first misheard ("Some once told my card.").
CALLER_VOICE = "en-US-JennyNeural"
CALLER_RATE = "-30%"
FIRST_TEXT = "I want to report fraud on my stolen card."
SECOND_TEXT = "Wait, I have a question."
#: Silence before the first words: lets the concierge's greeting finish, so the first utterance
#: is a request and not itself a barge-in.
LEAD_MS = 6_000
#: From the end of the first utterance to the second: end of speech (400 ms hangover),
#: recognition, the concierge's turn, the handoff, and the first part of the fraud desk's
#: greeting, so the second utterance lands while that greeting is still playing. Measured: the
#: greeting (about 4.5 s) starts about 1 s after the first utterance ends, so this lands about
#: 3 s into it, tolerating the stack being ~2.5 s slower or ~1.5 s faster than that.
GAP_MS = 4_000
#: After the second utterance. Chromium loops the file; this keeps the loop out of the test.
TAIL_MS = 90_000


async def _speak(text: str) -> bytes:
    chunks = EspeakSynthesizer().synthesize(text, voice=CALLER_VOICE, rate=CALLER_RATE)
    return b"".join([chunk.pcm16_16k async for chunk in chunks])


def _silence(ms: int) -> bytes:
    return bytes(ms * BYTES_PER_MS)


@pytest_asyncio.fixture
async def caller_script(tmp_path: Path) -> CallerScript:
    """One WAV (PCM16 mono 16 kHz) with both utterances at known offsets."""
    first, second = await _speak(FIRST_TEXT), await _speak(SECOND_TEXT)
    first_ms, second_ms = len(first) // BYTES_PER_MS, len(second) // BYTES_PER_MS
    path = tmp_path / "caller.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        for part in (_silence(LEAD_MS), first, _silence(GAP_MS), second, _silence(TAIL_MS)):
            out.writeframes(part)
    return CallerScript(
        wav=path,
        first_text=FIRST_TEXT,
        first_at_ms=LEAD_MS,
        first_ms=first_ms,
        second_text=SECOND_TEXT,
        second_at_ms=LEAD_MS + first_ms + GAP_MS,
        second_ms=second_ms,
    )


@pytest.fixture
def chromium_path() -> str:
    path = os.environ.get("BATON_CHROMIUM", DEFAULT_CHROMIUM)
    found = shutil.which(path)
    # Never a skip: `scripts/test.sh` installs Debian's chromium, so missing it is a broken setup.
    assert found is not None, (
        f"no Chromium at {path!r}: apt-get install chromium, or set BATON_CHROMIUM"
    )
    return found


@contextlib.asynccontextmanager
async def chromium_with_microphone(chromium_path: str, wav: Path) -> AsyncIterator[Browser]:
    """Headless Chromium whose microphone plays `wav` and whose pages may play audio."""
    args = [
        "--headless",
        "--no-sandbox",  # containers and CI runners rarely allow Chromium's user namespaces
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--use-fake-ui-for-media-stream",  # grant the microphone without a prompt
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={wav}",
        "--autoplay-policy=no-user-gesture-required",
    ]
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=args, timeout=PAGE_TIMEOUT_MS
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture
async def browser(chromium_path: str, caller_script: CallerScript) -> AsyncIterator[Browser]:
    async with chromium_with_microphone(chromium_path, caller_script.wav) as launched:
        yield launched


@pytest_asyncio.fixture
async def softphone(browser: Browser, gateway_stack: GatewayStack) -> AsyncIterator[Page]:
    """The softphone page, loaded from the test's gateway."""
    context = await browser.new_context()
    page = await context.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    # The gateway requires its operator key for /api/calls; the page takes it from the fragment.
    await page.goto(f"http://{gateway_stack.base}/#key={gateway_stack.operator_key}")
    try:
        yield page
    finally:
        await context.close()
