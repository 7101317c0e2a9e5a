"""`baton call --json` as a process: one JSON document on stdout (logs on stderr only), a call
that has ended reported from the workflow's result, exit 0. The client reads a call only while
its workflow runs: once it has closed, no query of it waits for a worker."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, Interceptor, OutboundInterceptor, QueryWorkflowInput
from temporalio.common import QueryRejectCondition

from baton.call_client import CallEndedError, CallSession
from baton.temporal_server import EmbeddedTemporal
from baton.text_call import LiveCall, converse
from contracts.calls import CallInput, CallOutcome
from tests.workflow.conftest import PROFILE, Stack

#: The README's walkthrough: the caller says goodbye and the agent ends the call (end_call).
ENDED_BY_THE_AGENT = [
    "Someone used my card abroad last night, I think it's fraud",
    "Please block my card ending in 8832",
    "That's all, thank you, goodbye",
]
#: A script that runs out with the call still going: the CLI hangs up.
RUNS_OUT = ENDED_BY_THE_AGENT[:2]
CLI_TIMEOUT = 120.0


async def _baton_call(server: EmbeddedTemporal, script: Path, *extra: str) -> tuple[int, str, str]:
    """Run `baton call --script FILE ...` against the server; its exit code, stdout, stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "baton.cli",
        "call",
        "--script",
        str(script),
        "--address",
        server.address,
        *extra,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        # DEBUG: as much logging as there can be, all of which must stay off stdout.
        env={**os.environ, "BATON_LOG_LEVEL": "DEBUG", "PYTHONUNBUFFERED": "1"},
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), CLI_TIMEOUT)
    finally:
        if process.returncode is None:  # timed out: end it, it is ours
            process.kill()
            await process.wait()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def _outcome(client: Client, call_id: str) -> dict[str, Any]:
    result = await client.get_workflow_handle(f"call-{call_id}").result()
    return CallOutcome.model_validate(result).model_dump(mode="json")


@pytest.mark.asyncio
async def test_a_call_the_agent_ends_prints_one_json_document_from_its_result(
    stack: Stack, temporal_server: EmbeddedTemporal, tmp_path: Path
) -> None:
    script = tmp_path / "call.txt"
    script.write_text("\n".join(ENDED_BY_THE_AGENT) + "\n")
    for _ in range(2):  # each run is a process of its own that must exit 0 (no crash at exit)
        code, out, err = await _baton_call(temporal_server, script, "--json")
        assert code == 0, err
        report = json.loads(out)  # the whole of stdout is one JSON document
        assert out.lstrip().startswith("{") and out.rstrip().endswith("}")
        assert report["outcome"] == await _outcome(stack.client, report["call_id"])
        assert report["outcome"]["status"] == "completed"
        assert report["outcome"]["end_reason"] == "caller done"
        state = report["state"]
        assert state["status"] == "completed" and state["active_agent"] == "FraudAgent"
        assert [(h["source"], h["target"]) for h in state["handoffs"]] == [
            ("Concierge", "FraudAgent")
        ]
        timeline = report["timeline"]
        # The last turn comes from its reply, the end from the result.
        assert timeline[-3] == "caller       : That's all, thank you, goodbye"
        assert timeline[-2].startswith("FraudAgent   : ") and "Goodbye" in timeline[-2]
        assert timeline[-1] == "  ■ call completed: caller done"
        assert "FraudAgent calls block_card" in "\n".join(timeline)
        assert "Traceback" not in err


@pytest.mark.asyncio
async def test_a_script_that_runs_out_hangs_up_and_both_outputs_say_so(
    stack: Stack, temporal_server: EmbeddedTemporal, tmp_path: Path
) -> None:
    script = tmp_path / "call.txt"
    script.write_text("\n".join(RUNS_OUT) + "\n")
    code, out, err = await _baton_call(temporal_server, script, "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["outcome"] == await _outcome(stack.client, report["call_id"])
    assert report["state"]["status"] == report["outcome"]["status"] == "hung_up"
    assert report["timeline"][-1] == "  ■ call hung_up: caller hung up"

    code, out, err = await _baton_call(temporal_server, script)  # the live timeline
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Concierge    : ") and lines[0].endswith("[greeting]")
    assert "               (active agent: FraudAgent)" in lines
    assert lines[-1] == "  ■ call hung_up: caller hung up"


class _RecordQueries(Interceptor):
    """Remembers the reject condition of every query a client makes."""

    def __init__(self) -> None:
        self.conditions: list[QueryRejectCondition | None] = []

    def intercept_client(self, next: OutboundInterceptor) -> OutboundInterceptor:
        return _Recorder(next, self.conditions)


class _Recorder(OutboundInterceptor):
    def __init__(self, next: OutboundInterceptor, seen: list[QueryRejectCondition | None]):
        super().__init__(next)
        self.seen = seen

    async def query_workflow(self, input: QueryWorkflowInput) -> Any:
        self.seen.append(input.reject_condition)
        return await super().query_workflow(input)


def _session(client: Client) -> CallSession:
    call = CallInput(call_id=f"t-{uuid.uuid4().hex[:10]}", caller_profile=PROFILE)
    return CallSession(client, call)


@pytest.mark.asyncio
async def test_every_query_of_a_text_call_is_refused_once_the_call_has_closed(
    stack: Stack,
) -> None:
    recorder = _RecordQueries()
    config = stack.client.config()
    config["interceptors"] = [recorder]
    client = Client(**config)
    for quiet, lines in ((True, ENDED_BY_THE_AGENT), (False, RUNS_OUT)):
        call = await converse(_session(client), lines, quiet=quiet)
        assert call.outcome is not None and call.outcome.status in ("completed", "hung_up")
    assert recorder.conditions
    assert set(recorder.conditions) == {QueryRejectCondition.NOT_OPEN}


@pytest.mark.asyncio
async def test_a_closed_call_is_read_with_no_worker_running(stack: Stack) -> None:
    session = _session(stack.client)
    await session.start()
    await session.wait_for(lambda items: any(i["type"] == "greeting" for i in items))
    reply = await session.say(ENDED_BY_THE_AGENT[-1])
    assert reply.status == "completed"
    await session.handle.result()
    # No worker at all now: a query of the closed workflow would wait for one to replay it.
    await stack.stop_workers()

    call = LiveCall(session, quiet=True, caller_lines=True)
    assert await call.show_new() is False  # refused at once: the workflow has closed
    outcome = await call.finish()
    assert (outcome.status, outcome.end_reason) == ("completed", "caller done")
    assert call.timeline == ["  ■ call completed: caller done"]
    with pytest.raises(CallEndedError, match="the call ended before it began: caller done"):
        await call.until_greeted()
