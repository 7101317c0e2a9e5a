"""Bad input to the audit commands: one line naming the problem, exit 2, no traceback."""

from __future__ import annotations

import subprocess
from pathlib import Path

from baton.temporal_server import EmbeddedTemporal
from runtime.codec import new_key_line
from tests.audit.cli import baton

HISTORIES = Path(__file__).parent.parent / "histories"


def assert_one_line_error(result: subprocess.CompletedProcess[str], says: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert says in result.stderr, result.stderr
    assert result.stdout == ""


def test_a_call_id_the_server_does_not_have(temporal_server: EmbeddedTemporal) -> None:
    address = ["--address", temporal_server.address]
    assert_one_line_error(
        baton("audit", "report", "no-such-call", *address), "no call 'no-such-call'"
    )
    assert_one_line_error(
        baton("history", "export", "no-such-call", *address), "no call 'no-such-call'"
    )


def test_a_file_that_is_not_a_bundle(tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text('{"some": "thing"}')
    assert_one_line_error(baton("audit", "report", str(notes)), "neither a Baton call bundle")
    assert_one_line_error(baton("audit", "report", str(tmp_path / "gone.json")), "is not a file")


def test_a_wrong_codec_key() -> None:
    history = str(HISTORIES / "v6-voice.json")
    rotated_out = baton("audit", "report", history, env={"BATON_CODEC_KEYS": new_key_line("other")})
    assert_one_line_error(rotated_out, "encrypted with key 'test1'")
    same_id = baton("audit", "report", history, env={"BATON_CODEC_KEYS": new_key_line("test1")})
    assert_one_line_error(same_id, "not the key the call was recorded with")
