"""Call bundles: committed histories load as bundles, a bundle survives its file, and a
changed part or a wrong codec key is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.bundle import load_call, read_call_file, write_bundle
from audit.errors import AuditError
from runtime.codec import new_key_line

HISTORIES = Path(__file__).parent.parent / "histories"


async def test_a_split_history_loads_as_one_call_with_every_run_in_order() -> None:
    bundle = await load_call(str(HISTORIES / "v2-continue_as_new.run1.json"))
    first = json.loads((HISTORIES / "v2-continue_as_new.run1.json").read_text())
    second = json.loads((HISTORIES / "v2-continue_as_new.run2.json").read_text())
    assert [run.history for run in bundle.runs] == [first, second]
    assert bundle.call_id == "history-continue_as_new"
    assert bundle.patch_ids == ["slim-model-requests"]
    assert len(bundle.histories()) == 2


async def test_an_encrypted_history_pins_its_snapshot_by_hash() -> None:
    bundle = await load_call(str(HISTORIES / "v6-voice.json"))
    snapshot = bundle.call_snapshot()
    assert snapshot is not None and snapshot.content_hash == bundle.snapshot_hash
    assert bundle.patch_ids == ["gateway-lease", "streamed-replies", "slim-model-requests"]
    # Payloads stay as recorded: the run's history is the committed file, ciphertext and all.
    assert bundle.runs[0].history == json.loads((HISTORIES / "v6-voice.json").read_text())


async def test_a_written_bundle_reads_back_with_matching_hashes(tmp_path: Path) -> None:
    bundle = await load_call(str(HISTORIES / "v5-handoffs_and_return_visit.json"))
    write_bundle(bundle, tmp_path / "call.json")
    again = await read_call_file(tmp_path / "call.json")
    assert again == bundle
    assert again.check_hashes() is None


async def test_one_changed_byte_names_the_part_it_changed(tmp_path: Path) -> None:
    bundle = await load_call(str(HISTORIES / "v2-plain_turns.json"))
    write_bundle(bundle, tmp_path / "call.json")
    text = (tmp_path / "call.json").read_text()
    event_time = bundle.runs[0].history["events"][3]["eventTime"]
    digit = event_time[-2]  # the last digit of the nanoseconds, before the "Z"
    changed = f"{event_time[:-2]}{(int(digit) + 1) % 10}Z"
    (tmp_path / "call.json").write_text(text.replace(event_time, changed, 1))
    tampered = await read_call_file(tmp_path / "call.json")
    assert tampered.check_hashes() == f"run1:{bundle.runs[0].run_id}"


async def test_a_file_that_is_not_a_bundle_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    with pytest.raises(AuditError, match="neither a Baton call bundle nor a Temporal history"):
        await load_call(str(tmp_path / "notes.json"))
    (tmp_path / "events.json").write_text('{"events": [{"eventId": "1"}]}')
    with pytest.raises(AuditError, match="not a Temporal history"):
        await load_call(str(tmp_path / "events.json"))
    (tmp_path / "junk.json").write_text("not json at all")
    with pytest.raises(AuditError, match="is not JSON"):
        await load_call(str(tmp_path / "junk.json"))
    with pytest.raises(AuditError, match="is not a file"):
        await load_call(str(tmp_path / "missing.json"))


async def test_a_wrong_codec_key_names_the_key_the_call_needs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BATON_CODEC_KEYS", new_key_line("other"))
    with pytest.raises(AuditError, match=r"key 'test1'.*add that key back"):
        await load_call(str(HISTORIES / "v6-voice.json"))
    monkeypatch.setenv("BATON_CODEC_KEYS", new_key_line("test1"))  # same id, other secret
    with pytest.raises(AuditError, match="not the key the call was recorded with"):
        await load_call(str(HISTORIES / "v6-voice.json"))
