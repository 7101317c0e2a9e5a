"""Reading the conversation window, and the offline policy's own conversational lines.

Helpers the offline policy uses to see where the call stands (what just came back, which
calls were already made since the caller last spoke, whether the caller is verified) and to
say what an agent can do when no route or tool fits.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from activities.chat_models.base import AgentTurnInput
from activities.chat_models.offline.replies import to_caller
from contracts.agent_reply import ChatMessage

HANDOFF_TOOL = "handoff_to_agent"
_GREETING = re.compile(r"^(?:hi|hello|hey|good (?:morning|afternoon|evening))\b[\s!.,]*$")
_VERIFIED = re.compile(r'"verified":\s*true|"client_id":\s*"|already verified|verified as client')
# What an agent's description says it sends elsewhere ("routes fraud ... to the right desk")
# or gates ("before account access, claims ...") is not what the agent itself handles.
_ROUTING_CLAUSE = re.compile(r"\b(?:routes?|transfers?|refers?|directs?|before)\b[^.]*", re.I)
_VERBS = {"greets": "greet", "answers": "answer", "verifies": "verify", "confirms": "confirm",
          "recommends": "recommend", "compares": "compare", "handles": "handle"}  # fmt: skip
_BASE_VERBS = {"book", "find", "check", "file", "pay", "block", "open", "review"}
_OFFLINE_ID = re.compile(r"^offline-([A-Za-z][A-Za-z0-9_]*)-\d+-\d+$")


def is_handoff_tool(name: str) -> bool:
    """`handoff_to_agent` or a legacy per-target tool such as `handoff_fraud_agent`."""
    return name == HANDOFF_TOOL or name.startswith("handoff_")


def trailing_tool_results(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The tool messages at the end of the window (the results of the last model turn)."""
    trailing: list[ChatMessage] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        trailing.insert(0, message)
    return trailing


def call_names(messages: Sequence[ChatMessage]) -> dict[str | None, str]:
    """Tool call id -> tool name, for every call in the window."""
    return {call.id: call.name for m in messages for call in m.tool_calls}


def is_handoff_success(call_name: str | None, message: ChatMessage) -> bool:
    """Whether `message` reports a transfer that happened (this agent is the one arriving)."""
    if not is_handoff_tool(call_name or message.name or ""):
        return False
    try:
        content = json.loads(message.content or "")
    except ValueError:
        return False
    return isinstance(content, dict) and content.get("success") is True


def canonical(args: Any) -> str:
    """Arguments as comparable text (sorted JSON; raw text when they were not JSON)."""
    return args if isinstance(args, str) else json.dumps(args, sort_keys=True)


def calls_since_user(messages: Sequence[ChatMessage]) -> list[tuple[str, str]]:
    """(tool, canonical args) of every call made since the caller last spoke, oldest first."""
    done: list[tuple[str, str]] = []
    for message in reversed(messages):
        if message.role == "user":
            break
        for call in reversed(message.tool_calls):
            try:
                args: Any = json.loads(call.arguments or "{}")
            except ValueError:
                args = call.arguments
            done.insert(0, (call.name, canonical(args)))
    return done


def last_agent_words(messages: Sequence[ChatMessage]) -> str:
    """What the agent said just before the caller's latest line ("" if nothing)."""
    seen_user = False
    for message in reversed(messages):
        if message.role == "user":
            if seen_user:
                return ""
            seen_user = True
        elif seen_user and message.role == "assistant" and message.content:
            return message.content
    return ""


def offline_call_id(agent: str, position: int, index: int) -> str:
    """A deterministic tool call id that also records which agent made the call."""
    return f"offline-{agent}-{position}-{index}"


def handoff_sources(messages: Sequence[ChatMessage]) -> list[str]:
    """Agents that handed the caller on since they last spoke (known from offline call ids).

    The window does not say who made a call; the offline policy writes the agent into its
    own call ids so an agent arriving by transfer does not send the caller straight back.
    """
    sources: list[str] = []
    for message in reversed(messages):
        if message.role == "user":
            break
        for call in message.tool_calls:
            m = _OFFLINE_ID.match(call.id)
            if m and is_handoff_tool(call.name):
                sources.append(m.group(1))
    return sources


def handoff_targets(done: Sequence[tuple[str, str]]) -> list[str]:
    """Agents already handed to since the caller last spoke."""
    targets = []
    for name, args in done:
        if is_handoff_tool(name):
            try:
                parsed = json.loads(args)
            except ValueError:
                parsed = {}
            target = parsed.get("target_agent") if isinstance(parsed, dict) else None
            targets.append(str(target or name))
    return targets


def is_verified(request: AgentTurnInput) -> bool:
    """Whether the visible conversation shows a verified caller (a heuristic over the text:
    a verify result, the prompt's "already verified" line, or a client id in the summary)."""
    tool_text = [m.content or "" for m in request.messages if m.role == "tool"]
    return bool(_VERIFIED.search(" ".join([request.system_prompt, request.summary, *tool_text])))


def is_greeting(utterance: str) -> bool:
    """A line that only greets ("hello", "good morning"): no request to route or act on."""
    return bool(_GREETING.match(utterance.lower().strip()))


def own_description(description: str) -> str:
    """The description without what the agent sends elsewhere ("routes fraud ... to ...")."""
    return _ROUTING_CLAUSE.sub("", description)


def capabilities(description: str) -> str:
    """What the agent does, as a phrase after "I can" ("greet callers, ...", "help with ...")."""
    tail = description.split(":", 1)[-1]
    tail = re.sub(r",?\s*(?:and\s*)?$", "", own_description(tail).strip().rstrip("."))
    first = tail.split(" ", 1)[0].strip(",;").lower()
    if first in _VERBS:
        pattern = r"\b(" + "|".join(_VERBS) + r")\b"
        return to_caller(re.sub(pattern, lambda m: _VERBS[m.group(1).lower()], tail))
    if first in _BASE_VERBS:
        return tail
    return f"help with {tail}" if tail else ""


def company(request: AgentTurnInput) -> str:
    """The company name with a leading space (" Harbor Private Bank"), or "" without one."""
    name = request.template_vars.get("company_name")
    return f" {name}" if isinstance(name, str) and name else ""


def offer_help(request: AgentTurnInput, utterance: str, *, arrived: bool = False) -> str:
    """Rule c: what this agent can do, as a question back to the caller."""
    caps = capabilities(request.agent_description)
    offer = f" I can {caps[0].lower()}{caps[1:]}." if caps else ""
    if arrived:  # transferred on a closing remark ("that's resolved"): pick the thread up
        return f"Of course.{offer} What else can I help you with?"
    if not utterance or is_greeting(utterance):
        head = request.agent_description.split(":", 1)[0].strip().lower()
        at = f" at{company(request)}" if company(request) else ""
        intro = f" You've reached the {head}{at}." if head else ""
        return f"Hello!{intro}{offer} What would you like to do?"
    return f"I'm not sure I can help with that here.{offer} What would you like to do?"
