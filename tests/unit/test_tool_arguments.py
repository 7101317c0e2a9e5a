"""Tool arguments are checked with full JSON Schema (Draft 2020-12), and tool schemas themselves
are checked when the registry loads, with file, line, field path and a fix."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from activities.business_tools import execute_tool
from baton.cli import main
from contracts.tools import ToolRequest
from registries.errors import RegistryError, ToolArgumentError
from registries.loading import Registry, load_registry
from registries.tool_handlers import run_tool
from registries.tool_runtime import ToolContext
from tests.conftest import RegistryWriter
from tests.unit.test_registry_loading import AGENTS, SCENARIO, problems_of

ORDER_TOOL = """\
tools:
  - name: end_call
    description: Hang up.
    ends_conversation: true
  - name: lookup
    description: Look up orders.
    parameters:
      type: object
      properties:
        limit: {type: integer, minimum: 1, maximum: 100}
        ship_on: {type: string, format: date}
        note: {type: string, minLength: 3}
        lines:
          type: array
          minItems: 1
          items:
            type: object
            properties:
              sku: {type: string, pattern: "^SKU-[0-9]+$"}
              qty: {type: integer, minimum: 1}
            required: [sku, qty]
            additionalProperties: false
      required: [limit]
      additionalProperties: false
"""
HANDLERS = (
    "def end_call(ctx):\n    return {}\n\ndef lookup(ctx, **args):\n    return {'ran': args}\n"
)


@pytest.fixture
def order_registry(write_registry: RegistryWriter) -> Registry:
    tools = {"basic": (ORDER_TOOL, HANDLERS)}
    return load_registry(write_registry(agents=AGENTS, scenarios={"demo": SCENARIO}, tools=tools))


@pytest.fixture
def ctx() -> Iterator[ToolContext]:
    db = sqlite3.connect(":memory:")
    yield ToolContext(call_id="call-1", idempotency_key="k1", db=db)
    db.close()


def refusal(registry: Registry, ctx: ToolContext, **args: Any) -> str:
    with pytest.raises(ToolArgumentError) as caught:
        run_tool(registry, "lookup", args, ctx)
    return str(caught.value)


def test_a_valid_call_reaches_the_handler(order_registry: Registry, ctx: ToolContext) -> None:
    args = {"limit": 5, "ship_on": "2025-02-28", "note": "ring twice"}
    args["lines"] = [{"sku": "SKU-1", "qty": 2}]
    assert run_tool(order_registry, "lookup", args, ctx) == {"ran": args}


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (-5, "lookup: limit: -5 is less than the minimum of 1"),
        (1000, "lookup: limit: 1000 is greater than the maximum of 100"),
    ],
)
def test_minimum_and_maximum_are_enforced(
    order_registry: Registry, ctx: ToolContext, limit: int, message: str
) -> None:
    assert refusal(order_registry, ctx, limit=limit) == message


@pytest.mark.parametrize("day", ["2025-02-30", "next tuesday", "28/02/2025"])
def test_a_date_in_the_wrong_format_is_refused(
    order_registry: Registry, ctx: ToolContext, day: str
) -> None:
    assert refusal(order_registry, ctx, limit=1, ship_on=day) == (
        f"lookup: ship_on: {day!r} is not a 'date'"
    )


def test_min_length_is_enforced(order_registry: Registry, ctx: ToolContext) -> None:
    assert refusal(order_registry, ctx, limit=1, note="no") == "lookup: note: 'no' is too short"


def test_item_constraints_are_enforced_and_the_nested_path_is_named(
    order_registry: Registry, ctx: ToolContext
) -> None:
    lines = [{"sku": "SKU-1", "qty": 1}, {"sku": "BOX-7", "qty": 0, "gift": True}, {"qty": 1}]
    message = refusal(order_registry, ctx, limit=1, lines=lines)
    assert "lines[1].sku: 'BOX-7' does not match '^SKU-[0-9]+$'" in message
    assert "lines[1].qty: 0 is less than the minimum of 1" in message
    assert "lines[1]: unknown field(s): gift; allowed: sku, qty" in message
    assert "lines[2]: missing required field(s): sku" in message
    assert "lines[0]" not in message


def test_an_empty_list_breaks_min_items(order_registry: Registry, ctx: ToolContext) -> None:
    assert refusal(order_registry, ctx, limit=1, lines=[]) == (
        "lookup: lines: [] should be non-empty"
    )


def test_the_activity_returns_a_refusal_to_the_model_instead_of_failing() -> None:
    request = ToolRequest(
        call_id="call-1",
        tool="get_recent_transactions",
        arguments={"limit": -5},
        idempotency_key="call-1/act-1",
        system_vars={"client_id": "C1001"},
    )
    result = execute_tool(request)
    assert result.result == {}
    assert result.error == "get_recent_transactions: limit: -5 is less than the minimum of 1"


BROKEN = [
    (
        "limit: {type: integr, minimum: 1}",
        "tools[1].parameters.properties.limit.type: 'integr' is not a JSON Schema type; "
        "did you mean 'integer'?",
    ),
    (
        "limit: {type: integer, minimum: five}",
        "tools[1].parameters.properties.limit.minimum: minimum cannot be 'five'; "
        "write a number, e.g. 5",
    ),
    (
        'limit: {type: string, pattern: "[0-9"}',
        "tools[1].parameters.properties.limit.pattern: '[0-9' is not a valid regular "
        "expression; fix the pattern",
    ),
]


def broken_registry(write_registry: RegistryWriter, limit_line: str) -> Path:
    text = ORDER_TOOL.replace("limit: {type: integer, minimum: 1, maximum: 100}", limit_line)
    assert limit_line in text
    tools = {"basic": (text, HANDLERS)}
    return write_registry(agents=AGENTS, scenarios={"demo": SCENARIO}, tools=tools)


@pytest.mark.parametrize(("limit_line", "problem"), BROKEN, ids=["type", "minimum", "pattern"])
def test_a_broken_schema_is_reported_by_the_loader_with_file_line_and_fix(
    write_registry: RegistryWriter, limit_line: str, problem: str
) -> None:
    root = broken_registry(write_registry, limit_line)
    registry = load_registry(root)
    (found,) = [p for p in problems_of(root) if "parameters" in p]
    assert found.endswith(f"toolstore/basic.yaml:10: error: {problem}")
    assert "lookup" in registry.tools and "lookup" not in registry.tool_validators
    with pytest.raises(RegistryError, match=re.escape(f"basic.yaml:10: error: {problem}")):
        registry.require_scenario("demo")


def test_a_tool_with_a_broken_schema_is_refused_not_crashed(
    write_registry: RegistryWriter, ctx: ToolContext
) -> None:
    registry = load_registry(broken_registry(write_registry, BROKEN[0][0]))
    assert "its parameters schema is invalid" in refusal(registry, ctx, limit=1)


@pytest.mark.parametrize(("limit_line", "problem"), BROKEN[:2], ids=["type", "minimum"])
def test_scenario_check_reports_a_broken_schema(
    capsys: Any, write_registry: RegistryWriter, limit_line: str, problem: str
) -> None:
    root = broken_registry(write_registry, limit_line)
    code = main(["scenario", "check", str(root)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"toolstore/basic.yaml:10: error: {problem}" in err
    assert "demo: FAILED" in out and "Traceback" not in err
