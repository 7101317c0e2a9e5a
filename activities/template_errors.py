"""A template that fails to render, as the non-retryable activity error the workflow expects."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from temporalio.exceptions import ApplicationError

from contracts.handoff import TEMPLATE_RENDER_ERROR
from registries.errors import TemplateRenderError


@contextmanager
def render_failures_as_application_errors() -> Iterator[None]:
    """Turn a `TemplateRenderError` inside the block into a non-retryable `ApplicationError`
    of type `TEMPLATE_RENDER_ERROR`: the same template with the same variables fails again,
    so retrying only delays the call's escalation to a person."""
    try:
        yield
    except TemplateRenderError as exc:
        # `from None`: only the message (which masks the caller's data) reaches history.
        raise ApplicationError(str(exc), type=TEMPLATE_RENDER_ERROR, non_retryable=True) from None
