"""Per-call WebSocket access tokens, signed with the gateway's secret.

A token is ``<payload>.<signature>``: the payload is URL-safe base64 (no padding) of compact
JSON ``{"c": call_id, "e": expires_at, "i": issued_at, "n": nonce}`` and the signature is
URL-safe base64 of HMAC-SHA256 over the *encoded* payload. Signing the encoded text (rather than
the decoded JSON) means verification never parses attacker-controlled JSON before the signature
has been checked.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from runtime.settings import settings

SECRET_ENV: Final = "BATON_GATEWAY_SECRET"
MIN_SECRET_BYTES: Final = 32
DEFAULT_TTL_SECONDS: Final = 300
DEFAULT_LEEWAY_SECONDS: Final = 5.0

# Far larger than any real token (~150 chars); bounds the work done on hostile input.
_MAX_TOKEN_CHARS: Final = 2048
# HMAC-SHA256 is 32 bytes, which is 43 base64 characters without padding.
_TOKEN_SHAPE: Final = re.compile(r"([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})")
_HEX_SHAPE: Final = re.compile(r"(?:[0-9a-fA-F]{2})+")


class TokenError(ValueError):
    """A token was refused; ``reason`` is a stable machine-readable code.

    Reasons: ``missing``, ``malformed``, ``bad_signature``, ``expired``, ``wrong_call``.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class TokenClaims:
    """What a verified token asserts. Times are Unix seconds."""

    call_id: str
    expires_at: int
    issued_at: int
    nonce: str


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    # validate=True rejects stray characters instead of silently skipping them.
    return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)


def _check_secret(secret: bytes) -> None:
    if not isinstance(secret, bytes | bytearray):
        raise TypeError("gateway secret must be bytes")
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(
            f"gateway secret must be at least {MIN_SECRET_BYTES} bytes (got {len(secret)})"
        )


def _sign(secret: bytes, encoded_payload: str) -> str:
    digest = hmac.new(secret, encoded_payload.encode("ascii"), hashlib.sha256).digest()
    return _b64encode(digest)


def issue_token(
    secret: bytes, call_id: str, *, ttl_seconds: int = DEFAULT_TTL_SECONDS, now: float | None = None
) -> str:
    """Issue a token that admits one WebSocket connection for ``call_id`` for ``ttl_seconds``."""
    _check_secret(secret)
    if not isinstance(call_id, str) or not call_id:
        raise ValueError("call_id must be a non-empty string")
    if ttl_seconds <= 0:
        raise ValueError("ttl_seconds must be positive")
    issued_at = int(time.time() if now is None else now)
    payload = {
        "c": call_id,
        "e": issued_at + ttl_seconds,
        "i": issued_at,
        "n": secrets.token_hex(8),
    }
    encoded = _b64encode(json.dumps(payload, separators=(",", ":"), sort_keys=True).encode())
    return f"{encoded}.{_sign(secret, encoded)}"


def _claims_from(payload: Any) -> TokenClaims:
    """Type-check a decoded payload; bools are ints in Python, so exclude them explicitly."""

    def is_int(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    if not isinstance(payload, dict) or set(payload) != {"c", "e", "i", "n"}:
        raise TokenError("malformed", "token payload has the wrong fields")
    call_id, expires_at, issued_at, nonce = payload["c"], payload["e"], payload["i"], payload["n"]
    if not (isinstance(call_id, str) and call_id and isinstance(nonce, str) and nonce):
        raise TokenError("malformed", "token payload has the wrong field types")
    if not (is_int(expires_at) and is_int(issued_at)) or expires_at < issued_at:
        raise TokenError("malformed", "token payload has invalid times")
    return TokenClaims(call_id=call_id, expires_at=expires_at, issued_at=issued_at, nonce=nonce)


def verify_token(
    secret: bytes,
    token: str,
    call_id: str,
    *,
    now: float | None = None,
    leeway_seconds: float = DEFAULT_LEEWAY_SECONDS,
) -> TokenClaims:
    """Return the token's claims, or raise :class:`TokenError` saying why it is refused.

    ``leeway_seconds`` tolerates clock skew between the issuer and this gateway.
    """
    _check_secret(secret)
    if not token:
        raise TokenError("missing", "no access token was presented")
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS:
        raise TokenError("malformed", "access token is not a token")
    shape = _TOKEN_SHAPE.fullmatch(token)
    if shape is None:
        raise TokenError("malformed", "access token is not of the form <payload>.<signature>")
    encoded, signature = shape.groups()
    # Compare the encodings, not decoded bytes: it also rejects non-canonical base64 variants.
    if not hmac.compare_digest(_sign(secret, encoded), signature):
        raise TokenError("bad_signature", "access token signature does not match")
    try:
        payload = json.loads(_b64decode(encoded))
    except (binascii.Error, ValueError) as exc:
        # Only reachable for a validly signed but badly built token (a bug on the issuing side).
        raise TokenError("malformed", "access token payload is not valid base64 JSON") from exc
    claims = _claims_from(payload)
    current = time.time() if now is None else now
    if current > claims.expires_at + leeway_seconds:
        raise TokenError("expired", "access token has expired")
    if not hmac.compare_digest(claims.call_id.encode(), call_id.encode()):
        raise TokenError("wrong_call", "access token was issued for a different call")
    return claims


def secret_from_env(environ: Mapping[str, str] | None = None) -> bytes:
    """Read the gateway secret from ``BATON_GATEWAY_SECRET``.

    A value made only of hex digit pairs is decoded as hex (64 digits give 32 bytes); anything
    else is used as a raw UTF-8 string. Either way the result must be at least 32 bytes.
    """
    value = settings(environ).gateway_secret or ""
    if not value:
        raise ValueError(
            f"{SECRET_ENV} is not set; generate one with "
            "`python -c 'import secrets; print(secrets.token_hex(32))'`"
        )
    if _HEX_SHAPE.fullmatch(value):
        secret = bytes.fromhex(value)
        if len(secret) < MIN_SECRET_BYTES:
            raise ValueError(
                f"{SECRET_ENV} is hex for {len(secret)} bytes; it needs at least "
                f"{MIN_SECRET_BYTES} bytes ({2 * MIN_SECRET_BYTES} hex digits)"
            )
        return secret
    secret = value.encode("utf-8")
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(
            f"{SECRET_ENV} is {len(secret)} bytes long; it needs at least {MIN_SECRET_BYTES}"
        )
    return secret
