"""An ACS `queue` target: the call waits as a Job Router job until a worker accepts it.

Call Automation cannot transfer a call into a queue; on ACS, queues belong to Job Router. So
the transfer activity, with the caller on the gateway's hold audio (activities.transfer.hold):

1. upserts a job, `PATCH {endpoint}/routing/jobs/{jobId}?api-version=2023-11-01` with
   `application/merge-patch+json` `{"channelId": "voice", "queueId": <the target's address>,
   "priority", "channelReference": <call connection id>, "labels": {"callConnectionId",
   "batonTicketId", "escalationReason"}}`. The job id is derived from the call and ticket, so
   a retried activity upserts the same job rather than queueing the caller twice;
2. polls `GET /routing/jobs/{jobId}` (heartbeating, so a cancelled activity stops) until the
   job's `status` is `assigned`, then reads the worker of its newest `assignments` entry with
   `GET /routing/workers/{workerId}`. The worker's tag (or label) `transferTarget` names where
   the person answers: an E.164 number, or an ACS (`8:acs:...`) or Teams (`8:orgid:...`) user;
   without one, the worker id itself when it is such an identity. The caller is then
   transferred there by Call Automation (activities.transfer.acs_transfer);
3. a job Job Router `cancelled`/`closed`/`completed` or failed to classify or schedule (an
   exception policy, a supervisor) is the transfer `failed`. Every few polls the call
   connection is looked up (`GET /calling/callConnections/{id}`): a caller who hung up (404,
   or `callConnectionState` `disconnected`) has the job cancelled (`BatonCallerLeft`) and the
   transfer `failed` with `CALLER_LEFT`. So is the scenario's hold timeout
   (`queue_wait_seconds`, counted from the activity's first attempt), after which the job is
   cancelled (`POST /routing/jobs/{jobId}:cancel`, disposition code `BatonHoldTimeout`) so no
   worker is offered a caller who has gone. The workflow then tells the caller nobody is free
   and keeps the ticket. Completing and closing an assigned job is the worker's application's
   part, as in any Job Router deployment.

Requests are signed as every ACS data-plane request (activities.transfer.acs_auth). Field
names and statuses are those of Job Router's REST API (RouterJob, RouterJobAssignment,
RouterWorker) at api-version 2023-11-01.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from typing import Any

from temporalio import activity

from activities.transfer.acs_auth import CALL_AUTOMATION_API_VERSION, AcsResource
from activities.transfer.platform_http import PlatformAnswer, log, post, refused_or_retry
from contracts.transfer import TransferOutcome, TransferRequest, TransferTarget

JOB_ROUTER_API_VERSION = "2023-11-01"
CHANNEL_ID = "voice"
#: Job Router priorities run from -100 to 100; Job Router's own default is 1.
PRIORITY = 1
#: How often a waiting job is looked at (one small GET per call per second).
POLL_SECONDS = 1.0
#: The worker's tag or label naming where its person answers.
PARTICIPANT_KEY = "transferTarget"
TIMEOUT_DISPOSITION = "BatonHoldTimeout"
CALLER_LEFT_DISPOSITION = "BatonCallerLeft"
#: The detail of a transfer given up because the caller hung up in the queue.
CALLER_LEFT = "the caller hung up while queued"
#: The call connection is looked up every this many polls (a hang-up is noticed in seconds).
CALLER_CHECK_POLLS = 3
#: Job statuses from which no worker will be assigned.
_ENDED = frozenset({"cancelled", "closed", "completed", "classificationFailed", "scheduleFailed"})
#: Queue and worker ids go into one path segment.
_ROUTER_ID = re.compile(r"^[A-Za-z0-9._~:-]{1,200}$")
_IDENTITY = re.compile(r"^(\+[1-9][0-9]{6,14}|8:(acs|orgid):\S{1,200})$")
_JOB_IDS = uuid.UUID("0e1d6c1a-9a57-4f7e-8a61-5f3b8c2d7a40")

Found = TransferTarget | TransferOutcome
#: Why a wait ended without a worker, where Baton then cancels the job itself.
TIMED_OUT = TransferOutcome(status="failed", detail="timed out")
CALLER_GONE = TransferOutcome(status="failed", detail="caller gone")


def job_id_for(request: TransferRequest) -> str:
    """One job per call and ticket, whatever the attempt."""
    return "baton-" + str(uuid.uuid5(_JOB_IDS, f"{request.call_id}/{request.ticket_id}"))


async def wait_for_worker(
    resource: AcsResource, request: TransferRequest, connection_id: str
) -> Found:
    """Queue the call as a Job Router job and wait for a worker: the worker's participant to
    transfer to, or a `failed` outcome. Raises (retryable) while ACS is unavailable."""
    queue_id = request.target.address
    if not _ROUTER_ID.match(queue_id):
        return _failed("the queue id is not a Job Router id")
    if not request.queue_wait_seconds:
        return _failed("this call does not wait for a queue (recorded before Job Router)")
    router = _Router(resource, job_id_for(request))
    answer = await router.send("PATCH", router.job_path, _job(request, queue_id, connection_id))
    if answer.status not in (200, 201):
        return _refused(answer)
    log.info("call queued on job router", job_id=router.job_id, queue_id=queue_id)
    deadline = _first_attempt() + request.queue_wait_seconds
    try:
        worker_id = await _assigned_worker(router, deadline, connection_id)
    except asyncio.CancelledError:
        # The workflow gave up on the transfer (the caller hung up): no worker should
        # be offered this caller any more.
        await asyncio.shield(router.cancel("BatonCallEnded"))
        raise
    if worker_id is TIMED_OUT:
        await router.cancel(TIMEOUT_DISPOSITION)
        return _failed(f"nobody accepted the job in {request.queue_wait_seconds} s")
    if worker_id is CALLER_GONE:
        await router.cancel(CALLER_LEFT_DISPOSITION)
        return _failed(CALLER_LEFT).model_copy(update={"caller_left": True})
    if isinstance(worker_id, TransferOutcome):
        return worker_id
    answer = await router.send("GET", f"/routing/workers/{worker_id}")
    if answer.status != 200:
        return _refused(answer)
    address = _participant(answer.body, worker_id)
    if address is None:
        return _failed(f"worker {worker_id} names no {PARTICIPANT_KEY} to transfer to")
    log.info("job router worker accepted the call", job_id=router.job_id, worker_id=worker_id)
    kind = "phone" if address.startswith("+") else "sip"
    return TransferTarget(kind=kind, address=address, label=request.target.label)


async def _assigned_worker(
    router: _Router, deadline: float, connection_id: str
) -> str | TransferOutcome:
    """The id of the worker the job was assigned to, or why none will come (`TIMED_OUT`:
    nobody accepted it before `deadline`; `CALLER_GONE`: the caller hung up)."""
    polls = 0
    while True:
        polls += 1
        if polls % CALLER_CHECK_POLLS == 0 and await router.caller_gone(connection_id):
            return CALLER_GONE
        answer = await router.send("GET", router.job_path)
        if answer.status != 200:
            return _refused(answer)
        status = str(answer.body.get("status", ""))
        if status == "assigned":
            worker = _newest_worker(answer.body.get("assignments"))
            if worker is not None:
                return worker
        if status in _ENDED:
            disposition = answer.body.get("dispositionCode")
            detail = f"the job was {status}"
            if isinstance(disposition, str) and disposition:
                detail += f" ({disposition[:80]})"
            return _failed(detail)
        remaining = deadline - time.time()
        if remaining <= 0:
            return TIMED_OUT
        if activity.in_activity():
            activity.heartbeat(status)
        await asyncio.sleep(min(POLL_SECONDS, remaining))


class _Router:
    """Signed requests to one resource's Job Router, about one job."""

    def __init__(self, resource: AcsResource, job_id: str) -> None:
        self.resource = resource
        self.job_id = job_id
        self.job_path = f"/routing/jobs/{job_id}"

    async def send(
        self,
        method: str,
        path: str,
        payload: dict[str, Any] | None = None,
        api_version: str = JOB_ROUTER_API_VERSION,
    ) -> PlatformAnswer:
        query = f"{path}?api-version={api_version}"
        body = b"" if payload is None else json.dumps(payload).encode()
        content_type = "application/merge-patch+json" if method == "PATCH" else None
        if method == "POST":
            content_type = "application/json"
        headers = self.resource.signed_headers(method, query, body, content_type)
        return await post(
            "acs", self.resource.endpoint + query, headers=headers, data=body, method=method
        )

    async def caller_gone(self, connection_id: str) -> bool:
        """Whether the call connection has ended (Call Automation's "get call connection");
        an answer that says neither (an error) counts as the caller still there."""
        path = f"/calling/callConnections/{connection_id}"
        answer = await self.send("GET", path, api_version=CALL_AUTOMATION_API_VERSION)
        if answer.status == 404:
            return True
        return answer.status == 200 and answer.body.get("callConnectionState") == "disconnected"

    async def cancel(self, disposition: str) -> None:
        """Withdraw the job (best effort: Job Router's own exception policy is the backstop)."""
        payload = {"note": "Baton stopped waiting for a person", "dispositionCode": disposition}
        try:
            answer = await self.send("POST", f"{self.job_path}:cancel", payload)
        except Exception as error:  # the caller is told either way
            log.warning("job router job not cancelled", job_id=self.job_id, error=str(error))
            return
        log.info("job router job cancelled", job_id=self.job_id, status=answer.status)


