"""Log output an operator reads: a failed activity attempt is one line unless debugging."""

from __future__ import annotations

import io
import json
import logging
import os
import sys

import pytest
import structlog
from temporalio.exceptions import CancelledError

from runtime.logs import SDK_CORE_LOGGER, configure_logging


def fail_like_the_sdk(error: BaseException | None = None) -> logging.LogRecord | None:
    """Log a failed attempt as the Temporal SDK's activity worker does; return the record
    (None when nothing was logged)."""
    logger = logging.getLogger("temporalio.activity")
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    keep = Keep()
    logger.addHandler(keep)
    try:
        try:
            if error is not None:
                raise error
            raise ConnectionError("connection refused")
        except ConnectionError as cause:
            raise RuntimeError("openai: HTTP 503: upstream down (retryable)") from cause
    except (RuntimeError, CancelledError):
        logger.warning("Completing activity as failed", exc_info=True)
    finally:
        logger.removeHandler(keep)
    return seen[-1] if seen else None


def test_a_failed_attempt_is_one_line_naming_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATON_LOG_LEVEL", "INFO")
    configure_logging()
    record = fail_like_the_sdk()
    assert record is not None and record.exc_info is None
    assert record.getMessage() == (
        "Completing activity as failed: RuntimeError: openai: HTTP 503: upstream down (retryable)"
    )
    assert "\n" not in logging.Formatter().format(record)


def test_debug_keeps_the_whole_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATON_LOG_LEVEL", "DEBUG")
    configure_logging()
    record = fail_like_the_sdk()
    assert record is not None
    text = logging.Formatter().format(record)
    assert "Traceback" in text and "ConnectionError: connection refused" in text


def test_an_attempt_the_workflow_cancelled_is_not_logged_as_a_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BATON_LOG_LEVEL", "INFO")
    configure_logging()
    assert fail_like_the_sdk(CancelledError("Activity cancelled")) is None
    assert fail_like_the_sdk() is not None  # a real failure still is
    monkeypatch.setenv("BATON_LOG_LEVEL", "DEBUG")
    configure_logging()
    assert fail_like_the_sdk(CancelledError("Activity cancelled")) is not None


def core_says(message: str) -> bool:
    """Whether a record the SDK core forwards with `message` is logged."""
    logger = logging.getLogger(SDK_CORE_LOGGER)
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    keep = Keep()
    logger.addHandler(keep)
    try:
        logger.warning(message)
    finally:
        logger.removeHandler(keep)
    return bool(seen)


def test_the_cores_late_completion_of_a_cancelled_activity_is_kept_for_debugging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    late = "Activity not found on completion. This may happen if the activity has already been"
    monkeypatch.setenv("BATON_LOG_LEVEL", "INFO")
    configure_logging()
    assert not core_says(late)
    assert core_says("Poll failed: connection refused")  # other core warnings still show
    monkeypatch.setenv("BATON_LOG_LEVEL", "DEBUG")
    configure_logging()
    assert core_says(late)


def test_a_line_after_the_first_stderr_was_closed_goes_to_the_new_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A text stream over bytes, as pytest's capture is: flushing it once closed raises.
    first, second = io.TextIOWrapper(io.BytesIO()), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    configure_logging()
    logging.getLogger("temporalio.workflow").warning("one")
    first.close()  # a test's capture ended, or a daemon swapped its stream
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("temporalio.workflow").warning("two")  # must not raise
    assert "two" in second.getvalue()


def test_the_sdks_own_lines_name_the_call_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # What Baton's activity interceptor binds while an activity runs reaches stdlib records
    # (the SDK's activity logger) as well as Baton's own structlog lines.
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    before = os.environ.get("BATON_LOG_FORMAT")
    monkeypatch.setenv("BATON_LOG_FORMAT", "json")
    configure_logging()
    try:
        with structlog.contextvars.bound_contextvars(call_id="c-1"):
            logging.getLogger("temporalio.activity").warning("sdk line")
            structlog.get_logger("baton.test").warning("baton line")
    finally:  # later tests get the format the run started with, not JSON
        os.environ.pop("BATON_LOG_FORMAT")
        if before is not None:
            os.environ["BATON_LOG_FORMAT"] = before
        configure_logging()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(line["event"], line["call_id"]) for line in lines] == [
        ("sdk line", "c-1"),
        ("baton line", "c-1"),
    ]
