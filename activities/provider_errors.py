"""The one error type of chat-model and speech providers, and its mapping onto Temporal.

Providers never retry on their own: Temporal's retry policy does. A provider therefore says
whether trying again can help (`retryable`), and the activity turns that into an
`ApplicationError` that stops the retries at once when they cannot: a wrong key or a bad
request fails fast, a dropped connection or a 503 gets another attempt.
"""

from __future__ import annotations

from temporalio.exceptions import ApplicationError

from contracts.metrics import PROVIDER_ERRORS
from runtime.baton_metrics import count

#: Client errors that may succeed on a later attempt: timeout, conflict, rate limit.
RETRYABLE_STATUS = frozenset({408, 409, 429})


class ProviderError(RuntimeError):
    """A provider call failed; `retryable` says whether trying again can help.

    `status_code` is the HTTP status when the provider answered with one; `provider` names the
    provider ("openai", "azure", ...) when it is known.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status_code: int | None = None,
        provider: str = "",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status_code = status_code
        self.provider = provider


def named(error: ProviderError, provider: str) -> ProviderError:
    """`error`, naming `provider` if the code that raised it did not (a speech SDK's failure,
    an offline engine's): the metrics then say which provider failed instead of "unknown"."""
    if not error.provider:
        error.provider = provider
    return error


def is_retryable_status(status_code: int) -> bool:
    """HTTP 408/409/429 and every 5xx are worth retrying; other statuses are not.

    A 400/401/403/404/422 means the request or the configuration is wrong, and sending the
    same request again gives the same answer.
    """
    return status_code in RETRYABLE_STATUS or status_code >= 500


def to_application_error(
    error: ProviderError, *, failure_type: str, context: str = ""
) -> ApplicationError:
    """The `ApplicationError` an activity raises for a provider failure.

    `failure_type` is the error type Temporal records (each activity keeps its own, so a
    failure says which kind of provider broke); `context`, when given, says what the activity
    was doing and comes before the provider's own text. Non-retryable errors are marked so,
    which ends Temporal's retries at once.
    """
    # Every provider failure an activity reports passes here: counted once per attempt.
    retryable = "true" if error.retryable else "false"
    count(PROVIDER_ERRORS, provider=error.provider or "unknown", retryable=retryable)
    message = f"{context}: {error}" if context else str(error)
    return ApplicationError(message, type=failure_type, non_retryable=not error.retryable)
