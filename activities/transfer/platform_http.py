"""What the Twilio and ACS transfer adapters share: one bounded HTTP request, and how its
answer becomes a `TransferOutcome` or a retry.

A platform that refuses the transfer (a 4xx: unknown call, call no longer live, bad target,
wrong credentials) gives the same answer to the same request again, so that is a `failed`
outcome at once: the workflow keeps the ticket and tells the caller. A platform that is down,
slow or busy (5xx, 408/409/429, a timeout, a dropped connection) may take it on the next
attempt, so the adapter raises a retryable `ApplicationError` and Temporal's retry policy for
the activity decides how long to keep trying while the caller waits on the line.

Every failure counts in `baton_provider_errors` under the platform's name (`twilio`, `acs`),
retries as `retryable="true"`, refusals and missing settings as `"false"`, so the alert on
non-retryable provider errors also catches a revoked Twilio token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, NoReturn

import aiohttp
import structlog

from activities.provider_env import seconds
from activities.provider_errors import ProviderError, is_retryable_status, to_application_error
from contracts.metrics import PROVIDER_ERRORS
from contracts.transfer import TransferOutcome
from runtime.baton_metrics import count
from runtime.platform_callbacks import CallbackConfigError, public_base_url
from runtime.settings import settings

log = structlog.get_logger("baton.transfer")

#: Failure type Temporal records when a platform could not be reached or was unavailable.
PLATFORM_UNAVAILABLE = "TransferPlatformUnavailable"
DEFAULT_TIMEOUT_SECONDS = 10.0


class TransferConfigError(ValueError):
    """The platform's credentials or endpoint are missing or malformed (message says which
    variable to set); no request was sent."""


@dataclass(frozen=True)
class PlatformAnswer:
    """A platform's HTTP answer: status and the JSON body (empty when it sent none)."""

    status: int
    body: dict[str, Any]


_unconfirmed_logged: set[str] = set()


def callbacks_base(platform: str) -> str | None:
    """The public base URL the platform reports the transfer's outcome to, or None when
    `BATON_PUBLIC_URL` is unset: the transfer then counts as `connected` as soon as the
    platform accepts it, which this worker says once per platform. A malformed value raises
    `TransferConfigError`."""
    try:
        base = public_base_url()
    except CallbackConfigError as error:
        raise TransferConfigError(str(error)) from None
    if base is None and platform not in _unconfirmed_logged:
        _unconfirmed_logged.add(platform)
        log.warning(
            "transfer outcomes are not confirmed: set BATON_PUBLIC_URL so the platform can "
            "report whether a person took the call",
            platform=platform,
        )
    return base


def request_timeout() -> float:
    """Seconds one platform request may take (`BATON_TRANSFER_TIMEOUT`, default 10)."""
    return seconds(settings().transfer_timeout, "BATON_TRANSFER_TIMEOUT", DEFAULT_TIMEOUT_SECONDS)


async def post(
    platform: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    data: bytes | dict[str, str] | None = None,
    method: str = "POST",
) -> PlatformAnswer:
    """POST (or `method`) once; a timeout or a connection error raises a retryable
    `ApplicationError`."""
    timeout = aiohttp.ClientTimeout(total=request_timeout())
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.request(method, url, headers=headers, data=data) as response,
        ):
            text = await response.text()
            return PlatformAnswer(response.status, _json_object(text))
    except (aiohttp.ClientError, TimeoutError) as error:
        reason = type(error).__name__
        log.warning("transfer request not answered", platform=platform, reason=reason)
        detail = f"{platform} did not answer ({reason})"
        unanswered = ProviderError(detail, retryable=True, provider=platform)
        raise to_application_error(
            unanswered, failure_type=PLATFORM_UNAVAILABLE, context="transfer"
        ) from None


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def refused_or_retry(platform: str, answer: PlatformAnswer, code: object) -> TransferOutcome:
    """The outcome of an error answer: `failed` naming the status and the platform's error
    code (never its message, which may quote the request), or a retryable raise."""
    detail = f"{platform} refused the transfer: HTTP {answer.status}"
    if code not in (None, ""):
        detail += f", error {code}"
    if is_retryable_status(answer.status):
        log.warning("transfer platform unavailable", platform=platform, status=answer.status)
        raise_retryable(platform, detail, answer.status)
    if answer.status in (401, 403):
        detail += "; check the platform credentials"
    log.warning("transfer refused", platform=platform, status=answer.status, code=str(code))
    count(PROVIDER_ERRORS, provider=platform, retryable="false")
    return TransferOutcome(status="failed", detail=detail)


def raise_retryable(platform: str, detail: str, status: int) -> NoReturn:
    """Raise the retryable `ApplicationError` for a platform that may answer next time."""
    error = ProviderError(detail, retryable=True, status_code=status, provider=platform)
    raise to_application_error(error, failure_type=PLATFORM_UNAVAILABLE, context="transfer")


def not_configured(platform: str, error: TransferConfigError) -> TransferOutcome:
    """`failed` for a platform the worker has no usable credentials for: retrying cannot help,
    the caller is told and the ticket kept, and the log says what to set."""
    log.error("transfer platform not configured", platform=platform, reason=str(error))
    count(PROVIDER_ERRORS, provider=platform, retryable="false")
    return TransferOutcome(status="failed", detail=f"{platform} is not configured: {error}")
