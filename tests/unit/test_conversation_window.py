"""The model's view of a call: bounded window, running summary, loop guard (pure code)."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts.calls import CallInput
from contracts.handoff import HandoffStep
from contracts.transcript import AgentTurn, ToolCallItem, ToolResultItem, UserTurn
from workflows.conversation import fold_summary, window_messages
from workflows.loop_guard import loop_guard_reason
from workflows.policies import CallLimits
from workflows.state import CallState

NOW = datetime(2026, 11, 1, tzinfo=UTC)
LIMITS = CallLimits(window_items=6, summary_chars=300)


def call_with_turns(turns: int) -> CallState:
    state = CallState(call=CallInput(call_id="c"))
    for n in range(turns):
        state.transcript += [
            UserTurn(at=NOW, turn=n, utterance_id=f"u{n}", text=f"question {n}", agent="A"),
            ToolCallItem(
                at=NOW,
                turn=n,
                agent="A",
                tool_call_id=f"t{n}",
                tool="lookup",
                arguments="{}",
                round=n,
            ),
            ToolResultItem(
                at=NOW,
                turn=n,
                agent="A",
                tool_call_id=f"t{n}",
                tool="lookup",
                content=f'{{"answer": {n}}}',
            ),
            AgentTurn(at=NOW, turn=n, agent="A", text=f"answer {n}"),
        ]
    return state


def test_window_stays_bounded_and_starts_at_a_user_turn() -> None:
    for turns in (3, 30, 300):
        state = call_with_turns(turns)
        fold_summary(state, LIMITS)
        messages = window_messages(state, LIMITS)
        assert len(messages) <= LIMITS.window_items
        assert messages[0].role == "user" and messages[0].content == f"question {turns - 1}"
        assert len(state.summary) <= LIMITS.summary_chars


def test_tool_calls_are_regrouped_with_their_results() -> None:
    messages = window_messages(call_with_turns(1), LIMITS)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[1].tool_calls[0].id == messages[2].tool_call_id == "t0"


def test_summary_keeps_what_left_the_window_newest_last() -> None:
    state = call_with_turns(5)
    fold_summary(state, LIMITS)
    assert "Caller: question 3" in state.summary and "A used lookup" in state.summary
    assert "question 4" not in state.summary  # still in the window
    before = state.summary
    fold_summary(state, LIMITS)
    assert state.summary == before  # folding is idempotent


def test_private_handoff_hides_earlier_conversation() -> None:
    state = call_with_turns(2)
    state.window_floor = len(state.transcript)
    state.transcript.append(UserTurn(at=NOW, utterance_id="new", text="hello", agent="B"))
    assert [m.content for m in window_messages(state, LIMITS)] == ["hello"]


def hop(source: str, target: str, turn: int) -> HandoffStep:
    return HandoffStep(source=source, target=target, handoff_type="announced", reason="", turn=turn)


def test_ping_pong_is_detected_within_a_few_turns_only() -> None:
    limits = CallLimits(ping_pong_turns=4)
    assert "ping-pong" in str(
        loop_guard_reason([hop("A", "B", 1), hop("B", "A", 2), hop("A", "B", 3)], limits)
    )
    assert loop_guard_reason([hop("A", "B", 1), hop("B", "A", 3), hop("A", "B", 9)], limits) is None
    assert loop_guard_reason([hop("A", "B", 1), hop("B", "C", 2), hop("C", "A", 3)], limits) is None


def test_a_return_visit_after_an_answer_is_not_ping_pong() -> None:
    limits = CallLimits(ping_pong_turns=4)
    hops = [hop("A", "B", 1), hop("B", "A", 2), hop("A", "B", 3)]
    # B answered before handing back, and A answered before sending the caller over again.
    assert loop_guard_reason(hops, limits, [0, 1, 2]) is None
    # Handed straight back (no answer since the first hop), or straight over again: bounces.
    assert "ping-pong" in str(loop_guard_reason(hops, limits, [0, 0, 1]))
    assert "ping-pong" in str(loop_guard_reason(hops, limits, [0, 1, 1]))
    # Counts that do not cover every hop (a call carried over from before them): old rule.
    assert "ping-pong" in str(loop_guard_reason(hops, limits, [1, 2]))


def test_answers_do_not_lift_the_hop_limit() -> None:
    limits = CallLimits(max_handoffs=2)
    hops = [hop("A", "B", 1), hop("B", "A", 2), hop("A", "B", 3)]
    assert "handoff limit" in str(loop_guard_reason(hops, limits, [0, 1, 2]))


def test_hop_limit_is_enforced() -> None:
    limits = CallLimits(max_handoffs=3, ping_pong_turns=1)
    hops = [hop("A", "B", 1), hop("B", "C", 5), hop("C", "D", 9)]
    assert loop_guard_reason(hops, limits) is None
    assert "handoff limit" in str(loop_guard_reason([*hops, hop("D", "A", 13)], limits))
