"""How this gateway serves its calls: where speech workers reach it, which scenario, the
barge-in and endpointing thresholds and which VAD decides what is speech."""

from __future__ import annotations

from dataclasses import dataclass, field

from media_gateway.silero_vad import SileroClassifier
from media_gateway.vad import Endpointer, EndpointerConfig

VAD_OPTIONS = ("offline", "offline-light")


@dataclass(frozen=True)
class GatewayConfig:
    #: gRPC address speech workers use to reach this gateway (it travels with each call).
    media_address: str
    scenario: str = "banking"
    registry: str | None = None
    #: Caller speech shorter than this during playback pauses it but does not interrupt.
    min_barge_in_ms: int = 160
    #: How long a dropped connection may stay away before the call is hung up.
    reconnect_grace_s: float = 15.0
    #: 400 ms of quiet ends an utterance; after 120 ms it is handed over provisionally, so
    #: recognition overlaps the rest of the wait (see segments.py).
    endpointing: EndpointerConfig = field(
        default_factory=lambda: EndpointerConfig(hangover_ms=400, pause_ms=120)
    )
    #: `offline`: Silero VAD v6 decides what is speech (noise, clatter and babble are not);
    #: `offline-light`: the energy VAD alone (no model, far more false barge-ins in noise).
    vad: str = "offline"

    def __post_init__(self) -> None:
        if self.vad not in VAD_OPTIONS:
            raise ValueError(f"unknown VAD {self.vad!r}: choose one of {', '.join(VAD_OPTIONS)}")

    def new_endpointer(self) -> Endpointer:
        """A fresh endpointer (per call and connection) with the chosen VAD."""
        classifier = SileroClassifier() if self.vad == "offline" else None
        return Endpointer(self.endpointing, classifier=classifier)
