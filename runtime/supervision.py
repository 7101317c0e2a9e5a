"""A supervisor's hand on a live call, shared by `baton call supervise` and the gateway's
`POST /api/calls/{call_id}/supervise`: move the caller to another agent (the signal
`supervisor_transfer`, then the call's own record of what came of it), change the call's routes
(the Update `change_routes`, whose validator refuses what cannot apply), or hang up.

Reasons travel to the workflow (encrypted in history) and are never logged: a supervisor's
note may name the caller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from temporalio.client import (
    Client,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from contracts.calls import (
    QUERY_SUMMARY,
    QUERY_TRANSCRIPT_SINCE,
    SIGNAL_HANG_UP,
    SIGNAL_SUPERVISOR_TRANSFER,
    CallSummary,
    HangUp,
    SupervisorTransfer,
    TranscriptSlice,
)
from contracts.routes import (
    UPDATE_CHANGE_ROUTES,
    EffectiveRoute,
    RouteChange,
    RouteChangeResult,
)
from contracts.temporal import workflow_id_for
from contracts.transcript import SupervisorItem

#: The actions, as the HTTP body's keys name them (the CLI's flags are the same with dashes).
ACTIONS = ("transfer", "add_route", "remove_route", "retarget", "hang_up")
#: How long the call has to answer, a transfer or hang-up's outcome included.
OUTCOME_WAIT_SECONDS = 30.0
_POLL_SECONDS = 0.1


class SupervisionError(ValueError):
    """The action is malformed or the call refused it; the message says why, for a person."""


@dataclass(frozen=True)
class SupervisorAction:
    """One parsed action: exactly one of a transfer target, a route change or a hang-up."""

    kind: str
    reason: str = ""
    supervisor: str = "supervisor"
    target_agent: str = ""
    change: RouteChange | None = None


@dataclass
class SupervisionOutcome:
    """What the call did: `message` in words, and the call's routes after a route change."""

    message: str
    routes: list[EffectiveRoute] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": True,
            "message": self.message,
            "routes": [route.model_dump() for route in self.routes],
        }


def parse_action(
    fields: Mapping[str, Any], reason: str = "", supervisor: str = "supervisor"
) -> SupervisorAction:
    """The action named by exactly one of `ACTIONS` in `fields` (values as the CLI takes them:
    an agent, `A:B`, `A:B:C`, or true for a hang-up); an added route may also take `type`
    (announced or discrete) and `condition` (when its agent should take it). Raises
    `SupervisionError`."""
    given = [name for name in ACTIONS if fields.get(name) not in (None, False, "")]
    if len(given) != 1:
        raise SupervisionError(f"name exactly one action of: {', '.join(ACTIONS)}")
    kind, value = given[0], fields[given[0]]
    if not isinstance(reason, str) or not isinstance(supervisor, str) or not supervisor:
        raise SupervisionError("reason and supervisor must be text")
    if kind == "hang_up":
        if value is not True:
            raise SupervisionError("hang_up takes true")
        return SupervisorAction(kind, reason, supervisor)
    if not isinstance(value, str) or not value.strip():
        raise SupervisionError(f"{kind} takes text, e.g. {_EXAMPLES[kind]}")
    if kind == "transfer":
        return SupervisorAction(kind, reason, supervisor, target_agent=value.strip())
    parts = [part.strip() for part in value.split(":")]
    wanted = 3 if kind == "retarget" else 2
    if len(parts) != wanted or not all(parts):
        raise SupervisionError(f"{kind} takes {_EXAMPLES[kind]}, not {value!r}")
    action = {"add_route": "add", "remove_route": "remove", "retarget": "retarget"}[kind]
    try:
        change = RouteChange(
            action=action,
            from_agent=parts[0],
            to_agent=parts[1],
            new_to_agent=parts[2] if kind == "retarget" else None,
            type=fields.get("type") or None,
            condition=fields.get("condition") or "",
            reason=reason,
            supervisor=supervisor,
        )
    except ValidationError as error:
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        raise SupervisionError(f"{where}: {message}" if where else message) from None
    return SupervisorAction(kind, reason, supervisor, change=change)


