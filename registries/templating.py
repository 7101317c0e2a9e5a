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
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from contextvars import ContextVar
from functools import lru_cache, update_wrapper
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import generate_lorem_ipsum
from markupsafe import Markup

from registries.errors import TemplateRenderError, TemplateTooLargeError
from registries.template_bounds import (
    BoundedEscapeFormatter,
    BoundedFormatter,
    ValueTooLargeError,
    bounded_filter,
    bounded_lipsum,
    method_bound,
    printf_bound,
    refuse_growth,
    size_of,
)
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
#: The size cap of the render running in this context: no operation inside it may build a value
#: past it (see registries/template_bounds.py). Outside a render, the largest cap.
_cap: ContextVar[int] = ContextVar("template_render_cap", default=MAX_PROMPT_CHARS)


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

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:  # noqa: N802 - Jinja's name
        """`a ~ b` through `environment.joined`, which refuses a result past the cap."""
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            super().visit_Concat(node, frame)  # never so in Baton: autoescape is off
            return
        self.write("environment.joined((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _BoundedSandbox(ImmutableSandboxedEnvironment):
    """Jinja's sandbox where no operation may build a value past the render's cap, refused
    before it allocates (see registries/template_bounds.py): operators, str methods, filters,
    `str.format`, `lipsum`, `~` and block buffers. `'x' * 10**9` would otherwise build a
    gigabyte string (at compile time even: Jinja folds constant expressions) before any cap on
    the output could look at it; intercepted operators are never folded."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _BudgetedLoops

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters = {
            name: bounded_filter(name, function, _cap.get)
            for name, function in self.filters.items()
        }
        self.globals["lipsum"] = bounded_lipsum(_cap.get, generate_lorem_ipsum)

    def budgeted(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """`iterable`, stopping the render once it has run past its time budget."""
        for step, item in enumerate(iterable):
            if step % _STEPS_PER_CHECK == 0:
                _check_budget()
            yield item

    def joined(self, parts: Iterable[Any]) -> str:
        """`a ~ b ~ ...`, refused when the result would pass the cap."""
        texts = [str(part) for part in parts]
        refuse_growth(sum(map(len, texts)), texts, _cap.get(), "the '~' operator")
        return "".join(texts)

    def concat(self, pieces: Iterable[str]) -> str:
        """Joins a block's output (a macro, `{% set %}...{% endset %}`, `{% filter %}`)."""
        pieces = list(pieces)
        refuse_growth(sum(map(len, pieces)), pieces, _cap.get(), "a block")
        return "".join(pieces)

    def call(self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_budget()  # a macro calling itself, or a recursive loop, comes through here
        name = getattr(__obj, "__name__", "a call")
        if name == "join" and args and not isinstance(args[0], Sized):
            args = (list(args[0]), *args[1:])  # sized before it is measured, consumed once
        inputs = (getattr(__obj, "__self__", None), *args, *kwargs.values())
        bound = method_bound(__obj, args, kwargs)
        if bound is not None:
            refuse_growth(bound, inputs, _cap.get(), f"{name}()")
        result = super().call(__context, __obj, *args, **kwargs)
        refuse_growth(size_of(result), inputs, _cap.get(), f"{name}()")
        return result

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _check_budget()
        cap = _cap.get()
        what = f"the '{operator}' operator"
        if operator == "**" and isinstance(left, int) and isinstance(right, int):
            if right > _MAX_EXPONENT:
                raise SecurityError(f"exponent above {_MAX_EXPONENT} is not allowed in a template")
            refuse_growth(abs(left).bit_length() * right // 3, (), cap, what)
        elif operator == "*":
            for operand, times in ((left, right), (right, left)):
                if isinstance(operand, str | bytes | list | tuple) and isinstance(times, int):
                    refuse_growth(len(operand) * times, (operand,), cap, what)
                if isinstance(operand, int) and isinstance(times, int):
                    refuse_growth(size_of(operand) + size_of(times) + 1, (), cap, what)
        elif operator == "+" and size_of(left) and size_of(right) and not isinstance(left, int):
            refuse_growth(size_of(left) + size_of(right), (left, right), cap, what)
        elif operator == "%" and isinstance(left, str | bytes):
            values = right.values() if isinstance(right, Mapping) else right
            inputs = [left, *(values if isinstance(right, tuple | Mapping) else [right])]
            refuse_growth(printf_bound(left, right, cap), inputs, cap, "'%' formatting")
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """`str.format` and `format_map` bounded by the cap (Jinja's sandboxes them at access
        rather than at the call, so calls made without `call` are bounded too)."""
        if not (
            isinstance(value, types.MethodType | types.BuiltinMethodType)
            and value.__name__ in ("format", "format_map")
            and isinstance(value.__self__, str)
        ):
            return None
        template: str = value.__self__
        is_format_map = value.__name__ == "format_map"

        def bounded(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one mapping argument")
                kwargs, args = args[0], ()
            values = kwargs.values() if isinstance(kwargs, Mapping) else ()
            allowance = max(size_of(v) for v in (template, *args, *values))
            formatter = (
                BoundedEscapeFormatter(self, _cap.get(), allowance, escape=template.escape)
                if isinstance(template, Markup)
                else BoundedFormatter(self, _cap.get(), allowance)
            )
            return type(template)(formatter.vformat(template, args, kwargs))

        return update_wrapper(bounded, value)


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
    cap = _cap.set(limit)
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
    except ValueTooLargeError as exc:  # refused before it was built: a size problem, as above
        raise TemplateTooLargeError(what, str(exc), line=_template_line(exc)) from None
    except Exception as exc:  # sandbox violations, bad filter arguments, ...
        problem = _masked(_describe(exc), variables)
        # `from None`: the original's message may quote the caller's data, and Temporal would
        # record a chained cause in history next to this one.
        raise TemplateRenderError(what, problem, line=_template_line(exc)) from None
    finally:
        _deadline.reset(budget)
        _cap.reset(cap)


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
