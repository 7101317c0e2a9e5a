"""Jinja2 for prompts, greetings and handoff context_vars: sandboxed and strict.

Templates come from YAML that scenario authors edit, so they run in Jinja's sandbox (no attribute
access to Python internals) with `StrictUndefined` (a misspelt variable is an error, not an empty
string spoken to a caller). Compiled templates are cached by source text because the same
greeting is rendered on every handoff.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta
from jinja2.sandbox import ImmutableSandboxedEnvironment

from registries.errors import TemplateRenderError

#: Variables Baton supplies at run time to every prompt and greeting (None until known), so a
#: template may test them with `{% if caller_name %}` without failing.
RUNTIME_VARS: frozenset[str] = frozenset(
    {
        "agent_name",
        "caller_name",
        "client_id",
        "session_profile",
        "customer_intelligence",
        "institution_name",
        "handoff_reason",
        "handoff_context",
        "user_last_utterance",
        "previous_agent",
        "active_agent",
        "is_return_visit",
    }
)

_ENV = ImmutableSandboxedEnvironment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,  # output is speech and prompt text, never HTML
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
)


@lru_cache(maxsize=2048)
def compile_template(source: str) -> jinja2.Template:
    """Compile (and cache) a template; raises `jinja2.TemplateSyntaxError` on bad syntax."""
    return _ENV.from_string(source)


def undeclared_variables(source: str) -> set[str]:
    """Names a template reads from its context (syntax errors propagate)."""
    return meta.find_undeclared_variables(_ENV.parse(source))


def render(source: str, variables: Mapping[str, Any], *, what: str) -> str:
    """Render `source`; any failure becomes a `TemplateRenderError` naming `what` and why."""
    try:
        return compile_template(source).render(variables).strip()
    except jinja2.UndefinedError as exc:
        raise TemplateRenderError(f"{what}: {exc.message}") from exc
    except jinja2.TemplateError as exc:
        raise TemplateRenderError(f"{what}: {exc}") from exc
    except Exception as exc:  # sandbox violations, bad filters arguments, ...
        raise TemplateRenderError(f"{what}: {type(exc).__name__}: {exc}") from exc


def runtime_defaults() -> dict[str, Any]:
    """Every runtime variable set to None, the base of every render context."""
    return dict.fromkeys(RUNTIME_VARS)
