"""`baton setup`: make a Temporal cluster ready for Baton.

Two things must exist before the first call: the namespace (registered here where the cluster
lets a client do it; Temporal Cloud does not, and creates namespaces in its own console) and
the custom search attributes every call upserts (`contracts.temporal.SEARCH_ATTRIBUTES`),
added through the operator service. Without them the first upsert fails the workflow task.
What already exists is reported and left alone, so setup can run at every deploy; the embedded
dev server (`baton dev`, `baton server`, the tests) runs the same code after it starts.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from google.protobuf.duration_pb2 import Duration
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import (
    AddSearchAttributesRequest,
    ListSearchAttributesRequest,
)
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from baton.preflight import CommandFailedError, connect_or_explain
from contracts.temporal import SEARCH_ATTRIBUTES
from runtime.temporal_client import connect_options

RPC_TIMEOUT = timedelta(seconds=10)
#: A cluster answers these when a client may not do an operation at all (Temporal Cloud, or an
#: authorizer that reserves namespaces and search attributes to administrators).
_NOT_ALLOWED = (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED)
#: A namespace registered a moment ago is unknown to the operator service until the server's
#: namespace cache refreshes (up to ~10 s by default), which it reports as NOT_FOUND.
_NOT_YET = (RPCStatusCode.NOT_FOUND, RPCStatusCode.UNAVAILABLE)


class SetupError(CommandFailedError):
    """The cluster cannot be made ready for Baton; the message says what to do instead."""


def indexed_value_type(kind: str) -> IndexedValueType.ValueType:
    """Temporal's enum value for a search attribute kind as written in contracts (`Keyword`,
    `Int`, `KeywordList`...)."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", kind).upper()
    return IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{snake}")


async def prepare_namespace(client: Client, namespace: str, retention_days: int) -> str:
    """Register `namespace` unless it exists; returns what happened, in a few words."""
    service = client.workflow_service
    try:
        await service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace), timeout=RPC_TIMEOUT
        )
        return "already exists"
    except RPCError as error:
        if error.status not in (RPCStatusCode.NOT_FOUND, *_NOT_ALLOWED):
            raise
        cannot_describe = error.status != RPCStatusCode.NOT_FOUND
    retention = Duration()
    retention.FromTimedelta(timedelta(days=retention_days))
    request = RegisterNamespaceRequest(
        namespace=namespace,
        description="Baton calls",
        workflow_execution_retention_period=retention,
    )
    try:
        await service.register_namespace(request, timeout=RPC_TIMEOUT)
    except RPCError as error:
        if error.status == RPCStatusCode.ALREADY_EXISTS:
            return "already exists"
        if error.status not in _NOT_ALLOWED:
            raise
        if cannot_describe:  # it may well exist: the attribute step below finds out
            return "not checked (this cluster lets Baton neither describe nor register it)"
        raise SetupError(
            f"namespace {namespace!r} does not exist and this cluster does not let Baton "
            f"register it ({error.message}). Create it with the cluster's own tools (Temporal "
            "Cloud: its web console or `tcld namespace create`), then run `baton setup` again."
        ) from error
    return f"registered (history kept {retention_days} days)"


