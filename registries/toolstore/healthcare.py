"""Handlers of healthcare.yaml: appointments, clinic billing and keyword triage."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from registries.demo_data import (
    DEMO_TODAY,
    caller_or_error,
    money,
    next_id,
    run_once,
)
from registries.tool_runtime import ToolContext

_DISCLAIMER = (
    "This is an automated check, not medical advice or a diagnosis. When in doubt, "
    "or if symptoms get worse, call emergency services or see a clinician."
)
# Checked in order; the first level with a matching phrase wins.
_TRIAGE: list[tuple[str, tuple[str, ...], str]] = [
    (
        "emergency",
        (
            "chest pain",
            "chest pressure",
            "can't breathe",
            "cannot breathe",
            "trouble breathing",
            "difficulty breathing",
            "short of breath",
            "shortness of breath",
            "stroke",
            "face drooping",
            "slurred speech",
            "unconscious",
            "passed out",
            "fainted",
            "severe bleeding",
            "won't stop bleeding",
            "seizure",
            "suicid",
            "overdose",
            "throat swelling",
            "anaphylaxis",
            "coughing up blood",
            "vomiting blood",
        ),
        "Call emergency services (911) now, or go to the nearest emergency room.",
    ),
    (
        "urgent",
        (
            "high fever",
            "fever of 103",
            "fever of 104",
            "broken",
            "fracture",
            "deep cut",
            "stitches",
            "severe pain",
            "dehydrat",
            "burn",
            "can't keep",
            "infection",
            "head injury",
            "blood in",
        ),
        "Get care today: an urgent care clinic or a same-day appointment.",
    ),
    (
        "routine",
        (
            "cough",
            "cold",
            "sore throat",
            "runny nose",
            "rash",
            "headache",
            "fever",
            "earache",
            "back pain",
            "allergies",
            "tired",
            "fatigue",
            "checkup",
            "refill",
        ),
        "Book a regular appointment; rest and fluids may help until then.",
    ),
]


def _spoken(ts: str) -> str:
    when = datetime.fromisoformat(ts)
    hour = when.hour % 12 or 12
    return f"{when:%A, %B} {when.day} at {hour}:{when:%M} {'AM' if when.hour < 12 else 'PM'}"


def _slot(row: Any) -> dict[str, Any]:
    return {
        "appointment_id": row["id"],
        "provider": row["provider"],
        "specialty": row["specialty"],
        "time": row["ts"],
        "spoken_time": _spoken(row["ts"]),
        "status": row["status"],
    }


def _appointment_id(text: str) -> str:
    return text.strip().upper().replace(" ", "-")


def find_available_appointments(
    ctx: ToolContext, *, specialty: str | None = None
) -> dict[str, Any]:
    """Up to eight open slots, optionally filtered by specialty (no caller needed)."""
    sql = "SELECT * FROM appointments WHERE status = 'available' AND ts >= ?"
    params: list[Any] = [DEMO_TODAY.isoformat(timespec="seconds")]
    wanted = " ".join((specialty or "").lower().split())
    if wanted:
        sql += " AND specialty = ?"
        params.append(wanted)
    rows = ctx.db.execute(sql + " ORDER BY ts, id LIMIT 8", params).fetchall()
    if not rows:
        known = [
            r[0]
            for r in ctx.db.execute(
                "SELECT DISTINCT specialty FROM appointments ORDER BY specialty"
            )
        ]
        return {
            "slots": [],
            "message": f"No open {wanted or ''} slots. "
            f"Specialties we schedule: {', '.join(known)}.",
        }
    return {"slots": [_slot(r) for r in rows]}


def book_appointment(ctx: ToolContext, *, appointment_id: str) -> dict[str, Any]:
    """Book an open slot for the caller (applied once per tool call)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    client_id = caller["id"]
    apt_id = _appointment_id(appointment_id)

    def effect() -> dict[str, Any]:
        row = ctx.db.execute("SELECT * FROM appointments WHERE id = ?", (apt_id,)).fetchone()
        if row is None:
            return {"error": f"There is no appointment {apt_id}. Search for open slots again."}
        if row["status"] == "booked" and row["customer_id"] == client_id:
            return {"already_booked": True, **_slot(row)}
        if row["status"] != "available":
            return {"error": f"{apt_id} is no longer available. Offer another slot."}
        ctx.db.execute(
            "UPDATE appointments SET status = 'booked', customer_id = ? WHERE id = ?",
            (client_id, apt_id),
        )
        return {
            "booked": True,
            **_slot(row),
            "status": "booked",
            "message": "Please arrive ten minutes early and bring a photo ID.",
        }

    return run_once(ctx.db, ctx.idempotency_key, "book_appointment", effect)


