"""A reply lost with its gateway is said again, once, when the caller is back.

When the media gateway dies mid-reply the speech activity fails and the reply is recorded as
not heard (nothing says how much of it reached the caller). If the caller then reconnects (a
restarted gateway or another replica renews the call's lease over a newer connection), the
call says that reply again before anything else, once: the caller hears the whole answer
instead of a silence, and the record shows the reply heard, late, after the reconnect. A reply
heard later than it (a newer answer) makes it moot, and it is dropped.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from contracts.transcript import AgentTurn
    from workflows.lease import holder_key
    from workflows.live_call import LiveCall
    from workflows.speech import Speaker, was_cancelled

#: Patch id: a reply lost with its gateway is said again once the caller reconnects.
RESAY_UNHEARD = "resay-unheard"


class Resay:
    def __init__(self, live: LiveCall, speaker: Speaker) -> None:
        self.live = live
        self.speaker = speaker

    def start(self) -> None:
        """Asked once per run, where the lease's own patch is asked (after the greeting, before
        any turn): never after an activity result it would decide about."""
        self.speaker.resay_lost = self.live.has_voice and workflow.patched(RESAY_UNHEARD)

    def due(self) -> bool:
        """A lost reply waits and the caller has reconnected since it was spoken."""
        unheard = self.live.state.unheard
        holder = self.live.state.lease_holder
        return unheard is not None and holder is not None and holder_key(holder) != unheard.holder

    async def say(self) -> None:
        """Say the lost reply again (once: a new failure waits for the next reconnect)."""
        state = self.live.state
        unheard = state.unheard
        if unheard is None:
            return
        state.unheard = None
        item = next(
            (
                item
                for item in reversed(state.transcript)
                if isinstance(item, AgentTurn)
                and item.text == unheard.text
                and item.heard_text == ""
            ),
            None,
        )
        self.live.barge_in = None
        holder = holder_key(state.lease_holder)
        handle = self.speaker.start_speech(unheard.agent, unheard.text, "reply")
        try:
            result = await handle
        except ActivityError as error:
            if not was_cancelled(error):  # lost again: said on the next reconnect
                state.unheard = unheard.model_copy(update={"holder": holder})
                return
            barge = self.live.barge_in
            chars = barge.heard_chars if barge is not None else None
            heard: str | None = unheard.text[: chars or 0]
        else:
            heard = None if result.completed else unheard.text[: result.chars_played]
        if item is not None:
            item.heard_text = heard
            item.said_again = True
