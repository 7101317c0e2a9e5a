"""The browser page's live timeline of one call: where the call stands and its transcript.

The page is sent only the transcript items it has not seen yet (the workflow's
`transcript_since` query), one refresh at a time so items arrive in order and none twice.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from contracts.gateway_events import GatewayEvent, TimelineEvent
from media_gateway.control import CallControl

log = structlog.get_logger("baton.gateway")


class PageTimeline:
    def __init__(self, control: CallControl, send: Callable[[GatewayEvent], None]) -> None:
        self.control = control
        self.send = send
        #: Transcript items the current page has been sent.
        self.shown = 0
        self._lock = asyncio.Lock()

    def new_page(self) -> None:
        """A new page (a reconnect) starts with an empty timeline."""
        self.shown = 0

    async def refresh(self) -> None:
        async with self._lock:
            try:
                summary, new = await self.control.timeline(self.shown)
                if new.total < self.shown:
                    # A continue-as-new run carries fewer items: show the call afresh.
                    summary, new = await self.control.timeline(0)
            except Exception as error:  # the timeline is a view; the call goes on without it
                log.info(
                    "timeline unavailable", call_id=self.control.call.call_id, error=str(error)
                )
                return
            self.shown = new.start + len(new.items)
            self.send(TimelineEvent(state=summary, start=new.start, items=new.items))
