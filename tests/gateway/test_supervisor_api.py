"""`POST /api/calls/{call_id}/supervise` on a real gateway (loopback, operator key) in front of
real workers: a platform's supervisor tool transfers a call and changes its routes; a wrong key,
bad JSON and a refused change get clear errors; the reason, which may name the caller, is never
logged."""

from __future__ import annotations

import uuid
from typing import Any

import aiohttp
from structlog.testing import capture_logs

from baton.call_client import CallSession
from contracts.calls import CallInput
from tests.gateway.conftest import GatewayStack
from tests.workflow.conftest import PROFILE, started

#: A reason with a caller's data in it: it goes to the call's (encrypted) history only.
REASON = "caller Alex Morgan, SSN 123-45-6789, wants the fraud desk"


async def post(stack: GatewayStack, call_id: str, body: Any, key: str | None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    url = f"http://{stack.base}/api/calls/{call_id}/supervise"
    data = body if isinstance(body, str) else None
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            url, json=None if data is not None else body, data=data, headers=headers
        ) as response,
    ):
        return response.status, await response.json()


async def test_a_supervisor_tool_transfers_and_changes_routes_over_http(
    gateway_stack: GatewayStack,
) -> None:
    stack = gateway_stack
    call = CallInput(call_id=f"s-{uuid.uuid4().hex[:10]}", caller_profile=PROFILE)
    session = CallSession(stack.client, call)
    await started(session)
    key = stack.operator_key

    for wrong in (None, "not-the-key"):
        status, body = await post(stack, call.call_id, {"transfer": "FraudAgent"}, wrong)
        assert status == 401 and "operator key" in body["error"]
    assert (await session.summary()).active_agent == "Concierge"

    status, body = await post(stack, call.call_id, "{not json", key)
    assert (status, body["error"]) == (400, "the body is not JSON")
    status, body = await post(stack, call.call_id, {"add_route": "Concierge:Nobody"}, key)
    assert status == 400 and body["error"].startswith("unknown agent 'Nobody'")
    status, body = await post(stack, call.call_id, {"transfer": "A", "hang_up": True}, key)
    assert status == 400 and "exactly one action" in body["error"]

    with capture_logs() as logs:
        status, body = await post(
            stack, call.call_id, {"transfer": "FraudAgent", "reason": REASON}, key
        )
    assert (status, body["message"]) == (200, "transferred to FraudAgent"), body
    assert (await session.summary()).active_agent == "FraudAgent"
    assert REASON not in repr(logs) and "123-45-6789" not in repr(logs)
    assert any(entry.get("action") == "transfer" for entry in logs)

    status, body = await post(
        stack, call.call_id, {"add_route": "FraudAgent:ComplianceDesk", "supervisor": "sam"}, key
    )
    assert status == 200, body
    added = [r for r in body["routes"] if r["origin"] == "added"]
    assert [(r["from_agent"], r["to_agent"]) for r in added] == [("FraudAgent", "ComplianceDesk")]
    items = await session.transcript()
    supervisor = [i for i in items if i["type"] == "supervisor_action"]
    assert [(i["action"], i["target"], i["reason"]) for i in supervisor] == [
        ("transfer", "FraudAgent", REASON)
    ]
    (change,) = [i["change"] for i in items if i["type"] == "route_change"]
    assert change["supervisor"] == "sam"

    status, body = await post(stack, call.call_id, {"hang_up": True}, key)
    assert (status, body["message"]) == (200, "the call ended (hung_up)")
    status, body = await post(stack, call.call_id, {"transfer": "Concierge"}, key)
    assert status == 400 and body["error"] == "the call has ended (hung_up)"
