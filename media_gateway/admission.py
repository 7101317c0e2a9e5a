"""Who may hold a socket on the gateway, and for how long: caps, timeouts and token use.

The caps are counted per remote address and in total, with a tighter budget for sockets that
have not authenticated yet (a Twilio stream authenticates in its first message, after the
upgrade), so a flood of idle sockets is refused at the handshake and cannot starve real calls of
file descriptors. Authenticated sockets have their own, larger, per-address cap: a telephony
provider carries many calls from a few addresses.

A token's ``jti`` is remembered until the token expires. It admits its call once; it admits it
again only as a reconnect of that same call while the call is still open here, and never while
another connection for the call is live (the caller who holds the line keeps it).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from media_gateway.tokens import TokenClaims


@dataclass(frozen=True)
class SocketLimits:
    """Bounds for every caller socket; tests shrink them."""

    #: Seconds an unauthenticated socket may stay open before it must present a valid token.
    open_timeout_s: float = 10.0
    #: Seconds an authenticated socket may go without a message (media flows every 20 ms).
    idle_timeout_s: float = 60.0
    #: WebSocket ping interval; a peer that misses the pong is dropped (and may reconnect).
    heartbeat_s: float = 15.0
    #: Seconds one send may wait on a peer that does not read before the socket is dropped.
    write_timeout_s: float = 5.0
    max_message_bytes: int = 64 * 1024
    max_sockets: int = 4000
    max_sockets_per_address: int = 1000
    max_unauthenticated: int = 256
    max_unauthenticated_per_address: int = 16


class AdmissionRefused(Exception):  # noqa: N818 - a refusal, not a failure of the gateway
    """Why a socket is refused; ``status`` is the HTTP status for a refused handshake."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class Admission:
    """Socket counts by address and authentication state (one event loop, so no locks)."""

    def __init__(self, limits: SocketLimits) -> None:
        self.limits = limits
        self.sockets: Counter[str] = Counter()
        self.pending: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return self.sockets.total()

    @property
    def total_pending(self) -> int:
        return self.pending.total()

    def admit(self, address: str, *, authenticated: bool) -> None:
        """Count a new socket from ``address`` or raise `AdmissionRefused` (503)."""
        limits = self.limits
        if self.total >= limits.max_sockets:
            raise AdmissionRefused(503, "the gateway is at its connection limit")
        if self.sockets[address] >= limits.max_sockets_per_address:
            raise AdmissionRefused(503, "too many connections from this address")
        if not authenticated:
            if self.total_pending >= limits.max_unauthenticated:
                raise AdmissionRefused(503, "too many connections waiting to authenticate")
            if self.pending[address] >= limits.max_unauthenticated_per_address:
                raise AdmissionRefused(503, "too many unauthenticated connections from here")
            self.pending[address] += 1
        self.sockets[address] += 1

    def authenticated(self, address: str) -> None:
        """A pending socket presented a valid token: it no longer counts as pending."""
        self._drop(self.pending, address)

    def release(self, address: str, *, pending: bool) -> None:
        self._drop(self.sockets, address)
        if pending:
            self._drop(self.pending, address)

    @staticmethod
    def _drop(counter: Counter[str], address: str) -> None:
        counter[address] -= 1
        if counter[address] <= 0:
            del counter[address]


class TokenLedger:
    """Token ids seen, each with its call, until the token expires."""

    def __init__(self, leeway_s: float = 5.0) -> None:
        self._seen: dict[str, tuple[str, float]] = {}
        self._leeway = leeway_s

    def use(self, claims: TokenClaims, *, call_open_here: bool) -> None:
        """Record a token's use; refuse (403) one already spent on a call no longer open."""
        now = time.time()
        self._forget_expired(now)
        seen = self._seen.get(claims.token_id)
        if seen is not None and not (seen[0] == claims.call_id and call_open_here):
            raise AdmissionRefused(403, "this token was already used")
        self._seen[claims.token_id] = (claims.call_id, claims.expires_at + self._leeway)

    def _forget_expired(self, now: float) -> None:
        # A few hundred live tokens at most per gateway: a scan per admission costs microseconds.
        expired = [jti for jti, (_, until) in self._seen.items() if until < now]
        for jti in expired:
            del self._seen[jti]


class TokenBucket:
    """`burst` events at once, refilled at `rate` a second. Ten lines a library would not save;
    aiolimiter and friends wait for a token, and a flood must be refused, not queued."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate, self.burst = rate, float(burst)
        self.tokens, self.at = float(burst), time.monotonic()

    def take(self, now: float) -> bool:
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True
