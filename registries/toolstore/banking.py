"""Handlers of banking.yaml: identity, balances, cards, fraud, investments and compliance."""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from registries.demo_data import caller_or_error, money, next_id, now_iso, run_once
from registries.tool_runtime import ToolContext

_DATE_FORMATS = "%Y-%m-%d|%m/%d/%Y|%m-%d-%Y|%B %d, %Y|%B %d %Y|%d %B %Y|%b %d, %Y|%b %d %Y|%d %b %Y"
_TIER_RANK = {"standard": 0, "gold": 1, "private": 2}
_HIGH_RISK = {"electronics", "gift cards", "crypto", "wire transfer", "jewelry"}
# How well each card product serves each priority (absent = not a fit), and why.
_FIT_TABLE = """
cashback     | P-CASHPLUS | 5 | highest cash back on groceries and gas
cashback     | P-CASH     | 4 | flat cash back on everything with no annual fee
cashback     | P-PRIVATE  | 3 | 3x points on every purchase
cashback     | P-SECURED  | 1 | some cash back while building credit
travel       | P-PRIVATE  | 5 | global lounge access and concierge
travel       | P-VOYAGER  | 5 | 5x points on flights plus a yearly travel credit
travel       | P-TRAVEL   | 4 | travel points and no foreign transaction fees
travel       | P-CASH     | 1 | cash back you can spend on trips
low_fee      | P-CASH     | 5 | no annual fee and still earns cash back
low_fee      | P-SIMPLE   | 4 | no annual fee and a low interest rate
low_fee      | P-SECURED  | 3 | no annual fee
low_fee      | P-TRAVEL   | 1 | modest fee for a rewards card
build_credit | P-SECURED  | 5 | designed for building credit, reports to all bureaus
build_credit | P-SIMPLE   | 3 | low rate and no fee keep costs down while you build
build_credit | P-CASH     | 2 | a no-fee next step once you have some history
"""
_FIT: dict[str, dict[str, tuple[int, str]]] = {}
for _line in _FIT_TABLE.strip().splitlines():
    _priority, _product, _score, _why = (cell.strip() for cell in _line.split("|"))
    _FIT.setdefault(_priority, {})[_product] = (int(_score), _why)
# Share of stocks, bonds and cash (percent) for each investment tier.
_ALLOCATIONS = {"conservative": (30, 60, 10), "balanced": (60, 35, 5), "growth": (80, 15, 5)}
_TRADE_RULES: dict[str, tuple[str, str]] = {
    "BTNF": ("restricted", "Baton Financial's own shares are in a blackout period for clients."),
    "ACMQ": ("restricted", "The issuer is under merger review; trading is frozen."),
    "ZNRX": ("restricted", "An over-the-counter penny stock on the do-not-solicit list."),
    "QNTM": ("pre_clearance_required", "A concentrated, highly volatile position."),
    "HLXO": ("pre_clearance_required", "A recent IPO still in its lock-up window."),
}


def _amount(name: str, cents: int, currency: str = "USD") -> dict[str, Any]:
    """Money both ways: {'<name>_cents': 1234, '<name>': '$12.34'}."""
    return {f"{name}_cents": cents, name: money(cents, currency)}


def _pick(row: Any, *columns: str) -> dict[str, Any]:
    return {column: row[column] for column in columns}


