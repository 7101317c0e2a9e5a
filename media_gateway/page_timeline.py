"""The browser page's live timeline of one call: where the call stands and its transcript.

The page is sent only the transcript items it has not seen yet (the workflow's
`transcript_since` query), one refresh at a time so items arrive in order and none twice.

A reply played to its end is recorded by the workflow only once its speech activity has
completed, a moment after the gateway finished playing it; nothing tells the gateway when.
So after a reply the page asks again, sooner, then later, until as many greetings and agent
replies have shown as were played (or gives up after ~6 s: the next turn's refresh brings them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from contracts.gateway_events import GatewayEvent, TimelineEvent
from media_gateway.control import CallControl

log = structlog.get_logger("baton.gateway")

#: Seconds between the asks for a just-played reply's item: quick when the workflow is, about
#: 6 s in all for a loaded worker.
FOLLOW_UP_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2)
SPOKEN = {"greeting", "agent_turn"}


class PageTimeline:
    def __init__(self, control: CallControl, send: Callable[[GatewayEvent], None]) -> None:
        self.control = control
        self.send = send
        #: Transcript items the current page has been sent.
        self.shown = 0
        self._lock = asyncio.Lock()
        self._following = False
        #: Replies played whose item the page has not been sent (a reply is recorded by the
        #: workflow after it is played), while follow-ups run.
        self._unseen_replies = 0

    def new_page(self) -> None:
        """A new page (a reconnect) starts with an empty timeline."""
        self.shown = 0

    async def refresh(self, *, until_spoken: bool = False) -> None:
        """Send where the call stands and the items the page has not seen; `until_spoken` (a
        reply just played): ask again until the page has that reply's item too."""
        self._unseen_replies += until_spoken
        async with self._lock:
            await self._send_new(always=True)
        if not until_spoken or self._following:
            return  # the follow-ups under way wait for this reply's item as well
        self._following = True
        try:
            for delay in FOLLOW_UP_DELAYS:
                if self._unseen_replies <= 0:
                    return
                await asyncio.sleep(delay)
                async with self._lock:
                    await self._send_new(always=False)
        finally:
            self._following, self._unseen_replies = False, 0

    async def _send_new(self, *, always: bool) -> None:
        try:
            summary, new = await self.control.timeline(self.shown)
            if new.total < self.shown:
                # A continue-as-new run carries fewer items: show the call afresh.
                summary, new = await self.control.timeline(0)
        except Exception as error:  # the timeline is a view; the call goes on without it
            log.info("timeline unavailable", call_id=self.control.call.call_id, error=str(error))
            return
        if always or new.items:
            self.shown = new.start + len(new.items)
            self.send(TimelineEvent(state=summary, start=new.start, items=new.items))
        spoken = sum(item.type in SPOKEN for item in new.items)
        self._unseen_replies = max(0, self._unseen_replies - spoken)
