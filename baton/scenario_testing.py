"""Running conversation test files as real calls, and checking each turn's expectations.

Each test file becomes one text call on the real `CallSessionWorkflow`, served by in-process
workers (calls, llm, tools) against a Temporal server the caller of `run_tests` provides. Files
run concurrently; each turn's expectations are checked against what the caller heard
(`TurnReply`), the turn's transcript items and, once the call has ended, its outcome.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import Client

from activities.chat_models.scripted import ScriptedChatModel, ScriptedResponse
from baton.call_client import CallSession, describe_item
from contracts.calls import CallInput, CallOutcome, TurnReply
from contracts.transcript import HandoffItem, ToolCallItem, TranscriptItem
from registries.conversation_tests import Expectation, TestFile, ToolExpectation, Turn

#: One turn may take this long (a model turn, tools, a handoff and a greeting).
TURN_TIMEOUT_SECONDS = 60.0


@dataclass(frozen=True)
class Check:
    """One expectation of one turn in one run of a test file."""

    file: str
    test: str
    turn: int
    caller: str
    what: str
    passed: bool
    #: What actually happened, when it was not what was expected.
    detail: str = ""
    #: The turn's transcript lines, shown when the check failed.
    transcript: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, int, str]:
        return (self.file, self.turn, self.what)


@dataclass
class _TurnView:
    """What one turn did: the reply, its transcript items and the call's outcome if it ended."""

    reply: TurnReply
    items: list[TranscriptItem]
    outcome: CallOutcome | None = None
    lines: tuple[str, ...] = field(default=())


async def run_tests(
    client: Client,
    files: Sequence[TestFile],
    *,
    repeat: int = 1,
    jobs: int = 4,
    scripted: ScriptedChatModel | None = None,
) -> list[Check]:
    """Run every file `repeat` times, at most `jobs` calls at once; every check, in file order."""
    limit = asyncio.Semaphore(max(1, jobs))

    async def one(test_file: TestFile, run: int) -> list[Check]:
        async with limit:
            return await run_file(client, test_file, run=run, scripted=scripted)

    runs = [one(f, run) for f in files for run in range(repeat)]
    results = await asyncio.gather(*runs)
    return [check for checks in results for check in checks]


async def run_file(
    client: Client, test_file: TestFile, *, run: int = 0, scripted: ScriptedChatModel | None = None
) -> list[Check]:
    """Place one call for `test_file` and check every turn; a call that fails or ends early
    fails the turns it could not reach (with the reason), never the whole run."""
    slug = re.sub(r"[^a-z0-9]+", "-", test_file.path.stem.lower())[:40]
    call = CallInput(
        call_id=f"test-{slug}-{run}-{uuid.uuid4().hex[:8]}",
        scenario=test_file.scenario,
        caller_profile=test_file.test.profile,
        registry=str(test_file.registry_root),
    )
    session = CallSession(client, call)
    checks: list[Check] = []
    turns = test_file.test.turns
    done = 0
    ended = False
    try:
        await session.start()
        shown = len(await session.until_greeted(timeout=TURN_TIMEOUT_SECONDS))
        for index, turn in enumerate(turns):
            if ended:
                break
            if scripted is not None:
                scripted.queue(call.call_id, _responses(turn))
            view = await _play_turn(session, turn.caller, shown)
            shown += len(view.items)
            checks.extend(check_turn(test_file, index, turn, view))
            done = index + 1
            ended = view.reply.status != "active"
    except Exception as exc:  # a stalled or failed call is a test failure, reported as such
        reason = f"the call failed: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        checks.extend(_unreached(test_file, turns, done, reason))
        done = len(turns)
    finally:
        if scripted is not None:
            scripted.forget(call.call_id)
        if not ended:
            await _hang_up(session)
    checks.extend(_unreached(test_file, turns, done, "the call had already ended"))
    return checks


async def _play_turn(session: CallSession, text: str, shown: int) -> _TurnView:
    reply = await asyncio.wait_for(session.say(text), TURN_TIMEOUT_SECONDS)
    new = await session.transcript_since(shown)
    outcome = None
    if reply.status != "active":
        raw = await asyncio.wait_for(session.handle.result(), TURN_TIMEOUT_SECONDS)
        outcome = CallOutcome.model_validate(raw)
    lines = tuple(line for item in new.items if (line := describe_item(item)))
    return _TurnView(reply, list(new.items), outcome, lines)


async def _hang_up(session: CallSession) -> None:
    try:
        await session.hang_up("conversation test finished")
    except Exception:  # the call may never have started, or has ended on its own
        return


def _responses(turn: Turn) -> list[ScriptedResponse]:
    return [
        ScriptedResponse(say=step.say or "", calls=[(c.tool, c.args) for c in step.tool_calls])
        for step in turn.model
    ]


def _unreached(test_file: TestFile, turns: Sequence[Turn], start: int, why: str) -> list[Check]:
    return [
        Check(test_file.display, test_file.test.name, index + 1, turn.caller, what, False, why)
        for index, turn in enumerate(turns)
        if index >= start
        for what in describe_expectations(turn.expect)
    ]