def cancel_appointment(ctx: ToolContext, *, appointment_id: str) -> dict[str, Any]:
    """Cancel one of the caller's upcoming appointments (applied once per tool call)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    client_id = caller["id"]
    apt_id = _appointment_id(appointment_id)

    def effect() -> dict[str, Any]:
        row = ctx.db.execute(
            "SELECT * FROM appointments WHERE id = ? AND customer_id = ?", (apt_id, client_id)
        ).fetchone()
        if row is None:
            return {"error": f"The caller has no appointment {apt_id}."}
        if row["status"] == "cancelled":
            return {"already_cancelled": True, **_slot(row)}
        if row["ts"] < DEMO_TODAY.isoformat(timespec="seconds"):
            return {"error": f"{apt_id} on {_spoken(row['ts'])} has already taken place."}
        ctx.db.execute("UPDATE appointments SET status = 'cancelled' WHERE id = ?", (apt_id,))
        return {"cancelled": True, **_slot(row), "status": "cancelled"}

    return run_once(ctx.db, ctx.idempotency_key, "cancel_appointment", effect)


def get_billing_balance(ctx: ToolContext) -> dict[str, Any]:
    """The caller's invoices with the open total."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    rows = ctx.db.execute(
        "SELECT * FROM invoices WHERE customer_id = ? ORDER BY ts DESC", (caller["id"],)
    ).fetchall()
    invoices = [
        {
            "invoice_id": r["id"],
            "date": r["ts"][:10],
            "description": r["description"],
            "amount_cents": r["amount_cents"],
            "amount": money(r["amount_cents"]),
            "status": r["status"],
        }
        for r in rows
    ]
    due = sum(r["amount_cents"] for r in rows if r["status"] == "open")
    return {"balance_due_cents": due, "balance_due": money(due), "invoices": invoices}


def pay_invoice(ctx: ToolContext, *, invoice_id: str) -> dict[str, Any]:
    """Pay an open invoice in full (applied once per tool call)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    client_id = caller["id"]
    inv_id = _appointment_id(invoice_id)

    def effect() -> dict[str, Any]:
        row = ctx.db.execute(
            "SELECT * FROM invoices WHERE id = ? AND customer_id = ?", (inv_id, client_id)
        ).fetchone()
        if row is None:
            return {"error": f"No invoice {inv_id} on this caller's account."}
        amount = {"amount_cents": row["amount_cents"], "amount": money(row["amount_cents"])}
        if row["status"] == "paid":
            return {"already_paid": True, "invoice_id": inv_id, **amount}
        ctx.db.execute("UPDATE invoices SET status = 'paid' WHERE id = ?", (inv_id,))
        return {
            "paid": True,
            "invoice_id": inv_id,
            **amount,
            "confirmation": next_id(ctx.db, "PAY"),
            "message": "Paid with the card on file; a receipt goes to the email on file.",
        }

    return run_once(ctx.db, ctx.idempotency_key, "pay_invoice", effect)


def triage_symptoms(ctx: ToolContext, *, symptoms: str) -> dict[str, Any]:
    """Keyword-based urgency; never a diagnosis."""
    text = re.sub(r"\s+", " ", symptoms.lower().replace("’", "'"))
    for level, phrases, advice in _TRIAGE:
        matched = [phrase for phrase in phrases if phrase in text]
        if matched:
            return {
                "urgency": level,
                "matched": matched,
                "advice": advice,
                "disclaimer": _DISCLAIMER,
            }
    return {
        "urgency": "unclear",
        "matched": [],
        "advice": "Ask a few more questions, or offer a nurse call-back or an appointment.",
        "disclaimer": _DISCLAIMER,
    }
