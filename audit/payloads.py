"""Decoding a history's payloads on request, through the project's own data converter (the
pydantic converter with the AES-GCM codec from `runtime.temporal_client`): a bundle keeps them
as exported, ciphertext included, and only a reader that asks for a value decrypts it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from cryptography.exceptions import InvalidTag
from pydantic import ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DataConverter

from audit.errors import AuditError
from runtime.codec import CodecKeyError
from runtime.temporal_client import data_converter

T = TypeVar("T")


class PayloadReader:
    """Turns payloads into values of a given type, with errors a person can act on."""

    def __init__(self, converter: DataConverter | None = None) -> None:
        try:
            self.converter = converter or data_converter()
        except CodecKeyError as error:
            raise AuditError(str(error)) from None

    async def value(self, payloads: Sequence[Payload], type_hint: type[T]) -> T:
        """The first payload as a `type_hint`."""
        values = await self.values(payloads[:1], [type_hint])
        result: T = values[0]
        return result

    async def values(self, payloads: Sequence[Payload], type_hints: list[Any]) -> list[Any]:
        try:
            return await self.converter.decode(payloads, type_hints)
        except CodecKeyError as error:
            raise AuditError(str(error)) from None
        except InvalidTag:
            raise AuditError(
                "a payload does not decrypt with the codec key of the same id: this is not the "
                "key the call was recorded with (check BATON_CODEC_KEYS / BATON_CODEC_KEY_FILE)"
            ) from None
        except (ValidationError, ValueError, TypeError) as error:
            first = str(error).splitlines()[0]
            raise AuditError(f"a payload does not decode as {type_hints}: {first}") from None

    async def failure_message(self, failure: Failure) -> str:
        """A recorded failure's message (encrypted with the payloads when the codec is on)."""
        try:
            error = await self.converter.decode_failure(failure)
        except CodecKeyError as problem:
            raise AuditError(str(problem)) from None
        except InvalidTag:
            return "(a failure message this key cannot decrypt)"
        cause = error.__cause__
        text = str(error) if cause is None else f"{error}: {cause}"
        return text.splitlines()[0] if text else type(error).__name__
