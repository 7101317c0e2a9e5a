"""The base of every payload model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Payload(BaseModel):
    """A frozen message that ignores fields it does not know, so a newer sender's payload
    still decodes in an older reader (and the other way round, through field defaults)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
