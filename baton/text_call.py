"""A text call from the terminal: `baton call` (live timeline or `--json`) and `baton demo --text`.

The client reads the call only while its workflow runs, with queries the server refuses at once
when the workflow has closed (`QueryRejectCondition.NOT_OPEN`). A query on a closed workflow is
answered by a worker replaying the whole history: with no `calls` worker polling, a busy one,
or workflow code changed since, it waits out its timeout (30 s, then exit 1) or fails, for a
call that is over. So once a call has ended, the rest comes from what the client holds: the
last turn's reply (the Update's result) and the workflow's result, which says how it ended.
By then the workflow has closed (it ends in the workflow task that answers the last turn).
Only `baton demo`, which runs the `calls` worker itself, reads the closed call's transcript
for the last turn's tool calls too, since its own worker is there to answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
)
from temporalio.common import QueryRejectCondition
from temporalio.service import RPCError

from baton.call_client import CallEndedError, CallSession, describe_item
from baton.preflight import CommandFailedError, connect_or_explain, require_scenario
from contracts.calls import (
    QUERY_STATE,
    QUERY_TRANSCRIPT_SINCE,
    CallInput,
    CallOutcome,
    TranscriptSlice,
    TurnReply,
)
from contracts.transcript import AgentTurn, CallEndItem, GreetingItem, TranscriptItem, UserTurn
from registries.errors import BatonError

#: How long the workers have to greet the caller.
GREETING_TIMEOUT = 30.0
#: How long a call may take to close once it has ended or the caller hung up.
END_TIMEOUT = 30.0
#: How long the demo's own worker has to answer a query of a closed call.
CLOSED_READ_TIMEOUT = timedelta(seconds=10)
_POLL = 0.05
_T = TypeVar("_T")


class LiveCall:
    """One call as `baton call` follows it: the lines it shows, and for `--json` the state
    the running workflow last reported and the workflow's result."""

    def __init__(
        self, session: CallSession, *, quiet: bool, caller_lines: bool, worker_here: bool = False
    ) -> None:
        self.session = session
        self.quiet = quiet
        #: This process runs the `calls` worker, so a closed call's queries are answered.
        self.worker_here = worker_here
        #: Someone typing already sees their own line; a script's lines are shown.
        self.caller_lines = caller_lines
        self.timeline: list[str] = []
        self.state: dict[str, Any] = {}
        self.outcome: CallOutcome | None = None
        self._read = 0  # transcript items read so far

    async def _query(self, name: str, *args: Any, result_type: type[_T]) -> _T | None:
        """The query's answer, or None when the workflow has closed (refused at once)."""
        try:
            result: _T = await self.session.handle.query(
                name, *args, result_type=result_type, reject_condition=QueryRejectCondition.NOT_OPEN
            )
        except WorkflowQueryRejectedError:
            return None
        return result

    def _emit(self, item: TranscriptItem) -> None:
        line = describe_item(item)
        if line is None:
            return
        self.timeline.append(line)
        if not self.quiet and (self.caller_lines or item.type != "user_turn"):
            print(line, flush=True)

    async def until_greeted(self) -> None:
        """Wait for the first greeting; a call that ends first says why (its result)."""
        deadline = asyncio.get_running_loop().time() + GREETING_TIMEOUT
        while True:
            read = await self._query(QUERY_TRANSCRIPT_SINCE, 0, result_type=TranscriptSlice)
            if read is None:
                outcome = await self.finish(show=False)
                raise CallEndedError(f"the call ended before it began: {outcome.end_reason}")
            if any(item.type == "greeting" for item in read.items):
                return
            if asyncio.get_running_loop().time() > deadline:
                raise CommandFailedError(
                    f"no greeting within {GREETING_TIMEOUT:.0f} s: are workers running?"
                )
            await asyncio.sleep(_POLL)

    async def show_new(self) -> bool:
        """Show the items not shown yet (and for `--json` keep the state); False once closed."""
        new = await self._query(QUERY_TRANSCRIPT_SINCE, self._read, result_type=TranscriptSlice)
        if new is not None and new.total < self._read:  # continue-as-new carried fewer items
            new = await self._query(QUERY_TRANSCRIPT_SINCE, 0, result_type=TranscriptSlice)
        if new is None:
            return False
        for item in new.items:
            self._emit(item)
        self._read = new.start + len(new.items)
        if self.quiet:
            state = await self._query(QUERY_STATE, result_type=dict)
            if state is None:
                return False
            self.state = state
        return True

    def show_last_turn(self, text: str, reply: TurnReply) -> None:
        """The turn that ended the call, from its reply: the workflow closed in the task that
        answered it, so its transcript is not read again (the reply has no tool calls)."""
        now = datetime.now(UTC)
        self._emit(UserTurn(at=now, utterance_id=reply.utterance_id, text=text, agent=""))
        for handoff in reply.handoffs:  # the reply lists them apart from what was spoken
            self.timeline.append(f"  ⇢ handoff {handoff}")
            if not self.quiet:
                print(self.timeline[-1], flush=True)
        for spoken in reply.spoken:
            kind = GreetingItem if spoken.kind == "greeting" else AgentTurn
            self._emit(kind(at=now, agent=spoken.agent, text=spoken.text))

    async def close(self, last_turn: tuple[str, TurnReply] | None = None) -> CallOutcome:
        """Once the call has ended: the rest of its timeline, then its result."""
        if self.worker_here and await self._read_closed():
            return await self.finish(show=False)  # the transcript's own end was shown
        if last_turn is not None:
            self.show_last_turn(*last_turn)
        return await self.finish()

    async def _read_closed(self) -> bool:
        """The rest of a closed call's transcript, answered by this process's own worker
        replaying it; False if it does not answer in time (then the reply and result tell)."""
        try:
            new = await self.session.handle.query(
                QUERY_TRANSCRIPT_SINCE,
                self._read,
                result_type=TranscriptSlice,
                rpc_timeout=CLOSED_READ_TIMEOUT,
            )
        except (RPCError, WorkflowQueryFailedError):
            return False
        for item in new.items:
            self._emit(item)
        self._read = new.start + len(new.items)
        return True

    async def finish(self, *, show: bool = True) -> CallOutcome:
        """The workflow's result: how the call ended, shown as its last line."""
        try:
            raw = await asyncio.wait_for(self.session.handle.result(), END_TIMEOUT)
        except TimeoutError:
            raise CommandFailedError(
                f"the call did not end within {END_TIMEOUT:.0f} s: are `calls` workers running?"
            ) from None
        except WorkflowFailureError as exc:
            raise CommandFailedError(f"the call's workflow failed: {exc.cause}") from exc
        self.outcome = CallOutcome.model_validate(raw)
        if show:
            end = CallEndItem(
                at=datetime.now(UTC), status=self.outcome.status, reason=self.outcome.end_reason
            )
            self._emit(end)
        return self.outcome

    async def is_open(self) -> bool:
        described = await self.session.handle.describe()
        return described.status == WorkflowExecutionStatus.RUNNING

    def report(self) -> dict[str, Any]:
        """What `--json` prints: the result, the state with the result's fields (the rest as
        the running workflow last reported it) and the timeline."""
        assert self.outcome is not None, "finish() first"
        outcome = self.outcome.model_dump(mode="json")
        return {
            "call_id": self.outcome.call_id,
            "outcome": outcome,
            "state": {**self.state, **{k: v for k, v in outcome.items() if k != "call_id"}},
            "timeline": self.timeline,
        }


