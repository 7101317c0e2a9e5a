"""A chat model that plays back what a conversation test declared, with no language model.

`baton scenario test --model scripted` gives each call a queue of model responses per caller
turn (`say` text and/or one tool call). The workflow, the handoff service, greetings, prompts
and tools all run for real; only the model's choices come from the test file, so an author can
test the graph deterministically.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from activities.chat_models.base import AgentTurnInput, TextDeltaCallback
from activities.chat_models.offline.policy import approximate_usage
from contracts.agent_reply import AgentTurnResult, ToolCall

#: Said when the model is asked for more than the turn declared, so a test sees it plainly.
NOTHING_DECLARED = "[scripted model: this turn declared no further response]"


@dataclass(frozen=True)
class ScriptedResponse:
    """One model response: text for the caller and/or tool calls (name, arguments)."""

    say: str = ""
    calls: Sequence[tuple[str, dict[str, Any]]] = ()


@dataclass
class ScriptedChatModel:
    """Answers each call's model requests from the responses queued for that call."""

    name: str = "scripted"
    _queues: dict[str, deque[ScriptedResponse]] = field(default_factory=dict)

    def queue(self, call_id: str, responses: Sequence[ScriptedResponse]) -> None:
        """Replace what `call_id`'s model says next with `responses`, in order."""
        self._queues[call_id] = deque(responses)

    def forget(self, call_id: str) -> None:
        self._queues.pop(call_id, None)

    async def generate(
        self, request: AgentTurnInput, *, on_text_delta: TextDeltaCallback | None = None
    ) -> AgentTurnResult:
        """The next declared response of this call (nothing streams)."""
        pending = self._queues.get(request.call_id)
        response = pending.popleft() if pending else ScriptedResponse(say=NOTHING_DECLARED)
        calls = [
            ToolCall(
                id=f"scripted-{len(request.messages)}-{n}", name=name, arguments=json.dumps(args)
            )
            for n, (name, args) in enumerate(response.calls)
        ]
        return AgentTurnResult(
            text=response.say,
            tool_calls=calls,
            usage=approximate_usage(request, response.say, calls),
            provider="scripted",
            model="scripted",
            finish_reason="tool_calls" if calls else "stop",
        )
