"""What the gateway makes of any transport's frames, and the interface each transport's
serializer offers (`media_gateway.serializers` has the three). Pure: no sockets, no audio work.

Every transport's messages become these few events, so the connection and the call handle a
Twilio, ACS or browser caller alike.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, TypeAlias

from media_gateway.wire_fields import FrameError

DEFAULT_MAX_FRAME_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Started:
    """The stream began. ``sample_rate``/``encoding`` describe the wire, not the gateway side."""

    call_id: str | None
    stream_id: str | None
    sample_rate: int
    encoding: str
    custom_parameters: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Audio:
    """Caller audio, already converted to PCM16 mono 16 kHz little-endian."""

    pcm16_16k: bytes


@dataclass(frozen=True, slots=True)
class Dtmf:
    """One or more keypad digits pressed by the caller."""

    digits: str


@dataclass(frozen=True, slots=True)
class MarkPlayed:
    """The peer finished playing the audio sent before the mark of this name."""

    name: str


@dataclass(frozen=True, slots=True)
class Stopped:
    """The peer ended the stream."""


@dataclass(frozen=True, slots=True)
class Control:
    """A browser control message with no dedicated event (e.g. ``ping``)."""

    kind: str
    data: Mapping[str, object] = field(default_factory=dict)


MediaEvent: TypeAlias = Started | Audio | Dtmf | MarkPlayed | Stopped | Control


class MediaSerializer(abc.ABC):
    """Parses inbound frames into ``MediaEvent``s and builds outbound frames for one transport."""

    name: ClassVar[str]
    #: Playback audio per outbound message (`playback.Sink.frame_ms`).
    playback_frame_ms: ClassVar[int] = 20
    #: The peer echoes `mark`s as the audio before them plays, and the gateway trusts them for
    #: what was heard. Only Twilio's do: ACS has none, and the browser page keeps to the clock.
    echoes_marks: ClassVar[bool] = False

    def __init__(self, *, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes

    def parse(self, message: str | bytes) -> list[MediaEvent]:
        """Turn one WebSocket message into zero or more events; raises only ``FrameError``."""
        if isinstance(message, bytes) or message.isascii():
            size = len(message)
        else:
            size = len(message.encode("utf-8", "surrogatepass"))
        if size > self.max_frame_bytes:
            raise FrameError(
                f"{self.name}: frame of {size} bytes exceeds the {self.max_frame_bytes}-byte limit"
            )
        try:
            return self._parse(message)
        except FrameError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # Belt and braces: a slip in a parser must still cost one frame, not the call.
            raise FrameError(f"{self.name}: unusable frame: {exc!r}") from exc

    @abc.abstractmethod
    def _parse(self, message: str | bytes) -> list[MediaEvent]: ...

    @abc.abstractmethod
    def audio(self, pcm16_16k: bytes) -> list[str | bytes]:
        """Messages that play this PCM16 mono 16 kHz audio to the caller."""

    @abc.abstractmethod
    def clear(self) -> list[str | bytes]:
        """Messages that drop any audio the peer has buffered but not yet played (barge-in)."""

    def end_audio(self) -> list[str | bytes]:
        """Messages that play the rest of a reply still held by a resampler (a reply ended)."""
        return []

    @abc.abstractmethod
    def mark(self, name: str) -> list[str | bytes]:
        """Messages asking the peer to report when audio sent so far has played."""
