"""What the model sees: a window of recent messages plus a running summary of the rest.

Sending the whole transcript to every LLM activity would make each turn's history grow with
the call; a fixed window keeps it flat. Pure, deterministic string work, safe in a workflow.
"""

from __future__ import annotations

from contracts.agent_reply import ChatMessage, ToolCall
from contracts.transcript import (
    AgentTurn,
    BargeInItem,
    DtmfItem,
    GreetingItem,
    HandoffItem,
    SupervisorItem,
    ToolCallItem,
    ToolResultItem,
    TranscriptItem,
    UserTurn,
)
from workflows.policies import CallLimits
from workflows.state import CallState


def window_start(state: CallState, limits: CallLimits) -> int:
    """First transcript index sent verbatim: a user turn, so no tool result is orphaned."""
    items = state.transcript
    start = max(state.window_floor, len(items) - limits.window_items)
    while start < len(items) and not isinstance(items[start], UserTurn):
        start += 1
    if start >= len(items):  # no user turn in range: fall back to the newest user turn
        start = next(
            (
                i
                for i in range(len(items) - 1, state.window_floor - 1, -1)
                if isinstance(items[i], UserTurn)
            ),
            len(items),
        )
    return start


def fold_summary(state: CallState, limits: CallLimits) -> None:
    """Fold items that left the window into `state.summary` (bounded in size)."""
    start = window_start(state, limits)
    if start <= state.summarized_upto:
        return
    lines = [state.summary] if state.summary else []
    for item in state.transcript[max(state.summarized_upto, state.window_floor) : start]:
        line = summary_line(item)
        if line:
            lines.append(line)
    text = "\n".join(lines)
    if len(text) > limits.summary_chars:
        text = text[-limits.summary_chars :]
        text = text[text.find("\n") + 1 :] if "\n" in text else text
    state.summary = text
    state.summarized_upto = start


def _clip(text: str, size: int = 160) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def summary_line(item: TranscriptItem) -> str:
    """One line of the running summary for an item, or "" for items not worth keeping."""
    if isinstance(item, UserTurn):
        return f"Caller: {_clip(item.text)}"
    if isinstance(item, AgentTurn):
        said = item.heard_text if item.interrupted else item.text
        return f"{item.agent}: {_clip(said or '')}"
    if isinstance(item, GreetingItem):
        return f"{item.agent}: {_clip(item.text)}"
    if isinstance(item, ToolResultItem):
        return f"{item.agent} used {item.tool}: {_clip(item.content)}"
    if isinstance(item, HandoffItem) and item.success:
        return f"Transferred {item.source} -> {item.target} ({_clip(item.reason, 80)})"
    if isinstance(item, SupervisorItem):
        return f"Supervisor {item.action}: {item.target or ''} {item.reason}".strip()
    if isinstance(item, DtmfItem):
        return f"Caller pressed {item.digits}"
    if isinstance(item, BargeInItem):
        return f"Caller interrupted {item.agent}"
    return ""


def window_messages(state: CallState, limits: CallLimits) -> list[ChatMessage]:
    """The recent transcript as chat messages (tool calls regrouped per model response)."""
    messages: list[ChatMessage] = []
    pending_calls: list[ToolCall] = []
    pending_round: int | None = None

    def flush() -> None:
        nonlocal pending_calls, pending_round
        if pending_calls:
            messages.append(ChatMessage(role="assistant", tool_calls=pending_calls))
        pending_calls, pending_round = [], None

    for item in state.transcript[window_start(state, limits) :]:
        if isinstance(item, ToolCallItem):
            if pending_round is not None and item.round != pending_round:
                flush()
            pending_round = item.round
            pending_calls.append(
                ToolCall(id=item.tool_call_id, name=item.tool, arguments=item.arguments)
            )
            continue
        if not isinstance(item, ToolResultItem):
            flush()
        if isinstance(item, UserTurn):
            messages.append(ChatMessage(role="user", content=item.text))
        elif isinstance(item, AgentTurn):
            text = f"{item.heard_text or ''}… [interrupted]" if item.interrupted else item.text
            messages.append(ChatMessage(role="assistant", content=text))
        elif isinstance(item, GreetingItem):
            messages.append(ChatMessage(role="assistant", content=item.text))
        elif isinstance(item, ToolResultItem):
            flush()
            messages.append(
                ChatMessage(
                    role="tool",
                    tool_call_id=item.tool_call_id,
                    content=item.content,
                    name=item.tool,
                )
            )
    flush()
    return messages


def carry_over(state: CallState, limits: CallLimits) -> CallState:
    """The state for the next run after continue-as-new: the transcript tail, the rest
    already folded into the summary (and kept in the earlier runs' histories)."""
    fold_summary(state, limits)
    drop = max(0, len(state.transcript) - limits.carried_transcript_items)
    drop = min(drop, state.summarized_upto)
    return state.model_copy(
        update={
            "transcript": state.transcript[drop:],
            "summarized_upto": state.summarized_upto - drop,
            "window_floor": max(0, state.window_floor - drop),
            "runs": state.runs + 1,
        }
    )
