"""Per-call WebSocket access tokens: round trip and every refusal reason (pure code)."""

from __future__ import annotations

import base64
import json

import pytest

from media_gateway.tokens import (
    TokenClaims,
    TokenError,
    issue_token,
    secret_from_env,
    verify_token,
)

SECRET = b"s" * 32
OTHER_SECRET = b"o" * 32
NOW = 1_800_000_000.0


def refusal(token: str, call_id: str = "call-1", *, now: float = NOW) -> TokenError:
    with pytest.raises(TokenError) as caught:
        verify_token(SECRET, token, call_id, now=now)
    return caught.value


def test_round_trip_returns_the_claims() -> None:
    token = issue_token(SECRET, "call-1", ttl_seconds=60, now=NOW)
    claims = verify_token(SECRET, token, "call-1", now=NOW + 30)
    assert isinstance(claims, TokenClaims)
    assert claims.call_id == "call-1"
    assert claims.issued_at == int(NOW)
    assert claims.expires_at == int(NOW) + 60
    assert claims.nonce


def test_tokens_are_url_safe_and_unique() -> None:
    first = issue_token(SECRET, "call/with+odd chars é", now=NOW)
    second = issue_token(SECRET, "call/with+odd chars é", now=NOW)
    assert first != second  # the nonce differs
    assert all(ch.isalnum() or ch in "-_." for ch in first)
    assert verify_token(SECRET, first, "call/with+odd chars é", now=NOW).call_id.endswith("é")


def test_expired_token_is_refused_after_the_leeway() -> None:
    token = issue_token(SECRET, "call-1", ttl_seconds=60, now=NOW)
    verify_token(SECRET, token, "call-1", now=NOW + 64)  # inside the 5 s skew leeway
    assert refusal(token, now=NOW + 66).reason == "expired"
    with pytest.raises(TokenError) as caught:
        verify_token(SECRET, token, "call-1", now=NOW + 61, leeway_seconds=0)
    assert caught.value.reason == "expired"


def test_token_for_another_call_is_refused() -> None:
    token = issue_token(SECRET, "call-1", now=NOW)
    assert refusal(token, "call-2").reason == "wrong_call"


def test_token_signed_with_another_secret_is_refused() -> None:
    token = issue_token(OTHER_SECRET, "call-1", now=NOW)
    error = refusal(token)
    assert error.reason == "bad_signature"
    assert token.split(".")[1] not in str(error)


def test_tampered_payload_is_refused_without_leaking_the_signature() -> None:
    token = issue_token(SECRET, "call-1", now=NOW)
    payload, signature = token.split(".")
    forged = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    forged["e"] += 3600
    forged_payload = base64.urlsafe_b64encode(json.dumps(forged).encode()).rstrip(b"=").decode()
    error = refusal(f"{forged_payload}.{signature}")
    assert error.reason == "bad_signature"
    assert signature not in str(error)
    # Flipping a single payload character is caught the same way.
    flipped = ("A" if payload[5] != "A" else "B").join((payload[:5], payload[6:]))
    assert refusal(f"{flipped}.{signature}").reason == "bad_signature"


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1],  # truncated signature
        lambda t: t.split(".")[0],  # no signature at all
        lambda t: t + ".extra",
        lambda t: t.replace(".", "!"),
        lambda t: "not a token",
        lambda t: "é" * 50,
        lambda t: "a" * 5000,
    ],
)
def test_malformed_tokens_are_refused(mangle) -> None:
    token = issue_token(SECRET, "call-1", now=NOW)
    assert refusal(mangle(token)).reason == "malformed"


def test_validly_signed_garbage_payload_is_malformed() -> None:
    from media_gateway.tokens import _sign  # a signer bug is the only way to get here

    for raw in (b"not json", b'{"c": "call-1"}', b'{"c":1,"e":2,"i":1,"n":"x"}', b"[]"):
        encoded = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
        assert refusal(f"{encoded}.{_sign(SECRET, encoded)}").reason == "malformed"


def test_empty_token_is_missing() -> None:
    assert refusal("").reason == "missing"


def test_errors_are_value_errors() -> None:
    assert issubclass(TokenError, ValueError)


def test_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        issue_token(b"short", "call-1")
    with pytest.raises(ValueError, match="at least 32 bytes"):
        verify_token(b"x" * 31, "a.b", "call-1")


def test_bad_issue_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        issue_token(SECRET, "")
    with pytest.raises(ValueError):
        issue_token(SECRET, "call-1", ttl_seconds=0)


def test_secret_from_env_accepts_hex_and_raw() -> None:
    assert secret_from_env({"BATON_GATEWAY_SECRET": "ab" * 32}) == b"\xab" * 32
    raw = "correct horse battery staple, twice over"
    assert secret_from_env({"BATON_GATEWAY_SECRET": raw}) == raw.encode()


@pytest.mark.parametrize(
    ("value", "message"),
    [("", "is not set"), ("ab" * 16, "64 hex digits"), ("too short!", "at least 32")],
)
def test_secret_from_env_explains_missing_or_short(value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        secret_from_env({"BATON_GATEWAY_SECRET": value})


def test_secret_from_env_reads_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BATON_GATEWAY_SECRET", raising=False)
    with pytest.raises(ValueError, match="is not set"):
        secret_from_env()
    monkeypatch.setenv("BATON_GATEWAY_SECRET", "cd" * 40)
    assert secret_from_env() == b"\xcd" * 40
