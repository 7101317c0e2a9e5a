"""The browser softphone's protocol with the gateway: typed JSON messages, both ways.

Binary WebSocket frames carry audio (PCM16 mono 16 kHz little-endian); text frames carry one
of these JSON objects, told apart by `type`. Twilio and ACS speak their own vendors' formats,
which `media_gateway.serializers` maps to the gateway's internal events.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, TypeAdapter

from contracts.calls import CallStatus, CallSummary
from contracts.transcript import TranscriptItem

BROWSER_SAMPLE_RATE = 16000


class _Frame(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# --- browser -> gateway -----------------------------------------------------------------


class StartFrame(_Frame):
    """Opens the stream. The format fields describe the wire; only PCM16 at 16 kHz is spoken."""

    type: Literal["start"]
    call_id: StrictStr | None = None
    stream_id: StrictStr | None = None
    sample_rate: StrictInt = BROWSER_SAMPLE_RATE
    encoding: StrictStr = "pcm16"
    parameters: dict[StrictStr, StrictStr] = Field(default_factory=dict)


class StopFrame(_Frame):
    """The caller hung up."""

    type: Literal["stop"]


class DtmfFrame(_Frame):
    type: Literal["dtmf"]
    digits: StrictStr


class MarkPlayedFrame(_Frame):
    """The page finished playing the audio sent before the gateway's mark of this name."""

    type: Literal["mark"]
    name: StrictStr


class PingFrame(_Frame):
    """Keep-alive; answered with `PongEvent`. Extra fields are allowed and ignored."""

    type: Literal["ping"]


BrowserFrame = Annotated[
    StartFrame | StopFrame | DtmfFrame | MarkPlayedFrame | PingFrame, Field(discriminator="type")
]
browser_frame = TypeAdapter[BrowserFrame](BrowserFrame)


# --- gateway -> browser -----------------------------------------------------------------


class ClearEvent(_Frame):
    """Drop queued audio now: the caller is talking over the agent."""

    type: Literal["clear"] = "clear"


class MarkEvent(_Frame):
    """Echo `name` back (a `MarkPlayedFrame`) once the audio sent before it has played."""

    type: Literal["mark"] = "mark"
    name: str


class SpeakingEvent(_Frame):
    """An agent's reply is playing; `text` grows while the model is still writing it."""

    type: Literal["speaking"] = "speaking"
    agent: str
    text: str
    reply_id: str


class BargeInEvent(_Frame):
    type: Literal["barge_in"] = "barge_in"
    heard_chars: int
    played_ms: int


class UtteranceEvent(_Frame):
    """The gateway heard an utterance of `ms` milliseconds and sent it for recognition."""

    type: Literal["utterance"] = "utterance"
    segment: str
    ms: int


class TimelineEvent(_Frame):
    """Where the call stands, and the transcript items from index `start` on (the page keeps
    those before `start` and replaces the rest)."""

    type: Literal["timeline"] = "timeline"
    state: CallSummary
    start: int = 0
    items: list[TranscriptItem] = Field(default_factory=list)


class EndedEvent(_Frame):
    type: Literal["ended"] = "ended"
    status: CallStatus


class PongEvent(_Frame):
    type: Literal["pong"] = "pong"


GatewayEvent = Annotated[
    ClearEvent
    | MarkEvent
    | SpeakingEvent
    | BargeInEvent
    | UtteranceEvent
    | TimelineEvent
    | EndedEvent
    | PongEvent,
    Field(discriminator="type"),
]
gateway_event = TypeAdapter[GatewayEvent](GatewayEvent)
