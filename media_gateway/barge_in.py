"""Caller speech over a reply: paused at once, then resumed or cut, by duration and by words.

Onset pauses the reply (the caller never talks over the agent). A burst that proves to be noise
resumes it. Speech that lasts (``min_barge_in_ms`` of varying speech) used to cut the reply
there; now it is *held*: the reply stays paused while the recognizer finds the words, and the
words decide. Only backchannels ("mm-hmm", "okay", the scenario's list; contracts.words) resume
the reply where it paused; anything else cuts it, as before. Nothing waits on the words that a
real interruption needs: the caller hears silence from onset either way, and the workflow gets
the cut the moment the words (or the deadline) say so, while its recognition of the new
utterance is already under way.

The words can only come once the caller pauses (the endpointer hands the audio over then), so
the deadline runs from there, or from the last frame of speech that goes on after that pause:
as long as the recognizer has lately taken to answer, with headroom (recognizer_pace.py),
never less than ``word_wait_ms`` (2 s) nor more than ``max_word_wait_ms`` (6 s), and half way
between them before it has answered once. Speech longer than any backchannel
(``max_backchannel_ms``) cuts without waiting, and a held reply whose stream went quiet
without a pause (a dropped connection's last frames) is cut after both have passed.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable

import structlog

from media_gateway.gateway_config import GatewayConfig
from media_gateway.observability import count_barge_in
from media_gateway.playback import Heard, Playback
from media_gateway.recognizer_pace import GATEWAY_PACE, RecognizerPace
from media_gateway.vad import Endpointer

log = structlog.get_logger("baton.gateway")

#: Decisions remembered for the speech worker's final report on each segment.
REMEMBERED_DECISIONS = 8


class BargeIn:
    """One call's barge-in state: whether a reply is paused, held for words, or resumed."""

    def __init__(
        self,
        playback: Playback,
        config: GatewayConfig,
        *,
        cut: Callable[[Heard], None],
        not_a_turn: Callable[[str], None],
        pace: RecognizerPace = GATEWAY_PACE,
    ) -> None:
        self.playback = playback
        self.pace = pace
        self.config = config
        self._on_cut = cut
        self._not_a_turn = not_a_turn
        #: A reply is paused under caller speech, cut or resumed not yet decided.
        self.pending = False
        #: Confirmed by duration, waiting for the words of `_segment_ref` (None: not handed over).
        self.holding = False
        self._segment_ref: str | None = None
        self._utterance_id = ""
        self._deadline: asyncio.TimerHandle | None = None
        #: Segment ref -> whether its words resumed the reply (the worker's final report asks).
        self._decisions: OrderedDict[str, bool] = OrderedDict()

    # -- the endpointer's events -----------------------------------------------------------

    def speech_started(self) -> None:
        """Stop talking the instant the caller starts; decide later if it was real."""
        self.pending = self.playback.pause()

    def noise(self) -> None:
        """The burst was noise: carry on speaking."""
        if self.pending:
            self._release()
            self.playback.resume()
            count_barge_in("resumed")

    def confirm(self) -> None:
        """The speech lasted: hold the reply for the words (or, with holding off, cut it)."""
        if not self.pending or self.holding:
            return
        if not self.config.hold_for_words:
            self.cut()
            return
        self.holding = True
        self._arm(self.config.max_backchannel_ms + self._word_wait_ms())

    def words_due(self, segment_ref: str, utterance_id: str) -> bool:
        """The held speech was handed over as `segment_ref`: its words are due within
        the word wait. True when the reply is held for them (the utterance says so)."""
        self.pace.handed_over(segment_ref)  # every segment's answer times the recognizer
        if not self.holding:
            return False
        if self._segment_ref is None:
            self._segment_ref, self._utterance_id = segment_ref, utterance_id
            self._arm(self._word_wait_ms())
        return self._segment_ref == segment_ref

    def check(self, endpointer: Endpointer, open_segment_ref: str | None) -> None:
        """After each chunk of caller audio: the duration rule, and speech that outgrew a
        backchannel (too long, or going on after a resumed one)."""
        if (
            self.pending
            and endpointer.speech_ms >= self.config.min_barge_in_ms
            and endpointer.speech_varies
        ):
            self.confirm()
        if self.holding and endpointer.speech_ms > self.config.max_backchannel_ms:
            self.cut()
            return
        if self.holding and self._segment_ref is not None and endpointer.went_on_after_pause:
            # "Okay, okay": more speech after the handover, and only words covering all of it
            # can resume the reply, which come once it ends; the wait runs from its last frame.
            self._arm(self._word_wait_ms())
        elif (
            open_segment_ref is not None
            and self._decisions.get(open_segment_ref)
            and not endpointer.awaiting_words
        ):
            # The caller went on after a resumed backchannel, in the same utterance: "Okay,
            # ... okay" (a fast recognizer answers inside the comma's pause) or "Okay... so
            # what about my card". Pause again and let the words of the whole decide, as for
            # the first part; with no reply left to pause, the utterance is a turn.
            self._decisions[open_segment_ref] = False
            self.pending = self.playback.pause()
            if self.pending:
                self.holding, self._segment_ref = True, open_segment_ref
                self._arm(self._word_wait_ms())

    # -- the recognizer's answer -----------------------------------------------------------

    def words(self, segment_ref: str, *, backchannel: bool, covers_all: bool) -> bool:
        """The words of `segment_ref` are in; True when the reply paused under it resumed.

        `covers_all` is False for provisional words the caller has since added to: they can
        still say "not a backchannel" (more words never make one), but only words that cover
        everything can resume the reply."""
        self.pace.words_came(segment_ref)
        if self.holding and self._segment_ref == segment_ref and (covers_all or not backchannel):
            if backchannel:
                self._resume()
            else:
                self.cut()
        return self._decisions.get(segment_ref, False)

    # -- outcomes --------------------------------------------------------------------------

    def cut(self) -> None:
        """The caller is really talking: end the reply where they stopped hearing it."""
        if not self.pending:
            return
        ref = self._segment_ref
        self._release()
        if ref is not None:
            self._decide(ref, resumed=False)
        heard = self.playback.barge_in()
        if heard is not None:
            count_barge_in("confirmed")
            self._on_cut(heard)

    def _resume(self) -> None:
        assert self._segment_ref is not None
        ref, utterance_id = self._segment_ref, self._utterance_id
        self._release()
        self._decide(ref, resumed=True)
        self._not_a_turn(utterance_id)  # before the reply's next frame: no turn latency
        self.playback.resume()
        count_barge_in("backchannel")

    def reconnected(self) -> None:
        """The connection dropped mid-decision: carry on speaking to the new one."""
        if self.pending:
            self._release()
            self.playback.resume()

    def _release(self) -> None:
        self.pending = self.holding = False
        self._segment_ref = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _decide(self, segment_ref: str, *, resumed: bool) -> None:
        self._decisions[segment_ref] = resumed
        while len(self._decisions) > REMEMBERED_DECISIONS:
            self._decisions.popitem(last=False)

    def _word_wait_ms(self) -> int:
        return self.pace.wait_ms(self.config.word_wait_ms, self.config.max_word_wait_ms)

    def _arm(self, ms: int) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = asyncio.get_running_loop().call_later(ms / 1000, self._deadline_passed)

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self.holding:
            log.info("held reply cut: no words in time", segment=self._segment_ref)
            self.cut()

    def close(self) -> None:
        self._release()
