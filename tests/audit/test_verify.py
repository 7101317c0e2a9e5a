"""`audit.verify` on committed histories, with no server and no worker: every committed call
verifies, whichever workflow version recorded it, and each kind of hand edit fails the check
that is there to catch it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from activities.snapshot_store import snapshot_digest
from audit.bundle import load_call, read_call_file, write_bundle
from audit.verify import Check, verify_call
from baton.cli import main
from contracts.snapshot import CallSnapshot
from tests.audit.history_edits import (
    completed_results,
    edit_payload,
    handoff_results,
    scheduled_inputs,
)

HISTORIES = Path(__file__).parent.parent / "histories"
#: One file per recorded call: a split call is loaded whole from its first run.
CALLS = sorted(p for p in HISTORIES.glob("*.json") if ".run" not in p.name or ".run1." in p.name)


def by_name(checks: list[Check]) -> dict[str, Check]:
    assert [check.name for check in checks] == ["hashes", "replay", "handoffs", "tools"]
    return {check.name: check for check in checks}


@pytest.mark.parametrize("path", CALLS, ids=lambda p: p.name.split(".")[0])
async def test_every_committed_call_verifies(path: Path) -> None:
    checks = await verify_call(await load_call(str(path)))
    assert [check for check in checks if not check.passed] == []


async def test_a_call_recorded_by_the_first_workflow_version_verifies_in_full() -> None:
    """v1: plaintext payloads, model requests carrying the agent's whole brief, no patches."""
    checks = by_name(
        await verify_call(await load_call(str(HISTORIES / "v1-continue_as_new.run1.json")))
    )
    assert checks["replay"].detail.startswith("2 runs, ")
    assert checks["handoffs"].detail.startswith("1 decision derived again")
    assert checks["tools"].detail.startswith("4 tool calls (block_card ×4)")
    assert (
        "4 calls changing data, each once under its own idempotency key" in checks["tools"].detail
    )


async def tampered_bundle(tmp_path: Path, name: str, edit: Any, *, reseal: bool) -> Path:
    """The call `name` as a bundle file, its first run changed by `edit`; with `reseal` the
    manifest is recomputed too, as a tamperer covering their tracks would."""
    bundle = await load_call(str(HISTORIES / name))
    history = bundle.runs[0].history
    await edit(history)
    if reseal:
        bundle = dataclasses.replace(bundle, manifest=bundle.computed_manifest())
    path = tmp_path / "call.bundle.json"
    write_bundle(bundle, path)
    return path


async def test_a_handoff_target_edited_by_hand_fails_the_handoff_check(tmp_path: Path) -> None:
    async def send_elsewhere(history: dict[str, Any]) -> None:
        first = handoff_results(history)[0]

        def retarget(result: dict[str, Any]) -> None:
            assert result["resolution"]["target_agent"] == "FraudAgent"
            result["resolution"]["target_agent"] = "InvestmentAdvisor"

        first.update(await edit_payload(first, retarget))

    path = await tampered_bundle(
        tmp_path, "v7-handoffs_and_return_visit.json", send_elsewhere, reseal=True
    )
    checks = by_name(await verify_call(await read_call_file(path)))
    assert checks["hashes"].passed  # the manifest was recomputed: only the rules catch it
    assert not checks["handoffs"].passed
    assert checks["handoffs"].detail == (
        "handoff 1 (run 1, Concierge via handoff_to_agent): history records → InvestmentAdvisor "
        "(announced, first visit); the snapshot gives → FraudAgent (announced, first visit)"
    )


def without_block_card(snapshot: dict[str, Any]) -> None:
    """The FraudAgent of a snapshot (JSON) loses its block_card tool, and the snapshot gets the
    content hash of what it now holds, as a tamperer covering their tracks would give it."""
    brief = snapshot["agents"]["FraudAgent"]
    assert "block_card" in [tool["name"] for tool in brief["tools"]]
    brief["tools"] = [tool for tool in brief["tools"] if tool["name"] != "block_card"]
    snapshot["content_hash"] = snapshot_digest(CallSnapshot.model_validate(snapshot))


async def test_a_snapshot_edited_in_the_bundle_fails_against_the_one_history_pinned(
    tmp_path: Path,
) -> None:
    """The bundle's snapshot is a copy: edited, hashed again, its hash in the metadata changed
    and the manifest sealed again, every hash in the bundle agrees, but history still records
    the snapshot the call pinned."""
    bundle = await load_call(str(HISTORIES / "v7-continue_as_new.run1.json"))
    assert bundle.snapshot is not None
    pinned = bundle.snapshot_hash
    snapshot = json.loads(json.dumps(bundle.snapshot))
    without_block_card(snapshot)
    bundle = dataclasses.replace(bundle, snapshot=snapshot, snapshot_hash=snapshot["content_hash"])
    bundle = dataclasses.replace(bundle, manifest=bundle.computed_manifest())
    path = tmp_path / "call.bundle.json"
    write_bundle(bundle, path)

    checks = by_name(await verify_call(await read_call_file(path)))
    assert checks["hashes"].passed
    assert not checks["handoffs"].passed
    assert checks["handoffs"].detail == (
        f"the bundle's snapshot is {snapshot['content_hash'][:12]}, but the call pinned "
        f"{pinned[:12]} (its history's load_call_snapshot result)"
    )
    # Tools are checked against the snapshot history pinned, where FraudAgent has block_card;
    # the edited copy would have refused all four calls.
    assert checks["tools"].passed, checks["tools"].detail
    assert checks["tools"].detail.startswith("4 tool calls (block_card ×4)")


