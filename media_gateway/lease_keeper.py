"""This gateway's lease on one call: the workflow, not this process, decides when a call whose
gateway went quiet is over (workflows.lease), so the gateway keeps telling it that it holds the
call, and whether the caller's line is open here.

One signal per `LEASE_RENEW_SECONDS`, however many frames flow, and one at once when the line
opens or drops, so another gateway that a replayed token reaches knows at once
(media_gateway.call_registry). If this process dies the renewals stop and the lease lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import datetime

import structlog

from contracts.calls import LEASE_RENEW_SECONDS
from media_gateway.control import CallControl

log = structlog.get_logger("baton.gateway")


class LeaseKeeper:
    def __init__(
        self,
        control: CallControl,
        media_address: str,
        *,
        line: Callable[[], tuple[datetime, bool]],
        closed: Callable[[], None],
    ) -> None:
        """`line()`: when the caller's current connection here began, and whether it is up;
        `closed()`: the call's workflow closed without this gateway (renewals then stop)."""
        self.control = control
        self.media_address = media_address
        self._line = line
        self._closed = closed
        #: Set once the workflow has this gateway's renewal on record (media_plane waits for it
        #: before telling a retried speech its reply is lost: see FollowReplyText).
        self.renewed = asyncio.Event()
        self._due = asyncio.Event()
        self._task = asyncio.create_task(self._keep())

    def renew_now(self) -> None:
        """The caller's line opened or dropped here: say so without waiting for the period."""
        self._due.set()

    def stop(self) -> None:
        self._task.cancel()

    async def _keep(self) -> None:
        while True:
            connected_at, line_open = self._line()
            try:
                held = await self.control.renew_lease(
                    self.media_address, connected_at, line_open=line_open
                )
            except Exception:
                log.exception("lease not renewed", call_id=self.control.call.call_id)
            else:
                if not held:
                    self._closed()
                    return
                self.renewed.set()
            # asyncio.timeout, not wait_for: 3.11's wait_for drops a cancel that lands as the
            # event is set, and a closing gateway's lease would then be renewed forever.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LEASE_RENEW_SECONDS):
                    await self._due.wait()
            self._due.clear()
