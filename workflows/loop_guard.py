"""Loop guards: too many handoffs, or the caller bounced between two agents."""

from __future__ import annotations

from collections.abc import Sequence

from contracts.handoff import HandoffStep
from workflows.policies import CallLimits


def loop_guard_reason(
    handoffs: list[HandoffStep],
    limits: CallLimits,
    answers_at_hops: Sequence[int] | None = None,
) -> str | None:
    """Why the call must go to a human now, or None while the handoffs look healthy.

    `answers_at_hops` (one count per handoff: how much progress the call had made when it
    happened: answers given, and in newer calls caller turns and tools that succeeded) tells a
    return visit from a bounce. A→B→A→B is a loop only when one of the hops back came with no
    progress since the hop before it; a caller who finished one matter and came back with a
    new question is not bounced. Without the counts (calls recorded before they were kept)
    every quick A→B→A→B is a loop.
    """
    if len(handoffs) > limits.max_handoffs:
        return f"handoff limit reached ({limits.max_handoffs} handoffs in one call)"
    if len(handoffs) >= 3:
        first, second, third = handoffs[-3:]
        bounced = (
            first.source == third.source
            and first.target == third.target
            and second.source == first.target
            and second.target == first.source
        )
        if bounced and answers_at_hops is not None and len(answers_at_hops) == len(handoffs):
            one, two, three = answers_at_hops[-3:]
            bounced = two == one or three == two  # a hop with no answer since the last one
        if bounced and third.turn - first.turn < limits.ping_pong_turns:
            return (
                f"ping-pong between {first.source} and {first.target} "
                f"({len(handoffs[-3:])} handoffs within {third.turn - first.turn + 1} turns)"
            )
    return None
