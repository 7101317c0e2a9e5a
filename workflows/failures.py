"""What a failed activity means for the call, read from its cause."""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeoutError

with workflow.unsafe.imports_passed_through():
    from contracts.handoff import TEMPLATE_RENDER_ERROR


def went_unserved(error: ActivityError) -> bool:
    """No worker picked the activity up in time: nobody serves its queue."""
    cause = error.cause
    return isinstance(cause, ActivityTimeoutError) and cause.type == TimeoutType.SCHEDULE_TO_START


def render_failure(error: ActivityError | ApplicationError) -> ApplicationError | None:
    """The render error, when a registry template failed to render: the same call fails the
    same way on every retry, so a person takes over (the message names the template and holds
    no caller data). A local activity's failure reaches the workflow as the bare
    `ApplicationError`, a queued activity's wrapped in an `ActivityError`."""
    cause = error.cause if isinstance(error, ActivityError) else error
    if isinstance(cause, ApplicationError) and cause.type == TEMPLATE_RENDER_ERROR:
        return cause
    return None
