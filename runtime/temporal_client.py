"""The one place Baton connects to Temporal: the data converter every payload goes through
(pydantic models, encrypted by `runtime.codec`) and the address, so a codec or an interceptor
is added once for every process."""

from __future__ import annotations

import dataclasses

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes
from temporalio.envconfig import ClientConfig, ClientConnectConfig

from contracts.temporal import NAMESPACE
from runtime.codec import EncryptionCodec, load_keys
from runtime.settings import settings

DEFAULT_ADDRESS = "127.0.0.1:7233"


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


def data_converter() -> DataConverter:
    """Pydantic payloads, encrypted; failure messages and stack traces are encrypted too, since
    an error can quote what the caller said."""
    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=EncryptionCodec(load_keys(settings())),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


async def connect(address: str | None = None, *, namespace: str | None = None) -> Client:
    """A client that carries Baton's encrypted pydantic payloads."""
    options = connect_options(address)
    if namespace is not None:
        options["namespace"] = namespace
    return await Client.connect(**options, data_converter=data_converter())
