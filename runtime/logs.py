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
