"""Voice calls while a provider is slow or down, and agents that speak another language.

Real dev server, workers, gateway and espeak-ng; the model is the `openai` client against a
scripted OpenAI-compatible server on loopback, the speech service in the language test is the
Azure Speech SDK against a loopback fake of its WebSocket protocol.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from temporalio.client import Client
from temporalio.worker import Replayer

from activities.chat_models.openai_chat import OpenAIChatModel
from activities.chat_models.scripted import ScriptedChatModel, ScriptedResponse
from activities.speech import SpeechActivities
from activities.speech_providers.azure_speech import (
    AzureRecognizer,
    AzureSpeechSettings,
    AzureSynthesizer,
)
from activities.speech_providers.offline_tts import EspeakSynthesizer
from registries.loading import SHIPPED_REGISTRY
from runtime.temporal_client import data_converter
from tests.fakes.azure_speech_server import FakeAzureSpeechServer
from tests.fakes.openai_server import FakeOpenAIServer, completion, stall, stream
from tests.gateway.conftest import (
    GatewayStack,
    browser_caller,
    call_on_gateway,
    open_gateway_stack,
    speech_pcm,
)
from tests.workflow.conftest import items_of
from tests.workflow.test_interruptions import registry_with_slow_tool
from workflows.call_session import CallSessionWorkflow
from workflows.outages import FILLER, TROUBLE_APOLOGY

PROFILE = {"name": "Alex Morgan", "client_id": "C1001"}


def edit_yaml(path: Path, **fields: Any) -> None:
    data = yaml.safe_load(path.read_text())
    data.update(fields)
    path.write_text(yaml.safe_dump(data))


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shipped registry plus a slow loyalty-points tool (released through a gate file),
    with a 3 s silence bound; the workers load it (BATON_REGISTRY)."""
    root = registry_with_slow_tool(tmp_path)
    edit_yaml(root / "scenariostore" / "banking" / "scenario.yaml", max_silence_seconds=3.0)
    monkeypatch.setenv("BATON_REGISTRY", str(root))
    return root


@pytest_asyncio.fixture
async def llm_stack(
    temporal_client: Client, registry: Path
) -> AsyncIterator[tuple[GatewayStack, FakeOpenAIServer]]:
    with FakeOpenAIServer([], max_requests=20, lifetime=180) as llm:
        model = OpenAIChatModel(api_key="test", base_url=llm.base_url, timeout=60.0)
        async with open_gateway_stack(temporal_client, chat_model=model) as stack:
            yield stack, llm
        await model.aclose()


def kinds_of_turn(items: list[dict[str, Any]], turn: int) -> list[str]:
    return [i["type"] for i in items if i["turn"] == turn]


