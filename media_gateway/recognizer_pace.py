"""How long the speech workers have lately taken to say what a caller's segment was.

A reply paused under caller speech waits for the words (barge_in.py): a backchannel resumes
it, anything else cuts it. A fixed wait loses every backchannel as soon as the recognizer
slows down: Whisper took 1.6 s p50 and 2.4 s p95 on a loaded 2-core machine, and with a 2 s
wait 7 to 8 backchannels of 8 were cut there (docs/PERFORMANCE.md). Waiting longer costs a real
interruption nothing, since its answer needs the same words and the cut comes the moment they
do, so the wait follows what the recognizer has recently taken instead.

The pace is the gateway's, not one call's: the speech workers serve all of its calls, and a
backchannel over the greeting comes before the call has had any words of its own.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque

#: Recent answers kept: enough for a stable 90th percentile, few enough to follow a change of
#: load within a minute or two of calls.
WINDOW = 64
#: Segments handed over whose first words are still awaited, per gateway (older ones forgotten).
MAX_AWAITED = 1024
#: Headroom over the recent 90th percentile, for the slower answers beyond it.
HEADROOM = 1.5


class RecognizerPace:
    """The time from handing a segment to the speech worker to its first words, recently."""

    def __init__(self) -> None:
        self._took_ms: deque[float] = deque(maxlen=WINDOW)
        self._awaited: OrderedDict[str, float] = OrderedDict()

    def handed_over(self, segment_ref: str) -> None:
        """`segment_ref` went to the recognizer now (its first words time the answer)."""
        self._awaited.setdefault(segment_ref, time.monotonic())
        while len(self._awaited) > MAX_AWAITED:
            self._awaited.popitem(last=False)

    def words_came(self, segment_ref: str) -> None:
        """The first words of `segment_ref` arrived (later reports on it are not timed)."""
        since = self._awaited.pop(segment_ref, None)
        if since is not None:
            self._took_ms.append((time.monotonic() - since) * 1000)

    def observe(self, took_ms: float) -> None:
        """One answer that took `took_ms` (for tests and for answers timed elsewhere)."""
        self._took_ms.append(took_ms)

    def wait_ms(self, floor_ms: int, cap_ms: int) -> int:
        """How long to wait for words now: the recent 90th percentile with headroom, never
        under `floor_ms` nor over `cap_ms`. Before the recognizer has answered once, half way
        between them: a slow start (models still warming, a loaded machine) is likelier than
        a fast one, and a wait longer than needed costs only when no words ever come."""
        cap_ms = max(cap_ms, floor_ms)
        if not self._took_ms:
            return (floor_ms + cap_ms) // 2
        ordered = sorted(self._took_ms)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        return int(min(max(p90 * HEADROOM, floor_ms), cap_ms))


#: The pace of this process's gateway (one gateway per process outside tests).
GATEWAY_PACE = RecognizerPace()
