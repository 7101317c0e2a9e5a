"""The media gateway's lease on a voice call: the workflow, not a gateway's memory, decides
when a call whose gateway has gone quiet is over.

The gateway holding a call renews the lease every `LEASE_RENEW_SECONDS` (connected, or within
its reconnect grace). A gateway that dies takes its own grace timer with it; the lapse here is
what still hangs up for the caller, and the transcript says why.

The lease names its holder (gateway id and media address). When the caller redials through
another gateway, the old one may still renew through its reconnect grace: the holder is the
gateway with the caller's newest connection, and an older connection's renewals are ignored,
so speech does not flip back and forth between the two addresses.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.calls import (
        LEASE_LAPSE_SECONDS,
        HangUp,
        LeaseHolder,
        LeaseRenewal,
        stale_renewal,
    )
    from workflows.state import CallState

#: Patch id: a voice call's gateway keeps a lease; the workflow hangs up when it lapses.
GATEWAY_LEASE = "gateway-lease"
#: Patch id: a call renewed from another gateway's address is reached there from then on.
GATEWAY_MOVES = "gateway-moves"
#: Patch id: the lease records its holder; renewals from an older connection are ignored.
LEASE_HOLDER = "lease-holder"
LAPSE = timedelta(seconds=LEASE_LAPSE_SECONDS)
#: Less than this left counts as lapsed. Timers are kept to the millisecond while workflow time
#: is not: waiting out a sub-millisecond remainder could fire at once, at the same workflow
#: time, forever.
_GRAIN = timedelta(seconds=1)


def holder_key(holder: LeaseHolder | None) -> str:
    """The caller's connection the lease names ("" before any renewal named one)."""
    return "" if holder is None else f"{holder.gateway_id}@{holder.connected_at.isoformat()}"


class GatewayLease:
    def __init__(self, state: CallState) -> None:
        self.state = state
        self.kept = False

    def start(self, has_voice: bool) -> None:
        """Keep a lease on voice calls (new ones: calls recorded before it kept none)."""
        self.kept = has_voice and workflow.patched(GATEWAY_LEASE)
        if self.kept and self.state.lease_expires_at is None:
            self.renew()

    def renew(self) -> None:
        self.state.lease_expires_at = workflow.now() + LAPSE

    def renewed(self, renewal: LeaseRenewal) -> None:
        """A gateway renewed: keep the lease and follow it, unless an older connection's."""
        if renewal.connected_at is None or not workflow.patched(LEASE_HOLDER):
            # A gateway from before holders were named, or a call recorded before.
            self.renew()
            self.follow(renewal.gateway_address)
            return
        holder = self.state.lease_holder
        if holder is not None and stale_renewal(renewal, holder):
            workflow.logger.info(
                "stale lease renewal from gateway %s ignored (%s holds the call)",
                renewal.gateway_id,
                holder.gateway_id,
            )
            return
        self.renew()
        moved = holder is None or holder.gateway_id != renewal.gateway_id
        # State only, no command: what another gateway asks before taking a second connection
        # (contracts.calls.line_open_elsewhere). A gateway that does not say keeps it unknown.
        self.state.lease_holder = LeaseHolder(
            gateway_id=renewal.gateway_id,
            gateway_address=renewal.gateway_address,
            connected_at=renewal.connected_at,
            since=workflow.now() if moved or holder is None else holder.since,
            line_open=bool(renewal.line_open),
            renewed_at=workflow.now() if renewal.line_open is not None else None,
        )
        self.follow(renewal.gateway_address)

    def follow(self, gateway_address: str) -> None:
        """The call is held at `gateway_address` now: a draining gateway handed it back and the
        caller dialed again through another one. Speech goes there from the next reply on.
        Calls recorded before this only ever renewed from their first address."""
        call = self.state.call
        if (
            gateway_address
            and call.gateway_address
            and gateway_address != call.gateway_address
            and workflow.patched(GATEWAY_MOVES)
        ):
            self.state.call = call.model_copy(update={"gateway_address": gateway_address})

    def time_left(self) -> timedelta | None:
        """How long the call may wait for work before the lease runs out (None: no lease)."""
        expires = self.state.lease_expires_at
        if not self.kept or expires is None:
            return None
        return expires - workflow.now()

    def lapsed(self) -> HangUp | None:
        left = self.time_left()
        if left is None or left >= _GRAIN:
            return None
        return HangUp(reason=f"media gateway lost: no lease renewal for {LEASE_LAPSE_SECONDS:g} s")
