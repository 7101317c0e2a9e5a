"""Baton's payload converter is built once per process, not once per workflow activation."""

from __future__ import annotations

from temporalio import workflow
from temporalio.contrib.pydantic import PydanticJSONPlainPayloadConverter

from contracts.calls import Utterance
from runtime.temporal_client import SharedPydanticPayloadConverter, data_converter


def _json(converter: SharedPydanticPayloadConverter) -> PydanticJSONPlainPayloadConverter:
    (found,) = [
        c for c in converter.converters.values() if isinstance(c, PydanticJSONPlainPayloadConverter)
    ]
    return found


def test_converters_built_outside_the_sandbox_share_one_type_adapter_cache() -> None:
    first, second = SharedPydanticPayloadConverter(), SharedPydanticPayloadConverter()
    assert first is not second and _json(first) is _json(second)
    converter = data_converter().payload_converter
    utterance = Utterance(utterance_id="u1", text="hello")
    (payload,) = converter.to_payloads([utterance])
    assert converter.from_payloads([payload], [Utterance]) == [utterance]


def test_each_sandboxed_run_builds_its_own() -> None:
    """A run's re-imported classes must not stay in a cache that outlives the run."""
    shared = SharedPydanticPayloadConverter()
    workflow.unsafe._set_in_sandbox(True)
    try:
        inside = SharedPydanticPayloadConverter()
    finally:
        workflow.unsafe._set_in_sandbox(False)
    assert _json(inside) is not _json(shared)
