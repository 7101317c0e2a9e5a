"""The embedded demo dataset that Baton's shipped business tools read and change.

A single SQLite file (`default_database_path()`) holds a small, deterministic world: six
customers with accounts, cards, transactions, insurance policies, clinic appointments and
invoices. Every seeded id, amount and timestamp is fixed (the demo "today" is 2026-11-01), so two
fresh databases are identical and tests can name rows directly.

Seeded customers (name, date of birth, SSN last four, tier):

* C1001 Alex Morgan, 1985-04-12, 4321, gold. Checking, savings, brokerage and retirement
  accounts; a debit card (…4417) and a Travel Rewards credit card (…8832) with two flagged
  late-night electronics purchases in Bucharest; an auto policy; a past cardiology visit plus
  open appointment slots; one open invoice.
* C1002 Priya Shah, 1979-09-03, 7788, private. Checking, brokerage, retirement; a Private Metal
  card; home and life policies with a water-damage claim under review.
* C1003 Marcus Lee, 1992-01-27, 1234, standard. Checking and savings; a debit card that is
  already blocked; an auto policy with an approved claim.
* C1004 Sofia Alvarez, 1990-06-18, 5566, standard. Checking; one card; a booked dermatology
  appointment; one paid and one open invoice.
* C1005 Daniel Okafor, 1968-11-30, 9090, gold. Checking and retirement; a life policy; a paid
  invoice.
* C1006 Emma Chen, 2001-03-09, 2468, standard. Checking only; a student debit card; one open
  invoice; no policies (a good "build credit" caller).

Mutating tools go through `run_once`, which records each effect under the tool call's
idempotency key so a retried call returns the first result instead of applying twice.
"""

from __future__ import annotations

import json
import random
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from runtime.paths import data_dir, keep_owner_only

#: The fixed "today" of the demo world; seeded timestamps are relative to it.
DEMO_TODAY = datetime(2026, 11, 1, 12, 0, 0)

#: Error text for tools that need a verified caller but have none.
IDENTIFY_FIRST = "I don't know who the caller is yet. Verify the caller's identity first."

_SEED_VERSION = "1"
_TX_LOCK = threading.RLock()  # one writer transaction at a time on a shared connection

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS customers (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, dob TEXT NOT NULL, ssn_last4 TEXT NOT NULL,
    phone TEXT NOT NULL, email TEXT NOT NULL, tier TEXT NOT NULL, investment_tier TEXT);
