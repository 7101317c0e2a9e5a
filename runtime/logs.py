"""structlog set-up for every Baton process: one line per event, on stderr.

`BATON_LOG_FORMAT=json` gives JSON lines for log shippers; the default is readable console
output. `BATON_LOG_LEVEL` (default INFO) filters. Stdout stays free for command output: nothing
here, the standard library's loggers or the Temporal SDK's native core writes to it.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

import structlog
from temporalio.exceptions import CancelledError
from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig

from runtime.redaction import redact_event
from runtime.settings import settings


def configure_logging(default_level: str = "INFO") -> None:
    """structlog for Baton's own lines and the standard library's (Temporal's SDK, gRPC), one
    format for both, PII masked in every line."""
    config = settings()
    level_name = (config.log_level or default_level).upper()
    level = logging.getLevelNamesMapping().get(level_name, logging.INFO)
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if config.log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            structlog.processors.format_exc_info,
            redact_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # Look stderr up per logger, not once: tests and daemons swap the stream.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(handler)
    handler = _StderrHandler()
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                # The SDK's own records from inside an activity name the call too.
                structlog.contextvars.merge_contextvars,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                structlog.processors.TimeStamper(fmt="iso"),
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                redact_event,
                renderer,
            ],
        )
    )
    root.addHandler(handler)
    root.setLevel(max(level, logging.WARNING))  # the SDK and gRPC speak up for problems only
    activity_log = logging.getLogger("temporalio.activity")
    core_log = logging.getLogger(SDK_CORE_LOGGER)
    activity_log.removeFilter(_ONE_LINE_FAILURES)
    core_log.removeFilter(_LATE_COMPLETIONS)
    if level > logging.DEBUG:
        activity_log.addFilter(_ONE_LINE_FAILURES)
        core_log.addFilter(_LATE_COMPLETIONS)
    _forward_sdk_core_logs()


#: Logger the SDK core's records arrive on (as `temporalio.core-sdk_core::<target>`).
SDK_CORE_LOGGER = "temporalio.core"
_sdk_runtime: Runtime | None = None


def _forward_sdk_core_logs() -> None:
    """The Temporal SDK's native core (Rust) prints its own warnings (a gRPC call retried, a
    poll failing) straight to *stdout* unless told otherwise, and they landed in the middle of
    `baton call --json`'s document. Forwarded, they are records of `SDK_CORE_LOGGER` and go out
    through the handler above: stderr, Baton's format, redacted. Clients and workers created
    from now on use this runtime (one per process: each runtime has its own thread pool)."""
    global _sdk_runtime
    if _sdk_runtime is None:
        _sdk_runtime = Runtime(telemetry=sdk_telemetry())
    Runtime.set_default(_sdk_runtime, error_if_already_set=False)


def sdk_telemetry() -> TelemetryConfig:
    """The SDK runtime's telemetry: its core's log records forwarded to `SDK_CORE_LOGGER`."""
    return TelemetryConfig(
        logging=LoggingConfig(
            filter=LoggingConfig.default.filter,
            forwarding=LogForwardingConfig(logger=logging.getLogger(SDK_CORE_LOGGER)),
        )
    )


def use_sdk_runtime(runtime: Runtime) -> None:
    """Make `runtime` (built from `sdk_telemetry()`, e.g. with metrics added) the one clients
    and workers created from now on use, here and after any later `configure_logging`."""
    global _sdk_runtime
    _sdk_runtime = runtime
    Runtime.set_default(runtime, error_if_already_set=False)


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is at the time (tests and daemons swap the stream);
    never touches the stream it wrote to before, which may be closed by now."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: TextIO) -> None:
        """The stream is always the current `sys.stderr`."""


class _OneLineFailures(logging.Filter):
    """A failed activity attempt as one line: which activity, the provider's error (provider,
    status, retryable or not) and the attempt, with no traceback. The SDK logs every failed
    attempt with its whole chain, which buried a two-turn call with an unreachable model under
    hundreds of lines; the traceback is still there at DEBUG.

    An attempt the workflow cancelled is no failure and is not logged: a caller cutting in, a
    hang-up or a person taking the line stops speech or a model call on purpose, and the
    call's history records why. The SDK logs each as a warning, which put lines about
    nothing wrong in the middle of the demo's transcript."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            if isinstance(error, CancelledError):
                return False
            summary = (str(error).strip().splitlines() or [type(error).__name__])[0]
            info = getattr(record, "temporal_activity", None)  # set by the SDK's log adapter
            if isinstance(info, dict):
                what = (
                    f"activity {info.get('activity_type')} attempt {info.get('attempt')} failed "
                    f"({info.get('workflow_id')})"
                )
            else:
                what = record.getMessage()
            record.msg = f"{what}: {type(error).__name__}: {summary[:300]}"
            record.args = ()
            record.exc_info = record.exc_text = None
        return True


_ONE_LINE_FAILURES = _OneLineFailures()


class _LateCompletions(logging.Filter):
    """The SDK core's warning that a cancelled activity finished after its call had ended
    ("Activity not found on completion"): the same deliberate cancellation as above (a person
    took the line while hold audio played), seen from the core; kept at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Activity not found on completion" not in record.getMessage()


_LATE_COMPLETIONS = _LateCompletions()
