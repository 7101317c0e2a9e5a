"""Media tokens: standard JWTs (HS256) that admit a caller's stream to one call.

A contact-center platform mints a token per call with the gateway's secret, in any language with
a JWT library, and hands it to whatever opens the media stream (the softphone, a Twilio
``<Stream>`` custom parameter, an ACS media-streaming URL). The claims:

* ``sub``: the call id; ``aud``: ``baton-media``; ``exp``, ``iat``, ``jti`` (all required);
* ``scenario`` (optional): the scenario the call runs; the gateway's default otherwise;
* ``caller`` (optional): the verified caller profile (``client_id``, ``name``, ``phone``,
  ``language``), strings only.

Who the caller is comes from here and nowhere else: nothing in a URL or a stream's start message
sets it. PyJWT checks the signature, the algorithm (only HS256, so an ``alg: none`` token or one
signed with another algorithm is refused), the audience and the times.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import jwt

from runtime.settings import settings

SECRET_ENV: Final = "BATON_GATEWAY_SECRET"
#: RFC 7518 §3.2: an HS256 key is at least as long as the hash, 32 bytes.
MIN_SECRET_BYTES: Final = 32
ALGORITHM: Final = "HS256"
AUDIENCE: Final = "baton-media"
DEFAULT_TTL_SECONDS: Final = 300
DEFAULT_LEEWAY_SECONDS: Final = 5.0
#: The caller profile fields a token may carry; anything else is refused, not dropped.
PROFILE_KEYS: Final = frozenset({"client_id", "name", "phone", "language"})

# Far larger than any real token (~400 chars); bounds the work done on hostile input.
_MAX_TOKEN_CHARS: Final = 4096
_MAX_CLAIM_CHARS: Final = 200
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
    token_id: str
    expires_at: int
    issued_at: int
    scenario: str | None = None
    caller: Mapping[str, str] = field(default_factory=dict)


def _check_secret(secret: bytes) -> None:
    if not isinstance(secret, bytes | bytearray):
        raise TypeError("gateway secret must be bytes")
    if len(secret) < MIN_SECRET_BYTES:
        raise ValueError(
            f"gateway secret must be at least {MIN_SECRET_BYTES} bytes (got {len(secret)})"
        )


def _checked_caller(caller: Any) -> dict[str, str]:
    if caller is None:
        return {}
    if not isinstance(caller, Mapping):
        raise TokenError("malformed", "the caller claim is not an object")
    unknown = set(caller) - PROFILE_KEYS
    if unknown:
        raise TokenError("malformed", f"the caller claim has unknown fields: {sorted(unknown)}")
    for key, value in caller.items():
        if not isinstance(value, str) or not value or len(value) > _MAX_CLAIM_CHARS:
            raise TokenError("malformed", f"caller.{key} must be a short non-empty string")
    return dict(caller)


def issue_token(
    secret: bytes,
    call_id: str,
    *,
    scenario: str | None = None,
    caller: Mapping[str, str] | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    now: float | None = None,
) -> str:
    """A token admitting one caller stream to ``call_id`` for ``ttl_seconds``."""
    _check_secret(secret)
    if not isinstance(call_id, str) or not call_id:
        raise ValueError("call_id must be a non-empty string")
    if ttl_seconds <= 0:
        raise ValueError("ttl_seconds must be positive")
    issued_at = int(time.time() if now is None else now)
    claims: dict[str, Any] = {
        "sub": call_id,
        "aud": AUDIENCE,
        "iat": issued_at,
        "exp": issued_at + ttl_seconds,
        "jti": secrets.token_urlsafe(12),
    }
    if scenario:
        claims["scenario"] = scenario
    if caller:
        claims["caller"] = _checked_caller(caller)
    return jwt.encode(claims, bytes(secret), algorithm=ALGORITHM)


def verify_token(
    secret: bytes,
    token: str,
    call_id: str | None = None,
    *,
    leeway_seconds: float = DEFAULT_LEEWAY_SECONDS,
) -> TokenClaims:
    """The token's claims, or :class:`TokenError` saying why it is refused.

    ``call_id``, when the stream names one, must be the token's ``sub``. ``leeway_seconds``
    tolerates clock skew between the issuer and this gateway.
    """
    _check_secret(secret)
    if not token:
        raise TokenError("missing", "no access token was presented")
    if not isinstance(token, str) or len(token) > _MAX_TOKEN_CHARS:
        raise TokenError("malformed", "access token is not a token")
    try:
        payload = jwt.decode(
            token,
            bytes(secret),
            algorithms=[ALGORITHM],
            audience=AUDIENCE,
            leeway=leeway_seconds,
            options={"require": ["sub", "aud", "exp", "iat", "jti"]},
        )
    except jwt.ExpiredSignatureError:
        raise TokenError("expired", "access token has expired") from None
    except jwt.InvalidSignatureError:
        raise TokenError("bad_signature", "access token signature does not match") from None
    except jwt.InvalidTokenError as error:
        # Wrong algorithm, audience, missing claims, bad encoding: all one answer to the peer.
        raise TokenError("malformed", f"access token refused: {error}") from None
    claims = _claims_from(payload)
    if call_id and not secrets.compare_digest(claims.call_id.encode(), call_id.encode()):
        raise TokenError("wrong_call", "access token was issued for a different call")
    return claims


def _claims_from(payload: dict[str, Any]) -> TokenClaims:
    call_id, token_id, scenario = payload["sub"], payload["jti"], payload.get("scenario")
    if not isinstance(token_id, str) or not token_id or len(token_id) > _MAX_CLAIM_CHARS:
        raise TokenError("malformed", "the jti claim must be a short non-empty string")
    if not call_id or len(call_id) > _MAX_CLAIM_CHARS:
        raise TokenError("malformed", "the sub claim must be a short non-empty call id")
    if scenario is not None and (not isinstance(scenario, str) or not scenario):
        raise TokenError("malformed", "the scenario claim must be a non-empty string")
    return TokenClaims(
        call_id=call_id,
        token_id=token_id,
        expires_at=int(payload["exp"]),
        issued_at=int(payload["iat"]),
        scenario=scenario,
        caller=_checked_caller(payload.get("caller")),
    )


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
