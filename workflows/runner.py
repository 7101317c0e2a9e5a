"""The workflow runner every Baton process runs the call workflow in: the workers and
`baton audit verify`'s replay alike, so a call replays exactly as a worker ran it.

It is the SDK's sandbox (`SandboxedWorkflowRunner`) with Baton's own pure modules passed
through, and with one cost taken out.

Passed through: `contracts`, `runtime` and every module of this package but the workflow's own
(`call_session`, which the sandbox re-imports for each run and checks as it always did). The
workflow already imports them inside `workflow.unsafe.imports_passed_through()`, yet
`from workflows import conversation` still re-imported three of them into every run's sandbox;
named here, none is, and a step module added later is passed through without anyone listing it.

The cost taken out: for every payload of every command and activation, the SDK's
command-aware data converter asks the workflow instance for the payload's serialization
context and external-store context, and the sandbox answers each question by `exec`-ing a
snippet inside its import-restriction context (swap `sys.modules`, `__import__` and the
restricted builtins in, then out). Replaying a 500-turn call made 22,070 such entries, 20,048
of them for these two look-ups and 2,010 for activations (docs/PERFORMANCE.md), and they were
most of what the sandbox added to the replay. The look-ups are the SDK's own code
(`_WorkflowInstanceImpl.get_serialization_context` and `get_external_store_context`: read the
pending command's activity or child, build a context object); they import nothing and run no
workflow code, so here they are asked of the sandboxed instance directly. Activations still run
inside the restrictions, as before.

That reaches into one private class of the SDK (`workflow_sandbox._runner._Instance`); when a
future SDK no longer has what it needs, `workflow_runner()` is the SDK's stock sandbox and
`sandbox_is_lean()` says so (tests/replay/test_workflow_runner.py fails on it).
"""

from __future__ import annotations

import pkgutil
from pathlib import Path
from typing import Any

from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.worker.workflow_sandbox import _runner as sdk_sandbox

#: The workflow's own module: sandboxed, re-imported for each run.
WORKFLOW_MODULE = "workflows.call_session"


def passthrough_modules() -> tuple[str, ...]:
    """Baton's modules the sandbox shares with the process instead of re-importing per run."""
    here = [str(Path(__file__).parent)]
    steps = sorted(f"workflows.{module.name}" for module in pkgutil.iter_modules(here))
    return ("contracts", "runtime", *(name for name in steps if name != WORKFLOW_MODULE))


#: The name the SDK's sandbox gives its in-sandbox instance (`_Instance._create_instance`).
_IN_SANDBOX = "__temporal_in_sandbox"


def _lean_instance_class() -> type[Any] | None:
    stock: type[Any] | None = getattr(sdk_sandbox, "_Instance", None)
    # The two methods overridden below, and the one that makes the in-sandbox instance.
    needed = ("get_serialization_context", "get_external_store_context", "_create_instance")
    if stock is None or not all(hasattr(stock, name) for name in needed):
        return None  # a future SDK: the stock sandbox, see sandbox_is_lean()

    class _LeanInstance(stock):  # type: ignore[misc, valid-type]
        """The sandboxed instance, with its context look-ups asked directly."""

        def _in_sandbox(self) -> Any:
            # None until the instance is made (the stock path then answers, as before).
            return self.globals_and_locals.get(_IN_SANDBOX)

        def get_serialization_context(self, command_info: Any) -> Any:
            inner = self._in_sandbox()
            if inner is None:
                return super().get_serialization_context(command_info)
            return inner.get_serialization_context(command_info)

        def get_external_store_context(self, command_info: Any) -> Any:
            inner = self._in_sandbox()
            if inner is None:
                return super().get_external_store_context(command_info)
            return inner.get_external_store_context(command_info)

    return _LeanInstance


_LEAN_INSTANCE = _lean_instance_class()


class LeanSandboxedWorkflowRunner(SandboxedWorkflowRunner):
    """`SandboxedWorkflowRunner` whose instances answer context look-ups without re-entering
    the sandbox (see the module's docstring)."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        if _LEAN_INSTANCE is None:
            return super().create_instance(det)
        instance: WorkflowInstance = _LEAN_INSTANCE(det, self.runner_class, self.restrictions)
        return instance


def sandbox_is_lean() -> bool:
    """Whether this SDK lets `workflow_runner()` skip the sandbox for context look-ups."""
    return _LEAN_INSTANCE is not None


def workflow_runner() -> WorkflowRunner:
    """The runner for `CallSessionWorkflow`, in workers and in replay."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*passthrough_modules())
    return LeanSandboxedWorkflowRunner(restrictions=restrictions)