_EXAMPLES = {
    "transfer": "AGENT",
    "add_route": "FROM:TO",
    "remove_route": "FROM:TO",
    "retarget": "FROM:OLD_TO:NEW_TO",
}


async def supervise(
    client: Client,
    call_id: str,
    action: SupervisorAction,
    *,
    wait_seconds: float = OUTCOME_WAIT_SECONDS,
) -> SupervisionOutcome:
    """Carry out `action` on the call; raises `SupervisionError` when the call refuses it, is
    not found, has ended, or has not answered within `wait_seconds` (no worker serving it, or
    a turn too long to let a transfer through)."""
    handle = client.get_workflow_handle(workflow_id_for(call_id))
    bound = asyncio.timeout(wait_seconds)
    try:
        async with bound:
            return await _carry_out(handle, action)
    except (TimeoutError, WorkflowUpdateRPCTimeoutOrCancelledError):
        # The SDK turns the bound's cancellation of an Update into its own error; any other
        # cancellation (the process stopping) goes on as it came.
        if not bound.expired():
            raise
        raise SupervisionError(
            f"the call did not answer within {wait_seconds:.0f} s: are its workers running?"
        ) from None
    except WorkflowUpdateFailedError as error:
        cause = error.cause
        message = cause.message if isinstance(cause, ApplicationError) else str(cause or error)
        raise SupervisionError(message) from None
    except RPCError as error:
        if "already completed" in error.message:  # an Update to a closed workflow
            raise SupervisionError("the call has ended") from None
        if error.status == RPCStatusCode.NOT_FOUND:
            raise SupervisionError(f"no call {call_id!r} is known to the server") from None
        raise


async def _carry_out(
    handle: WorkflowHandle[Any, Any], action: SupervisorAction
) -> SupervisionOutcome:
    if action.change is not None:
        result: RouteChangeResult = await handle.execute_update(
            UPDATE_CHANGE_ROUTES, action.change, result_type=RouteChangeResult
        )
        return SupervisionOutcome(f"{result.change.describe()}: done", result.routes)
    summary: CallSummary = await handle.query(QUERY_SUMMARY, result_type=CallSummary)
    if summary.status != "active":
        raise SupervisionError(f"the call has ended ({summary.status})")
    if action.kind == "hang_up":
        said = f": {action.reason}" if action.reason else ""
        await handle.signal(SIGNAL_HANG_UP, HangUp(reason=f"hung up by {action.supervisor}{said}"))
        return await _ended(handle)
    before: TranscriptSlice = await handle.query(
        QUERY_TRANSCRIPT_SINCE, 1 << 30, result_type=TranscriptSlice
    )
    transfer = SupervisorTransfer(
        target_agent=action.target_agent, reason=action.reason, supervisor=action.supervisor
    )
    await handle.signal(SIGNAL_SUPERVISOR_TRANSFER, transfer)
    return await _transferred(handle, before.total)


async def _transferred(handle: WorkflowHandle[Any, Any], start: int) -> SupervisionOutcome:
    """The call's record of the transfer: the first supervisor item after `start`."""
    while True:
        new: TranscriptSlice = await handle.query(
            QUERY_TRANSCRIPT_SINCE, start, result_type=TranscriptSlice
        )
        if new.total < start:  # the call continued as new meanwhile: its tail is carried
            start = 0
            continue
        done = next((i for i in new.items if isinstance(i, SupervisorItem)), None)
        if done is not None:
            if done.action != "transfer":
                raise SupervisionError(f"the transfer was refused: {done.reason}")
            return SupervisionOutcome(f"transferred to {done.target}")
        summary: CallSummary = await handle.query(QUERY_SUMMARY, result_type=CallSummary)
        if summary.status != "active":
            raise SupervisionError(f"the call ended first ({summary.status})")
        await asyncio.sleep(_POLL_SECONDS)


async def _ended(handle: WorkflowHandle[Any, Any]) -> SupervisionOutcome:
    while True:
        summary: CallSummary = await handle.query(QUERY_SUMMARY, result_type=CallSummary)
        if summary.status != "active":
            return SupervisionOutcome(f"the call ended ({summary.status})")
        await asyncio.sleep(_POLL_SECONDS)
