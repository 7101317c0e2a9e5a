"""`POST /api/calls/{call_id}/supervise`: a contact-center platform's supervisor tool acts on a
live call through the gateway.

The body names one action, as `baton call supervise` does: ``{"transfer": "FraudAgent"}``,
``{"add_route": "Concierge:ComplianceDesk"}``, ``{"remove_route": "A:B"}``,
``{"retarget": "A:B:C"}`` or ``{"hang_up": true}``, with an optional ``reason`` and
``supervisor``. It is served where ``/api/calls`` is and needs the same operator key
(``Authorization: Bearer``). 200 answers with what the call did (and its routes after a route
change); 400 says why the body or the call refused it. The reason is never logged.
"""

from __future__ import annotations

import structlog
from aiohttp import web
from temporalio.client import Client

from media_gateway.console_routes import operator_refusal
from media_gateway.console_routes import refusal as json_error
from runtime.supervision import SupervisionError, parse_action, supervise

log = structlog.get_logger("baton.gateway")

PATH = "/api/calls/{call_id}/supervise"
MAX_CALL_ID_CHARS = 200


class SupervisorApi:
    """The route's handler, bound to the gateway's Temporal client and operator key."""

    def __init__(self, client: Client, operator_key: str | None) -> None:
        self.client = client
        self.operator_key = operator_key

    def add_to(self, app: web.Application) -> None:
        app.router.add_post(PATH, self.supervise)

    async def supervise(self, request: web.Request) -> web.Response:
        refused = operator_refusal(request, self.operator_key)
        if refused is not None:
            return refused
        call_id = request.match_info["call_id"]
        if len(call_id) > MAX_CALL_ID_CHARS:
            return json_error(400, "the call id is too long")
        try:
            body = await request.json() if request.can_read_body else None
        except ValueError:
            return json_error(400, "the body is not JSON")
        if not isinstance(body, dict):
            return json_error(400, "the body must be a JSON object naming one action")
        try:
            action = parse_action(
                body, body.get("reason", ""), body.get("supervisor", "supervisor")
            )
            outcome = await supervise(self.client, call_id, action)
        except SupervisionError as error:
            log.info("supervisor action refused", call_id=call_id)
            return json_error(400, str(error))
        log.info("supervisor action", call_id=call_id, action=action.kind)
        return web.json_response(outcome.as_json())
