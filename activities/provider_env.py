"""Reading provider settings from the environment, shared by the chat and speech factories.

Both factories read the same kinds of value (keys, URLs, flags, timeouts) and must treat a
blank variable as unset, so a `FOO=` line left in an env file does not count as a setting.
"""

from __future__ import annotations

from collections.abc import Mapping


def env_value(env: Mapping[str, str], *names: str) -> str | None:
    """The first non-blank value among `names`."""
    for name in names:
        value = env.get(name, "").strip()
        if value:
            return value
    return None


def env_flag(env: Mapping[str, str], name: str) -> bool:
    """True when `name` is set to 1, true, yes or on (any case)."""
    return env.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number of seconds from `name`, or `default`; ValueError says what is wrong."""
    raw = env_value(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:  # also rejects nan
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value
