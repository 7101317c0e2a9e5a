"""The media plane's shared secret and TLS settings (runtime.media_auth)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from media_gateway.media_plane_auth import is_loopback
from runtime.media_auth import (
    SECRET_FILE,
    MediaAuthError,
    bearer,
    client_tls,
    media_secret,
    new_secret,
    presents,
    server_tls,
)
from runtime.settings import settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("BATON_MEDIA_SECRET", raising=False)
    return tmp_path


def test_the_first_process_makes_the_secret_file_for_its_owner_only_and_later_ones_read_it(
    data: Path,
) -> None:
    secret = media_secret()
    path = data / SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text().strip() == secret and len(secret) >= 32
    assert media_secret() == secret
    assert [p.name for p in data.iterdir()] == [SECRET_FILE]  # no scratch file left behind


def test_processes_starting_together_all_read_one_secret(data: Path) -> None:
    code = "from runtime.media_auth import media_secret; print(media_secret())"
    env = {**os.environ, "BATON_DATA_DIR": str(data / "fresh")}
    starts = [
        subprocess.Popen(
            [sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    secrets = {process.communicate(timeout=60)[0].strip() for process in starts}
    assert len(secrets) == 1 and secrets != {""}
    assert secrets == {(data / "fresh" / SECRET_FILE).read_text().strip()}


def test_the_variable_wins_and_no_file_is_made(data: Path) -> None:
    chosen = new_secret()
    assert media_secret(settings({"BATON_MEDIA_SECRET": chosen})) == chosen
    assert not (data / SECRET_FILE).exists()


@pytest.mark.parametrize("bad", ["short", "x" * 31, "has a space in it" * 3, "é" * 40])
def test_a_weak_or_unsendable_secret_is_refused_with_how_to_make_one(bad: str) -> None:
    with pytest.raises(MediaAuthError, match=r"BATON_MEDIA_SECRET.*python -m runtime\.media_auth"):
        media_secret(settings({"BATON_MEDIA_SECRET": bad}))


def test_a_damaged_secret_file_is_named(data: Path) -> None:
    (data / SECRET_FILE).write_text("\n")
    with pytest.raises(MediaAuthError, match=SECRET_FILE):
        media_secret()


def test_a_credential_is_told_apart_from_no_credential() -> None:
    secret = new_secret()
    assert presents([("authorization", bearer(secret))], secret) is True
    assert presents([("x-other", "1"), ("Authorization", bearer(secret))], secret) is True
    assert presents([("authorization", bearer(new_secret()))], secret) is False
    assert presents([("authorization", secret)], secret) is False
    assert presents([("x-other", bearer(secret))], secret) is None
    assert presents([], secret) is None


def test_tls_settings_need_their_pair_and_readable_files(tmp_path: Path) -> None:
    assert server_tls(settings({})) is None and client_tls(settings({})) is None
    with pytest.raises(MediaAuthError, match="BATON_MEDIA_TLS_KEY"):
        server_tls(settings({"BATON_MEDIA_TLS_CERT": str(tmp_path / "cert.pem")}))
    missing = str(tmp_path / "nowhere.pem")
    with pytest.raises(MediaAuthError, match=r"BATON_MEDIA_TLS_CA: cannot read .*nowhere\.pem"):
        client_tls(settings({"BATON_MEDIA_TLS_CA": missing}))


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1:8766", True),
        ("localhost:8766", True),
        ("[::1]:8766", True),
        ("0.0.0.0:8766", False),
        ("[::]:8766", False),
        ("10.1.2.3:8766", False),
        ("gateway.internal:8766", False),
    ],
)
def test_loopback_addresses(address: str, loopback: bool) -> None:
    assert is_loopback(address) is loopback
