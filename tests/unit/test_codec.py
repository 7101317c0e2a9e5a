"""History payloads are ciphertext: AES-256-GCM with key ids, rotation and old plaintext."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag
from temporalio.api.common.v1 import Payload

from contracts.calls import Utterance
from runtime.codec import (
    ENCODING,
    KEY_ID,
    CodecKeyError,
    EncryptionCodec,
    load_keys,
    new_key_line,
    parse_keys,
)
from runtime.settings import settings
from runtime.temporal_client import data_converter

SECRET = "my card number is 4111 1111 1111 1111"


def codec(*lines: str) -> EncryptionCodec:
    return EncryptionCodec(parse_keys("\n".join(lines), "test keys"))


def plain(text: str) -> Payload:
    return Payload(metadata={"encoding": b"json/plain"}, data=text.encode())


async def test_a_payload_round_trips_and_its_ciphertext_hides_the_words() -> None:
    one = codec(new_key_line("k1"))
    [sealed] = await one.encode([plain(SECRET)])
    assert sealed.metadata["encoding"] == ENCODING and sealed.metadata[KEY_ID] == b"k1"
    assert b"4111" not in sealed.data and b"json/plain" not in sealed.data
    assert await one.decode([sealed]) == [plain(SECRET)]


async def test_rotation_encrypts_with_the_newest_key_and_still_reads_the_old_one() -> None:
    old_line, new_line = new_key_line("k1"), new_key_line("k2")
    [before] = await codec(old_line).encode([plain(SECRET)])
    rotated = codec(old_line, new_line)
    [after] = await rotated.encode([plain(SECRET)])
    assert after.metadata[KEY_ID] == b"k2"
    assert await rotated.decode([before, after]) == [plain(SECRET), plain(SECRET)]


async def test_a_payload_whose_key_is_gone_fails_naming_the_key() -> None:
    [sealed] = await codec(new_key_line("k1")).encode([plain(SECRET)])
    with pytest.raises(CodecKeyError, match=r"key 'k1'.*add that key back"):
        await codec(new_key_line("k2")).decode([sealed])


async def test_history_written_before_encryption_still_decodes() -> None:
    assert await codec(new_key_line("k1")).decode([plain(SECRET)]) == [plain(SECRET)]


async def test_a_tampered_payload_or_a_relabelled_key_id_is_refused() -> None:
    both = codec(new_key_line("k1"), new_key_line("k2"))
    [sealed] = await both.encode([plain(SECRET)])
    flipped = Payload(metadata=sealed.metadata, data=sealed.data[:-1] + b"\0")
    with pytest.raises(InvalidTag):
        await both.decode([flipped])
    relabelled = Payload(metadata={**sealed.metadata, KEY_ID: b"k1"}, data=sealed.data)
    with pytest.raises(InvalidTag):
        await both.decode([relabelled])


def test_malformed_keys_say_how_to_make_one() -> None:
    with pytest.raises(CodecKeyError, match=r"python -m runtime\.codec"):
        parse_keys("k1:c2hvcnQ=", "BATON_CODEC_KEYS")
    with pytest.raises(CodecKeyError, match="holds no key"):
        parse_keys("# nothing\n", "keys.txt")


def test_the_data_folder_key_file_is_made_once_and_readable_by_its_owner_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("BATON_CODEC_KEYS", raising=False)
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    first = load_keys(settings())
    path = tmp_path / "codec-keys"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_keys(settings()) == first  # the same key on every later start


async def test_the_baton_data_converter_encrypts_pydantic_payloads() -> None:
    converter = data_converter()
    [sealed] = await converter.encode([Utterance(utterance_id="u1", text=SECRET)])
    assert sealed.metadata["encoding"] == ENCODING and b"4111" not in sealed.data
    [back] = await converter.decode([sealed], [Utterance])
    assert back == Utterance(utterance_id="u1", text=SECRET)
