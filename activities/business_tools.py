"""Activity: run one business tool against the demo database (tools queue).

Retries run the handler again, so mutating handlers key their effect on the request's
idempotency key (see registries.demo_data.run_once): a retry never applies twice.
"""

from __future__ import annotations

import sqlite3
import threading
from functools import lru_cache
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.heartbeats import heartbeat_while
from contracts.tools import RUN_BUSINESS_TOOL, ToolRequest, ToolResult
from registries.demo_data import default_database_path, open_demo_database
from registries.errors import ToolArgumentError
from registries.loading import Registry, load_registry, registry_root
from registries.tool_handlers import run_tool
from registries.tool_runtime import ToolContext
from runtime.baton_metrics import timed_stage

#: Well inside the workflow's two-second heartbeat timeout.
HEARTBEAT_SECONDS = 0.5
_DB_LOCK = threading.Lock()
_databases: dict[str, sqlite3.Connection] = {}


def _registry(root: str | None) -> Registry:
    # Cached by the folder it resolves to: the same `None` means another folder once
    # BATON_REGISTRY changes (the tests change it between calls in one process).
    return _loaded_registry(registry_root(root))


@lru_cache(maxsize=16)
def _loaded_registry(root: Path) -> Registry:
    return load_registry(root)


def _database() -> sqlite3.Connection:
    path = default_database_path()
    with _DB_LOCK:
        if str(path) not in _databases:
            _databases[str(path)] = open_demo_database(path)
        return _databases[str(path)]


def execute_tool(request: ToolRequest) -> ToolResult:
    """Check arguments, run the handler; refused arguments come back as `error`."""
    registry = _registry(request.registry)
    context = ToolContext(
        call_id=request.call_id,
        idempotency_key=request.idempotency_key,
        db=_database(),
        session=request.system_vars,
    )
    try:
        return ToolResult(result=run_tool(registry, request.tool, request.arguments, context))
    except ToolArgumentError as exc:
        return ToolResult(error=str(exc))
    except TypeError as exc:
        # A handler signature the schema did not describe; the model cannot fix it by retrying.
        raise ApplicationError(
            f"{request.tool}: {exc}", type="ToolError", non_retryable=True
        ) from exc


@activity.defn(name=RUN_BUSINESS_TOOL)
def run_business_tool(request: ToolRequest) -> ToolResult:
    """Sync activity: tools do blocking SQLite work, so they run in the worker's thread pool."""
    with timed_stage("tool"):
        return heartbeat_while(lambda: execute_tool(request), every=HEARTBEAT_SECONDS)
