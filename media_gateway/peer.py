"""What a call needs from the connection currently carrying it, whatever its transport."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from contracts.calls import Channel
from contracts.gateway_events import GatewayEvent


class LineBusyError(Exception):
    """A second connection for a call whose first connection is still live: refused."""


class Peer(Protocol):
    """What a call needs from the connection currently carrying it."""

    channel: Channel

    @property
    def live(self) -> bool: ...

    def send_audio(self, pcm16_16k: bytes) -> None: ...
    def clear_audio(self) -> None: ...
    def end_audio(self) -> None: ...
    @property
    def playback_frame_ms(self) -> int: ...
    @property
    def playback_marker(self) -> Callable[[str], None] | None:
        """Sends a named mark the peer echoes once the audio before it played; None without."""

    def send_event(self, event: GatewayEvent) -> None: ...
    async def close(self, reason: str, code: int = ...) -> None: ...


class ConsoleHold(Protocol):
    """The hold on a call waiting for a person: the human-agent console's (a browser call it
    was offered, media_gateway.console_desk) or a platform transfer's (a Twilio or ACS call,
    media_gateway.platform_hold). While set, the AI conversation is over for this call and
    the hold decides when its line closes, even after the workflow ended (a person may still
    be talking to the caller, or the platform has yet to take the stream)."""

    def caller_audio(self, pcm16_16k: bytes) -> None:
        """What the caller says, for the person once one took the call (dropped before)."""

    def call_ended(self, reason: str) -> None:
        """The caller hung up or their line was lost: the call leaves the console."""

    def make_way(self) -> None:
        """A reply is coming: the hold audio playing is cut, and resumes after the reply."""

    def detach(self) -> None:
        """The gateway is letting the call go (shutting down): stop what runs for the hold."""
