"""The `webhook` sink: POST the redacted ticket as JSON to the contact center's URL.

Each POST is signed so the receiver can tell it came from Baton and refuse a replay:
`X-Baton-Timestamp` is the Unix time of the attempt and `X-Baton-Signature` is
`v1=` + hex HMAC-SHA256 under the shared secret of `{timestamp}.` followed by the body bytes.
`Idempotency-Key` is the ticket id, the same on every retry, so a receiver that saw it keeps
one ticket. The signing is the usual webhook scheme written out in a few lines: no library
signs an outgoing request this way, and the receiver's side is plain `hmac` (see README).

One attempt per call: the durable retry is the activity's Temporal retry policy
(workflows/policies.py). So a failure says whether another attempt can help: 408, 429 and
5xx, timeouts and refused connections can; any other answer cannot and is final. Errors name
the status only, never the URL (it may hold a token) or the body (it quotes the caller).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from datetime import timedelta

import aiohttp
from temporalio.exceptions import ApplicationError

from activities.ticket_sinks.base import redacted
from activities.ticket_sinks.config import WebhookSettings
from contracts.escalation import EscalationTicket

SIGNATURE_HEADER = "X-Baton-Signature"
TIMESTAMP_HEADER = "X-Baton-Timestamp"
#: One attempt is short: a receiver that cannot answer in this long is retried later.
ATTEMPT_TIMEOUT = aiohttp.ClientTimeout(total=5, connect=3)
#: A receiver's Retry-After is followed up to this long; longer waits use the normal backoff.
MAX_RETRY_AFTER = timedelta(seconds=60)
_RETRYABLE_STATUSES = (408, 429)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The `X-Baton-Signature` value of `body` sent at `timestamp`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"v1={digest.hexdigest()}"


class WebhookTicketSink:
    """POSTs each ticket once per attempt; raises an `ApplicationError` saying if a retry helps."""

    name = "webhook"

    def __init__(self, config: WebhookSettings) -> None:
        self.config = config

    async def put(self, ticket: EscalationTicket) -> None:
        body = redacted(ticket).model_dump_json().encode()
        # Signed afresh at each attempt, so a retry minutes later is still inside the
        # receiver's replay window.
        timestamp = int(time.time())
        headers = {
            "Content-Type": "application/json",
            "Idempotency-Key": ticket.ticket_id,
            TIMESTAMP_HEADER: str(timestamp),
            SIGNATURE_HEADER: signature(self.config.secret, timestamp, body),
        }
        try:
            async with (
                aiohttp.ClientSession(timeout=ATTEMPT_TIMEOUT) as session,
                session.post(
                    self.config.url, data=body, headers=headers, allow_redirects=False
                ) as response,
            ):
                status, retry_after = response.status, response.headers.get("Retry-After")
        except (aiohttp.ClientError, TimeoutError) as error:
            raise ApplicationError(
                f"ticket webhook unreachable ({type(error).__name__})",
                type="TicketWebhookUnavailable",
            ) from None
        if 200 <= status < 300:
            return
        if status >= 500 or status in _RETRYABLE_STATUSES:
            raise ApplicationError(
                f"ticket webhook answered HTTP {status}; retrying",
                type="TicketWebhookUnavailable",
                next_retry_delay=_retry_after(retry_after),
            )
        raise ApplicationError(
            f"ticket webhook refused the ticket: HTTP {status}",
            type="TicketWebhookRefused",
            non_retryable=True,
        )


def _retry_after(header: str | None) -> timedelta | None:
    """A receiver's Retry-After in seconds (the HTTP-date form is left to the backoff)."""
    if header is None or not header.strip().isdigit():
        return None
    return min(timedelta(seconds=int(header.strip())), MAX_RETRY_AFTER)
