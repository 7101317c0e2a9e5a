"""Azure Communication Services' Job Router on 127.0.0.1, beside the Call Automation fake.

    async with FakeAcsJobRouter(connections=[connection_id], queues=["banking-desk"]) as acs:
        env = {"ACS_CONNECTION_STRING": acs.connection_string}
        job = await acs.queued()                  # a job waits in a queue
        acs.assign(job["id"], "worker-7")         # a worker accepted its offer

It serves the data-plane routes Baton uses, at api-version 2023-11-01, with the shapes of Job
Router's REST API (RouterJob, RouterJobAssignment, RouterWorker) and the same HMAC checks as
the Call Automation routes of `FakeAcsRest` (401 when the signature does not hold):

* `PATCH /routing/jobs/{jobId}` (`application/merge-patch+json`): creates the job (201) or
  merges into it (200) and answers the job. `channelId` and `queueId` are required strings on
  create, the queue must exist (400 `QueueNotFound` otherwise, as no queue can route it),
  `priority` is an integer from -100 to 100, `labels` values are primitives. A new job is
  `queued` with `enqueuedAt` and no assignments.
* `GET /routing/jobs/{jobId}`: the job (404 `NotFound` for an unknown id).
* `POST /routing/jobs/{jobId}:cancel` (`{"note", "dispositionCode"}`): the job becomes
  `cancelled` with that disposition code; answers `{}` (200).
* `GET /routing/workers/{workerId}`: the worker (`id`, `state`, `queues`, `capacity`,
  `labels`, `tags`, `channels`, `availableForOffers`); 404 for an unknown id.
* Call Automation's `GET /calling/callConnections/{callConnectionId}?api-version=2023-10-15`:
  the call connection's properties (`callConnectionId`, `serverCallId`, `targets`,
  `callConnectionState: connected`) while it is in `connections`, 404 `NotFound` once the
  test took it out (the caller hung up).

A test plays the other side: `assign` (a worker accepted the job's offer: the job is
`assigned`, with an assignment naming the worker), `cancel_by_router` (an exception policy or
a supervisor cancelled it).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

from tests.fakes.acs_rest import FakeAcsRest, acs_error

JOB_ROUTER_API_VERSION = "2023-11-01"
CALL_AUTOMATION_API_VERSION = "2023-10-15"
JOB_FIELDS = frozenset(
    {"channelId", "queueId", "priority", "channelReference", "labels", "tags", "notes"}
)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class FakeAcsJobRouter(FakeAcsRest):
    """Call Automation's transfer and Job Router's jobs and workers, on one fake resource."""

    def __init__(
        self,
        *,
        queues: Iterable[str] = (),
        workers: dict[str, dict[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.queues = set(queues)
        #: Workers by id: their labels and tags (`transferTarget` names where they answer).
        self.workers = dict(workers or {})
        self.jobs: dict[str, dict[str, Any]] = {}
        #: Every Job Router request: (method, path, status answered).
        self.router_requests: list[tuple[str, str, int]] = []
        #: Bodies of the cancel requests, by job id.
        self.cancels: dict[str, dict[str, Any]] = {}
        self._queued = asyncio.Event()

    def routes(self, app: web.Application) -> None:
        super().routes(app)
        app.router.add_route("PATCH", "/routing/jobs/{job_id}", self._routed(self._upsert))
        app.router.add_get("/routing/jobs/{job_id}", self._routed(self._get_job))
        app.router.add_post("/routing/jobs/{action}", self._routed(self._cancel))
        app.router.add_get("/routing/workers/{worker_id}", self._routed(self._get_worker))
        app.router.add_get(
            "/calling/callConnections/{connection_id}",
            self._routed(self._get_connection, CALL_AUTOMATION_API_VERSION),
        )

    def _routed(self, handler: Any, api_version: str = JOB_ROUTER_API_VERSION) -> Any:
        async def checked(request: web.Request) -> web.Response:
            body = await request.read()
            refusal = self._check_auth(request, body)
            if refusal is not None:
                response = acs_error(401, "Unauthorized", f"Denied: {refusal}.")
            elif request.query.get("api-version") != api_version:
                response = acs_error(400, "InvalidApiVersion", "The api-version is not supported.")
            else:
                response = await handler(request, body)
            self.router_requests.append((request.method, request.path, response.status))
            return response

        return checked

    # -- what the test plays ---------------------------------------------------------------

    async def queued(self, timeout: float = 60.0) -> dict[str, Any]:
        """The first job to reach a queue, once one has."""
        await asyncio.wait_for(self._queued.wait(), timeout)
        return next(iter(self.jobs.values()))

    def assign(self, job_id: str, worker_id: str) -> None:
        """The worker accepted the job's offer (RouterWorkerOfferAccepted)."""
        job = self.jobs[job_id]
        assignment_id = str(uuid.uuid4())
        job["status"] = "assigned"
        job["assignments"][assignment_id] = {
            "assignmentId": assignment_id,
            "workerId": worker_id,
            "assignedAt": _now(),
        }
        job["etag"] = str(uuid.uuid4())

    def cancel_by_router(self, job_id: str, disposition: str) -> None:
        """An exception policy (or a supervisor) cancelled the job."""
        job = self.jobs[job_id]
        job["status"], job["dispositionCode"] = "cancelled", disposition

    # -- routes ----------------------------------------------------------------------------

    async def _upsert(self, request: web.Request, body: bytes) -> web.Response:
        if request.content_type != "application/merge-patch+json":
            return acs_error(415, "UnsupportedMediaType", "Use application/merge-patch+json.")
        try:
            patch = json.loads(body)
            if not isinstance(patch, dict):
                raise ValueError("the body must be a RouterJob object")
            _check_job_patch(patch)
        except ValueError as error:
            return acs_error(400, "BadRequest", f"Invalid request: {error}")
        job_id = request.match_info["job_id"]
        job = self.jobs.get(job_id)
        created = job is None
        if job is None:
            if not isinstance(patch.get("channelId"), str) or not isinstance(
                patch.get("queueId"), str
            ):
                return acs_error(400, "BadRequest", "channelId and queueId are required.")
            job = {"id": job_id, "status": "queued", "enqueuedAt": _now(), "assignments": {}}
        queue = patch.get("queueId", job.get("queueId"))
        if queue not in self.queues:
            return acs_error(400, "QueueNotFound", "The queue does not exist.")
        for name, value in patch.items():
            if isinstance(value, dict) and isinstance(job.get(name), dict):
                job[name] = {**job[name], **value}  # merge-patch merges objects
            else:
                job[name] = value
        job["etag"] = str(uuid.uuid4())
        self.jobs[job_id] = job
        self._queued.set()
        return web.json_response(job, status=201 if created else 200)

    async def _get_job(self, request: web.Request, body: bytes) -> web.Response:
        job = self.jobs.get(request.match_info["job_id"])
        if job is None:
            return acs_error(404, "NotFound", "Job not found.")
        return web.json_response(job)

    async def _cancel(self, request: web.Request, body: bytes) -> web.Response:
        job_id, sep, action = request.match_info["action"].rpartition(":")
        if not sep or action != "cancel":
            return acs_error(404, "NotFound", "No such action.")
        job = self.jobs.get(job_id)
        if job is None:
            return acs_error(404, "NotFound", "Job not found.")
        options = json.loads(body) if body else {}
        self.cancels[job_id] = options
        job["status"] = "cancelled"
        job["dispositionCode"] = options.get("dispositionCode")
        return web.json_response({})

    async def _get_connection(self, request: web.Request, body: bytes) -> web.Response:
        connection_id = request.match_info["connection_id"]
        if connection_id not in self.connections:
            return acs_error(404, "NotFound", "Call connection not found.")
        return web.json_response(
            {
                "callConnectionId": connection_id,
                "serverCallId": "fake-server-call",
                "targets": [],
                "callConnectionState": "connected",
            }
        )

    async def _get_worker(self, request: web.Request, body: bytes) -> web.Response:
        worker_id = request.match_info["worker_id"]
        worker = self.workers.get(worker_id)
        if worker is None:
            return acs_error(404, "NotFound", "Worker not found.")
        return web.json_response(
            {
                "etag": "w1",
                "id": worker_id,
                "state": "active",
                "queues": sorted(self.queues),
                "capacity": 10,
                "labels": worker.get("labels", {}),
                "tags": worker.get("tags", {}),
                "channels": [{"channelId": "voice", "capacityCostPerJob": 10}],
                "availableForOffers": True,
            }
        )


def _check_job_patch(patch: dict[str, Any]) -> None:
    unknown = set(patch) - JOB_FIELDS
    if unknown:
        raise ValueError(f"unknown or read-only fields {sorted(unknown)}")
    priority = patch.get("priority", 1)
    if not isinstance(priority, int) or not -100 <= priority <= 100:
        raise ValueError("priority must be an integer from -100 to 100")
    for name in ("labels", "tags"):
        values = patch.get(name, {})
        if not isinstance(values, dict) or not all(
            isinstance(v, str | int | float | bool) for v in values.values()
        ):
            raise ValueError(f"{name} values must be primitives")