def expected_tools(expect: Expectation) -> list[ToolExpectation]:
    return [expect.tool, *expect.tools] if expect.tool else list(expect.tools)


def describe_expectations(expect: Expectation) -> list[str]:
    """One short sentence per expectation, the same for every run (the pass-rate key)."""
    said: list[str] = []
    if expect.agent:
        said.append(f"agent is {expect.agent}")
    if expect.handoff:
        how = [expect.handoff.type or "", f"by {expect.handoff.by}" if expect.handoff.by else ""]
        kind = f" ({', '.join(part for part in how if part)})" if any(how) else ""
        said.append(f"hands off to {expect.handoff.target}{kind}")
    if expect.no_handoff:
        said.append("no handoff")
    for tool in expected_tools(expect):
        args = f" with {json.dumps(tool.args, sort_keys=True)}" if tool.args else ""
        said.append(f"calls {tool.name}{args}")
    if expect.tool_not_called:
        said.append(f"does not call {expect.tool_not_called}")
    said.extend(f"reply contains {phrase!r}" for phrase in expect.reply_contains)
    said.extend(f"reply does not contain {phrase!r}" for phrase in expect.reply_not_contains)
    if expect.ends:
        transfer = {True: ", transferred", False: ", not transferred", None: ""}
        said.append(f"call ends {expect.ends.status}{transfer[expect.ends.transfer]}")
    if expect.escalation_reason:
        said.append(f"escalation reason mentions {expect.escalation_reason!r}")
    return said or ["the turn is answered"]


def check_turn(test_file: TestFile, index: int, turn: Turn, view: _TurnView) -> list[Check]:
    """Every expectation of `turn` against what the turn did."""
    expect = turn.expect
    handoffs = [i for i in view.items if isinstance(i, HandoffItem) and i.success]
    calls = [i for i in view.items if isinstance(i, ToolCallItem)]
    heard = " ".join(line.text for line in view.reply.spoken) or view.reply.text
    ticket = view.outcome.ticket if view.outcome else None
    results: list[tuple[bool, str]] = []
    if expect.agent:
        results.append((view.reply.agent == expect.agent, f"active agent is {view.reply.agent}"))
    if expect.handoff:
        wanted = expect.handoff
        hit = any(
            h.target == wanted.target
            and (wanted.type is None or h.handoff_type == wanted.type)
            and (wanted.by is None or h.trigger == wanted.by)
            for h in handoffs
        )
        results.append((hit, _handoffs_said(handoffs)))
    if expect.no_handoff:
        results.append((not handoffs, _handoffs_said(handoffs)))
    for wanted_tool in expected_tools(expect):
        hit = any(c.tool == wanted_tool.name and _has_args(c, wanted_tool.args) for c in calls)
        results.append((hit, _calls_said(calls)))
    if expect.tool_not_called:
        results.append((all(c.tool != expect.tool_not_called for c in calls), _calls_said(calls)))
    for phrase in expect.reply_contains:
        results.append((phrase.lower() in heard.lower(), f"heard: {heard!r}"))
    for phrase in expect.reply_not_contains:
        results.append((phrase.lower() not in heard.lower(), f"heard: {heard!r}"))
    if expect.ends:
        status_ok = view.reply.status == expect.ends.status
        transfer_ok = expect.ends.transfer is None or expect.ends.transfer == (ticket is not None)
        state = "a human ticket" if ticket else "no human ticket"
        results.append((status_ok and transfer_ok, f"call is {view.reply.status}, {state}"))
    if expect.escalation_reason:
        reason = ticket.reason if ticket else ""
        hit = bool(ticket) and expect.escalation_reason.lower() in reason.lower()
        results.append((hit, f"escalation reason: {reason!r}" if ticket else "no escalation"))
    if not results:
        results.append((bool(heard) or view.reply.status != "active", "nothing was said"))
    return [
        Check(
            test_file.display,
            test_file.test.name,
            index + 1,
            turn.caller,
            what,
            passed,
            "" if passed else detail,
            () if passed else view.lines,
        )
        for what, (passed, detail) in zip(describe_expectations(expect), results, strict=True)
    ]


def _has_args(call: ToolCallItem, wanted: dict[str, Any]) -> bool:
    try:
        given = json.loads(call.arguments or "{}")
    except ValueError:
        return False
    if not isinstance(given, dict):
        return False
    return all(key in given and _same(given[key], value) for key, value in wanted.items())


def _same(given: Any, wanted: Any) -> bool:
    # YAML reads `last4: 8832` as a number; the tool's argument is the string "8832".
    return bool(given == wanted or str(given) == str(wanted))


def _handoffs_said(handoffs: Sequence[HandoffItem]) -> str:
    if not handoffs:
        return "no handoff happened"
    return "handoffs: " + ", ".join(
        f"{h.source} -> {h.target} ({h.handoff_type})" for h in handoffs
    )


def _calls_said(calls: Sequence[ToolCallItem]) -> str:
    if not calls:
        return "no tool was called"
    return "tools called: " + ", ".join(f"{c.tool}({c.arguments})" for c in calls)