def _parse_dob(text: str) -> str | None:
    cleaned = re.sub(r"(\d)(st|nd|rd|th)\b", r"\1", " ".join(text.split()), flags=re.I)
    for fmt in _DATE_FORMATS.split("|"):
        try:
            return datetime.strptime(cleaned, fmt).date().isoformat()
        except ValueError:
            continue
    return None


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def verify_identity(
    ctx: ToolContext, *, full_name: str, dob: str, ssn_last4: str
) -> dict[str, Any]:
    """Match name, date of birth and SSN last four against the customer records."""
    birth = _parse_dob(dob)
    if birth is None:
        error = "I couldn't read that date of birth. Ask for month, day and year."
        return {"verified": False, "error": error}
    digits = "".join(ch for ch in ssn_last4 if ch.isdigit())
    if len(digits) != 4:
        error = "The social security digits must be exactly the last four."
        return {"verified": False, "error": error}
    rows = ctx.db.execute(
        "SELECT id, name, tier FROM customers WHERE dob = ? AND ssn_last4 = ?", (birth, digits)
    ).fetchall()
    for row in rows:
        if _norm(row["name"]) == _norm(full_name):
            first = row["name"].split()[0]
            found = {"client_id": row["id"], "name": row["name"], "tier": row["tier"]}
            return {"verified": True, **found, "first_name": first}
    message = (
        "Those details don't match our records. Ask the caller to repeat them; "
        "do not say which detail was wrong."
    )
    return {"verified": False, "message": message}


def _accounts(db: sqlite3.Connection, client_id: str, account_type: str | None) -> list[Any]:
    sql = "SELECT * FROM accounts WHERE customer_id = ?"
    params: list[Any] = [client_id]
    if account_type:
        sql += " AND type = ?"
        params.append(account_type)
    return db.execute(sql + " ORDER BY id", params).fetchall()


def _account_dict(row: Any) -> dict[str, Any]:
    balance = _amount("balance", row["balance_cents"], row["currency"])
    return {"account_type": row["type"], **balance, "currency": row["currency"]}


def get_account_balance(ctx: ToolContext, *, account_type: str | None = None) -> dict[str, Any]:
    """Balances of the caller's accounts, all or one type."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    rows = _accounts(ctx.db, caller["id"], account_type)
    if not rows:
        return {"error": f"The caller has no {account_type} account with us."}
    total = _amount("total", sum(r["balance_cents"] for r in rows))
    return {"customer": caller["name"], "accounts": [_account_dict(r) for r in rows], **total}


def _transactions(db: sqlite3.Connection, client_id: str, account_type: str | None) -> list[Any]:
    sql = (
        "SELECT t.*, a.type AS account_type, c.last4 AS card_last4 FROM transactions t "
        "JOIN accounts a ON a.id = t.account_id LEFT JOIN cards c ON c.id = t.card_id "
        "WHERE a.customer_id = ?"
    )
    params: list[Any] = [client_id]
    if account_type:
        sql += " AND a.type = ?"
        params.append(account_type)
    return db.execute(sql + " ORDER BY t.ts DESC, t.id DESC", params).fetchall()


def _tx_dict(row: Any) -> dict[str, Any]:
    fields = _pick(row, "id", "ts", "merchant", "category", "city", "card_last4", "account_type")
    return {**fields, **_amount("amount", row["amount_cents"])}


def get_recent_transactions(
    ctx: ToolContext, *, limit: int = 5, account_type: str | None = None
) -> dict[str, Any]:
    """The caller's newest transactions (1 to 20)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    rows = _transactions(ctx.db, caller["id"], account_type)[: max(1, min(20, limit))]
    return {"count": len(rows), "transactions": [_tx_dict(r) for r in rows]}


def _fraud_reasons(row: Any, home_city: str) -> list[str]:
    reasons = []
    if row["flagged"]:
        reasons.append("flagged by our fraud monitoring")
    if row["city"] != home_city:
        reasons.append(f"made in {row['city']}, away from the usual {home_city}")
    if datetime.fromisoformat(row["ts"]).hour < 5:
        reasons.append("made between midnight and 5 a.m.")
    if row["amount_cents"] <= -50_000:
        reasons.append("unusually large amount")
    if row["category"] in _HIGH_RISK:
        reasons.append(f"high-risk category ({row['category']})")
    return reasons


