"""tests/histories/markers.py reads the patch ids a history recorded, from its JSON alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.histories.markers import main, patch_ids

HISTORIES = Path(__file__).parent.parent / "histories"


def test_the_patch_ids_of_a_committed_history_are_read_in_order() -> None:
    ids = patch_ids(HISTORIES / "v8-tool_handoff_context.json")
    assert "tool-handoff-context" in ids and "slim-model-requests" in ids
    assert len(ids) == len(set(ids))
    assert patch_ids(HISTORIES / "v1-plain_turns.json") == []  # v1 predates every patch


def test_need_names_the_patch_no_history_holds(capsys: pytest.CaptureFixture[str]) -> None:
    voice = str(HISTORIES / "v8-voice.json")
    assert main([voice, "--need", "gateway-lease"]) == 0
    assert main([voice, "--need", "gateway-lease,no-such-patch"]) == 1
    out, err = capsys.readouterr()
    assert "v8-voice.json: " in out and "gateway-lease" in out
    assert "no history holds patch(es): no-such-patch" in err


def test_a_file_that_is_no_history_is_refused_in_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "notes.json"
    bad.write_text("[1, 2]")
    assert main([str(bad)]) == 2
    assert "notes.json: not a readable history" in capsys.readouterr().err