def _job(request: TransferRequest, queue_id: str, connection_id: str) -> dict[str, Any]:
    return {
        "channelId": CHANNEL_ID,
        "queueId": queue_id,
        "priority": PRIORITY,
        "channelReference": connection_id,
        # Labels are what a worker's application and Job Router's rules see: ids, never
        # caller data (the ticket holds that, and the sink serves it by id).
        "labels": {
            "callConnectionId": connection_id,
            "batonTicketId": request.ticket_id,
            "escalationReason": request.reason,
        },
    }


def _newest_worker(assignments: object) -> str | None:
    if not isinstance(assignments, dict):
        return None
    entries = [a for a in assignments.values() if isinstance(a, dict) and a.get("workerId")]
    if not entries:
        return None
    newest = max(entries, key=lambda a: str(a.get("assignedAt", "")))
    worker = str(newest["workerId"])
    return worker if _ROUTER_ID.match(worker) else None


def _participant(worker: dict[str, Any], worker_id: str) -> str | None:
    """Where the worker's person answers (see the module docstring), or None."""
    for attributes in (worker.get("tags"), worker.get("labels")):
        if isinstance(attributes, dict):
            value = attributes.get(PARTICIPANT_KEY)
            if isinstance(value, str) and _IDENTITY.match(value):
                return value
    return worker_id if _IDENTITY.match(worker_id) else None


def _first_attempt() -> float:
    """When the transfer was first attempted (its schedule time survives retries)."""
    if not activity.in_activity():
        return time.time()
    return activity.info().scheduled_time.timestamp()


def _failed(detail: str) -> TransferOutcome:
    log.info("job router transfer failed", why=detail)
    return TransferOutcome(status="failed", detail=f"acs job router: {detail}")


def _refused(answer: PlatformAnswer) -> TransferOutcome:
    problem = answer.body.get("error")
    code = problem.get("code") if isinstance(problem, dict) else None
    return refused_or_retry("acs", answer, code)