async def ensure_search_attributes(
    client: Client, namespace: str, wanted: Mapping[str, str], *, wait_seconds: float = 30.0
) -> dict[str, str]:
    """Add the search attributes of `wanted` (name -> kind) that `namespace` lacks, and wait
    until all of them are listed; returns each name's outcome ("added", "already exists")."""
    operator = client.operator_service
    deadline = time.monotonic() + wait_seconds
    listed = await _listed_attributes(client, namespace, deadline)
    mismatched = [
        f"{name} is {IndexedValueType.Name(listed[name])}, Baton needs {kind}"
        for name, kind in wanted.items()
        if name in listed and listed[name] != indexed_value_type(kind)
    ]
    if mismatched:
        raise SetupError(
            f"namespace {namespace!r} has search attributes of another type: "
            f"{'; '.join(mismatched)}. Remove them (`temporal operator search-attribute "
            "remove`) or use another namespace."
        )
    missing = {name: kind for name, kind in wanted.items() if name not in listed}
    if missing:
        request = AddSearchAttributesRequest(
            namespace=namespace,
            search_attributes={name: indexed_value_type(kind) for name, kind in missing.items()},
        )
        while True:
            try:
                await operator.add_search_attributes(request, timeout=RPC_TIMEOUT)
                break
            except RPCError as error:
                if error.status == RPCStatusCode.ALREADY_EXISTS:
                    break  # another `baton setup` added them first
                if error.status in _NOT_ALLOWED:
                    raise SetupError(_add_them_yourself(namespace, missing, error)) from error
                if error.status not in _NOT_YET or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
        while set(missing) - set(await _listed_attributes(client, namespace, deadline)):
            if time.monotonic() > deadline:
                raise SetupError(
                    f"search attributes {sorted(missing)} were added to {namespace!r} but are "
                    f"still not listed after {wait_seconds:.0f} s"
                )
            await asyncio.sleep(0.2)
    return {name: "added" if name in missing else "already exists" for name in wanted}


async def _listed_attributes(
    client: Client, namespace: str, deadline: float
) -> dict[str, IndexedValueType.ValueType]:
    while True:
        try:
            listed = await client.operator_service.list_search_attributes(
                ListSearchAttributesRequest(namespace=namespace), timeout=RPC_TIMEOUT
            )
            return dict(listed.custom_attributes)
        except RPCError as error:
            if error.status in _NOT_ALLOWED:
                raise SetupError(
                    f"this cluster does not let Baton list the search attributes of "
                    f"{namespace!r} ({error.message}); make sure it has "
                    + ", ".join(f"{n} ({k})" for n, k in SEARCH_ATTRIBUTES.items())
                ) from error
            if error.status not in _NOT_YET or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.5)


def _add_them_yourself(namespace: str, missing: Mapping[str, str], error: RPCError) -> str:
    flags = " ".join(f"--sa {name}={kind}" for name, kind in missing.items())
    return (
        f"namespace {namespace!r} lacks search attributes {', '.join(missing)} and this cluster "
        f"does not let Baton add them ({error.message}). Add them with the cluster's own tools "
        f"(Temporal Cloud: `tcld namespace search-attributes add -n {namespace} {flags}`), then "
        "run `baton setup` again."
    )


# --- `baton setup` ----------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    """Add `baton setup` to the `baton` subcommands."""
    setup = commands.add_parser(
        "setup", help="register Baton's namespace and search attributes on a Temporal cluster"
    )
    setup.add_argument(
        "--address", help="Temporal address (default $BATON_TEMPORAL_ADDRESS, $TEMPORAL_ADDRESS)"
    )
    setup.add_argument(
        "--namespace", help="namespace to prepare (default $TEMPORAL_NAMESPACE or default)"
    )
    setup.add_argument(
        "--retention-days",
        type=int,
        default=7,
        help="how long a new namespace keeps closed calls' history (default 7)",
    )
    setup.add_argument(
        "--wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="keep trying this long while the server is not reachable yet (default 0)",
    )
    setup.set_defaults(handler=run_setup_command)


def run_setup_command(args: argparse.Namespace) -> int:
    if args.retention_days < 1:
        raise SetupError("--retention-days must be at least 1")
    namespace = args.namespace or connect_options(args.address)["namespace"]

    async def main() -> None:
        client = await _connect_within(args.address, namespace, args.wait)
        outcome = await prepare_namespace(client, namespace, args.retention_days)
        print(f"namespace {namespace}: {outcome}")
        outcomes = await ensure_search_attributes(client, namespace, SEARCH_ATTRIBUTES)
        for name, added in outcomes.items():
            print(f"search attribute {name} ({SEARCH_ATTRIBUTES[name]}): {added}")
        print(f"Temporal is ready for Baton (namespace {namespace}).", flush=True)

    asyncio.run(main())
    return 0


async def _connect_within(address: str | None, namespace: str, wait_seconds: float) -> Client:
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            return await connect_or_explain(address, namespace=namespace)
        except CommandFailedError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(1.0)
