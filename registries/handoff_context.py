"""What a target agent learns when a call is handed to it: the handoff's system vars.

Pure functions, shared by every place a handoff happens (LLM tool call, supervisor transfer),
so the target agent sees the same context whatever triggered the switch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registries.templating import MAX_CONTEXT_VAR_CHARS, render

#: Session facts that follow the caller from agent to agent whatever the edge says.
CARRIED_SESSION_KEYS: tuple[str, ...] = (
    "session_profile",
    "client_id",
    "customer_intelligence",
    "institution_name",
)

#: Keys a tool result uses to steer the handoff itself; they are not context for the target.
HANDOFF_CONTROL_FLAGS: frozenset[str] = frozenset(
    {
        "success",
        "handoff",
        "target_agent",
        "message",
        "handoff_summary",
        "should_interrupt_playback",
        "session_overrides",
    }
)

UNSPECIFIED_REASON = "unspecified"


def sanitize_handoff_context(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """Drop control flags and empty values (None, "", empty containers) from a context dict."""
    if not raw:
        return {}
    return {
        key: value
        for key, value in raw.items()
        if key not in HANDOFF_CONTROL_FLAGS and not _is_empty(value)
    }


def _is_empty(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, (dict, list, tuple, set)):
        return len(value) == 0
    return False


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def pick_handoff_reason(
    tool_result: Mapping[str, Any] | None, tool_args: Mapping[str, Any] | None
) -> str:
    """The reason for a handoff, most specific source first.

    1. the tool result's `handoff_summary` (a tool that prepared the handoff knows best);
    2. `reason` inside the tool result's `handoff_context`;
    3. the `reason` argument the LLM passed to the handoff tool;
    4. "unspecified".
    """
    result = tool_result or {}
    context = result.get("handoff_context")
    candidates = (
        result.get("handoff_summary"),
        context.get("reason") if isinstance(context, Mapping) else None,
        (tool_args or {}).get("reason"),
    )
    for candidate in candidates:
        text = _text(candidate)
        if text:
            return text
    return UNSPECIFIED_REASON


def build_handoff_system_vars(
    *,
    source_agent: str,
    target_agent: str,
    current_system_vars: Mapping[str, Any] | None = None,
    tool_args: Mapping[str, Any] | None = None,
    tool_result: Mapping[str, Any] | None = None,
    user_last_utterance: str | None = None,
    share_context: bool = True,
) -> dict[str, Any]:
    """The system vars the target agent starts with.

    Session facts (profile, client id, ...) always carry forward. The conversation (reason,
    last utterance, the source's handoff context) carries only when `share_context` is true.
    """
    current = current_system_vars or {}
    result = tool_result or {}
    system_vars: dict[str, Any] = {
        key: current[key] for key in CARRIED_SESSION_KEYS if not _is_empty(current.get(key))
    }
    system_vars["previous_agent"] = source_agent
    system_vars["active_agent"] = target_agent
    if share_context:
        system_vars["handoff_reason"] = pick_handoff_reason(result, tool_args)
        context = result.get("handoff_context")
        cleaned = sanitize_handoff_context(context if isinstance(context, Mapping) else None)
        if cleaned:
            system_vars["handoff_context"] = cleaned
        utterance = _text(user_last_utterance)
        if utterance:
            system_vars["user_last_utterance"] = utterance
    overrides = result.get("session_overrides")
    if isinstance(overrides, Mapping) and overrides:
        system_vars["session_overrides"] = dict(overrides)
    return system_vars


def context_vars_scope(
    system_vars: Mapping[str, Any],
    current_system_vars: Mapping[str, Any] | None,
    template_vars: Mapping[str, Any],
) -> dict[str, Any]:
    """Variables a `context_vars` template may read: `session`, `profile` and the handoff."""
    current = dict(current_system_vars or {})
    profile = current.get("session_profile") or {}
    session = {**current, "profile": profile}
    return {
        **template_vars,
        "session": session,
        "profile": profile,
        "handoff_reason": system_vars.get("handoff_reason"),
        "user_last_utterance": system_vars.get("user_last_utterance"),
        "previous_agent": system_vars.get("previous_agent"),
        "active_agent": system_vars.get("active_agent"),
    }


def render_context_vars(
    context_vars: Mapping[str, str], scope: Mapping[str, Any], *, where: str
) -> dict[str, Any]:
    """Render each template; dotted keys (`customer.tier`) build nested dicts.

    Raises `TemplateRenderError` naming the key when one fails or renders more than
    `MAX_CONTEXT_VAR_CHARS` characters.
    """
    rendered: dict[str, Any] = {}
    for key, template in context_vars.items():
        value = render(
            template, scope, what=f"{where} context_vars.{key}", limit=MAX_CONTEXT_VAR_CHARS
        )
        set_dotted(rendered, key, value)
    return rendered


def set_dotted(target: dict[str, Any], dotted_key: str, value: Any) -> None:
    """`set_dotted(d, "a.b", 1)` makes `d["a"]["b"] == 1`, creating levels as needed."""
    *parents, leaf = dotted_key.split(".")
    node = target
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def deep_merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """A new dict: `overlay` over `base`, merging nested mappings instead of replacing them."""
    merged = dict(base)
    for key, value in overlay.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