def analyze_recent_transactions(ctx: ToolContext, *, days: int = 30) -> dict[str, Any]:
    """Score the caller's debits in a window ending at their latest transaction.

    The window is anchored on the newest transaction rather than the wall clock, so the fixed
    demo data always has "recent" activity to review.
    """
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    everything = _transactions(ctx.db, caller["id"], None)
    if not everything:
        return {"reviewed": 0, "suspicious": [], "summary": "No recent activity to review."}
    home_city = Counter(r["city"] for r in everything).most_common(1)[0][0]
    as_of = datetime.fromisoformat(everything[0]["ts"])
    days = max(1, min(365, days))
    since = (as_of - timedelta(days=days)).isoformat(timespec="seconds")
    window = [r for r in everything if r["ts"] >= since]
    suspicious = []
    for row in window:
        reasons = _fraud_reasons(row, home_city) if row["amount_cents"] < 0 else []
        if row["flagged"] or len(reasons) >= 2:
            suspicious.append({**_tx_dict(row), "reasons": reasons})
    total = _amount("suspicious_total", -sum(item["amount_cents"] for item in suspicious))
    summary = "Nothing looks unusual in this period."
    if suspicious:
        summary = f"{len(suspicious)} suspicious charge(s) totalling {total['suspicious_total']}."
    window_info = {"window_days": days, "as_of": as_of.isoformat(), "home_city": home_city}
    return {
        **window_info,
        "reviewed": len(window),
        "suspicious": suspicious,
        **total,
        "summary": summary,
    }


def _card_dict(row: Any) -> dict[str, Any]:
    limit = _amount("credit_limit", row["credit_limit_cents"])
    return {**_pick(row, "last4", "product", "status"), **limit}


def list_cards(ctx: ToolContext) -> dict[str, Any]:
    """The caller's cards."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    rows = ctx.db.execute(
        "SELECT * FROM cards WHERE customer_id = ? ORDER BY id", (caller["id"],)
    ).fetchall()
    return {"cards": [_card_dict(r) for r in rows]}


def _find_card(db: sqlite3.Connection, client_id: str, last4: str) -> Any:
    return db.execute(
        "SELECT * FROM cards WHERE customer_id = ? AND last4 = ?", (client_id, last4.strip())
    ).fetchone()


def block_card(ctx: ToolContext, *, last4: str, reason: str) -> dict[str, Any]:
    """Block the caller's card ending in `last4` (applied once per tool call)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    client_id = caller["id"]

    def effect() -> dict[str, Any]:
        card = _find_card(ctx.db, client_id, last4)
        if card is None:
            error = f"The caller has no card ending in {last4}. Ask them to check the digits."
            return {"error": error}
        if card["status"] == "blocked":
            message = f"The card ending in {last4} was already blocked."
            return {"already_blocked": True, **_card_dict(card), "message": message}
        ctx.db.execute("UPDATE cards SET status = 'blocked' WHERE id = ?", (card["id"],))
        message = (
            f"The card ending in {last4} is now blocked. New charges will be declined; "
            "a replacement card can be sent within five business days."
        )
        result = {**_card_dict(card), "status": "blocked", "reason": reason, "message": message}
        return {"blocked": True, **result}

    return run_once(ctx.db, ctx.idempotency_key, "block_card", effect)


