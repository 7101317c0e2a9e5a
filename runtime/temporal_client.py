"""The one place Baton connects to Temporal, so codecs and interceptors are added once."""

from __future__ import annotations

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from contracts.temporal import NAMESPACE
from runtime.settings import settings

DEFAULT_ADDRESS = "127.0.0.1:7233"


def temporal_address(explicit: str | None = None) -> str:
    """`--address`, else `$BATON_TEMPORAL_ADDRESS`, else the embedded server's default."""
    return explicit or settings().temporal_address or DEFAULT_ADDRESS


async def connect(address: str | None = None, *, namespace: str = NAMESPACE) -> Client:
    """A client that carries Baton's pydantic payloads."""
    return await Client.connect(
        temporal_address(address), namespace=namespace, data_converter=pydantic_data_converter
    )
