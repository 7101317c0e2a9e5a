"""The runner workers and `baton audit verify` share (workflows.runner): the SDK's sandbox with
Baton's pure modules passed through and context look-ups asked of the instance directly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import _runner

from runtime.temporal_client import data_converter
from workflows import runner
from workflows.call_session import CallSessionWorkflow

HISTORY = Path(__file__).parent.parent / "histories" / "v9-tool_handoff_context.json"


def test_the_installed_sdk_lets_the_runner_skip_the_sandbox_for_look_ups() -> None:
    """Fails when an SDK upgrade drops what the lean runner needs: it then falls back to the
    stock sandbox, correct but about a third slower to replay (docs/PERFORMANCE.md)."""
    assert runner.sandbox_is_lean()
    assert isinstance(runner.workflow_runner(), runner.LeanSandboxedWorkflowRunner)


def test_every_step_module_is_passed_through_but_the_workflow_itself() -> None:
    names = runner.passthrough_modules()
    assert {"contracts", "runtime", "workflows.turn", "workflows.conversation"} <= set(names)
    assert CallSessionWorkflow.__module__ == runner.WORKFLOW_MODULE
    assert runner.WORKFLOW_MODULE not in names


async def test_look_ups_answer_as_the_sandbox_would_without_entering_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every context the lean instance returns equals what the stock sandbox returns for the
    same command, and the sandbox is entered once per activation, not per payload."""
    lean: Any = runner._LEAN_INSTANCE
    compared: list[tuple[object, object]] = []
    entries: list[str] = []

    def checked(name: str) -> Any:
        def look_up(self: Any, command_info: Any) -> Any:
            want = getattr(_runner._Instance, name)(self, command_info)  # the stock answer
            answer = original[name](self, command_info)
            compared.append((answer, want))
            return answer

        return look_up

    original = {
        name: getattr(lean, name)
        for name in ("get_serialization_context", "get_external_store_context")
    }
    for name in original:
        monkeypatch.setattr(lean, name, checked(name))
    run_code = _runner._Instance._run_code

    def counted(self: Any, code: str, **extra: Any) -> None:
        entries.append(code)
        run_code(self, code, **extra)

    monkeypatch.setattr(_runner._Instance, "_run_code", counted)
    history = WorkflowHistory.from_json("runner", json.loads(HISTORY.read_text()))
    replayer = Replayer(
        workflows=[CallSessionWorkflow],
        data_converter=data_converter(),
        workflow_runner=runner.workflow_runner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None
    assert compared and all(answer == want for answer, want in compared)
    # Only the stock answers asked above entered the sandbox for a look-up.
    assert sum("get_" in code for code in entries) == len(compared)
    assert any("activate(" in code for code in entries)
