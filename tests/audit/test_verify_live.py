"""`baton audit verify` on a real call from a dev server, as a person runs it: by call id
while the call is still open, and from the bundle `baton history export` wrote, with every
worker stopped first."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from baton.temporal_server import EmbeddedTemporal
from tests.audit.cli import baton
from tests.workflow.conftest import Stack, started

FRAUD = "Someone used my card abroad, I think it's fraud"


async def test_a_live_call_verifies_by_id_and_after_export_with_no_worker_alive(
    temporal_client: Client, temporal_server: EmbeddedTemporal, tmp_path: Path
) -> None:
    stack = Stack(temporal_client)
    await stack.start_workers()
    session = stack.call()
    try:
        await started(session)
        await session.say(FRAUD)
        await session.say("Please block my card ending in 8832")
    finally:
        await stack.stop_workers()
    try:
        address = ["--address", temporal_server.address]
        by_id = baton("audit", "verify", session.call.call_id, *address)
        assert by_id.returncode == 0, by_id.stdout + by_id.stderr
        lines = by_id.stdout.splitlines()
        assert lines[0] == f"call {session.call.call_id}"
        assert [line.split(":")[0] for line in lines[1:5]] == [
            "ok   hashes",
            "ok   replay",
            "ok   handoffs",
            "ok   tools",
        ]
        assert "1 decision derived again from the pinned snapshot matches" in lines[3]
        assert "block_card ×1" in lines[4] and "1 call changing data" in lines[4]
        assert lines[-1] == "verified: all checks passed"

        bundle = tmp_path / "call.bundle.json"
        exported = baton("history", "export", session.call.call_id, "-o", str(bundle), *address)
        assert exported.returncode == 0, exported.stderr
        from_file = baton("audit", "verify", str(bundle))
        assert from_file.returncode == 0, from_file.stdout + from_file.stderr
        assert from_file.stdout.splitlines()[1:] == lines[1:]
    finally:
        await session.handle.terminate("test over")
