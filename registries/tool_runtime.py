"""What a business tool's handler receives: its context, besides the checked arguments.

A tool is declared in YAML (`contracts.registry.ToolSpec`) and implemented by a plain function in
the Python module beside that YAML file:

    def block_card(ctx: ToolContext, *, last4: str, reason: str = "") -> dict[str, Any]: ...

Handlers get their side effects through `ctx`: the demo database and an idempotency key that is
the same for every retry of one tool call, so a retried activity never blocks a card twice.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

ToolHandler = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class ToolContext:
    """What a tool handler may use besides its arguments."""

    call_id: str
    #: Same for every attempt of one tool call; mutating tools key their effect on it.
    idempotency_key: str
    db: sqlite3.Connection
    #: The call's system vars (client_id, session_profile, ...), read-only by convention.
    session: Mapping[str, Any] = field(default_factory=dict)

    @property
    def client_id(self) -> str | None:
        value = self.session.get("client_id")
        if value is None:
            profile = self.session.get("session_profile") or {}
            value = profile.get("client_id") if isinstance(profile, Mapping) else None
        return str(value) if value is not None else None
