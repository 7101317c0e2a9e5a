"""Handlers of insurance.yaml: policies and claims."""

from __future__ import annotations

import math
from typing import Any

from registries.demo_data import caller_or_error, money, next_id, now_iso, run_once
from registries.tool_runtime import ToolContext

_STATUS_TEXT = {
    "submitted": "received and waiting for an adjuster to be assigned",
    "under_review": "with an adjuster, who may call to arrange an inspection",
    "approved": "approved; payment is issued within five business days",
    "denied": "denied; the caller can appeal within sixty days",
    "paid": "paid",
}


def _policy_dict(row: Any) -> dict[str, Any]:
    return {
        "policy_id": row["id"],
        "type": row["type"],
        "status": row["status"],
        "premium_cents": row["premium_cents"],
        "premium": money(row["premium_cents"]) + " per month",
        "deductible_cents": row["deductible_cents"],
        "deductible": money(row["deductible_cents"]),
        "coverage_cents": row["coverage_cents"],
        "coverage": money(row["coverage_cents"]),
    }


def _claim_dict(row: Any) -> dict[str, Any]:
    return {
        "claim_id": row["id"],
        "policy_id": row["policy_id"],
        "filed": row["ts"],
        "description": row["description"],
        "amount_cents": row["amount_cents"],
        "amount": money(row["amount_cents"]),
        "status": row["status"],
        "status_detail": _STATUS_TEXT.get(row["status"], row["status"]),
    }


def _normalize_id(text: str) -> str:
    return text.strip().upper().replace(" ", "-")


def list_policies(ctx: ToolContext) -> dict[str, Any]:
    """All of the caller's policies."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    rows = ctx.db.execute(
        "SELECT * FROM policies WHERE customer_id = ? ORDER BY id", (caller["id"],)
    ).fetchall()
    if not rows:
        return {"policies": [], "message": "The caller has no insurance policies with us."}
    return {"policies": [_policy_dict(r) for r in rows]}


def get_policy(ctx: ToolContext, *, policy_id: str) -> dict[str, Any]:
    """One policy of the caller with its claims."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    pid = _normalize_id(policy_id)
    row = ctx.db.execute(
        "SELECT * FROM policies WHERE id = ? AND customer_id = ?", (pid, caller["id"])
    ).fetchone()
    if row is None:
        return {"error": f"No policy {pid} on this caller's file. Use list_policies to check."}
    claims = ctx.db.execute(
        "SELECT * FROM claims WHERE policy_id = ? ORDER BY ts DESC", (pid,)
    ).fetchall()
    return {**_policy_dict(row), "claims": [_claim_dict(c) for c in claims]}


def file_claim(
    ctx: ToolContext, *, policy_id: str, description: str, amount: float
) -> dict[str, Any]:
    """File a claim on an active policy (applied once per tool call)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    if not math.isfinite(amount) or amount <= 0:
        return {"error": "The claim amount must be a positive number of dollars."}
    if not description.strip():
        return {"error": "Describe what happened before filing the claim."}
    client_id = caller["id"]
    pid = _normalize_id(policy_id)
    cents = round(amount * 100)

    def effect() -> dict[str, Any]:
        policy = ctx.db.execute(
            "SELECT * FROM policies WHERE id = ? AND customer_id = ?", (pid, client_id)
        ).fetchone()
        if policy is None:
            return {"error": f"No policy {pid} on this caller's file."}
        if policy["status"] != "active":
            return {"error": f"Policy {pid} is {policy['status']}; claims need an active policy."}
        claim_id = next_id(ctx.db, "CLM", width=4)
        ctx.db.execute(
            "INSERT INTO claims VALUES (?, ?, ?, ?, ?, ?, 'submitted')",
            (claim_id, pid, client_id, now_iso(), description.strip(), cents),
        )
        payout = max(0, min(cents, policy["coverage_cents"]) - policy["deductible_cents"])
        return {
            "claim_id": claim_id,
            "policy_id": pid,
            "status": "submitted",
            "amount_cents": cents,
            "amount": money(cents),
            "deductible": money(policy["deductible_cents"]),
            "estimated_payout_cents": payout,
            "estimated_payout": money(payout),
            "next_steps": "An adjuster will contact the caller within two business days. "
            "The payout estimate is not final until the claim is reviewed.",
        }

    return run_once(ctx.db, ctx.idempotency_key, "file_claim", effect)


def get_claim_status(ctx: ToolContext, *, claim_id: str) -> dict[str, Any]:
    """Status of one of the caller's claims."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    cid = _normalize_id(claim_id)
    row = ctx.db.execute(
        "SELECT * FROM claims WHERE id = ? AND customer_id = ?", (cid, caller["id"])
    ).fetchone()
    if row is None:
        return {"error": f"No claim {cid} on this caller's file. Ask them to read the number."}
    return _claim_dict(row)
