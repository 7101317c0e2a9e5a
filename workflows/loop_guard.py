"""Loop guards: too many handoffs, or the caller bounced between two agents."""

from __future__ import annotations

from contracts.handoff import HandoffStep
from workflows.policies import CallLimits


def loop_guard_reason(handoffs: list[HandoffStep], limits: CallLimits) -> str | None:
    """Why the call must go to a human now, or None while the handoffs look healthy."""
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
        if bounced and third.turn - first.turn < limits.ping_pong_turns:
            return (
                f"ping-pong between {first.source} and {first.target} "
                f"({len(handoffs[-3:])} handoffs within {third.turn - first.turn + 1} turns)"
            )
    return None
