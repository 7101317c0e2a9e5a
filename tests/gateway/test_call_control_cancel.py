"""Cancelling a line's delivery to its workflow cancels it, whatever the SDK turns it into.

Real dev server, no worker: the call's workflow starts and nobody runs it, so the update that
delivers a line waits to be accepted for as long as the test likes.
"""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client

from contracts.calls import CallInput, Utterance
from media_gateway.control import CallControl


async def test_a_delivery_cancelled_while_it_waits_is_cancelled_not_failed(
    temporal_client: Client,
) -> None:
    # The SDK reports a cancelled update call as an error (WorkflowUpdateRPCTimeoutOrCancelled),
    # not as a cancellation: the gateway's submitter once took it for a failed delivery, went
    # on waiting for the next line, and held a gateway's shutdown forever.
    control = CallControl(temporal_client, CallInput(call_id=f"cc-{uuid.uuid4().hex[:10]}"))
    await control.attach()
    delivery = asyncio.create_task(control.submit(Utterance(utterance_id="u-1", text="hello")))
    await asyncio.sleep(1.0)  # the update call is in flight: nobody can accept it
    assert not delivery.done()
    delivery.cancel()
    await asyncio.wait({delivery}, timeout=30)
    assert delivery.cancelled()
