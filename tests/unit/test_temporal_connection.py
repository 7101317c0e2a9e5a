"""Every process connects the same way: Temporal's environment configuration, Baton's address."""

from __future__ import annotations

from pathlib import Path

import pytest

from runtime.temporal_client import DEFAULT_ADDRESS, connect_options, tls_problem


@pytest.fixture(autouse=True)
def _no_temporal_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("BATON_TEMPORAL_ADDRESS", raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(tmp_path / "none.toml"))


def test_with_nothing_set_it_is_the_embedded_server() -> None:
    options = connect_options()
    assert options["target_host"] == DEFAULT_ADDRESS and options["namespace"] == "default"
    assert "api_key" not in options


def test_a_cloud_namespace_comes_from_temporals_own_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "ns.acct.tmprl.cloud:7233")
    monkeypatch.setenv("TEMPORAL_NAMESPACE", "ns.acct")
    monkeypatch.setenv("TEMPORAL_API_KEY", "secret-key")
    options = connect_options()
    assert options["target_host"] == "ns.acct.tmprl.cloud:7233"
    assert options["namespace"] == "ns.acct" and options["api_key"] == "secret-key"
    assert options["tls"] is True  # an API key implies TLS


def test_a_profile_file_is_read(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = tmp_path / "temporal.toml"
    config.write_text(
        '[profile.prod]\naddress = "temporal.internal:7233"\nnamespace = "calls"\n'
        '[profile.prod.tls]\nserver_name = "temporal.internal"\n'
    )
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    monkeypatch.setenv("TEMPORAL_PROFILE", "prod")
    options = connect_options()
    assert options["target_host"] == "temporal.internal:7233" and options["namespace"] == "calls"
    assert options["tls"] is not False


def test_batons_address_wins_over_temporals(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEMPORAL_ADDRESS", "elsewhere:7233")
    monkeypatch.setenv("BATON_TEMPORAL_ADDRESS", "127.0.0.1:7999")
    assert connect_options()["target_host"] == "127.0.0.1:7999"
    assert connect_options("127.0.0.1:8000")["target_host"] == "127.0.0.1:8000"


def test_a_refused_connection_is_not_called_a_tls_problem() -> None:
    # The SDK's text when nothing listens: the command should say "start a server", not TLS.
    refused = RuntimeError(
        "Failed client connect: Server connection error: tonic::transport::Error(Transport, "
        'ConnectError(ConnectError("tcp connect error", Os { code: 111, kind: '
        'ConnectionRefused, message: "Connection refused" })))'
    )
    assert tls_problem(refused, connect_options()) is None


def test_an_expired_certificate_is_named() -> None:
    expired = RuntimeError(
        "Failed client connect: Server connection error: tonic::transport::Error(Transport, "
        "ConnectError(Custom { kind: InvalidData, error: InvalidCertificate(ExpiredContext { "
        "time: UnixTime(1), not_after: UnixTime(0) }) }))"
    )
    assert "expired" in str(tls_problem(expired, connect_options()))
