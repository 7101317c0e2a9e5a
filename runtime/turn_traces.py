"""One trace per caller turn, across the workflow: the turn's activities join the trace of the
Update that delivered the utterance.

temporalio's `TracingInterceptor` puts the caller's trace context on each Update it sends (the
gateway sends one per utterance, inside its turn span), but a call's workflow answers
utterances in its main loop, not in the Update's handler, so a turn's activities would join the
call's own trace instead. This interceptor remembers each `submit_utterance` Update's trace
header by its id (the utterance id) and, while the workflow answers that utterance (it names
it: `answering_utterance`), makes it the current context when an activity is started, so the
`StartActivity` span `TracingInterceptor` records (and the `RunActivity` span on the worker
that runs it) lands in the utterance's trace. Nothing here changes a command, so histories
replay unchanged. Hand-written because no library knows which Update a workflow's main loop is
serving.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.client import Interceptor as ClientInterceptor
from temporalio.converter import PayloadConverter
from temporalio.worker import (
    HandleUpdateInput,
    Interceptor,
    StartActivityInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from contracts.calls import UPDATE_SUBMIT_UTTERANCE

#: temporalio's TracingInterceptor carries the trace context under this header.
TRACE_HEADER = "_tracer-data"
#: Utterances whose trace header a call keeps (a turn is answered within a few of arriving).
REMEMBERED = 32
_PROPAGATOR = TraceContextTextMapPropagator()


class TurnTraces(ClientInterceptor, Interceptor):
    """Given to the client after `TracingInterceptor` (runtime.tracing), so its workflow
    outbound runs before `TracingInterceptor`'s; it reaches the workers built on that client
    and changes nothing on the client side."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _TurnTracesInbound


class _TurnTracesInbound(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        self.headers: dict[str, Payload] = {}
        super().init(_TurnTracesOutbound(outbound, self.headers))

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        header = input.headers.get(TRACE_HEADER)
        if input.update == UPDATE_SUBMIT_UTTERANCE and header is not None:
            self.headers[input.id] = header
            while len(self.headers) > REMEMBERED:
                self.headers.pop(next(iter(self.headers)))
        return await super().handle_update_handler(input)


class _TurnTracesOutbound(WorkflowOutboundInterceptor):
    def __init__(self, next: WorkflowOutboundInterceptor, headers: dict[str, Payload]) -> None:
        super().__init__(next)
        self.headers = headers

    @contextmanager
    def _in_turn_trace(self) -> Iterator[None]:
        utterance = getattr(workflow.instance(), "answering_utterance", None)
        header = self.headers.get(utterance) if isinstance(utterance, str) else None
        if header is None:
            yield
            return
        carrier = PayloadConverter.default.from_payloads([header])[0]
        token = otel_context.attach(_PROPAGATOR.extract(carrier))
        try:
            yield
        finally:
            otel_context.detach(token)

    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        with self._in_turn_trace():
            return super().start_activity(input)

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        with self._in_turn_trace():
            return super().start_local_activity(input)
