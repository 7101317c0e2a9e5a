"""structlog set-up for every Baton process: one line per event, on stderr.

`BATON_LOG_FORMAT=json` gives JSON lines for log shippers; the default is readable console
output. `BATON_LOG_LEVEL` (default INFO) filters. Stdout stays free for command output.
"""

from __future__ import annotations

import logging
import sys

import structlog

from runtime.settings import settings


def configure_logging(default_level: str = "INFO") -> None:
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
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # Look stderr up per logger, not once: tests and daemons swap the stream.
        logger_factory=lambda *_: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )
    logging.basicConfig(level=max(level, logging.WARNING), stream=sys.stderr)
    activity_log = logging.getLogger("temporalio.activity")
    activity_log.removeFilter(_ONE_LINE_FAILURES)
    if level > logging.DEBUG:
        activity_log.addFilter(_ONE_LINE_FAILURES)


class _OneLineFailures(logging.Filter):
    """A failed activity attempt as one line: which activity, the provider's error (provider,
    status, retryable or not) and the attempt, with no traceback. The SDK logs every failed
    attempt with its whole chain, which buried a two-turn call with an unreachable model under
    hundreds of lines; the traceback is still there at DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            summary = (str(error).strip().splitlines() or [type(error).__name__])[0]
            record.msg = f"{record.getMessage()}: {type(error).__name__}: {summary[:300]}"
            record.args = ()
            record.exc_info = record.exc_text = None
        return True


_ONE_LINE_FAILURES = _OneLineFailures()