CREATE TABLE IF NOT EXISTS accounts (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    type TEXT NOT NULL, balance_cents INTEGER NOT NULL, currency TEXT NOT NULL DEFAULT 'USD');
CREATE TABLE IF NOT EXISTS cards (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    account_id TEXT REFERENCES accounts(id), last4 TEXT NOT NULL, product TEXT NOT NULL,
    status TEXT NOT NULL, credit_limit_cents INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS transactions (
    id TEXT PRIMARY KEY, account_id TEXT NOT NULL REFERENCES accounts(id),
    card_id TEXT REFERENCES cards(id), ts TEXT NOT NULL, merchant TEXT NOT NULL,
    category TEXT NOT NULL, amount_cents INTEGER NOT NULL, city TEXT NOT NULL,
    flagged INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS transactions_by_account ON transactions (account_id, ts);
CREATE TABLE IF NOT EXISTS card_products (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, annual_fee_cents INTEGER NOT NULL,
    rewards TEXT NOT NULL, min_tier TEXT NOT NULL, description TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS policies (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    type TEXT NOT NULL, status TEXT NOT NULL, premium_cents INTEGER NOT NULL,
    deductible_cents INTEGER NOT NULL, coverage_cents INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS claims (
    id TEXT PRIMARY KEY, policy_id TEXT NOT NULL REFERENCES policies(id),
    customer_id TEXT NOT NULL REFERENCES customers(id), ts TEXT NOT NULL,
    description TEXT NOT NULL, amount_cents INTEGER NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS appointments (
    id TEXT PRIMARY KEY, customer_id TEXT REFERENCES customers(id), provider TEXT NOT NULL,
    specialty TEXT NOT NULL, ts TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS invoices (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id), ts TEXT NOT NULL,
    description TEXT NOT NULL, amount_cents INTEGER NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS fraud_cases (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    card_id TEXT REFERENCES cards(id), description TEXT NOT NULL, status TEXT NOT NULL,
    created_ts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS compliance_reviews (
    id TEXT PRIMARY KEY, customer_id TEXT NOT NULL REFERENCES customers(id),
    topic TEXT NOT NULL, note TEXT NOT NULL, created_ts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS escalations (
    id TEXT PRIMARY KEY, call_id TEXT NOT NULL, customer_id TEXT, reason TEXT NOT NULL,
    summary TEXT NOT NULL, created_ts TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tool_effects (
    idempotency_key TEXT PRIMARY KEY, tool TEXT NOT NULL, result_json TEXT NOT NULL,
    created_ts TEXT NOT NULL);
"""

Row = tuple[Any, ...]


_INT_COLUMNS = {"balance_cents", "credit_limit_cents", "annual_fee_cents", "premium_cents"}
_INT_COLUMNS |= {"deductible_cents", "coverage_cents", "amount_cents", "flagged"}


def _table(text: str) -> list[Row]:
    """Rows of a '|'-separated table whose first line names the columns; '-' is NULL."""
    header, *lines = text.strip().splitlines()
    columns = [name.strip() for name in header.split("|")]
    rows: list[Row] = []
    for line in lines:
        cells = [cell.strip() for cell in line.split("|")]
        rows.append(
            tuple(
                None if cell == "-" else int(cell) if column in _INT_COLUMNS else cell
                for column, cell in zip(columns, cells, strict=True)
            )
        )
    return rows


_CUSTOMERS = _table("""
id    | name          | dob        | ssn_last4 | phone        | email                     | tier     | investment_tier
C1001 | Alex Morgan   | 1985-04-12 | 4321 | +1-503-555-0142 | alex.morgan@example.com   | gold     | growth
C1002 | Priya Shah    | 1979-09-03 | 7788 | +1-415-555-0178 | priya.shah@example.com    | private  | balanced
C1003 | Marcus Lee    | 1992-01-27 | 1234 | +1-312-555-0110 | marcus.lee@example.com    | standard | -
C1004 | Sofia Alvarez | 1990-06-18 | 5566 | +1-305-555-0193 | sofia.alvarez@example.com | standard | -
C1005 | Daniel Okafor | 1968-11-30 | 9090 | +1-713-555-0127 | daniel.okafor@example.com | gold     | conservative
C1006 | Emma Chen     | 2001-03-09 | 2468 | +1-206-555-0164 | emma.chen@example.com     | standard | -
""")  # noqa: E501

_ACCOUNTS = _table("""
id        | customer_id | type       | balance_cents | currency
A1001-CHK | C1001       | checking   | 482_537       | USD
A1001-SAV | C1001       | savings    | 1_825_000     | USD
A1001-BRK | C1001       | brokerage  | 8_431_055     | USD
A1001-RET | C1001       | retirement | 21_240_000    | USD
A1002-CHK | C1002       | checking   | 3_912_044     | USD
A1002-BRK | C1002       | brokerage  | 142_500_000   | USD
A1002-RET | C1002       | retirement | 58_730_012    | USD
A1003-CHK | C1003       | checking   | 156_210       | USD
A1003-SAV | C1003       | savings    | 410_000       | USD
A1004-CHK | C1004       | checking   | 287_455       | USD
A1005-CHK | C1005       | checking   | 921_300       | USD
A1005-RET | C1005       | retirement | 38_650_000    | USD
A1006-CHK | C1006       | checking   | 64_218        | USD
""")

_CARDS = _table("""
id      | customer_id | account_id | last4 | product              | status  | credit_limit_cents
K1001-D | C1001       | A1001-CHK  | 4417  | Baton Everyday Debit | active  | 0
K1001-T | C1001       | A1001-CHK  | 8832  | Baton Travel Rewards | active  | 1_500_000
K1002-M | C1002       | A1002-CHK  | 0550  | Baton Private Metal  | active  | 10_000_000
K1003-D | C1003       | A1003-CHK  | 7301  | Baton Everyday Debit | blocked | 0
K1004-C | C1004       | A1004-CHK  | 2290  | Baton Cash Back      | active  | 600_000
K1005-D | C1005       | A1005-CHK  | 6104  | Baton Everyday Debit | active  | 0
K1006-D | C1006       | A1006-CHK  | 9915  | Baton Student Debit  | active  | 0
""")

_CARD_PRODUCTS = _table("""
id | name | annual_fee_cents | rewards | min_tier | description
P-CASH | Baton Cash Back | 0 | 1.5% cash back on every purchase | standard | No annual fee and flat cash back; simple for everyday spending.
P-CASHPLUS | Baton Cash Back Plus | 9_500 | 3% on groceries, 2% on gas, 1% on everything else | standard | Higher cash back for households that spend a lot on essentials.
P-TRAVEL | Baton Travel Rewards | 9_500 | 2x points on travel and dining, no foreign transaction fees | standard | A mid-fee travel card whose points transfer to airline partners.
P-VOYAGER | Baton Voyager Elite | 55_000 | 5x points on flights, airport lounges, $300 yearly travel credit | gold | A premium travel card for frequent flyers.
P-SECURED | Baton Secured Starter | 0 | 1% cash back; reports to all three credit bureaus | standard | A secured card for building credit, reviewed for upgrade after 12 months.
P-SIMPLE | Baton Simple | 0 | no rewards; low variable APR | standard | A low-rate card for carrying a balance or consolidating purchases.
P-PRIVATE | Baton Private Metal | 95_000 | 3x points on everything, concierge, global lounge access | private | An invitation-level metal card for private banking clients.
""")  # noqa: E501

_POLICIES = _table("""
id         | customer_id | type | status | premium_cents | deductible_cents | coverage_cents
POL-A-1001 | C1001       | auto | active | 11_200        | 50_000           | 10_000_000
POL-H-1002 | C1002       | home | active | 24_500        | 250_000          | 120_000_000
POL-L-1002 | C1002       | life | active | 18_000        | 0                | 200_000_000
POL-A-1003 | C1003       | auto | active | 9_800         | 100_000          | 5_000_000
POL-L-1005 | C1005       | life | active | 21_000        | 0                | 75_000_000
""")

_CLAIMS = _table("""
id | policy_id | customer_id | ts | description | amount_cents | status
CLM-0001 | POL-H-1002 | C1002 | 2026-10-20T09:15:00 | Water damage in the kitchen from a burst pipe | 1_240_000 | under_review
CLM-0002 | POL-A-1003 | C1003 | 2026-09-02T17:40:00 | Rear bumper damage in a parking lot collision | 310_000 | approved
""")  # noqa: E501

_INVOICES = _table("""
id       | customer_id | ts                  | description                   | amount_cents | status
INV-5001 | C1001       | 2026-10-18T10:00:00 | Cardiology consultation copay | 4_500        | open
INV-5002 | C1004       | 2026-09-12T10:00:00 | Annual physical               | 2_500        | paid
INV-5003 | C1004       | 2026-10-25T10:00:00 | Lab work: blood panel         | 13_275       | open
INV-5004 | C1005       | 2026-08-30T10:00:00 | Physical therapy session      | 6_000        | paid
INV-5005 | C1006       | 2026-10-28T10:00:00 | Urgent care visit             | 8_950        | open
""")

# Appointment history; the open slots are generated by `_appointments`.
_BOOKED_APPOINTMENTS = _table("""
id       | customer_id | provider         | specialty    | ts                  | status
APT-0001 | C1001       | Dr. Nina Patel   | cardiology   | 2026-10-15T09:30:00 | booked
APT-0002 | C1004       | Dr. Lena Fischer | dermatology  | 2026-11-06T14:00:00 | booked
APT-0003 | C1005       | Dr. Omar Haddad  | primary care | 2026-10-02T11:00:00 | cancelled
""")
_PROVIDERS = [
    ("Dr. Nina Patel", "cardiology"),
    ("Dr. Omar Haddad", "primary care"),
    ("Dr. Lena Fischer", "dermatology"),
    ("Dr. Sam Whitaker", "primary care"),
]

# Alex's credit card activity; the last two are the suspicious charges of the fraud demo.
_ALEX_CARD_TX = _table("""
card_id | ts                  | merchant             | category    | amount_cents | city      | flagged
K1001-T | 2026-10-05T19:12:00 | Delta Air Lines      | travel      | -42_860      | Portland  | 0
K1001-T | 2026-10-12T20:41:00 | Le Pigeon            | dining      | -13_420      | Portland  | 0
K1001-T | 2026-10-22T13:05:00 | Powell's Books       | shopping    | -3_899       | Portland  | 0
K1001-T | 2026-10-30T02:14:00 | MegaVolt Electronics | electronics | -124_999     | Bucharest | 1
K1001-T | 2026-10-30T02:37:00 | GadgetHub Online     | electronics | -89_900      | Bucharest | 1
""")  # noqa: E501

_HOME_CITIES = {
    "C1001": "Portland",
    "C1002": "San Francisco",
    "C1003": "Chicago",
    "C1004": "Miami",
    "C1005": "Houston",
    "C1006": "Seattle",
}
# merchant, category, smallest and largest amount in cents
_MERCHANTS = [
    ("Safeway", "groceries", 2_500, 16_000),
    ("Shell", "gas", 3_000, 7_500),
    ("Starbucks", "dining", 450, 1_400),
    ("Amazon", "shopping", 1_500, 12_000),
    ("City Utilities", "utilities", 8_000, 21_000),
    ("Netflix", "subscriptions", 1_549, 1_549),
]


def _generated_transactions() -> list[Row]:
    """Ordinary, deterministic card and account activity for every customer."""
    rng = random.Random(20261101)
    rows: list[Row] = []
    card_by_account = {c[2]: c[0] for c in _CARDS if c[4] != "Baton Travel Rewards"}
    for account_id, customer_id, acct_type, _balance, _cur in _ACCOUNTS:
        if acct_type != "checking":
            continue
        city = _HOME_CITIES[customer_id]
        for n in range(10):
            merchant, category, low, high = rng.choice(_MERCHANTS)
            when = DEMO_TODAY - timedelta(days=3 * n + rng.randint(1, 2), hours=rng.randint(0, 9))
            card_id = card_by_account.get(account_id) if category != "utilities" else None
            row = (account_id, card_id, when.isoformat(timespec="seconds"), merchant, category)
            rows.append((*row, -rng.randint(low, high), city, 0))
        payday = (DEMO_TODAY - timedelta(days=17)).replace(hour=6).isoformat(timespec="seconds")
        salary = rng.randint(180_000, 650_000)
        rows.append((account_id, None, payday, "Payroll deposit", "income", salary, city, 0))
    rows.extend(("A1001-CHK", *row) for row in _ALEX_CARD_TX)
    return rows


def _appointments() -> list[Row]:
    """The booked history plus a week of open slots starting two days after the demo date."""
    rows = list(_BOOKED_APPOINTMENTS)
    number = 100
    for day in range(2, 9):
        for hour, (provider, specialty) in zip((9, 11, 14, 16), _PROVIDERS, strict=True):
            if (day + hour) % 3 == 0:
                continue  # leave gaps so the calendar looks real
            number += 1
            when = (DEMO_TODAY + timedelta(days=day)).replace(hour=hour, minute=0)
            slot = when.isoformat(timespec="seconds")
            rows.append((f"APT-{number:04d}", None, provider, specialty, slot, "available"))
    return rows


def _seed(db: sqlite3.Connection) -> None:
    def insert(table: str, rows: list[Row]) -> None:
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            db.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", rows)

    insert("customers", _CUSTOMERS)
    insert("accounts", _ACCOUNTS)
    insert("cards", _CARDS)
    insert("card_products", _CARD_PRODUCTS)
    insert("policies", _POLICIES)
    insert("claims", _CLAIMS)
    insert("invoices", _INVOICES)
    insert("appointments", _appointments())
    transactions = sorted(_generated_transactions(), key=lambda row: (row[2], row[0]))
    insert("transactions", [(f"T{n:05d}", *row) for n, row in enumerate(transactions, 1)])
    # New claims continue after the seeded ones (see `next_id`).
    db.execute("INSERT OR IGNORE INTO meta VALUES ('seq:CLM', ?)", (str(len(_CLAIMS)),))
    db.execute("INSERT OR REPLACE INTO meta VALUES ('seed_version', ?)", (_SEED_VERSION,))


def default_database_path() -> Path:
    """`$BATON_DATA_DIR/demo.sqlite3`, or `~/.baton/demo.sqlite3` when the variable is unset."""
    directory = data_dir()
    return directory / "demo.sqlite3"


def open_demo_database(path: Path | None = None) -> sqlite3.Connection:
    """Open (creating and seeding on first use) the demo database.

    The connection is in autocommit mode; writers use `BEGIN IMMEDIATE`. Seeding runs inside
    one write transaction guarded by the `meta` table, so concurrent first opens are safe.
    """
    target = path or default_database_path()
    # The customers' records (dates of birth, SSN last four, balances): its owner's alone.
    keep_owner_only(target)
    db = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=30.0)
    db.row_factory = sqlite3.Row
    db.execute("PRAGMA busy_timeout = 30000")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA foreign_keys = ON")
    with _TX_LOCK:
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            seeded = db.execute("SELECT value FROM meta WHERE key = 'seed_version'").fetchone()
            if seeded is None:
                _seed(db)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    return db


def run_once(
    db: sqlite3.Connection, key: str, tool: str, effect: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Apply `effect` at most once per idempotency `key` and return its (stored) result.

    `effect` does its writes on `db`; they commit together with the stored result, or roll back
    together if anything raises. A second call with the same key returns the first result.
    """
    with _TX_LOCK:
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute(
                "SELECT result_json FROM tool_effects WHERE idempotency_key = ?", (key,)
            ).fetchone()
            if row is None:
                encoded = json.dumps(effect(), sort_keys=True)
                db.execute(
                    "INSERT INTO tool_effects VALUES (?, ?, ?, ?)", (key, tool, encoded, now_iso())
                )
            else:
                encoded = str(row[0])
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    result: dict[str, Any] = json.loads(encoded)
    return result


def next_id(db: sqlite3.Connection, prefix: str, width: int = 5) -> str:
    """The next id of a sequence, e.g. 'FC-00001'; call inside a write transaction."""
    key = f"seq:{prefix}"
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    number = (int(row[0]) if row else 0) + 1
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(number)))
    return f"{prefix}-{number:0{width}d}"


def now_iso() -> str:
    """Wall-clock UTC time for rows created during a call (never used for seeded data)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def money(cents: int, currency: str = "USD") -> str:
    """'$1,234.56' (or '-$12.00'); other currencies get their code as a suffix."""
    sign = "-" if cents < 0 else ""
    dollars, rest = divmod(abs(int(cents)), 100)
    text = f"{sign}${dollars:,}.{rest:02d}"
    return text if currency == "USD" else f"{text} {currency}"


def caller_or_error(db: sqlite3.Connection, client_id: str | None) -> sqlite3.Row | dict[str, Any]:
    """The caller's customer row, or an `{"error": ...}` result a tool can return as is."""
    if client_id is None:
        return {"error": IDENTIFY_FIRST}
    row: sqlite3.Row | None = db.execute(
        "SELECT * FROM customers WHERE id = ?", (client_id,)
    ).fetchone()
    if row is None:
        return {"error": f"No customer record matches id {client_id}. Verify the caller again."}
    return row
