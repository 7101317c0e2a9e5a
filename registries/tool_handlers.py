"""Finding and calling the Python function behind each business tool.

A tool's handler lives in the `.py` module beside its YAML file. Modules are imported by path
(so a user's own registry folder needs no packaging) and cached per file.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from registries.errors import ToolArgumentError, UnknownNameError
from registries.registry_view import RegistryView
from registries.tool_runtime import ToolContext, ToolHandler
from registries.tool_schemas import check_arguments


@cache
def _import_module(path: Path) -> ModuleType:
    name = f"baton_tools_{abs(hash(str(path)))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def find_handler(registry: RegistryView, tool: str) -> ToolHandler:
    """The handler function of `tool`; raises UnknownNameError or ImportError."""
    if tool not in registry.tools:
        raise UnknownNameError(f"no business tool {tool!r}")
    path = registry.tool_modules[tool]
    handler = getattr(_import_module(path), registry.tools[tool].handler_name, None)
    if not callable(handler):
        raise UnknownNameError(f"{path.name} has no function {registry.tools[tool].handler_name!r}")
    return handler  # type: ignore[no-any-return]


def handler_problem(registry: RegistryView, tool: str) -> str | None:
    """Why `tool` cannot run, phrased as a fix, or None when its handler is in place."""
    path = registry.tool_modules[tool]
    if not path.exists():
        return f"no module {path.name} beside the YAML to hold the handler; create it"
    try:
        find_handler(registry, tool)
    except UnknownNameError as exc:
        return f"{exc}; define it or set handler: to the function's name"
    except Exception as exc:  # a user's module may fail to import in any way
        return f"{path.name} fails to import: {type(exc).__name__}: {exc}"
    return None


def run_tool(
    registry: RegistryView, tool: str, args: Mapping[str, Any], ctx: ToolContext
) -> dict[str, Any]:
    """Check the arguments against the tool's schema, then call its handler.

    Raises `ToolArgumentError` for arguments the schema refuses (the LLM can correct them).
    """
    spec = registry.tools.get(tool)
    if spec is None:
        raise ToolArgumentError(tool, "no such business tool")
    validator = registry.tool_validators.get(tool)
    if validator is None:
        # Its schema failed the load; a checked scenario never offers it, so this is a registry
        # edited under a running worker. Refusing lets the call go on without the tool.
        raise ToolArgumentError(
            tool, "its parameters schema is invalid (see baton scenario check); it cannot run"
        )
    check_arguments(tool, validator, args)
    return find_handler(registry, tool)(ctx, **args)
