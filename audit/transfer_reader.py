"""The transfer to a person after an escalation, as the timeline shows it: the request
(`start_transfer`'s input), the platform's answer, the `transfer_settled` signal (from the
console, or the gateway on Twilio's or ACS's report), and how it ended (the call's result),
each a `transfer` item told apart by `details.stage`."""

from __future__ import annotations

from datetime import datetime

from audit.reading import Reading
from contracts.transcript import TransferItem
from contracts.transfer import TransferOutcome, TransferSettled
from contracts.transfer_task import TransferTask


class TransferReader:
    def __init__(self, reading: Reading) -> None:
        self.t = reading

    def on_request(self, task: TransferTask, at: datetime) -> None:
        request, target = task.request, task.request.target
        name = target.label or target.address
        self.t.add(
            at,
            "system",
            "transfer",
            f"transfer to {name} ({target.kind} {target.address}) for ticket {request.ticket_id}",
            details={
                "stage": "requested",
                "target_kind": target.kind,
                "target_address": target.address,
                "target_label": target.label,
                "ticket_id": request.ticket_id,
                "channel": request.channel,
            },
        )

    def on_platform(self, outcome: TransferOutcome, at: datetime) -> None:
        detail = f": {outcome.detail}" if outcome.detail else ""
        self.t.add(
            at,
            "system",
            "transfer",
            f"the platform answered {outcome.status}{detail}",
            details={"stage": "platform", "status": outcome.status, "detail": outcome.detail},
        )

    def on_settled(self, settled: TransferSettled, at: datetime) -> None:
        if settled.taken:
            text = f"a person took the call ({settled.taken_by or 'unnamed'})"
        else:
            # From the console, or the gateway passing on Twilio's or ACS's report.
            text = f"nobody took the call: {settled.detail or 'declined'}"
        self.t.add(
            at,
            settled.taken_by or "system",
            "transfer",
            text,
            details={"stage": "settled", "taken": settled.taken, "taken_by": settled.taken_by},
        )

    def on_outcome(self, item: TransferItem, at: datetime) -> None:
        detail = f": {item.detail}" if item.detail else ""
        self.t.add(
            at,
            "system",
            "transfer",
            f"transfer {item.outcome}{detail}",
            details={
                "stage": "outcome",
                "outcome": item.outcome,
                "ticket_id": item.ticket_id,
                "taken_by": item.taken_by,
            },
        )
