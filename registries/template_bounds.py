"""How large a template operation's result can be, worked out before the operation runs.

A rendered template's size is capped, but the cap on the output only sees a value once it
exists: `'x'.ljust(10**9)`, `'%1000000000s' % 1` or `s.replace('a', s)` would each allocate
gigabytes first. So every operation whose result can grow with an argument (a width, a count, a
fill or separator string) has its upper bound computed from its arguments, and the operation is
refused when that bound passes the cap. Operations that can only grow their input by a small
factor (escaping, `upper()` of 'ß', JSON) run, and their result is checked afterwards.

The rule is the same everywhere: no operation may make a value longer than the larger of the
render's cap and its own largest input. A caller's long value may pass through (a prompt may
quote a long profile field, and the output cap still applies), but nothing grows past the cap,
so repeating an operation in a loop cannot double a value without end either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sized
from typing import Any

from jinja2 import Environment
from jinja2.constants import LOREM_IPSUM_WORDS
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedFormatter
from jinja2.utils import _PassArg
from markupsafe import EscapeFormatter

#: The longest lorem-ipsum word with its comma or full stop and the space after it.
_LIPSUM_WORD_CHARS = max(map(len, LOREM_IPSUM_WORDS.split())) + 2
#: JSON indentation wider than this is no longer for reading; indentation multiplies with depth.
MAX_JSON_INDENT = 16
#: A `%` conversion: optional mapping key, flags, width, precision, length modifier, type.
_PRINTF_SPEC = re.compile(
    r"%(?:\((?P<key>[^)]*)\))?[#0\- +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d+))?[hlL]?"
    r"(?P<type>[a-zA-Z%])"
)
_DIGITS = re.compile(r"\d+")


class ValueTooLargeError(SecurityError):
    """An operation refused before it ran: its result would pass the render's cap."""

    def __init__(self, operation: str, cap: int) -> None:
        super().__init__(f"{operation} renders to more than {cap:,} characters")


