"""Ticket sink settings: each mistake is one line naming the variable, at worker start."""

from __future__ import annotations

import pytest

from activities.ticket_sinks import TicketSinkError, ticket_sink_settings
from tests.audit.cli import baton

SECRET = "s" * 32


def refused(env: dict[str, str]) -> str:
    with pytest.raises(TicketSinkError) as raised:
        ticket_sink_settings(env)
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_sqlite_is_the_default_and_both_keeps_it_beside_the_webhook() -> None:
    assert ticket_sink_settings({}).sqlite and ticket_sink_settings({}).webhook is None
    both = ticket_sink_settings(
        {
            "BATON_TICKET_SINK": "both",
            "BATON_TICKET_WEBHOOK_URL": "https://cc.example/tickets",
            "BATON_TICKET_WEBHOOK_SECRET": SECRET,
        }
    )
    assert both.sqlite and both.webhook is not None
    assert both.webhook.url == "https://cc.example/tickets"


def test_a_webhook_needs_a_url_and_a_long_secret() -> None:
    assert "needs BATON_TICKET_WEBHOOK_URL" in refused({"BATON_TICKET_SINK": "webhook"})
    short = refused(
        {
            "BATON_TICKET_SINK": "webhook",
            "BATON_TICKET_WEBHOOK_URL": "https://cc.example/tickets",
            "BATON_TICKET_WEBHOOK_SECRET": "short",
        }
    )
    assert "BATON_TICKET_WEBHOOK_SECRET of at least 32 bytes" in short


def test_plain_http_is_refused_off_loopback_unless_allowed() -> None:
    env = {
        "BATON_TICKET_SINK": "webhook",
        "BATON_TICKET_WEBHOOK_URL": "http://cc.example/tickets?token=hunter2",
        "BATON_TICKET_WEBHOOK_SECRET": SECRET,
    }
    message = refused(env)
    assert "plain http://" in message and "BATON_TICKET_WEBHOOK_ALLOW_HTTP=1" in message
    assert "hunter2" not in message  # the URL's own token is never repeated
    assert ticket_sink_settings({**env, "BATON_TICKET_WEBHOOK_ALLOW_HTTP": "1"}).webhook
    for loopback in ("http://127.0.0.1:9/t", "http://localhost:9/t", "http://[::1]:9/t"):
        assert ticket_sink_settings({**env, "BATON_TICKET_WEBHOOK_URL": loopback}).webhook


def test_unknown_sinks_bad_urls_and_a_forgotten_sink_are_refused() -> None:
    assert "sqlite, webhook or both" in refused({"BATON_TICKET_SINK": "kafka"})
    bad_url = {
        "BATON_TICKET_SINK": "webhook",
        "BATON_TICKET_WEBHOOK_URL": "ftp://cc.example/t",
        "BATON_TICKET_WEBHOOK_SECRET": SECRET,
    }
    assert "http(s):// URL with a host" in refused(bad_url)
    forgotten = refused({"BATON_TICKET_WEBHOOK_URL": "https://cc.example/tickets"})
    assert "BATON_TICKET_SINK is not" in forgotten


def test_a_worker_with_a_broken_sink_setting_refuses_to_start_in_one_line() -> None:
    done = baton("worker", "--queues", "tools", env={"BATON_TICKET_SINK": "webhook"}, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "baton: BATON_TICKET_SINK=webhook needs BATON_TICKET_WEBHOOK_URL (the receiver's URL)"
    ]
