"""Socket admission and token use (pure code): caps per address and in total, pending sockets
on a tighter budget, and a token that admits its call once, reconnects excepted."""

from __future__ import annotations

import time

import pytest

from media_gateway.admission import Admission, AdmissionRefused, SocketLimits, TokenLedger
from media_gateway.tokens import TokenClaims

LIMITS = SocketLimits(
    max_sockets=6,
    max_sockets_per_address=4,
    max_unauthenticated=3,
    max_unauthenticated_per_address=2,
)


def refused(admission: Admission, address: str, *, authenticated: bool) -> str:
    with pytest.raises(AdmissionRefused) as caught:
        admission.admit(address, authenticated=authenticated)
    assert caught.value.status == 503
    return caught.value.reason


def test_unauthenticated_sockets_are_capped_per_address_then_in_total() -> None:
    admission = Admission(LIMITS)
    admission.admit("10.0.0.1", authenticated=False)
    admission.admit("10.0.0.1", authenticated=False)
    assert "from here" in refused(admission, "10.0.0.1", authenticated=False)
    admission.admit("10.0.0.2", authenticated=False)
    assert "waiting to authenticate" in refused(admission, "10.0.0.3", authenticated=False)
    # A caller with a valid token still gets in: pending sockets have their own budget.
    admission.admit("10.0.0.1", authenticated=True)
    assert admission.total == 4 and admission.total_pending == 3


def test_authenticated_sockets_are_capped_per_address_and_in_total() -> None:
    admission = Admission(LIMITS)
    for _ in range(4):
        admission.admit("10.0.0.1", authenticated=True)
    assert "from this address" in refused(admission, "10.0.0.1", authenticated=True)
    admission.admit("10.0.0.2", authenticated=True)
    admission.admit("10.0.0.2", authenticated=True)
    assert "connection limit" in refused(admission, "10.0.0.3", authenticated=True)


def test_released_and_authenticated_sockets_free_their_places() -> None:
    admission = Admission(LIMITS)
    admission.admit("10.0.0.1", authenticated=False)
    admission.admit("10.0.0.1", authenticated=False)
    admission.authenticated("10.0.0.1")  # a Twilio stream presented its token in `start`
    admission.admit("10.0.0.1", authenticated=False)
    admission.release("10.0.0.1", pending=True)
    admission.release("10.0.0.1", pending=True)
    admission.release("10.0.0.1", pending=False)
    assert admission.total == 0 and admission.total_pending == 0
    assert not admission.sockets and not admission.pending  # no empty entries pile up


def claims(call_id: str = "call-1", token_id: str = "j-1", ttl: int = 60) -> TokenClaims:
    now = int(time.time())
    return TokenClaims(call_id=call_id, token_id=token_id, expires_at=now + ttl, issued_at=now)


def test_a_token_admits_its_call_once() -> None:
    ledger = TokenLedger()
    ledger.use(claims(), call_open_here=False)
    with pytest.raises(AdmissionRefused) as caught:
        ledger.use(claims(), call_open_here=False)  # replayed after its call ended
    assert caught.value.status == 403


def test_a_token_readmits_a_reconnect_while_its_call_is_open() -> None:
    ledger = TokenLedger()
    ledger.use(claims(), call_open_here=False)
    ledger.use(claims(), call_open_here=True)
    ledger.use(claims(), call_open_here=True)


def test_a_different_token_for_the_same_call_is_its_own_entry() -> None:
    ledger = TokenLedger()
    ledger.use(claims(token_id="j-1"), call_open_here=False)
    ledger.use(claims(token_id="j-2"), call_open_here=True)


def test_expired_tokens_are_forgotten() -> None:
    ledger = TokenLedger(leeway_s=0)
    ledger.use(claims(ttl=-1), call_open_here=False)
    ledger.use(claims(token_id="j-2"), call_open_here=False)  # sweeps the expired one
    assert "j-1" not in ledger._seen and "j-2" in ledger._seen
