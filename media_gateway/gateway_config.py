"""How this gateway serves its calls: where speech workers reach it, which scenario, the
barge-in and endpointing thresholds and which VAD decides what is speech."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from media_gateway.silero_vad import SileroClassifier
from media_gateway.vad import Endpointer, EndpointerConfig

VAD_OPTIONS = ("offline", "offline-light")
#: Speech that starts an utterance (and pauses a reply) with Silero: its first frame. Silero's
#: probability already tells voices from noise, so the energy VAD's 60 ms of proof only made
#: every barge-in 40 ms later. Over 60 s noise beds the first frame added brief pauses of a
#: reply only in music/TV (4 at 5 dB SNR, 1 at 10 dB) and clatter at 20 dB (1); bench_noise.
SILERO_MIN_SPEECH_MS = 20

#: 400 ms of quiet ends an utterance whatever was said (the endpointer before words were used).
FIXED_ENDPOINTING = EndpointerConfig(hangover_ms=400, pause_ms=120)
#: Quiet ends an utterance by its provisional words (contracts.words.sentence_ending): 240 ms
#: after a finished sentence or question, 700 ms after a trailing "and", "um" or digits, 400 ms
#: when the words do not say. Until they come it waits up to 700 ms: the answer needs those
#: words anyway (the recognizer started at the pause is what the turn waits on, not the quiet),
#: so waiting for them costs no time and keeps a caller mid-thought from being cut off.
#: The audio goes to the recognizer after 60 ms of quiet, and again after each later pause
#: when the caller went on; it keeps 60 ms of that quiet, as the end does, so the end adds
#: nothing and the words of the last pause stand. A shorter pause brings the words sooner
#: (80 ms had them 5-20 ms later, 120 ms ~60 ms later) but hands over at more gaps inside a
#: sentence: at 60 ms one more in one of the benches' sentences; much shorter would hand over
#: at the stops inside words (docs/PERFORMANCE.md).
ADAPTIVE_ENDPOINTING = EndpointerConfig(
    hangover_ms=400,
    pause_ms=60,
    post_roll_ms=60,
    complete_hangover_ms=240,
    trailing_hangover_ms=700,
    wait_for_words_ms=700,
)


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
    #: After 80 ms of quiet an utterance is handed over provisionally (again at each later
    #: pause), so recognition overlaps the rest of the wait (see segments.py); what ends it
    #: is `ADAPTIVE_ENDPOINTING`.
    endpointing: EndpointerConfig = field(default_factory=lambda: ADAPTIVE_ENDPOINTING)
    #: Speech confirmed over a reply holds it paused until the words say backchannel (resume)
    #: or not (cut); see barge_in.py. False: it cuts at once, as before words were used.
    hold_for_words: bool = True
    #: How long after the caller pauses a held reply waits for the words before it is cut, at
    #: least: the wait follows the recognizer's recent pace (recognizer_pace.py) between this
    #: and `max_word_wait_ms`. The recognizer takes ~0.45 s on an idle 2-core machine and
    #: 1.5-2.5 s on a loaded one; waiting costs a real interruption nothing (its answer needs
    #: the same words), while a backchannel cut for want of them is answered as a turn.
    #: LiveKit resumes a false interruption after 2 s by default; the same floor here.
    word_wait_ms: int = 2000
    #: The longest a held reply waits for words, however slow the recognizer has been: past
    #: it the caller has heard silence long enough to take the pause as the agent's.
    max_word_wait_ms: int = 6000
    #: Held speech longer than this is no backchannel: the reply is cut without the words.
    max_backchannel_ms: int = 1200
    #: `offline`: Silero VAD v6 decides what is speech (noise, clatter and babble are not);
    #: `offline-light`: the energy VAD alone (no model, far more false barge-ins in noise).
    vad: str = "offline"
    #: A call whose workflow task waits this long untaken by any worker is told so by the
    #: gateway itself (media_gateway.unserved); a loaded worker takes tasks within a second.
    unserved_notice_s: float = 3.0
    #: While no worker serves the call: a short update this often, the hold tone between...
    unserved_update_s: float = 15.0
    #: ...and after this long of notices, an honest goodbye and the hang-up.
    unserved_give_up_s: float = 60.0

    def __post_init__(self) -> None:
        if self.vad not in VAD_OPTIONS:
            raise ValueError(f"unknown VAD {self.vad!r}: choose one of {', '.join(VAD_OPTIONS)}")

    def new_endpointer(self) -> Endpointer:
        """A fresh endpointer (per call and connection) with the chosen VAD."""
        if self.vad == "offline-light":
            return Endpointer(self.endpointing)
        silero = replace(self.endpointing, min_speech_ms=SILERO_MIN_SPEECH_MS)
        return Endpointer(silero, classifier=SileroClassifier())
