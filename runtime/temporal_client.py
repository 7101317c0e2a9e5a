"""The one place Baton connects to Temporal: the data converter every payload goes through
(pydantic models, encrypted by `runtime.codec`) and the address, so a codec or an interceptor
(the OpenTelemetry one, `runtime.tracing`) is added once for every process."""

from __future__ import annotations

import dataclasses
import re
import threading
from typing import Any, ClassVar

import structlog
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.client import Interceptor as ClientInterceptor
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes
from temporalio.envconfig import ClientConfig, ClientConnectConfig
from temporalio.service import TLSConfig
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput
from temporalio.worker import Interceptor as WorkerInterceptor

from contracts.temporal import NAMESPACE, workflow_id_for
from runtime.codec import EncryptionCodec, load_keys
from runtime.settings import settings
from runtime.tracing import tracing_interceptors

DEFAULT_ADDRESS = "127.0.0.1:7233"
#: How hyper and rustls word a connection the server closed: which one appears depends on
#: where in the client's first call the close lands (seen in tests/temporal/test_temporal_tls).
_HUNG_UP = re.compile(
    r"broken pipe|UnexpectedEof|close_notify|ConnectionReset|connection reset|connection closed",
    re.IGNORECASE,
)


def connect_options(address: str | None = None) -> ClientConnectConfig:
    """Where and how to connect, from Temporal's own environment configuration (a profile in
    its config file, `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, TLS and
    mTLS files), with `--address` and `BATON_TEMPORAL_ADDRESS` taking precedence for the
    address and the embedded server's address as the last resort."""
    options = ClientConfig.load_client_connect_config()
    options["target_host"] = (
        address or settings().temporal_address or options.get("target_host") or DEFAULT_ADDRESS
    )
    options.setdefault("namespace", NAMESPACE)
    return options


def temporal_address(explicit: str | None = None) -> str:
    """The address `connect(explicit)` would reach."""
    return connect_options(explicit)["target_host"]


def tls_problem(error: BaseException, options: ClientConnectConfig) -> str | None:
    """What a failed `connect` means when TLS is the cause, and what to set, as one phrase; None
    when TLS is not the cause. The SDK reports a TLS failure as tonic's and rustls's debug text
    (`...InvalidCertificate(UnknownIssuer)...`, or only "broken pipe" when the server hung up
    on the handshake), which says neither what went wrong nor which variable fixes it."""
    text = str(error)
    certificate = re.search(r"InvalidCertificate\((\w+)", text)
    if certificate:
        match certificate.group(1):
            case "UnknownIssuer":
                return (
                    "its TLS certificate is signed by a CA this process does not trust; set "
                    "TEMPORAL_TLS_SERVER_CA_CERT_PATH to that CA's certificate"
                )
            case "NotValidForName" | "NotValidForNameContext":
                return (
                    "its TLS certificate is not issued for the name connected to; set "
                    "TEMPORAL_TLS_SERVER_NAME to a name the certificate carries"
                )
            case "Expired" | "ExpiredContext" | "NotValidYet" | "NotValidYetContext":
                return "its TLS certificate has expired or is not valid yet"
            case other:
                return f"its TLS certificate was refused ({other})"
    # The connection opened, then the server hung up on the first call: the handshake failed
    # on its side. Which setting is missing depends on what this process sent.
    if "error after connection" not in text or not re.search(_HUNG_UP, text):
        return None
    tls = options.get("tls")
    if not tls:
        return (
            "it closed a plaintext connection; if it expects TLS, set TEMPORAL_TLS=true (and "
            "TEMPORAL_TLS_SERVER_CA_CERT_PATH for a private CA)"
        )
    if isinstance(tls, TLSConfig) and tls.client_cert:
        return (
            "it closed the TLS connection, so it may not trust the client certificate in "
            "TEMPORAL_TLS_CLIENT_CERT_PATH (is it signed by the CA the server trusts?)"
        )
    return (
        "it closed the TLS connection; if it requires a client certificate (mTLS), set "
        "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH"
    )


class SharedPydanticPayloadConverter(PydanticPayloadConverter):
    """The SDK's pydantic converter, built once per process instead of once per use.

    The SDK builds a data converter's payload converter anew on every workflow activation,
    twice (its command-aware converter, even though Baton's converters take no serialization
    context), and each build makes a fresh cache of pydantic `TypeAdapter`s (an `lru_cache`
    wrapper: most of the cost). Replaying a 500-turn call built 4,000 of them, a sixth of the
    SDK's own work per activation (py-spy, docs/PERFORMANCE.md). Outside the sandbox every
    build now shares one converter's parts; the converters are stateless but for that cache,
    which is thread-safe. Inside the workflow sandbox each run still builds its own, so the
    cache never keeps the classes of a run's re-imported modules alive after the run.
    """

    _prototype: ClassVar[PydanticPayloadConverter | None] = None
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        if workflow.unsafe.in_sandbox():
            super().__init__()
            return
        with self._lock:
            if SharedPydanticPayloadConverter._prototype is None:
                SharedPydanticPayloadConverter._prototype = PydanticPayloadConverter()
            prototype = SharedPydanticPayloadConverter._prototype
        # The same converter objects (and so the same TypeAdapter cache), under a new name.
        self.__dict__.update(prototype.__dict__)


def data_converter() -> DataConverter:
    """Pydantic payloads, encrypted; failure messages and stack traces are encrypted too, since
    an error can quote what the caller said."""
    return dataclasses.replace(
        pydantic_data_converter,
        payload_converter_class=SharedPydanticPayloadConverter,
        payload_codec=EncryptionCodec(load_keys(settings())),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


class CallIdInLogs(ClientInterceptor, WorkerInterceptor):
    """Every line logged while an activity runs names its call (`call_id`), so a worker serving
    many calls has logs that can be told apart. Given to the client, it reaches every worker
    built on that client."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _BindCallId(next)


class _BindCallId(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        workflow_id = activity.info().workflow_id or ""
        call_id = workflow_id.removeprefix(workflow_id_for(""))
        # structlog's merge_contextvars adds it to each line; the SDK copies the context into
        # the thread of a sync activity, so the tools' lines carry it too.
        with structlog.contextvars.bound_contextvars(call_id=call_id):
            return await self.next.execute_activity(input)


async def connect(address: str | None = None, *, namespace: str | None = None) -> Client:
    """A client that carries Baton's encrypted pydantic payloads."""
    options = connect_options(address)
    if namespace is not None:
        options["namespace"] = namespace
    # With tracing on, the interceptor given to the client also traces every worker built on
    # it (workflows, activities), so workers/worker.py needs no interceptor of its own.
    return await Client.connect(
        **options,
        data_converter=data_converter(),
        interceptors=[CallIdInLogs(), *tracing_interceptors()],
    )
