"""Which sinks a worker's tickets go to, from BATON_TICKET_SINK and the webhook settings.

Checked when a worker starts (baton.preflight) and again by each activity, so a mistake is
one line at start, never a ticket silently kept in one place only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from activities.ticket_sinks.base import TicketSinkError
from runtime.settings import settings

SINK_CHOICES = ("sqlite", "webhook", "both")
#: The HMAC key must be hard to guess: as long as the gateway's JWT secret.
MIN_SECRET_BYTES = 32


@dataclass(frozen=True)
class WebhookSettings:
    url: str
    secret: str


@dataclass(frozen=True)
class TicketSinkSettings:
    sqlite: bool
    webhook: WebhookSettings | None


def ticket_sink_settings(env: Mapping[str, str] | None = None) -> TicketSinkSettings:
    """The configured sinks, or `TicketSinkError` saying which setting is wrong."""
    config = settings(env)
    choice = (config.ticket_sink or "sqlite").lower()
    if choice not in SINK_CHOICES:
        raise TicketSinkError(
            f"BATON_TICKET_SINK must be sqlite, webhook or both (got {config.ticket_sink!r})"
        )
    if choice == "sqlite":
        if config.ticket_sink is None and config.ticket_webhook_url:
            raise TicketSinkError(
                "BATON_TICKET_WEBHOOK_URL is set but BATON_TICKET_SINK is not: set it to "
                "webhook or both to send tickets there"
            )
        return TicketSinkSettings(sqlite=True, webhook=None)
    url = config.ticket_webhook_url
    if not url:
        raise TicketSinkError(
            f"BATON_TICKET_SINK={choice} needs BATON_TICKET_WEBHOOK_URL (the receiver's URL)"
        )
    _check_url(url, allow_http=config.ticket_webhook_allow_http == "1")
    secret = config.ticket_webhook_secret or ""
    if len(secret.encode()) < MIN_SECRET_BYTES:
        raise TicketSinkError(
            f"BATON_TICKET_SINK={choice} needs BATON_TICKET_WEBHOOK_SECRET of at least "
            f"{MIN_SECRET_BYTES} bytes to sign tickets (e.g. `openssl rand -hex 32`)"
        )
    return TicketSinkSettings(sqlite=choice == "both", webhook=WebhookSettings(url, secret))


def _check_url(url: str, *, allow_http: bool) -> None:
    # The URL is never quoted back: its query string may hold the receiver's token.
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not host:
        raise TicketSinkError("BATON_TICKET_WEBHOOK_URL must be an http(s):// URL with a host")
    if parts.scheme == "http" and not allow_http and not _is_loopback(host):
        raise TicketSinkError(
            "BATON_TICKET_WEBHOOK_URL is plain http:// to a host off this machine: tickets "
            "would cross the network unencrypted; use https:// (or set "
            "BATON_TICKET_WEBHOOK_ALLOW_HTTP=1 inside a trusted network)"
        )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