def create_fraud_case(
    ctx: ToolContext, *, description: str, last4: str | None = None
) -> dict[str, Any]:
    """Open a fraud case (applied once per tool call)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    client_id = caller["id"]

    def effect() -> dict[str, Any]:
        card_id = None
        if last4:
            card = _find_card(ctx.db, client_id, last4)
            if card is None:
                return {"error": f"The caller has no card ending in {last4}."}
            card_id = card["id"]
        case_id = next_id(ctx.db, "FC")
        ctx.db.execute(
            "INSERT INTO fraud_cases VALUES (?, ?, ?, ?, 'open', ?)",
            (case_id, client_id, card_id, description.strip(), now_iso()),
        )
        next_steps = (
            "An investigator reviews the case within two business days. "
            "Disputed charges are provisionally credited while it is open."
        )
        case = {"case_id": case_id, "status": "open", "card_last4": last4}
        # The desk the caller goes to next reads the case from its prompt's handoff notes
        # instead of asking again; a card left unnamed is dropped from the notes as empty.
        notes = {"fraud_case_id": case_id, "card_last4": last4, "case_status": "open"}
        summary = f"fraud case {case_id} opened"
        return {
            **case,
            "next_steps": next_steps,
            "handoff_summary": summary,
            "handoff_context": notes,
        }

    return run_once(ctx.db, ctx.idempotency_key, "create_fraud_case", effect)


def recommend_card(ctx: ToolContext, *, priority: str) -> dict[str, Any]:
    """Rank eligible card products for the caller's priority and tier."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    fits = _FIT.get(priority)
    if fits is None:
        return {"error": f"Unknown priority {priority!r}; use one of {', '.join(_FIT)}."}
    cards = ctx.db.execute("SELECT product FROM cards WHERE customer_id = ?", (caller["id"],))
    held = {r["product"] for r in cards}
    rank = _TIER_RANK.get(caller["tier"], 0)
    options = []
    for p in ctx.db.execute("SELECT * FROM card_products").fetchall():
        score, why = fits.get(p["id"], (0, ""))
        if score and p["name"] not in held and _TIER_RANK.get(p["min_tier"], 0) <= rank:
            pick = {**_pick(p, "name", "rewards", "description"), "why": why}
            options.append((-score, p["annual_fee_cents"], p["name"], pick))
    options.sort(key=lambda option: option[:3])
    picks = [{**pick, **_amount("annual_fee", fee)} for _s, fee, _n, pick in options[:3]]
    tier = {"customer_tier": caller["tier"], "already_held": sorted(held)}
    return {"priority": priority, **tier, "recommendations": picks}


def get_portfolio_summary(ctx: ToolContext) -> dict[str, Any]:
    """Brokerage and retirement balances with the allocation of the caller's risk profile."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    invested = ("brokerage", "retirement")
    rows = [r for r in _accounts(ctx.db, caller["id"], None) if r["type"] in invested]
    if not rows:
        return {"accounts": [], "message": "The caller has no investment accounts with us."}
    total = sum(r["balance_cents"] for r in rows)
    profile = caller["investment_tier"] or "balanced"
    split = _ALLOCATIONS.get(profile, _ALLOCATIONS["balanced"])
    allocation = [
        {"asset_class": name, "percent": pct, **_amount("value", total * pct // 100)}
        for name, pct in zip(("stocks", "bonds", "cash"), split, strict=True)
    ]
    note = "Balances as of the last statement. This summary is not investment advice."
    accounts = [_account_dict(r) for r in rows]
    summary = {"risk_profile": profile, "accounts": accounts, **_amount("total", total)}
    return {**summary, "allocation": allocation, "note": note}


def log_compliance_review(ctx: ToolContext, *, topic: str, note: str) -> dict[str, Any]:
    """Add a compliance note to the caller's file (applied once per tool call)."""
    caller = caller_or_error(ctx.db, ctx.client_id)
    if isinstance(caller, dict):
        return caller
    client_id = caller["id"]

    def effect() -> dict[str, Any]:
        review_id = next_id(ctx.db, "CR")
        ctx.db.execute(
            "INSERT INTO compliance_reviews VALUES (?, ?, ?, ?, ?)",
            (review_id, client_id, topic.strip(), note.strip(), now_iso()),
        )
        return {"logged": True, "review_id": review_id, "topic": topic.strip()}

    return run_once(ctx.db, ctx.idempotency_key, "log_compliance_review", effect)


def check_trade_restrictions(ctx: ToolContext, *, symbol: str) -> dict[str, Any]:
    """Rule-based lookup of the firm's restricted and pre-clearance lists."""
    ticker = symbol.strip().upper().lstrip("$")
    if not re.fullmatch(r"[A-Z]{1,5}(\.[A-Z])?", ticker):
        return {"error": f"{symbol!r} is not a valid ticker symbol. Ask the caller to spell it."}
    allowed = ("allowed", "Not on the restricted or pre-clearance lists.")
    status, reason = _TRADE_RULES.get(ticker, allowed)
    return {"symbol": ticker, "status": status, "can_trade": status == "allowed", "reason": reason}
