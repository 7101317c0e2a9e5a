"""Media tokens are standard JWTs: round trip, a token minted by another JWT library, and every
refusal reason (pure code)."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import jwt
import pytest

from media_gateway.tokens import (
    AUDIENCE,
    TokenClaims,
    TokenError,
    issue_token,
    secret_from_env,
    verify_token,
)

SECRET = b"s" * 32
OTHER_SECRET = b"o" * 32


def refusal(token: str, call_id: str | None = "call-1") -> TokenError:
    with pytest.raises(TokenError) as caught:
        verify_token(SECRET, token, call_id)
    return caught.value


def platform_token(claims: dict[str, Any], key: bytes = SECRET, **options: Any) -> str:
    """A token as a contact-center platform mints it, with PyJWT directly (no Baton code)."""
    now = int(time.time())
    base = {"sub": "call-1", "aud": AUDIENCE, "iat": now, "exp": now + 60, "jti": "j-1"}
    return jwt.encode({**base, **claims}, key, algorithm=options.get("algorithm", "HS256"))


def test_round_trip_returns_the_claims() -> None:
    caller = {"client_id": "C1001", "name": "Alex Morgan"}
    token = issue_token(SECRET, "call-1", scenario="banking", caller=caller, ttl_seconds=60)
    claims = verify_token(SECRET, token, "call-1")
    assert isinstance(claims, TokenClaims)
    assert claims.call_id == "call-1"
    assert claims.scenario == "banking"
    assert dict(claims.caller) == caller
    assert claims.expires_at - claims.issued_at == 60
    assert claims.token_id
    assert verify_token(SECRET, token).call_id == "call-1"  # a stream need not name its call


def test_a_token_minted_by_any_jwt_library_is_accepted() -> None:
    token = platform_token({"scenario": "insurance", "caller": {"client_id": "C2002"}})
    claims = verify_token(SECRET, token, "call-1")
    assert (claims.token_id, claims.scenario, dict(claims.caller)) == (
        "j-1",
        "insurance",
        {"client_id": "C2002"},
    )


def test_tokens_are_url_safe_and_unique() -> None:
    first = issue_token(SECRET, "call/with+odd chars é")
    second = issue_token(SECRET, "call/with+odd chars é")
    assert verify_token(SECRET, first).token_id != verify_token(SECRET, second).token_id
    assert all(ch.isalnum() or ch in "-_." for ch in first)
    assert verify_token(SECRET, first, "call/with+odd chars é").call_id.endswith("é")


def test_expired_token_is_refused_after_the_leeway() -> None:
    now = time.time()
    inside = issue_token(SECRET, "call-1", ttl_seconds=60, now=now - 63)  # 3 s past: skew
    verify_token(SECRET, inside, "call-1")
    outside = issue_token(SECRET, "call-1", ttl_seconds=60, now=now - 70)
    assert refusal(outside).reason == "expired"
    with pytest.raises(TokenError) as caught:
        verify_token(SECRET, inside, "call-1", leeway_seconds=0)
    assert caught.value.reason == "expired"


def test_token_for_another_call_is_refused() -> None:
    token = issue_token(SECRET, "call-1")
    assert refusal(token, "call-2").reason == "wrong_call"


def test_token_signed_with_another_secret_is_refused() -> None:
    token = issue_token(OTHER_SECRET, "call-1")
    error = refusal(token)
    assert error.reason == "bad_signature"
    assert token.split(".")[2] not in str(error)


def test_a_caller_cannot_change_who_they_are() -> None:
    token = issue_token(SECRET, "call-1", caller={"client_id": "C2002"})
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["caller"]["client_id"] = "C1001"  # someone else's account
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    error = refusal(f"{header}.{forged}.{signature}")
    assert error.reason == "bad_signature"
    assert signature not in str(error)


def _alg_none() -> str:
    now = int(time.time())
    claims = {"sub": "call-1", "aud": AUDIENCE, "exp": now + 60, "iat": now, "jti": "j"}
    return jwt.encode(claims, "", algorithm="none")


# Tokens are built when each test runs (not at collection): `exp` must not pass meanwhile.
@pytest.mark.parametrize(
    ("make", "why"),
    [
        (_alg_none, "alg none"),
        (lambda: platform_token({}, key=SECRET * 2, algorithm="HS512"), "another algorithm"),
        (lambda: platform_token({"aud": "somebody-else"}), "another audience"),
        (lambda: platform_token({"jti": None}), "no jti"),
        (lambda: platform_token({"caller": {"client_id": "C1", "role": "admin"}}),
         "unknown caller field"),
        (lambda: platform_token({"caller": {"client_id": 1001}}), "caller field not a string"),
        (lambda: platform_token({"caller": "C1001"}), "caller not an object"),
        (lambda: platform_token({"scenario": ""}), "empty scenario"),
        (lambda: platform_token({"sub": 7}), "sub not a string"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)  # fmt: skip
def test_tokens_breaking_the_claims_contract_are_malformed(make, why: str) -> None:
    assert refusal(make()).reason == "malformed", why


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t.rsplit(".", 1)[0],  # no signature at all
        lambda t: t + ".extra",
        lambda t: t.replace(".", "!"),
        lambda t: "not a token",
        lambda t: "é" * 50,
        lambda t: "a" * 5000,
    ],
)
def test_garbled_tokens_are_refused(mangle) -> None:
    token = issue_token(SECRET, "call-1")
    assert refusal(mangle(token)).reason in ("malformed", "bad_signature")


def test_empty_token_is_missing() -> None:
    assert refusal("").reason == "missing"


def test_issuing_refuses_a_caller_profile_outside_the_contract() -> None:
    with pytest.raises(TokenError):
        issue_token(SECRET, "call-1", caller={"client_id": "C1", "is_admin": "yes"})


def test_errors_are_value_errors() -> None:
    assert issubclass(TokenError, ValueError)


def test_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        issue_token(b"short", "call-1")
    with pytest.raises(ValueError, match="at least 32 bytes"):
        verify_token(b"x" * 31, "a.b.c", "call-1")


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
