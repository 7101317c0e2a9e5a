"""Jinja2 for prompts, greetings and handoff context_vars: sandboxed, strict and bounded.

Templates come from YAML that scenario authors edit, so they run in Jinja's sandbox (no attribute
access to Python internals) with `StrictUndefined` (a misspelt variable is an error, not an empty
string spoken to a caller). Compiled templates are cached by source text because the same
greeting is rendered on every handoff.

Every render has a size cap: what it produces lands in the call's history (greetings, context
vars) or in every model request (prompts), and Temporal refuses a payload over 2 MB, forever,
on every retry. Every render has a time budget too: nested loops that print nothing never reach
the size cap, yet `range(10**5)` inside `range(10**5)` would hold a worker's CPU for minutes. A
render that fails, grows past its cap or runs past its budget raises `TemplateRenderError`,
whose message never quotes the caller's data: it goes to the call's history, tickets and logs.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from registries.errors import TemplateRenderError, TemplateTooLargeError
from runtime.redaction import redact

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

#: A system prompt (about 8,000 tokens), sent with every model request of its agent.
MAX_PROMPT_CHARS = 32_000
#: A greeting: two minutes of speech is already far too long for a caller to sit through.
MAX_GREETING_CHARS = 2_000
#: One handoff context var: it rides in the call's system vars, so in history, from then on.
MAX_CONTEXT_VAR_CHARS = 2_000
#: The largest `**` exponent a template may use; no prompt needs more, 2 ** 10**9 takes minutes.
_MAX_EXPONENT = 1_000
#: CPU one render may take. A real prompt renders in well under a millisecond; a template that
#: needs more than this is looping, and no caller should wait for it.
RENDER_BUDGET_SECONDS = 1.0
#: Loop steps between two looks at the clock (a look costs about as much as a step).
_STEPS_PER_CHECK = 256
#: What masks a caller's value quoted in an error message.
_MASK = "[value]"
#: When the render running in this context must stop (None: no render running).
_deadline: ContextVar[float | None] = ContextVar("template_render_deadline", default=None)


def _check_budget() -> None:
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise SecurityError(
            f"the template ran past its {RENDER_BUDGET_SECONDS:g} s render budget (a loop too "
            "large?)"
        )


class _BudgetedLoops(CodeGenerator):
    """Compiles every `{% for %}` to iterate through `environment.budgeted(...)`.

    Hand-written because Jinja has no hook on loop steps: its sandbox intercepts calls,
    attributes and operators, and caps `range()`, but a loop over a bounded range nested in
    another runs unchecked, and so does a loop over a variable. This is the one place every loop
    passes through.
    """

    def visit_For(self, node: nodes.For, frame: Frame) -> None:  # noqa: N802 - Jinja's name
        budgeted = nodes.Call(
            nodes.EnvironmentAttribute("budgeted"), [node.iter], [], None, None, lineno=node.lineno
        )
        super().visit_For(
            nodes.For(
                node.target,
                budgeted,
                node.body,
                node.else_,
                node.test,
                node.recursive,
                lineno=node.lineno,
            ),
            frame,
        )


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's sandbox with `*` and `**` bounded. The sandbox caps `range()`, but `'x' * 10**9`
    would build a gigabyte string (at compile time even: Jinja folds constant expressions)
    before any cap on the output could look at it; intercepted operators are never folded."""

    intercepted_binops = frozenset({"*", "**"})
    code_generator_class = _BudgetedLoops

    def budgeted(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """`iterable`, stopping the render once it has run past its time budget."""
        for step, item in enumerate(iterable):
            if step % _STEPS_PER_CHECK == 0:
                _check_budget()
            yield item

    def call(self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_budget()  # a macro calling itself, or a recursive loop, comes through here
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _check_budget()
        if operator == "**" and isinstance(right, int) and right > _MAX_EXPONENT:
            raise SecurityError(f"exponent above {_MAX_EXPONENT} is not allowed in a template")
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                if (
                    isinstance(sequence, str | list | tuple)
                    and isinstance(times, int)
                    and len(sequence) * times > MAX_PROMPT_CHARS
                ):
                    raise SecurityError(
                        f"repeating a value into more than {MAX_PROMPT_CHARS:,} characters or "
                        "items is not allowed in a template"
                    )
        return super().call_binop(context, operator, left, right)


_ENV = _BoundedSandbox(
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


@lru_cache(maxsize=2048)
def undeclared_variables(source: str) -> frozenset[str]:
    """Names a template reads from its context (syntax errors propagate); cached, because
    every check of a scenario asks again for each of its agents' templates."""
    return frozenset(meta.find_undeclared_variables(_ENV.parse(source)))


def render(source: str, variables: Mapping[str, Any], *, what: str, limit: int) -> str:
    """Render `source` into at most `limit` characters.

    Any failure (syntax, undefined variable, sandbox violation, the cap) becomes a
    `TemplateRenderError` naming `what` and the problem, with the variables' values masked.
    """
    budget = _deadline.set(time.monotonic() + RENDER_BUDGET_SECONDS)
    try:
        template = compile_template(source)
        pieces: list[str] = []
        length = 0
        # Rendered piece by piece, so a loop that would print gigabytes stops at the cap.
        for piece in template.generate(variables):
            length += len(piece)
            if length > limit:
                raise TemplateTooLargeError(what, f"renders to more than {limit:,} characters")
            pieces.append(piece)
        return "".join(pieces).strip()
    except TemplateRenderError:
        raise
    except Exception as exc:  # sandbox violations, bad filter arguments, ...
        problem = _masked(_describe(exc), variables)
        # `from None`: the original's message may quote the caller's data, and Temporal would
        # record a chained cause in history next to this one.
        raise TemplateRenderError(what, problem, line=_template_line(exc)) from None
    finally:
        _deadline.reset(budget)


def runtime_defaults() -> dict[str, Any]:
    """Every runtime variable set to None, the base of every render context."""
    return dict.fromkeys(RUNTIME_VARS)


def _describe(exc: Exception) -> str:
    if isinstance(exc, jinja2.UndefinedError):
        return exc.message or "undefined value"
    if isinstance(exc, jinja2.TemplateError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _template_line(exc: Exception) -> int | None:
    """The template line that failed: Jinja puts the template's own frames in the traceback."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return exc.lineno
    lines = [
        line
        for frame, line in traceback.walk_tb(exc.__traceback__)
        if frame.f_code.co_filename == "<template>"
    ]
    return lines[-1] if lines else None


def _masked(text: str, variables: Mapping[str, Any]) -> str:
    """`text` with every value of `variables` masked, then PII patterns too.

    Jinja's messages quote values now and then (`'dict object' has no attribute 'Alex
    Morgan'` for `profile[caller_name]`), and the variables hold the caller's profile and
    words. Longest values first, so a name is masked whole before a part of it.
    """
    values = sorted(set(_leaves(variables)), key=len, reverse=True)
    for value in values:
        text = text.replace(value, _MASK)
    return redact(text)


def _leaves(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string and number inside `value`, as text (one-character values say nothing)."""
    if depth > 20:
        return
    if isinstance(value, Mapping):
        for item in value.values():
            yield from _leaves(item, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            yield from _leaves(item, depth + 1)
    elif isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value).strip()
        if len(text) > 1:
            yield text