async def test_a_snapshot_edited_in_history_fails_against_the_hash_the_model_was_asked_with(
    tmp_path: Path,
) -> None:
    """Edited where history records it (the load_call_snapshot result) and hashed again, the
    snapshot still differs from the hash each model request named; no tool is then checked
    against it."""

    async def edit_the_pinned_snapshot(history: dict[str, Any]) -> None:
        (loaded,) = completed_results(history, "load_call_snapshot")
        loaded.update(await edit_payload(loaded, without_block_card))

    name = "v7-continue_as_new.run1.json"
    pinned = (await load_call(str(HISTORIES / name))).snapshot_hash
    path = await tampered_bundle(tmp_path, name, edit_the_pinned_snapshot, reseal=True)
    checks = by_name(await verify_call(await read_call_file(path)))
    assert checks["hashes"].passed
    assert not checks["handoffs"].passed
    detail = checks["handoffs"].detail
    assert detail.startswith("run 1 model request #"), detail
    assert f"was asked with snapshot {pinned[:12]}, but history records snapshot " in detail
    assert detail.endswith(" as the one loaded") and pinned[:12] not in detail.split("but")[1]
    assert checks["tools"].detail == (
        "not checked: the snapshot the call pinned did not verify (see handoffs)"
    )


async def test_one_changed_byte_fails_the_hash_check(tmp_path: Path) -> None:
    path = tmp_path / "call.bundle.json"
    write_bundle(await load_call(str(HISTORIES / "v7-plain_turns.json")), path)
    text = path.read_text()
    at = text.index('"identity": "') + len('"identity": "')  # a worker's name in the history
    path.write_text(text[:at] + ("X" if text[at] != "X" else "Y") + text[at + 1 :])
    checks = by_name(await verify_call(await read_call_file(path)))
    assert not checks["hashes"].passed
    assert checks["hashes"].detail.startswith("part 'run1:")
    assert checks["replay"].passed  # the rest still says what it can


async def test_a_tool_the_agent_was_not_given_fails_the_tool_check(tmp_path: Path) -> None:
    async def borrow_a_tool(history: dict[str, Any]) -> None:
        first = scheduled_inputs(history, "run_business_tool")[0]

        def rename(request: dict[str, Any]) -> None:
            assert request["tool"] == "get_account_balance"
            request["tool"] = "get_portfolio_summary"

        first.update(await edit_payload(first, rename))

    path = await tampered_bundle(tmp_path, "v7-plain_turns.json", borrow_a_tool, reseal=True)
    checks = by_name(await verify_call(await read_call_file(path)))
    assert not checks["tools"].passed
    assert "get_portfolio_summary is not one of Concierge's tools" in checks["tools"].detail


@pytest.mark.parametrize(
    ("key", "expected"),
    [("", "changes data but had no idempotency key"), ("reused", "reused idempotency key")],
)
async def test_a_mutating_call_needs_its_own_idempotency_key(
    tmp_path: Path, key: str, expected: str
) -> None:
    async def spoil_keys(history: dict[str, Any]) -> None:
        for payload in scheduled_inputs(history, "run_business_tool"):

            def set_key(request: dict[str, Any]) -> None:
                if request["tool"] == "block_card":
                    request["idempotency_key"] = key

            payload.update(await edit_payload(payload, set_key))

    path = await tampered_bundle(tmp_path, "v7-continue_as_new.run1.json", spoil_keys, reseal=True)
    checks = by_name(await verify_call(await read_call_file(path)))
    assert not checks["tools"].passed
    assert expected in checks["tools"].detail and "block_card" in checks["tools"].detail


async def test_code_that_no_longer_matches_names_the_first_incompatible_event(
    tmp_path: Path,
) -> None:
    history = json.loads((HISTORIES / "v7-plain_turns.json").read_text())
    scheduled = [e for e in history["events"] if "activityTaskScheduledEventAttributes" in e]
    changed = scheduled[1]  # the first model turn, renamed as if the code had changed
    changed["activityTaskScheduledEventAttributes"]["activityType"]["name"] = "ask_the_oracle"
    (tmp_path / "call.json").write_text(json.dumps(history))
    checks = by_name(await verify_call(await load_call(str(tmp_path / "call.json"))))
    assert not checks["replay"].passed
    assert checks["replay"].detail.startswith(
        f"run 1: first incompatible event: #{changed['eventId']} ACTIVITY_TASK_SCHEDULED "
        "(ask_the_oracle) — [TMPRL1100] Nondeterminism error"
    )
    assert not checks["handoffs"].passed  # decisions after the failure were never seen


def test_the_command_prints_a_line_per_check_and_exits_1_on_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "call.bundle.json"
    write_bundle(asyncio.run(load_call(str(HISTORIES / "v7-supervisor_and_keypad.json"))), path)
    assert main(["audit", "verify", str(path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "call history-supervisor_and_keypad"
    assert [line[:5] for line in printed[1:5]] == ["ok   "] * 4
    assert printed[-1] == "verified: all checks passed"

    path.write_text(path.read_text().replace('"InvestmentAdvisor"', '"InvestmentAdvisoR"', 1))
    assert main(["audit", "verify", str(path)]) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[1].startswith("FAIL hashes: part ")
    assert printed[-1].startswith("FAILED: hashes")


async def test_a_damaged_payload_fails_its_checks_and_the_others_still_report(
    tmp_path: Path,
) -> None:
    async def damage(history: dict[str, Any]) -> None:
        payload = scheduled_inputs(history, "run_business_tool")[0]
        data = payload["data"]
        payload["data"] = data[:40] + ("A" if data[40] != "A" else "B") + data[41:]

    path = await tampered_bundle(tmp_path, "v7-plain_turns.json", damage, reseal=False)
    checks = by_name(await verify_call(await read_call_file(path)))
    assert [name for name, check in checks.items() if not check.passed] == ["hashes", "tools"]
    assert checks["tools"].detail.startswith("the tool calls cannot be read: ")
