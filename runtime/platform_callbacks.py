"""Where Twilio and ACS report how a transfer to a person ended, and how those reports are
authenticated; shared by the transfer adapters (which hand the URLs to the platform) and the
gateway (which serves them, media_gateway.platform_callbacks).

* Twilio: the transfer TwiML's `<Dial action=...>` (requested when the dialled leg ends, with
  `DialCallStatus`) and the dialled `<Number>`/`<Sip>`'s `statusCallback` for the `answered`
  event (the person picked up: the transfer is settled while they talk). Twilio signs each
  request with `X-Twilio-Signature`, checked with the account's auth token.
* ACS: Call Automation's `operationCallbackUri`, which receives the CallTransferAccepted or
  CallTransferFailed event. The URL carries a per-call token, an HMAC of the call id under the
  resource's access key, so only someone holding that key (Baton, and ACS through the URL it
  was given) can post an outcome for a call.

Every URL is built from `BATON_PUBLIC_URL`, the gateway's address as the platforms reach it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import quote

from runtime.settings import settings

TWILIO_DIAL_PATH = "/platform/twilio/dial/{call_id}"
TWILIO_ANSWERED_PATH = "/platform/twilio/answered/{call_id}"
ACS_EVENTS_PATH = "/platform/acs/events/{call_id}"


class CallbackConfigError(ValueError):
    """`BATON_PUBLIC_URL` is set but is not a usable base URL (the message says why)."""


def public_base_url() -> str | None:
    """`BATON_PUBLIC_URL` without its trailing slash, or None when unset (outcomes are then
    not confirmed by the platform). Raises `CallbackConfigError` for a malformed value."""
    value = settings().public_url
    if value is None:
        return None
    base = value.rstrip("/")
    if not base.startswith(("https://", "http://")) or "?" in base or "#" in base:
        raise CallbackConfigError("BATON_PUBLIC_URL must be an http(s) base URL, no query")
    return base


def _path(template: str, call_id: str) -> str:
    return template.format(call_id=quote(call_id, safe=""))


def twilio_dial_action_url(base: str, call_id: str) -> str:
    return base + _path(TWILIO_DIAL_PATH, call_id)


def twilio_answered_url(base: str, call_id: str) -> str:
    return base + _path(TWILIO_ANSWERED_PATH, call_id)


def acs_events_url(base: str, call_id: str, access_key: bytes) -> str:
    token = acs_event_token(access_key, call_id)
    return f"{base}{_path(ACS_EVENTS_PATH, call_id)}?token={token}"


def twilio_signature(auth_token: str, url: str, params: Mapping[str, str]) -> str:
    """`X-Twilio-Signature` of a POST as Twilio computes it: base64 of HMAC-SHA1, keyed by the
    auth token, over the full URL followed by each form parameter's name and value, sorted by
    name. Hand-written: the `twilio` package's RequestValidator does these lines, but would
    bring the whole synchronous REST SDK into the gateway for them."""
    text = url + "".join(name + params[name] for name in sorted(params))
    digest = hmac.new(auth_token.encode(), text.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def acs_event_token(access_key: bytes, call_id: str) -> str:
    """The per-call token of an ACS events URL (URL-safe, no padding)."""
    digest = hmac.new(access_key, f"baton-acs-events:{call_id}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(digest.digest()).decode().rstrip("=")


def acs_access_key(connection_string: str | None) -> bytes | None:
    """The decoded `accesskey` of an ACS connection string, or None when there is none."""
    for part in (connection_string or "").split(";"):
        name, _, value = part.partition("=")
        if name.strip().lower() == "accesskey":
            try:
                return base64.b64decode(value.strip(), validate=True) or None
            except (binascii.Error, ValueError):
                return None
    return None