async def test_a_hanging_model_gets_a_filler_then_the_honest_apology(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    llm.add(stall(60.0))
    _, session = await call_on_gateway(stack, **PROFILE)
    reply = await session.say("Is my card safe?")
    assert TROUBLE_APOLOGY in reply.text and "catch" not in reply.text
    items = await session.transcript()
    assert kinds_of_turn(items, 1) == ["user_turn", "filler", "agent_turn"]
    filler = items_of(items, "filler")[0]
    assert filler["text"] == FILLER and filler["waiting_for"] == "model"
    assert items_of(items, "agent_turn")[-1]["text"] == TROUBLE_APOLOGY
    await session.hang_up()


async def test_a_slow_model_that_answers_records_its_filler(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    llm.add(stall(2.2, then=stream(["Your card is safe."])))
    _, session = await call_on_gateway(stack, **PROFILE)
    reply = await session.say("Is my card safe?")
    assert reply.text.endswith("Your card is safe.")
    items = await session.transcript()
    assert kinds_of_turn(items, 1) == ["user_turn", "filler", "agent_turn"]
    assert items_of(items, "filler")[0]["waiting_for"] == "model"
    await session.hang_up()


async def test_a_slow_tool_round_gets_a_filler(temporal_client: Client, registry: Path) -> None:
    # The default bound: only the tool is slow here, the model must not be cut on a busy machine.
    edit_yaml(registry / "scenariostore" / "banking" / "scenario.yaml", max_silence_seconds=8.0)
    # A model scripted for this call alone: replies served in request order could be taken by
    # a call another test left on the shared task queues.
    model = ScriptedChatModel()
    async with open_gateway_stack(temporal_client, chat_model=model) as stack:
        _, session = await call_on_gateway(stack, **PROFILE)
        model.queue(
            session.call.call_id,
            [
                ScriptedResponse(calls=[("count_loyalty_points", {})]),
                ScriptedResponse(say="You have 1,200 points."),
            ],
        )
        gate = registry.parent / "gate"
        turn = asyncio.create_task(session.say("How many loyalty points do I have?"))
        # The tool holds until released: the filler comes while it runs, not after.
        await session.wait_for(lambda t: bool(items_of(t, "filler")), timeout=30)
        assert not (gate / "finished").exists()
        (gate / "release").write_text("go")
        reply = await turn
        assert reply.text.endswith("You have 1,200 points.")
        items = await session.transcript()
        (filler,) = items_of(items, "filler")
        assert filler["waiting_for"] == "tools" and filler["text"] == FILLER
        kinds = kinds_of_turn(items, 1)
        assert kinds.index("tool_call") < kinds.index("filler") < kinds.index("tool_result")
        await session.hang_up()


async def test_the_callers_language_picks_the_agent_its_recognizer_locale_and_voice(
    temporal_client: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    edit_yaml(
        registry / "scenariostore" / "banking" / "scenario.yaml",
        start_agent_by_language={"es": "FraudAgent"},
    )
    edit_yaml(registry / "agentstore" / "fraud_agent" / "agent.yaml", language="es-MX")
    monkeypatch.setenv("BATON_REGISTRY", str(registry))
    async with FakeAzureSpeechServer(phrases=[("Me robaron la tarjeta.", 0.9)]) as azure:
        settings = AzureSpeechSettings(key="test-key", host=azure.host)
        speech = SpeechActivities(
            AzureRecognizer(settings, timeout=10), AzureSynthesizer(settings, timeout=10)
        )
        async with open_gateway_stack(temporal_client, speech=speech) as stack:
            # The caller's signed profile says Spanish: the scenario sends them to FraudAgent.
            caller = await browser_caller(stack, language="es-MX", client_id="C1001")
            await caller.wait_event(lambda e: e["type"] == "timeline", timeout=30)
            await caller.heard(300)
            await caller.say(await speech_pcm("my card was stolen"))
            await caller.wait_event(
                lambda e: (
                    e["type"] == "timeline" and any(i["type"] == "user_turn" for i in e["items"])
                ),
                timeout=30,
            )
            await caller.close()
    recognitions = [c for c in azure.connections if "/speech/recognition/" in c.path]
    assert recognitions and all("language=es-MX" in c.path for c in recognitions)
    ssml = [str(b) for c in azure.connections for b in c.bodies("ssml")]
    # FraudAgent keeps the shared en-US voice in YAML; its language picks the es-MX voice.
    assert ssml and all("es-MX-DaliaNeural" in s for s in ssml)


async def test_a_hanging_model_is_replaced_by_its_fallback_on_a_voice_call(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer], registry: Path
) -> None:
    stack, llm = llm_stack
    edit_yaml(
        registry / "scenariostore" / "banking" / "scenario.yaml",
        max_silence_seconds=4.0,  # the primary gets 2 s of it, past the 1 s filler
        filler_after_seconds=1.0,
        model_fallback="backup-model",
    )
    # The fallback's answer is not streamed: the gateway's reply was the cancelled primary's.
    llm.add(stall(60.0), completion("Your card is safe.", model="backup-model"))
    _, session = await call_on_gateway(stack, **PROFILE)
    reply = await session.say("Is my card safe?")
    assert reply.text == "Your card is safe."
    items = await session.transcript()
    assert kinds_of_turn(items, 1) == ["user_turn", "filler", "model_fallback", "agent_turn"]
    (fallback,) = items_of(items, "model_fallback")
    assert (
        fallback["answered_by"] == "backup-model" and "no answer within 2 s" in fallback["reason"]
    )
    assert llm.requests[-1].body["model"] == "backup-model"
    await session.hang_up()


async def test_a_long_reply_being_written_is_not_cut_by_the_silence_bound(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer],
) -> None:
    stack, llm = llm_stack
    pieces = ["Your card is safe. ", "I checked it. ", "Nothing is wrong. ", "All is well."]
    # Four sentences 1.2 s apart: the reply takes longer than the 3 s bound to write, but
    # its first words came at once.
    llm.add(stream(pieces, event_delay=1.2))
    _, session = await call_on_gateway(stack, **PROFILE)
    reply = await session.say("Is my card safe?")
    assert reply.text == "".join(pieces)
    fillers = items_of(await session.transcript(), "filler")
    assert not [f for f in fillers if f["waiting_for"] == "tools"]
    await session.hang_up()


async def test_a_recognizer_that_hangs_gets_a_filler_then_the_honest_apology(
    temporal_client: Client,
) -> None:
    async with FakeAzureSpeechServer(silent=True) as azure:  # takes the audio, never answers
        speech = SpeechActivities(
            AzureRecognizer(AzureSpeechSettings(key="k", host=azure.host), timeout=2.0),
            EspeakSynthesizer(),
        )
        async with open_gateway_stack(temporal_client, speech=speech) as stack:
            caller = await browser_caller(stack, client_id="C1001")
            await caller.wait_event(lambda e: e["type"] == "timeline", timeout=30)
            await caller.heard(300)
            await caller.say(await speech_pcm("my card was stolen"))
            await caller.wait_event(
                lambda e: (
                    e["type"] == "timeline"
                    and any(i.get("text") == TROUBLE_APOLOGY for i in e["items"])
                ),
                timeout=60,
            )
            items = list(caller.timeline)
            await caller.close()
    kinds = [i["type"] for i in items if i["turn"] == 1]
    # The filler was said while the words were still being recognized: before they are known.
    assert kinds == ["filler", "user_turn", "agent_turn"]
    assert items_of(items, "filler")[0]["waiting_for"] == "speech"
    said = [i["text"] for i in items_of(items, "agent_turn")]
    assert said == [TROUBLE_APOLOGY]  # not "didn't catch that": the recognizer failed


async def test_a_handoff_round_gets_no_filler_and_replays(
    llm_stack: tuple[GatewayStack, FakeOpenAIServer], registry: Path
) -> None:
    """A handoff is a local activity, whose result replay hands back at once: a filler timer
    raced against it would replay in another order, so a handoff round never starts one, even
    with a threshold it would always pass (the model may still get its own)."""
    stack, llm = llm_stack
    edit_yaml(
        registry / "scenariostore" / "banking" / "scenario.yaml",
        max_silence_seconds=8.0,
        filler_after_seconds=0.001,
    )
    handoff = '{"target_agent": "FraudAgent", "reason": "card used abroad"}'
    llm.add(
        stream(
            tool_call_parts=[
                {"index": 0, "id": "h1", "name": "handoff_to_agent", "arguments": handoff}
            ]
        ),
        stream(["I can help with that."]),
    )
    _, session = await call_on_gateway(stack, **PROFILE)
    reply = await session.say("Someone used my card abroad")
    assert reply.agent == "FraudAgent"
    fillers = items_of(await session.transcript(), "filler")
    assert not [f for f in fillers if f["waiting_for"] == "tools"]
    await session.hang_up()
    history = await session.handle.fetch_history()
    replayer = Replayer(workflows=[CallSessionWorkflow], data_converter=data_converter())
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None, replayed.replay_failure
