"""The calls one gateway serves, by call id: where a caller's connection finds its call, and
where the media plane finds a call the workers ask about."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import UTC, datetime
from typing import Any

import structlog
from temporalio.client import Client

from contracts.calls import CallInput, Channel, line_open_elsewhere
from media_gateway.calls import CallMedia
from media_gateway.control import CallControl
from media_gateway.gateway_config import GatewayConfig
from media_gateway.peer import LineBusyError
from media_gateway.unserved import NoticeVoice, ServiceNotices

log = structlog.get_logger("baton.gateway")


class CallRegistry:
    """Calls currently served by this gateway, by call id."""

    def __init__(self, client: Client, config: GatewayConfig) -> None:
        self.client = client
        self.config = config
        #: What a caller hears when no worker serves their call: the hold chime until
        #: `render_notices` has the words (a second after start, before any call needs them).
        self.notices = ServiceNotices.chime()
        self._rendering: asyncio.Task[None] | None = None
        self.calls: dict[str, CallMedia] = {}
        #: Calls that ended here whose last words (the hang-up included) are still on the way.
        self.ending: set[CallMedia] = set()
        self._opening: dict[str, asyncio.Lock] = {}

    def get(self, call_id: str) -> CallMedia | None:
        return self.calls.get(call_id)

    async def open(
        self,
        call_id: str,
        channel: Channel,
        profile: dict[str, Any],
        scenario: str | None,
        *,
        platform_call_id: str | None = None,
    ) -> CallMedia:
        """The call's media state, starting or attaching to its workflow the first time
        (`platform_call_id`, the CallSid or ACS call connection id, goes into its input)."""
        lock = self._opening.setdefault(call_id, asyncio.Lock())
        async with lock:
            existing = self.calls.get(call_id)
            if existing is not None and not existing.ended:
                # With a connection of its own here, CallMedia.connect refuses a second one.
                if existing.peer is None:
                    await self._refuse_if_held_elsewhere(existing.control)
                return existing
            call = CallInput(
                call_id=call_id,
                scenario=scenario or self.config.scenario,
                caller_profile=profile,
                channel=channel,
                gateway_address=self.config.media_address,
                platform_call_id=platform_call_id,
                registry=self.config.registry,
            )
            control = CallControl(self.client, call)
            await self._refuse_if_held_elsewhere(control)
            await control.attach()
            media = CallMedia(self.config, control, self._forget, lambda: self.notices)
            self.calls[call_id] = media
            return media

    async def _refuse_if_held_elsewhere(self, control: CallControl) -> None:
        """A token already carrying a live line at another gateway is refused here too: the
        line stays with whoever has it, whichever gateway a replayed token reaches."""
        holder = await control.line_holder()
        if not line_open_elsewhere(holder, self.config.media_address, datetime.now(UTC)):
            return
        assert holder is not None
        # A gateway that died mid-call renewed moments ago with its line open, and its caller
        # redials here: its media plane no longer answers, so the line is not open there.
        if await _answers(holder.gateway_address):
            log.warning(
                "second connection for a call live at another gateway refused",
                call_id=control.call.call_id,
                gateway=holder.gateway_id,
            )
            raise LineBusyError("the call's line is open at another gateway")
        log.info("lease holder gone; its caller taken here", call_id=control.call.call_id)

    def render_notices(self, voice: NoticeVoice) -> None:
        """Render the notices in `voice` in the background: a restarted gateway takes its
        callers back without waiting for them (a call needs one 3 s in at the earliest)."""
        self._rendering = asyncio.create_task(self._render(voice))

    async def _render(self, voice: NoticeVoice) -> None:
        try:
            self.notices = await ServiceNotices.render(voice)
        except Exception:  # the chime stays: a tone, never silence
            log.exception("service notices not rendered")

    async def close(self) -> None:
        if self._rendering is not None:
            self._rendering.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rendering

    def _forget(self, call_id: str) -> None:
        media = self.calls.pop(call_id, None)
        self._opening.pop(call_id, None)
        if media is not None and not media.submitter.done():
            self.ending.add(media)
            media.submitter.add_done_callback(lambda _: self.ending.discard(media))


def new_call_id() -> str:
    return f"web-{uuid.uuid4().hex[:12]}"


#: How long a lease holder's media plane gets to accept a connection before it counts as gone.
HOLDER_PROBE_SECONDS = 0.5


async def _answers(address: str) -> bool:
    """Whether something accepts TCP connections at `address` (HOST:PORT): a dead gateway's
    port refuses at once, a dead host lets the probe time out. A plain connect, not an RPC:
    the question is only whether that process still exists."""
    host, _, port = address.rpartition(":")
    try:
        async with asyncio.timeout(HOLDER_PROBE_SECONDS):
            _, writer = await asyncio.open_connection(host.strip("[]"), int(port))
    except (OSError, ValueError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True
