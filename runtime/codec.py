"""Encrypted payloads: what Baton writes to Temporal history is ciphertext.

Transcripts, caller profiles, tool arguments and results are PII, so every payload a Baton
process sends to Temporal goes through `EncryptionCodec`: AES-256-GCM (from `cryptography`),
the key's id in the payload's metadata. Keys rotate by appending: new payloads use the newest
key, older payloads decode with the key they name, and a payload whose key is gone fails with
an error naming it. Payloads that were never encrypted (histories recorded before this codec)
pass through unchanged, so old calls still replay.

Keys come from `BATON_CODEC_KEYS` (`id:base64key` pairs, comma separated, newest last), else
the file `BATON_CODEC_KEY_FILE` (one `id base64key` per line, newest last), else the data
folder's `codec-keys` file, which the first process to need it creates with a fresh key, mode
0600. One machine therefore needs no set-up; processes on several machines must share the keys.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.converter import PayloadCodec

from runtime.paths import create_private_file, data_dir
from runtime.settings import Settings

ENCODING = b"binary/encrypted"
KEY_ID = "encryption-key-id"
_NONCE_BYTES = 12
_KEY_BYTES = 32


class CodecKeyError(ValueError):
    """The keys are missing, malformed, or lack the one a payload was encrypted with."""


@dataclass(frozen=True)
class CodecKeys:
    """Key id -> 32-byte AES key, oldest first; the last one encrypts."""

    keys: dict[str, bytes]
    source: str

    @property
    def newest(self) -> str:
        return next(reversed(self.keys))


def parse_keys(text: str, source: str) -> CodecKeys:
    """Keys from `id:base64` or `id base64` entries, separated by commas or new lines."""
    keys: dict[str, bytes] = {}
    entries = [e.strip() for e in text.replace(",", "\n").splitlines() if e.strip()]
    for entry in entries:
        if entry.startswith("#"):
            continue
        key_id, _, encoded = entry.replace(":", " ", 1).partition(" ")
        try:
            key = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if not key_id or len(key) != _KEY_BYTES:
            raise CodecKeyError(
                f"{source}: entry {key_id or entry[:12]!r} is not `id base64-of-32-bytes`; make "
                "one with `python -m runtime.codec`"
            )
        keys[key_id] = key
    if not keys:
        raise CodecKeyError(f"{source} holds no key; make one with `python -m runtime.codec`")
    return CodecKeys(keys, source)


def new_key_line(key_id: str | None = None) -> str:
    """A fresh key entry for a key file: `id base64key`."""
    key_id = key_id or f"k{secrets.token_hex(4)}"
    return f"{key_id} {base64.b64encode(secrets.token_bytes(_KEY_BYTES)).decode()}"


def load_keys(config: Settings) -> CodecKeys:
    """The keys these settings name, creating the data folder's key file when none is named."""
    if config.codec_keys:
        return parse_keys(config.codec_keys, "BATON_CODEC_KEYS")
    path = Path(config.codec_key_file).expanduser() if config.codec_key_file else None
    if path is None:
        path = data_dir() / "codec-keys"
        create_private_file(path, new_key_line() + "\n")
    try:
        return parse_keys(path.read_text(), str(path))
    except OSError as error:
        raise CodecKeyError(f"cannot read the codec key file {path}: {error.strerror}") from None


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over each whole payload (its metadata and data), key id in the clear."""

    def __init__(self, keys: CodecKeys) -> None:
        self._keys = keys
        self._ciphers = {key_id: AESGCM(key) for key_id, key in keys.keys.items()}

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        key_id = self._keys.newest
        cipher = self._ciphers[key_id]
        encoded = []
        for payload in payloads:
            nonce = secrets.token_bytes(_NONCE_BYTES)
            # The key id is authenticated too: a payload cannot be relabelled to another key.
            sealed = cipher.encrypt(nonce, payload.SerializeToString(), key_id.encode())
            encoded.append(
                Payload(
                    metadata={"encoding": ENCODING, KEY_ID: key_id.encode()},
                    data=nonce + sealed,
                )
            )
        return encoded

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        decoded = []
        for payload in payloads:
            if payload.metadata.get("encoding") != ENCODING:
                decoded.append(payload)  # never encrypted: recorded before the codec
                continue
            key_id = payload.metadata.get(KEY_ID, b"").decode()
            cipher = self._ciphers.get(key_id)
            if cipher is None:
                known = ", ".join(self._keys.keys)
                raise CodecKeyError(
                    f"a payload is encrypted with key {key_id!r}, which {self._keys.source} "
                    f"does not hold (it has {known}); add that key back to read it"
                )
            nonce, sealed = payload.data[:_NONCE_BYTES], payload.data[_NONCE_BYTES:]
            plain = Payload()
            plain.ParseFromString(cipher.decrypt(nonce, sealed, key_id.encode()))
            decoded.append(plain)
        return decoded


if __name__ == "__main__":
    print(new_key_line())