async def converse(
    session: CallSession,
    lines: list[str] | None,
    *,
    quiet: bool = False,
    worker_here: bool = False,
) -> LiveCall:
    """Run a call, its timeline shown as it grows, from a script or the keyboard, until it ends
    or the lines run out (then the caller hangs up). `worker_here`: this process runs the
    `calls` worker (see `LiveCall`)."""
    await session.start()
    typing = lines is None and sys.stdin.isatty() and not quiet
    call = LiveCall(session, quiet=quiet, caller_lines=not typing, worker_here=worker_here)
    await call.until_greeted()
    if not await call.show_new():
        await call.close()
        return call
    source = iter(lines) if lines is not None else None
    while True:
        text = next(source, None) if source is not None else _prompt(typing)
        if text is None:
            break
        if not text.strip():
            continue
        try:
            reply = await session.say(text.strip())
        except RPCError:
            if await call.is_open():
                raise
            break  # it ended between turns (timed out, escalated): its result says how
        if reply.status != "active":
            await call.close((text.strip(), reply))
            return call
        if not await call.show_new():
            break
        if not quiet:
            print(f"{'':13}  (active agent: {reply.agent})", flush=True)
    try:
        await session.hang_up()
    except RPCError:
        if await call.is_open():
            raise  # else it ended on its own first: its result says how
    await call.close()
    return call


def _prompt(show: bool) -> str | None:
    """The next typed line; the prompt only for a person at a terminal (stdout stays clean
    when input is piped)."""
    try:
        return input("you> " if show else "")
    except EOFError:
        return None


def read_script(path: Path) -> list[str]:
    """A script's caller lines: one per line, blank lines and `#` comments skipped."""
    try:
        return [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
    except OSError as exc:
        raise BatonError(f"cannot read script {path}: {exc}") from exc


async def place_call(
    address: str | None, call: CallInput, lines: list[str] | None, as_json: bool
) -> None:
    """`baton call`: the live timeline, or with `as_json` one JSON document on stdout."""
    require_scenario(call.scenario, call.registry)
    session = CallSession(await connect_or_explain(address), call)
    live = await converse(session, lines, quiet=as_json)
    if as_json:
        sys.stdout.write(json.dumps(live.report(), indent=2, default=str) + "\n")
        sys.stdout.flush()


def run_call_command(args: argparse.Namespace, call: CallInput) -> int:
    lines = read_script(args.script) if args.script else None
    asyncio.run(place_call(args.address, call, lines, args.json))
    return 0
