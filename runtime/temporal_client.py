"""The one place Baton connects to Temporal: the data converter every payload goes through
(pydantic models, encrypted by `runtime.codec`) and the address, so a codec or an interceptor
is added once for every process."""

from __future__ import annotations

import dataclasses

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverterWithEncodedAttributes

from contracts.temporal import NAMESPACE
from runtime.codec import EncryptionCodec, load_keys
from runtime.settings import settings

DEFAULT_ADDRESS = "127.0.0.1:7233"


def temporal_address(explicit: str | None = None) -> str:
    """`--address`, else `$BATON_TEMPORAL_ADDRESS`, else the embedded server's default."""
    return explicit or settings().temporal_address or DEFAULT_ADDRESS


def data_converter() -> DataConverter:
    """Pydantic payloads, encrypted; failure messages and stack traces are encrypted too, since
    an error can quote what the caller said."""
    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=EncryptionCodec(load_keys(settings())),
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )


async def connect(address: str | None = None, *, namespace: str = NAMESPACE) -> Client:
    """A client that carries Baton's encrypted pydantic payloads."""
    return await Client.connect(
        temporal_address(address), namespace=namespace, data_converter=data_converter()
    )
