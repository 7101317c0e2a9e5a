"""Greeting selection and the pure context helpers behind every handoff."""

from __future__ import annotations

from typing import Any

import pytest

from registries.errors import TemplateRenderError
from registries.handoff_context import (
    pick_handoff_reason,
    sanitize_handoff_context,
    set_dotted,
)
from registries.handoff_service import HandoffService
from registries.prompting import render_prompt
from tests.unit.test_handoff_service import AGENTS, make


def greet(service: HandoffService, name: str = "Bravo", **kw: Any) -> str | None:
    kw.setdefault("is_first_visit", True)
    kw.setdefault("greet_on_switch", True)
    return service.select_greeting(agent=name, **kw)


def test_first_visit_uses_greeting_with_scenario_and_caller_vars() -> None:
    text = greet(make(), system_vars={"session_profile": {"name": "Alex"}})
    assert text == "Hi Alex, Acme payments."


def test_greeting_guards_missing_runtime_vars() -> None:
    assert greet(make()) == "Hi, Acme payments."


def test_return_visit_uses_return_greeting() -> None:
    assert greet(make(), is_first_visit=False) == "Back at payments."


def test_discrete_switch_has_no_greeting() -> None:
    assert greet(make(), greet_on_switch=False) is None


def test_explicit_override_beats_everything() -> None:
    assert greet(make(), greet_on_switch=False, override="Transferring now.") == (
        "Transferring now."
    )
    via_vars = {"session_overrides": {"greeting": "One moment."}}
    assert greet(make(), is_first_visit=False, system_vars=via_vars) == "One moment."


def test_missing_return_greeting_has_a_sensible_default() -> None:
    text = greet(make(), "Charlie", is_first_visit=False)
    assert text is not None and text.startswith("Welcome back") and "charlie" in text


def test_missing_greeting_has_a_sensible_default() -> None:
    assert greet(make(), "Charlie") == (
        "Hello, you're now speaking with the charlie. How can I help?"
    )


def test_greeting_with_undefined_variable_fails_clearly() -> None:
    broken = AGENTS["Bravo"].model_copy(update={"greeting": "Hi {{ nickname }}"})
    with pytest.raises(TemplateRenderError, match="agent Bravo greeting: 'nickname' is undefined"):
        make().select_greeting(agent=broken, is_first_visit=True, greet_on_switch=True)


def test_sanitize_strips_control_flags_and_empty_values() -> None:
    raw = {
        "success": True,
        "handoff": True,
        "target_agent": "X",
        "message": "m",
        "handoff_summary": "s",
        "should_interrupt_playback": True,
        "session_overrides": {},
        "card_last4": "1234",
        "note": "  ",
        "items": [],
        "extra": None,
        "count": 0,
    }
    assert sanitize_handoff_context(raw) == {"card_last4": "1234", "count": 0}
    assert sanitize_handoff_context(None) == {}


@pytest.mark.parametrize(
    ("result", "args", "expected"),
    [
        (
            {"handoff_summary": "summary", "handoff_context": {"reason": "ctx"}},
            {"reason": "a"},
            "summary",
        ),
        ({"handoff_context": {"reason": "ctx"}}, {"reason": "arg"}, "ctx"),
        ({"handoff_summary": "  "}, {"reason": "arg"}, "arg"),
        ({}, {}, "unspecified"),
        (None, {"reason": ""}, "unspecified"),
    ],
)
def test_handoff_reason_precedence(result: Any, args: Any, expected: str) -> None:
    assert pick_handoff_reason(result, args) == expected


def test_tool_result_context_is_sanitized_into_system_vars() -> None:
    result = make().resolve_handoff(
        source_agent="Alpha",
        tool_args={"target_agent": "Bravo"},
        tool_result={
            "handoff_summary": "card stolen",
            "success": True,
            "handoff_context": {"card_last4": "1234", "target_agent": "Bravo"},
        },
    )
    assert result.system_vars["handoff_context"] == {"card_last4": "1234"}
    assert result.system_vars["handoff_reason"] == "card stolen"


def test_set_dotted_builds_and_reuses_levels() -> None:
    target: dict[str, Any] = {"a": 1}
    set_dotted(target, "b.c.d", 2)
    set_dotted(target, "b.e", 3)
    set_dotted(target, "a.x", 4)  # a scalar in the way is replaced by a level
    assert target == {"a": {"x": 4}, "b": {"c": {"d": 2}, "e": 3}}


def test_prompt_gets_handoff_instructions_appended() -> None:
    agent = AGENTS["Bravo"].model_copy(update={"prompt": "You handle {{ company_name }} payments."})
    text = render_prompt(make().scenario, agent, {}, handoff_instructions="Transfers: ...")
    assert text == "You handle Acme payments.\n\nTransfers: ..."