def size_of(value: Any) -> int:
    """Characters or items in `value`; an int counts its decimal digits (roughly); else 0 (a
    `range` too: it holds no items until a filter lists or joins them, which is bounded)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value.bit_length() // 3  # log10(2) is just over 0.3: never under the digits
    if isinstance(value, str | bytes | bytearray | list | tuple | dict | set | frozenset):
        return len(value)
    return 0


def refuse_growth(bound: int, inputs: Iterable[Any], cap: int, what: str) -> None:
    """Refuse when `bound` passes both `cap` and the largest of `inputs` (see the module doc)."""
    if bound > cap and bound > max((size_of(value) for value in inputs), default=0):
        raise ValueTooLargeError(what, cap)


def check_spec_numbers(spec: str, cap: int, what: str) -> None:
    """Refuse a format spec with a width or precision above `cap` (either pads the result)."""
    if any(int(number) > cap for number in _DIGITS.findall(spec)):
        raise ValueTooLargeError(f"{what} with a width or precision above the cap", cap)


def printf_bound(template: str | bytes, values: Any, cap: int) -> int:
    """Upper bound of `template % values`; refuses widths above `cap` and computed (`*`) ones."""
    text = template.decode("latin-1") if isinstance(template, bytes) else template
    positional = values if isinstance(values, tuple) else (values,)
    bound = len(text)
    for index, match in enumerate(_PRINTF_SPEC.finditer(text)):
        if "*" in (match["width"], match["precision"]):
            raise SecurityError("a computed '%' width (*) is not allowed in a template")
        check_spec_numbers(match.group(0), cap, "'%' formatting")
        if match["type"] == "%":
            continue
        if match["key"] is not None and isinstance(values, Mapping):
            value = values.get(match["key"], "")
        else:
            value = positional[index] if index < len(positional) else ""
        # A float's digits before the point run to 309; repr() may escape every character.
        digits = 320 if isinstance(value, float) else 4 * len(str(value))
        bound += int(match["width"] or 0) + int(match["precision"] or 0) + digits
    return bound


def _argument(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name)


def _int_argument(
    args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, name: str, default: int
) -> int:
    value = _argument(args, kwargs, index, name)
    return value if isinstance(value, int) else default


def _padded(s: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    return max(len(s), _int_argument(args, kwargs, 0, "width", 0))


def _expanded_tabs(s: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    tabs: int = s.count("\t" if isinstance(s, str) else b"\t")
    return len(s) + tabs * max(_int_argument(args, kwargs, 0, "tabsize", 8), 0)


def _replaced(s: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    old = _argument(args, kwargs, 0, "old")
    new = _argument(args, kwargs, 1, "new")
    count = _argument(args, kwargs, 2, "count")
    if not isinstance(old, str | bytes) or not isinstance(new, str | bytes):
        return len(s)  # the method itself refuses other types
    occurrences = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        occurrences = min(occurrences, count)
    return len(s) + occurrences * max(len(new) - len(old), 0)


def _joined(separator: Any, items: list[Any]) -> int:
    pieces = sum(len(item) if isinstance(item, str | bytes) else len(str(item)) for item in items)
    return pieces + len(separator) * max(len(items) - 1, 0)


def _translated(s: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int:
    table = _argument(args, kwargs, 0, "table")
    if not isinstance(table, Mapping):
        return len(s)  # a bytes table maps each byte to one byte
    longest = max((len(v) for v in table.values() if isinstance(v, str | bytes)), default=1)
    return len(s) * max(longest, 1)


#: Methods of str, bytes and int whose result can grow with an argument, by name.
METHOD_BOUNDS: dict[str, Callable[[Any, tuple[Any, ...], Mapping[str, Any]], int]] = {
    "center": _padded,
    "ljust": _padded,
    "rjust": _padded,
    "zfill": _padded,
    "expandtabs": _expanded_tabs,
    "replace": _replaced,
    "join": lambda s, args, kwargs: _joined(s, list(_argument(args, kwargs, 0, "iterable"))),
    "translate": _translated,
    "to_bytes": lambda n, args, kwargs: _int_argument(args, kwargs, 0, "length", 1),
}


def method_bound(method: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> int | None:
    """Upper bound of calling a builtin str/bytes/int method, or None if it cannot grow."""
    owner = getattr(method, "__self__", None)
    estimate = METHOD_BOUNDS.get(getattr(method, "__name__", ""))
    if estimate is None or not isinstance(owner, str | bytes | bytearray | int):
        return None
    if isinstance(owner, int) != (method.__name__ == "to_bytes"):
        return None
    return estimate(owner, args, kwargs)


def _filter_join(value: list[Any], d: Any = "", attribute: Any = None) -> int:
    return _joined(d, value)


def _filter_indent(s: Any, width: Any = 4, *_: Any, **__: Any) -> int:
    text = str(s)
    per_line = width if isinstance(width, int) else len(str(width))
    return len(text) + (text.count("\n") + 1) * max(per_line, 0)


def _filter_wordwrap(
    s: Any, width: int = 79, break_long_words: bool = True, wrapstring: Any = None, *_: Any
) -> int:
    text = str(s)
    # Two neighbouring lines together hold more than `width` (else they would be one line), so
    # a paragraph wraps into at most 2 * len / width + 2 lines.
    lines = 2 * len(text) // max(width, 1) + 2 * (text.count("\n") + 1)
    return len(text) + lines * len(wrapstring if wrapstring is not None else "\n")


def _filter_tojson(value: Any, indent: Any = None) -> int:
    if (isinstance(indent, int) and indent > MAX_JSON_INDENT) or (
        isinstance(indent, str) and len(indent) > MAX_JSON_INDENT
    ):
        raise SecurityError(
            f"tojson indentation above {MAX_JSON_INDENT} is not allowed in a template"
        )
    return 0  # the result, a small factor of the value, is checked once it exists


def _filter_sum(iterable: list[Any], attribute: Any = None, start: Any = 0) -> int:
    return size_of(start) + sum(size_of(item) for item in iterable)


#: Filters whose result can grow with an argument, by name. Each takes the filter's own
#: arguments (without the context Jinja passes some filters) and returns the bound.
FILTER_BOUNDS: dict[str, Callable[..., int]] = {
    "center": lambda value, width=80: max(len(str(value)), width),
    "indent": _filter_indent,
    "wordwrap": _filter_wordwrap,
    "replace": lambda s, old, new, count=None: _replaced(str(s), (old, new, count), {}),
    "join": _filter_join,
    "batch": lambda value, linecount, fill_with=None: (
        len(value) + (linecount if fill_with is not None else 0)
    ),
    "slice": lambda value, slices, fill_with=None: len(value) + slices,
    "sum": _filter_sum,
    "tojson": _filter_tojson,
}
#: Filters that iterate their value: it is listed first, so the bound and the filter see it all.
_LISTED_FIRST = frozenset({"join", "batch", "slice", "sum"})


def bounded_filter(name: str, function: Callable[..., Any], cap: Callable[[], int]) -> Any:
    """`function` (the filter `name`) refusing, before it runs, a result that would grow past
    the cap, and checking afterwards what it made of its inputs."""
    passes_context = _PassArg.from_obj(function) is not None
    estimate = FILTER_BOUNDS.get(name)
    what = f"the {name} filter"

    def bounded(*args: Any, **kwargs: Any) -> Any:
        passed, own = (args[:1], args[1:]) if passes_context else ((), args)
        if name in _LISTED_FIRST and own and not isinstance(own[0], Sized):
            own = (list(own[0]), *own[1:])
        limit = cap()
        if name == "format" and own:  # the filter is `%` formatting
            refuse_growth(printf_bound(str(own[0]), kwargs or own[1:], limit), own, limit, what)
        elif estimate is not None:
            try:
                bound = estimate(*own, **kwargs)
            except TypeError:
                bound = 0  # arguments the filter refuses: let it say so in its own words
            refuse_growth(bound, own, limit, what)
        result = function(*passed, *own, **kwargs)
        refuse_growth(size_of(result), [*own, *kwargs.values()], limit, what)
        return result

    bounded.__dict__.update(getattr(function, "__dict__", {}))  # keeps Jinja's pass_context marks
    bounded.__name__ = getattr(function, "__name__", name)
    return bounded


def bounded_lipsum(cap: Callable[[], int], lipsum: Callable[..., str]) -> Callable[..., str]:
    """Jinja's `lipsum` global, refusing more paragraphs or words than the cap can hold."""

    def bounded(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
        words = n * (max if isinstance(max, int) else 100)
        refuse_growth(words * _LIPSUM_WORD_CHARS + n * 8, (), cap(), "lipsum")
        return lipsum(n, html, min, max)

    return bounded


class BoundedFormatter(SandboxedFormatter):
    """Jinja's sandboxed `str.format`, counting what one call has produced so far and refusing
    once it passes the cap; a field's width or precision above the cap is refused before the
    field is padded. One instance per call."""

    def __init__(self, env: Environment, cap: int, allowance: int, **kwargs: Any) -> None:
        self._cap = cap
        self._allowance = max(cap, allowance)
        self._produced = 0
        super().__init__(env, **kwargs)

    def format_field(self, value: Any, format_spec: str) -> Any:
        check_spec_numbers(format_spec, self._cap, "str.format")
        formatted = super().format_field(value, format_spec)
        self._produced += len(formatted)
        if self._produced > self._allowance:
            raise ValueTooLargeError("str.format", self._cap)
        return formatted


class BoundedEscapeFormatter(BoundedFormatter, EscapeFormatter):
    """The same for `Markup.format`, which escapes each field as Jinja's own does."""
