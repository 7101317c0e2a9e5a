"""Short spoken summaries of known tool-result shapes, for the offline policy.

Each summariser looks for the fields one kind of result carries (accounts and balances,
transactions, cards, cases, claims, slots, invoices, triage, ...) and returns one or two
sentences, or None when the result is not its kind. They key on fields, not tool names, so a
custom tool returning the same fields is summarised too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Result = Mapping[str, Any]


def spoken_list(items: Sequence[str]) -> str:
    """["a", "b", "c"] -> "a, b and c" (empty items skipped)."""
    items = [i for i in items if i]
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def _money(value: Any) -> str:
    return str(value).lstrip("-")


def _verified(r: Result) -> str | None:
    if r.get("verified") is not True:
        return None
    name = f", {r['first_name']}" if r.get("first_name") else ""
    return f"Thank you{name}, you're verified. How can I help you today?"


def _portfolio(r: Result) -> str | None:
    if "risk_profile" not in r or "total" not in r:
        return None
    split = [f"{a['percent']}% {a['asset_class']}" for a in r.get("allocation", [])]
    mix = f", allocated {spoken_list(split)}" if split else ""
    return f"Your investments total {r['total']} for a {r['risk_profile']} profile{mix}."


def _balances(r: Result) -> str | None:
    accounts = r.get("accounts")
    if not isinstance(accounts, list) or not accounts:
        return None
    if len(accounts) == 1:
        account = accounts[0]
        return f"Your {account.get('account_type', 'account')} balance is {account.get('balance')}."
    parts = [f"{a.get('account_type', 'account')} {a.get('balance')}" for a in accounts[:4]]
    total = f", {r['total']} in total" if r.get("total") else ""
    return f"Your balances are {spoken_list(parts)}{total}."


def _transactions(r: Result) -> str | None:
    items = r.get("transactions")
    if not isinstance(items, list):
        return None
    if not items:
        return "I don't see any recent transactions."
    said = [f"{_money(t.get('amount'))} at {t.get('merchant')} in {t.get('city')}" for t in items]
    return f"Your most recent transactions are {spoken_list(said[:3])}."


def _suspicious(r: Result) -> str | None:
    items = r.get("suspicious")
    if not isinstance(items, list) or "summary" not in r:
        return None
    if not items:
        return str(r["summary"])
    said = [f"{_money(t.get('amount'))} at {t.get('merchant')} in {t.get('city')}" for t in items]
    return (
        f"I found {len(items)} suspicious charge{'s' if len(items) > 1 else ''}: "
        f"{spoken_list(said[:2])}. Would you like me to block the card or open a fraud case?"
    )


def _cards(r: Result) -> str | None:
    cards = r.get("cards")
    if not isinstance(cards, list) or not cards:
        return None
    said = [f"the {c.get('product')} ending in {c.get('last4')} ({c.get('status')})" for c in cards]
    return f"You have {spoken_list(said)}."


def _fraud_case(r: Result) -> str | None:
    if "case_id" not in r:
        return None
    return f"I've opened fraud case {r['case_id']} for you. {r.get('next_steps', '')}".strip()


def _recommendations(r: Result) -> str | None:
    picks = r.get("recommendations")
    if not isinstance(picks, list):
        return None
    if not picks:
        return "I don't have a better card to suggest than the ones you already hold."
    best = picks[0]
    others = [p.get("name", "") for p in picks[1:]]
    rest = f" You could also consider {spoken_list(others)}." if others else ""
    return f"I'd suggest the {best.get('name')}: {best.get('why')}.{rest}"


def _trade(r: Result) -> str | None:
    if "symbol" not in r or "can_trade" not in r:
        return None
    status = "can be traded" if r["can_trade"] else str(r.get("status", "")).replace("_", " ")
    return f"{r['symbol']} {'' if r['can_trade'] else 'is '}{status}: {r.get('reason', '')}"


def _policies(r: Result) -> str | None:
    items = r.get("policies")
    if not isinstance(items, list) or not items:
        return None
    said = [f"{p.get('type')} policy {p.get('policy_id')} ({p.get('status')})" for p in items]
    return f"You have {len(items)} polic{'ies' if len(items) > 1 else 'y'}: {spoken_list(said)}."


def _policy(r: Result) -> str | None:
    if "policy_id" not in r or "coverage" not in r:
        return None
    claims = r.get("claims") or []
    filed = (
        f" There {'is' if len(claims) == 1 else 'are'} {len(claims)} claim(s) on it."
        if claims
        else ""
    )
    return (
        f"Your {r.get('type')} policy {r['policy_id']} is {r.get('status')}, with "
        f"{r['coverage']} coverage and a {r.get('deductible')} deductible.{filed}"
    )


def _claim(r: Result) -> str | None:
    if "claim_id" not in r:
        return None
    if "estimated_payout" in r:
        return (
            f"I've filed claim {r['claim_id']}. The estimated payout after your deductible is "
            f"{r['estimated_payout']}. {r.get('next_steps', '')}"
        ).strip()
    return (
        f"Claim {r['claim_id']} for {r.get('amount')} is {r.get('status_detail', r.get('status'))}."
    )


def _slots(r: Result) -> str | None:
    slots = r.get("slots")
    if not isinstance(slots, list) or not slots:
        return None
    said = [
        f"{s.get('spoken_time')} with {s.get('provider')} ({s.get('appointment_id')})"
        for s in slots
    ]
    return f"The next openings are {spoken_list(said[:3])}. Which one would you like?"


def _appointment(r: Result) -> str | None:
    when = f"with {r.get('provider')} on {r.get('spoken_time')}"
    if r.get("booked") or r.get("already_booked"):
        return f"You're {'already ' if r.get('already_booked') else ''}booked {when}."
    if r.get("cancelled") or r.get("already_cancelled"):
        return f"Your appointment {when} is cancelled."
    return None


def _invoices(r: Result) -> str | None:
    if "balance_due" not in r:
        return None
    open_items = [i for i in r.get("invoices", []) if i.get("status") == "open"]
    said = [
        f"{i.get('invoice_id')} for {i.get('amount')} ({i.get('description')})" for i in open_items
    ]
    detail = f" Open invoices: {spoken_list(said[:3])}." if said else ""
    return f"Your balance due is {r['balance_due']}.{detail}"


def _payment(r: Result) -> str | None:
    if r.get("already_paid"):
        return f"Invoice {r.get('invoice_id')} was already paid."
    if not r.get("paid"):
        return None
    paid = f"Invoice {r.get('invoice_id')} for {r.get('amount')} is paid"
    return f"{paid}, confirmation {r.get('confirmation')}."


def _triage(r: Result) -> str | None:
    urgency = r.get("urgency")
    if urgency is None:
        return None
    if urgency == "unclear":
        return "Could you tell me a bit more about your symptoms, or would you like an appointment?"
    lead = "This could be an emergency." if urgency == "emergency" else f"This sounds {urgency}."
    return f"{lead} {r.get('advice', '')} This is not medical advice."


def _review(r: Result) -> str | None:
    return (
        f"I've noted that on your file, reference {r['review_id']}." if "review_id" in r else None
    )


def _ended(r: Result) -> str | None:
    return "Thank you for calling. Goodbye!" if r.get("ended") else None


SUMMARIES: Sequence[Callable[[Result], str | None]] = (
    _verified, _portfolio, _balances, _transactions, _suspicious, _cards, _fraud_case,
    _recommendations, _trade, _policies, _policy, _claim, _slots, _appointment, _invoices,
    _payment, _triage, _review, _ended,
)  # fmt: skip


def generic_summary(r: Result) -> str:
    """A few scalar fields of an unknown result ("That's done." when it has none)."""
    scalars = [
        f"{key.replace('_', ' ')} {value}"
        for key, value in r.items()
        if isinstance(value, str | int | float) and not key.endswith(("_cents", "_id"))
    ]
    return f"Here's what I found: {spoken_list(scalars[:3])}." if scalars else "That's done."


def summarize(result: Result) -> str | None:
    """The first summary that recognises `result`, or None."""
    return next((text for text in (f(result) for f in SUMMARIES) if text), None)
