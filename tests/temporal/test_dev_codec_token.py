"""`baton dev --ui` with no BATON_CODEC_SERVER_TOKEN: its codec server decrypts every call for
whoever asks, and anyone on the machine reaches loopback, so the run makes its own token, says
how to use it, and the codec server answers only with it."""

from __future__ import annotations

import json
import re
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads

from baton.temporal_server import free_port
from runtime.codec import EncryptionCodec, load_keys
from runtime.settings import settings
from tests.temporal.test_server_lifetime import Processes, _read_until


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    try:
        yield started
    finally:
        started.end_all()


def decode(port: int, body: bytes, authorization: str | None) -> tuple[int, bytes]:
    """POST /decode as the Web UI or the CLI would; the status and the answer."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/decode",
        data=body,
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


async def test_dev_ui_makes_a_codec_token_and_decrypts_only_with_it(
    tmp_path: Path, processes: Processes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BATON_CODEC_SERVER_TOKEN", raising=False)
    dev = processes.baton(
        "dev",
        "--ui",
        "--port",
        str(free_port()),
        "--db-file",
        str(tmp_path / "temporal.sqlite3"),
        "--http-port",
        "0",
        "--media-address",
        "127.0.0.1:0",
        "--no-softphone",
    )
    printed = _read_until(dev, "workers serving")
    found = re.search(r"decrypting through 127\.0\.0\.1:(\d+)", printed)
    assert found is not None, printed
    port = int(found.group(1))
    made = re.search(r"codec server token: (\S+) \(made for this run", printed)
    assert made is not None, printed
    token = made.group(1)
    assert len(token) >= 40  # 32 random bytes
    assert f"sign in once at http://127.0.0.1:{port}/login" in printed
    assert f"--codec-auth 'Bearer {token}'" in printed

    # A payload as a Baton process writes it to history (the run shares the tests' key).
    plain = Payload(metadata={"encoding": b"json/plain"}, data=b'"what the caller said"')
    sealed = await EncryptionCodec(load_keys(settings())).encode([plain])
    body = json_format.MessageToJson(Payloads(payloads=sealed)).encode()

    assert decode(port, body, None)[0] == 401
    assert decode(port, body, "Bearer not-the-token")[0] == 401
    status, answer = decode(port, body, f"Bearer {token}")
    assert status == 200, answer
    (decoded,) = json_format.Parse(answer, Payloads()).payloads
    assert decoded.data == plain.data
    assert json.loads(decoded.data) == "what the caller said"

    dev.send_signal(signal.SIGINT)
    assert dev.wait(timeout=30) == 0
