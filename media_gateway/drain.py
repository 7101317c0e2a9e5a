"""Stopping a gateway without leaving a call half-delivered.

On SIGTERM the gateway stops taking new calls (503, and `/readyz` turns false) and keeps the
ones it holds until they end or the drain's grace runs out. A call still here then is handed
back, never cut mid-sentence:
1. no new reply starts on it (the speech worker is told the call is leaving, and the workflow
   records that reply as not heard);
2. the reply being played plays to its end (bounded: past `HANDBACK_SECONDS` it stops, and the
   workflow records exactly how much was heard, as for a barge-in);
3. the caller's socket closes with 1012 (service restart), which tells a client to dial again;
4. what the caller said is delivered and the turns in flight get their answer (their audio is
   fetched from this gateway before it goes);
5. the call's workflow goes on. A caller who dials again with the same call id reaches it
   through any gateway: that gateway's lease renewal carries its media address, and the
   workflow sends speech there from then on (workflows.lease). A caller who never does is hung
   up when the lease lapses, and the transcript says why.
"""

from __future__ import annotations

import asyncio
import contextlib

import structlog

from media_gateway.calls import CallMedia

log = structlog.get_logger("baton.gateway")

#: Per call, after the grace: time for the reply playing to end and the turns in flight to
#: get their answers. Replies are a sentence or a few; a minute-long one is cut and recorded.
HANDBACK_SECONDS = 15.0
#: WebSocket close code 1012, "service restart": the client may reconnect.
CLOSE_SERVICE_RESTART = 1012
HANDBACK_REASON = "gateway restarting: dial again to carry on"


async def hand_back(call: CallMedia, limit: float = HANDBACK_SECONDS) -> None:
    """Hand one live call back to its workflow (steps 1-5 above), within `limit` seconds."""
    call.leaving = True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout_at(deadline):
            while call.playback.current is not None:
                await asyncio.sleep(0.02)
    if call.playback.current is not None:
        log.warning("reply cut by the drain's limit", call_id=call.call_id)
        call.playback.cancel()
    if call.peer is not None:
        await call.peer.close(HANDBACK_REASON, CLOSE_SERVICE_RESTART)
    try:
        async with asyncio.timeout_at(max(deadline, loop.time() + 1.0)):
            await call.settled()
    except TimeoutError:
        log.warning("turn still in flight when handed back", call_id=call.call_id)
    await call.aclose()
    log.info("call handed back", call_id=call.call_id)
