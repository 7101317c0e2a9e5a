"""The OpenAI SDK clients that the chat model and the audio providers use.

Every client is built with `max_retries=0`: Temporal's retry policy owns retries, and retries
inside the SDK would hide failures from it and stretch an attempt past its timeout.
"""

from __future__ import annotations

from openai import AsyncAzureOpenAI, AsyncOpenAI

DEFAULT_AZURE_API_VERSION = "2024-10-21"


def openai_client(*, api_key: str, base_url: str | None, timeout: float) -> AsyncOpenAI:
    """A client for OpenAI, or for an OpenAI-compatible server at `base_url`."""
    return AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)


def azure_openai_client(
    *,
    endpoint: str,
    api_key: str,
    deployment: str,
    api_version: str = DEFAULT_AZURE_API_VERSION,
    timeout: float,
) -> AsyncAzureOpenAI:
    """A client for one Azure OpenAI deployment, sending its key as an `api-key` header.

    Azure routes by deployment (`/openai/deployments/{deployment}/...`), so callers pass the
    deployment name wherever a request body wants a model name.
    """
    return AsyncAzureOpenAI(
        azure_endpoint=endpoint,
        azure_deployment=deployment,
        api_version=api_version,
        api_key=api_key,
        timeout=timeout,
        max_retries=0,
    )
