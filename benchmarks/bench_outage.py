"""The caller's silence per turn while the model provider is healthy, failing or hanging.

An embedded Temporal server, workers and a gateway in this process, and the `openai` client
against a scripted OpenAI-compatible server on loopback (tests/fakes) that answers at once,
returns 500s, or never answers. Each turn is a voice call's utterance; the bench notes when the
gateway starts playing something to the caller (the first audio: a filler, an apology or the
answer) and when the turn's reply is complete, and prints both per mode with the ratio to the
healthy model's, measured in the same run. It asserts nothing, talks only to loopback, and
stops itself (every wait is bounded).

    python -m benchmarks.bench_outage [--turns 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from activities.chat_models.openai_chat import OpenAIChatModel
from baton.temporal_server import DevServerOptions, EmbeddedTemporal
from registries.loading import SHIPPED_REGISTRY
from runtime.temporal_client import connect
from tests.fakes.openai_server import FakeOpenAIServer, Reply, completion, error, stall, stream
from tests.gateway.conftest import call_on_gateway, open_gateway_stack

PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}
ANSWER = stream(["Your card is safe."])
FAILING = [error(500, "overloaded", kind="server_error")] * 3  # one turn's three attempts
#: Each mode: what the model server answers for one turn.
MODES: dict[str, list[Reply]] = {
    "healthy": [ANSWER],
    "failing (500s)": FAILING,
    "hanging": [stall(120.0)],
    # A fallback's answer is not streamed (the gateway's reply was the cancelled primary's).
    "hanging, fallback answers": [stall(120.0), completion("Your card is safe.")],
}
TURN_TIMEOUT = 60.0


async def first_audio_and_reply(stack: Any) -> tuple[float, float]:
    """One call, one utterance: seconds until the caller first hears something, and until the
    turn's reply is complete."""
    media, session = await call_on_gateway(stack, **PROFILE)
    async with asyncio.timeout(TURN_TIMEOUT):
        while media.playback.current is None:  # the greeting
            await asyncio.sleep(0.01)
        while media.playback.current is not None:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        turn = asyncio.create_task(session.say("Is my card safe?"))
        while media.playback.current is None and not turn.done():
            await asyncio.sleep(0.005)
        heard = time.monotonic() - started
        await turn
        replied = time.monotonic() - started
    await session.hang_up()
    return heard, replied


def registry_with_fallback(root: Path) -> Path:
    """The shipped registry whose banking scenario names a fallback model."""
    registry = root / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    path = registry / "scenariostore" / "banking" / "scenario.yaml"
    scenario = yaml.safe_load(path.read_text())
    scenario["model_fallback"] = "backup-model"
    path.write_text(yaml.safe_dump(scenario))
    return registry


async def run(turns: int, data: Path) -> None:
    server = await EmbeddedTemporal(
        DevServerOptions(db_filename=data / "temporal.sqlite3", tuned=True)
    ).astart()
    try:
        client = await connect(server.address)
        fallback_registry = registry_with_fallback(data)
        results: dict[str, list[tuple[float, float]]] = {}
        for mode, replies in MODES.items():
            if "fallback" in mode:
                os.environ["BATON_REGISTRY"] = str(fallback_registry)
            with FakeOpenAIServer([], max_requests=100, lifetime=600) as llm:
                model = OpenAIChatModel(api_key="bench", base_url=llm.base_url, timeout=120.0)
                async with open_gateway_stack(client, chat_model=model) as stack:
                    results[mode] = []
                    for _ in range(turns):
                        llm.add(*replies)
                        results[mode].append(await first_audio_and_reply(stack))
                await model.aclose()
            os.environ.pop("BATON_REGISTRY", None)
        report(results)
    finally:
        server.stop()


def report(results: dict[str, list[tuple[float, float]]]) -> None:
    base_heard = statistics.median(h for h, _ in results["healthy"])
    base_reply = statistics.median(r for _, r in results["healthy"])
    print("caller's silence per turn (median of the turns; max in brackets), seconds")
    print(f"{'model':<28}{'first audio':>18}{'x healthy':>11}{'turn done':>18}{'x healthy':>11}")
    for mode, pairs in results.items():
        heard = [h for h, _ in pairs]
        done = [r for _, r in pairs]
        h, r = statistics.median(heard), statistics.median(done)
        print(
            f"{mode:<28}{h:>9.2f} ({max(heard):5.2f}){h / base_heard:>10.1f}x"
            f"{r:>9.2f} ({max(done):5.2f}){r / base_reply:>10.1f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=3, help="calls per mode (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        os.environ["BATON_DATA_DIR"] = data
        asyncio.run(run(args.turns, Path(data)))


if __name__ == "__main__":
    # A SIGTERM still runs the cleanup, so the embedded server never outlives the bench.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    main()
