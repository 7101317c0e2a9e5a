"""Fixtures shared by several unit-test modules."""

import pytest


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proxy configured on the machine must not capture requests meant for 127.0.0.1."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
