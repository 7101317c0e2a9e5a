"""The `start_transfer` activity's input (apart from contracts.transfer, which the registry
models import, so the ticket's models do not import the registry's in a circle)."""

from __future__ import annotations

from contracts._base import Payload
from contracts.escalation import EscalationTicket
from contracts.transfer import TransferRequest


class TransferTask(Payload):
    """The request, and the ticket a console shows the person who takes the call (carried
    along: a worker may send tickets to a webhook only, with no store to read them back)."""

    request: TransferRequest
    ticket: EscalationTicket
