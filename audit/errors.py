"""The one error of the audit package, kept apart so every module can raise it."""

from __future__ import annotations

from registries.errors import BatonError


class AuditError(BatonError):
    """A call or bundle that cannot be read, said in one line for the person who asked."""
