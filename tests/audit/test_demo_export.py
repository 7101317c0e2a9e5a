"""`baton demo --export FILE`: the demo's server keeps nothing once it stops, so the demo writes
its call's bundle first; the audit commands then read that file with no server at all.

Run as the README says, by a new user with nothing configured: no data folder and no history
keys. The demo's own data folder is a scratch one deleted when it ends, so the history key must
live where every later command finds it (the user's data folder, `~/.baton/codec-keys`)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.audit.cli import baton

#: The tests' shared settings a new user does not have.
CONFIGURED = ("BATON_DATA_DIR", "BATON_CODEC_KEYS", "BATON_CODEC_KEY_FILE")


def test_the_demo_call_exports_then_reads_and_verifies_as_the_readme_says(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"  # the new user's home, so `~/.baton` is theirs, not the machine's
    home.mkdir()
    env = {"PYTHONUNBUFFERED": "1", "HOME": str(home)}
    bundle = tmp_path / "demo.bundle.json"
    demo = baton("demo", "--text", "--export", str(bundle), timeout=240, env=env, unset=CONFIGURED)
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert f"exported to {bundle}" in demo.stdout

    report = baton("audit", "report", str(bundle), "--format", "json", env=env, unset=CONFIGURED)
    assert report.returncode == 0, report.stderr
    timeline = json.loads(report.stdout)
    assert timeline["call"]["status"] == "completed"
    assert timeline["call"]["visited"] == ["Concierge", "FraudAgent"]
    routes = [
        (i["handoff"]["source"], i["handoff"]["target"], i["handoff"]["handoff_type"])
        for i in timeline["items"]
        if i["kind"] == "handoff"
    ]
    assert routes == [
        ("Concierge", "FraudAgent", "announced"),
        ("FraudAgent", "Concierge", "discrete"),
    ]
    tools = [i["tool"]["name"] for i in timeline["items"] if i["kind"] == "tool_call"]
    assert "block_card" in tools and tools[-1] == "end_call"

    verify = baton("audit", "verify", str(bundle), env=env, unset=CONFIGURED)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    lines = verify.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[1:5]] == [
        "ok   hashes",
        "ok   replay",
        "ok   handoffs",
        "ok   tools",
    ]
    assert lines[-1] == "verified: all checks passed"

    # The key is the user's own, private, and the demo says where it is.
    key_file = home / ".baton" / "codec-keys"
    assert f"encrypted with the history key in {key_file}" in demo.stdout
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    # The payloads are ciphertext (their encoding, base64 in Temporal's JSON: binary/encrypted).
    assert "YmluYXJ5L2VuY3J5cHRlZA==" in bundle.read_text()
