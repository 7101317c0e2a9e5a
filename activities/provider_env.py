"""Provider settings as the chat and speech factories read them from `runtime.settings`.

The settings object keeps values as given (a blank variable counts as unset); these helpers
give a flag or a number of seconds its meaning, with an error that names the variable.
"""

from __future__ import annotations


def is_on(value: str | None) -> bool:
    """True for 1, true, yes or on (any case)."""
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def seconds(value: str | None, name: str, default: float) -> float:
    """A positive number of seconds, or `default` when unset; ValueError says what is wrong."""
    if value is None:
        return default
    try:
        parsed = float(value)
    except ValueError:
        parsed = -1.0
    if not parsed > 0:  # also rejects nan
        raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
    return parsed
