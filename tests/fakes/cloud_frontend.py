# The generated stubs type each servicer as synchronous, abstract and for `grpc.Server`; grpc.aio
# serves the same classes with coroutine methods, and unimplemented ones answer UNIMPLEMENTED.
# mypy: disable-error-code="override, abstract, arg-type"
"""A Temporal frontend on 127.0.0.1 that answers like a managed cluster (Temporal Cloud) does
to what `baton setup` asks: a real gRPC server speaking Temporal's own service definitions, so
the SDK's real client connects to it, but one that refuses what such a cluster reserves to its
own console, registering namespaces and adding search attributes, with PERMISSION_DENIED.

    async with CloudLikeFrontend(namespaces={"calls": {"BatonStatus": KEYWORD}}) as frontend:
        ... baton setup --address frontend.address --namespace calls

Temporal Cloud cannot run here; the dev server allows both operations, so this is the only way
to see setup's answers to a cluster that does not.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import grpc
from temporalio.api.operatorservice.v1 import (
    ListSearchAttributesRequest,
    ListSearchAttributesResponse,
)
from temporalio.api.operatorservice.v1 import (
    service_pb2_grpc as operator_grpc,
)
from temporalio.api.workflowservice.v1 import (
    DescribeNamespaceRequest,
    DescribeNamespaceResponse,
    GetSystemInfoResponse,
)
from temporalio.api.workflowservice.v1 import (
    service_pb2_grpc as workflow_grpc,
)

REFUSAL = "Request unauthorized: manage this through the cloud console"


class _Workflows(workflow_grpc.WorkflowServiceServicer):
    def __init__(self, namespaces: dict[str, dict[str, int]]) -> None:
        self.namespaces = namespaces
        self.calls: list[str] = []

    async def GetSystemInfo(self, request: Any, context: Any) -> GetSystemInfoResponse:  # noqa: N802
        return GetSystemInfoResponse(server_version="cloud-like")

    async def DescribeNamespace(  # noqa: N802
        self, request: DescribeNamespaceRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> DescribeNamespaceResponse:
        self.calls.append("DescribeNamespace")
        if request.namespace not in self.namespaces:
            await context.abort(
                grpc.StatusCode.NOT_FOUND, f"Namespace {request.namespace} not found"
            )
        response = DescribeNamespaceResponse()
        response.namespace_info.name = request.namespace
        return response

    async def RegisterNamespace(self, request: Any, context: Any) -> None:  # noqa: N802
        self.calls.append("RegisterNamespace")
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, REFUSAL)


class _Operator(operator_grpc.OperatorServiceServicer):
    def __init__(self, workflows: _Workflows) -> None:
        self.workflows = workflows

    async def ListSearchAttributes(  # noqa: N802
        self, request: ListSearchAttributesRequest, context: Any
    ) -> ListSearchAttributesResponse:
        self.workflows.calls.append("ListSearchAttributes")
        attributes = self.workflows.namespaces.get(request.namespace, {})
        return ListSearchAttributesResponse(custom_attributes=attributes)

    async def AddSearchAttributes(self, request: Any, context: Any) -> None:  # noqa: N802
        self.workflows.calls.append("AddSearchAttributes")
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, REFUSAL)


class CloudLikeFrontend:
    """The server; `namespaces` maps each existing namespace to its custom search attributes
    (name -> IndexedValueType). `calls` lists the RPCs it answered, in order."""

    def __init__(self, namespaces: dict[str, dict[str, int]]) -> None:
        self._workflows = _Workflows(namespaces)
        self._server = grpc.aio.server()
        workflow_grpc.add_WorkflowServiceServicer_to_server(self._workflows, self._server)
        operator_grpc.add_OperatorServiceServicer_to_server(
            _Operator(self._workflows), self._server
        )
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def calls(self) -> list[str]:
        return self._workflows.calls

    async def __aenter__(self) -> CloudLikeFrontend:
        await self._server.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self._server.stop(grace=None)
