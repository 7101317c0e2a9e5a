"""A sync activity that runs longer than its heartbeat timeout is kept alive by
`heartbeat_while` (business tools run this way), and one that stops beating is timed out."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TimeoutError, TimeoutType
from temporalio.worker import Worker

from activities.heartbeats import heartbeat_while

SLOW_SECONDS = 3.0  # longer than the heartbeat timeout below
HEARTBEAT_TIMEOUT = timedelta(seconds=1)


@activity.defn(name="slow_with_heartbeats")
def slow_with_heartbeats(beat: bool) -> str:
    def work() -> str:
        time.sleep(SLOW_SECONDS)
        return "done"

    return heartbeat_while(work, every=0.25) if beat else work()


@workflow.defn(name="SlowToolProbe")
class SlowToolProbe:
    @workflow.run
    async def run(self, beat: bool) -> str:
        result: str = await workflow.execute_activity(
            slow_with_heartbeats,
            beat,
            start_to_close_timeout=timedelta(seconds=30),
            heartbeat_timeout=HEARTBEAT_TIMEOUT,
            retry_policy=RetryPolicy(maximum_attempts=1),
        )
        return result


async def run_probe(client: Client, beat: bool) -> str:
    queue = f"probe-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(max_workers=2) as threads:
        async with Worker(
            client,
            task_queue=queue,
            workflows=[SlowToolProbe],
            activities=[slow_with_heartbeats],
            activity_executor=threads,
        ):
            result: str = await client.execute_workflow(
                SlowToolProbe.run, beat, id=queue, task_queue=queue
            )
            return result


async def test_a_slow_sync_activity_that_heartbeats_outlives_its_heartbeat_timeout(
    temporal_client: Client,
) -> None:
    assert await run_probe(temporal_client, beat=True) == "done"


async def test_the_same_activity_without_heartbeats_is_timed_out(temporal_client: Client) -> None:
    with pytest.raises(WorkflowFailureError) as failed:
        await run_probe(temporal_client, beat=False)
    cause = failed.value.cause
    assert isinstance(cause, ActivityError) and isinstance(cause.cause, TimeoutError)
    assert cause.cause.type == TimeoutType.HEARTBEAT
