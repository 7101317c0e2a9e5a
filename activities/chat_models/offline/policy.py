"""The offline policy: a small, deterministic rule set that plays an agent without any model.

It is not a language model and does not pretend to be one. For a turn it:

a. answers the tool results that just came back (`offline.replies`), unless they report this
   agent's own arrival through a successful handoff, in which case it answers the caller;
b. otherwise scores the latest utterance (`offline.text` features, IDF-weighted overlap)
   against each outbound route, each business tool and the agent's own description, then
   hands off when a route clearly wins, calls a tool whose arguments it can fill from what
   the caller said (`offline.slots`), or asks for the arguments it is missing;
c. otherwise says goodbye (calling `end_call` if offered), takes a route meant for "something
   else" when the request is outside this agent's domain, or says what the agent can do.

It never repeats a tool call with the same arguments within one caller turn, makes at most
two handoffs per caller turn and never hands back to an agent of that turn, and only
calls tools the request offers. Token usage is counted in words, an approximation, so
per-agent usage is recorded the same way for every provider.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from activities.chat_models.base import AgentTurnInput, TextDeltaCallback
from activities.chat_models.offline import dialogue
from activities.chat_models.offline.extract import clip
from activities.chat_models.offline.replies import IDENTIFY, reply_from_tool_result, to_caller
from activities.chat_models.offline.slots import Filled, fill_arguments
from activities.chat_models.offline.text import concepts, features, idf_weights, overlap
from contracts.agent_reply import AgentTurnResult, TokenUsage, ToolCall
from contracts.snapshot import ToolSchema

HANDOFF_TOOL = dialogue.HANDOFF_TOOL
END_TOOL = "end_call"
HUMAN_TOOL = "escalate_human"
VERIFY_TOOL = "verify_identity"
MODEL_NAME = "offline-policy"
#: A route must beat the agent's own best match by this much, and score at least ROUTE_MIN.
ROUTE_MARGIN = 1.0
ROUTE_MIN = 2.0
#: A tool needs this score (keyword overlap plus argument evidence) to be called or asked for;
#: TOOL_MIN_IN_DOMAIN when the utterance also matches the agent's own description.
TOOL_MIN = 1.5
TOOL_MIN_IN_DOMAIN = 1.0
#: Weight of one required argument a specific extractor filled (id, digits, date, ...).
ARG_BONUS = 1.5
MAX_HANDOFFS_PER_TURN = 2

_log = structlog.get_logger(__name__)
_announced = False
_BYE = re.compile(
    r"\b(?:bye|goodbye|good bye|that'?s all|that is all|that'?s it|that is it|nothing else|"
    r"no thanks|no thank you|i'?m done|i am done|all set|hang up)\b"
)
_MORE = re.compile(r"\b(?:another|also|one more|question|but|actually|wait|else i)\b")
_FALLBACK = re.compile(r"something else|another request|changes? topic|other request", re.I)


@dataclass
class Decision:
    """What the policy does this turn, and why (for the debug log)."""

    text: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    why: str = ""


@dataclass
class _Candidate:
    name: str
    score: float
    matched: list[str]
    filled: Filled | None = None
    required: int = 0
    #: Tool score without the name bonus, for comparing the agent's tools with its routes.
    base: float = 0.0


class OfflineChatModel:
    """Deterministic keyword policy (see the module docstring); needs no network or files."""

    name = "offline"

    async def generate(
        self, request: AgentTurnInput, *, on_text_delta: TextDeltaCallback | None = None
    ) -> AgentTurnResult:
        """Decide the turn: a handoff, a tool call, or a spoken reply. The reply is ready at
        once, so nothing streams and `on_text_delta` goes unused."""
        global _announced
        if not _announced:
            _announced = True
            _log_safely(
                "info",
                "offline chat policy in use",
                detail="deterministic keyword rules, not a language model; set "
                "BATON_CHAT_PROVIDER=openai or azure to use an LLM",
            )
        decision = decide(request)
        base = len(request.messages)
        calls = [
            ToolCall(
                id=dialogue.offline_call_id(request.agent, base, n),
                name=name,
                arguments=json.dumps(args),
            )
            for n, (name, args) in enumerate(decision.calls)
        ]
        _log_safely("debug", "offline decision", agent=request.agent, why=decision.why)
        return AgentTurnResult(
            text=decision.text,
            tool_calls=calls,
            usage=approximate_usage(request, decision.text, calls),
            provider="offline",
            model=MODEL_NAME,
            finish_reason="tool_calls" if calls else "stop",
        )


def _log_safely(level: str, event: str, **fields: Any) -> None:
    # Like stdlib logging, a closed or broken log stream must not fail the caller's turn.
    with contextlib.suppress(ValueError, OSError):
        getattr(_log, level)(event, **fields)


def approximate_usage(request: AgentTurnInput, text: str, calls: Sequence[ToolCall]) -> TokenUsage:
    """Words, not tokens: prompt, summary, messages and tool schemas in; text and calls out."""
    prompt = [request.system_prompt, request.summary]
    for message in request.messages:
        prompt.append(message.content or "")
        prompt.extend(f"{call.name} {call.arguments}" for call in message.tool_calls)
    prompt.extend(f"{tool.name} {tool.description}" for tool in request.tools)
    output = [text, *(f"{call.name} {call.arguments}" for call in calls)]
    return TokenUsage(
        prompt_tokens=sum(len(part.split()) for part in prompt),
        completion_tokens=max(1, sum(len(part.split()) for part in output)),
    )


def decide(request: AgentTurnInput) -> Decision:
    """The whole policy for one turn (pure; see the module docstring)."""
    messages = request.messages
    trailing = dialogue.trailing_tool_results(messages)
    arrived = False
    if trailing:
        names = dialogue.call_names(messages)
        if not any(dialogue.is_handoff_success(names.get(m.tool_call_id), m) for m in trailing):
            caps = dialogue.capabilities(request.agent_description)
            replies = [reply_from_tool_result(m.content or "", capabilities=caps) for m in trailing]
            return Decision(text=" ".join(dict.fromkeys(replies)), why="reply to tool result")
        arrived = True  # a transfer brought the caller here: answer what they said
    user_texts = [m.content or "" for m in reversed(messages) if m.role == "user" and m.content]
    if not user_texts:
        return Decision(text=dialogue.offer_help(request, ""), why="no utterance yet")
    return respond(request, user_texts[0], user_texts[1:3], arrived=arrived)


def respond(
    request: AgentTurnInput, utterance: str, earlier: Sequence[str], *, arrived: bool = False
) -> Decision:
    """Rules b and c for the latest utterance (`earlier`: previous utterances, newest first)."""
    offered = {tool.name: tool for tool in request.tools}
    if "human" in concepts(utterance) and HUMAN_TOOL in offered:
        args = {"reason": "caller asked for a person", "summary": clip(utterance, 200)}
        return Decision(calls=[(HUMAN_TOOL, args)], why="caller asked for a person")
    done = dialogue.calls_since_user(request.messages)
    visited = dialogue.handoff_targets(done) + dialogue.handoff_sources(request.messages)
    query = features(utterance)
    routes = {t: text for t, text in _routes(request).items() if t not in visited}
    tools = [t for t in request.tools if _is_business_tool(t.name)]
    docs = {
        "self": features(dialogue.own_description(request.agent_description)),
        **{f"route:{target}": features(text) for target, text in routes.items()},
        **{f"tool:{t.name}": features(f"{_spoken(t.name)} {t.description}") for t in tools},
    }
    weights = idf_weights(docs.values())
    self_score, _ = overlap(query, docs["self"], weights)
    texts = [utterance, *earlier]
    scored = [_score_tool(tool, query, docs[f"tool:{tool.name}"], weights, texts) for tool in tools]
    # Best first; on a tie, a tool that can be called now, then the one needing fewer arguments.
    scored.sort(key=lambda c: (-round(c.score, 6), bool(c.filled and c.filled.missing), c.required))
    best_tool = max((c.base for c in scored), default=0.0)
    handoffs = len(dialogue.handoff_targets(done))
    may_hand_off = HANDOFF_TOOL in offered and handoffs < MAX_HANDOFFS_PER_TURN
    route = _best_route(query, routes, docs, weights) if may_hand_off else None
    if route and route.score >= max(ROUTE_MIN, max(self_score, best_tool) + ROUTE_MARGIN):
        return _handoff(request, route.name, f"route {route.name} matched {route.matched}", texts)
    lowered = utterance.lower().replace("’", "'")
    if _BYE.search(lowered) and not _MORE.search(lowered):
        text = f"Thank you for calling{dialogue.company(request)}. Goodbye!"
        calls = [(END_TOOL, {"reason": "caller done"})] if END_TOOL in offered else []
        return Decision(text=text, calls=calls, why="caller said goodbye")
    floor = TOOL_MIN_IN_DOMAIN if self_score > 0 else TOOL_MIN
    for candidate in scored:
        if candidate.score < floor or candidate.filled is None:
            break
        args = candidate.filled.arguments
        if candidate.filled.missing:
            return Decision(text=_ask_for(candidate, offered), why=f"{candidate.name} needs args")
        if (candidate.name, dialogue.canonical(args)) not in done:
            why = f"tool {candidate.name} matched {candidate.matched}"
            return Decision(calls=[(candidate.name, args)], why=why)
    fallback = _fallback_route(request, routes) if may_hand_off and not handoffs else None
    if fallback and query and self_score == 0 and best_tool == 0:
        return _handoff(request, fallback, "outside this agent's domain", texts)
    return Decision(text=dialogue.offer_help(request, utterance, arrived=arrived), why="no match")


def _is_business_tool(name: str) -> bool:
    return name not in {END_TOOL, HUMAN_TOOL} and not dialogue.is_handoff_tool(name)


def _spoken(tool_name: str) -> str:
    return tool_name.replace("_", " ")


def _score_tool(
    tool: ToolSchema,
    query: frozenset[str],
    document: frozenset[str],
    weights: dict[str, float],
    texts: Sequence[str],
) -> _Candidate:
    """Keyword overlap plus evidence from filled arguments; words of the tool's name count
    twice when ranking tools against each other (`score`), but not against routes (`base`)."""
    score, matched = overlap(query, document, weights)
    name_words = frozenset(f for f in features(_spoken(tool.name)) if not f.startswith("#"))
    named, _ = overlap(query, name_words, weights)
    filled = fill_arguments(tool.parameters, texts)
    base = score + ARG_BONUS * filled.specific_required + 0.5 * filled.specific_optional
    required = len(tool.parameters.get("required") or [])
    return _Candidate(tool.name, base + named, matched, filled, required, base)


def _handoff(request: AgentTurnInput, target: str, why: str, texts: Sequence[str]) -> Decision:
    offered = {tool.name: tool for tool in request.tools}
    condition = next((r.condition for r in request.routes if r.target_agent == target), "")
    needs_check = "verified" in condition.lower() and VERIFY_TOOL in offered
    if needs_check and not dialogue.is_verified(request):
        # The route is for verified callers, and this agent is the one that verifies.
        filled = fill_arguments(offered[VERIFY_TOOL].parameters, texts)
        if not filled.missing:
            return Decision(calls=[(VERIFY_TOOL, filled.arguments)], why="verify before route")
        return Decision(text=f"I can help with that. {IDENTIFY}", why="verify before route")
    args = {"target_agent": target, "reason": f"caller says: {clip(texts[0], 120)}"}
    return Decision(calls=[(HANDOFF_TOOL, args)], why=why)


def _best_route(
    query: frozenset[str],
    routes: dict[str, str],
    docs: dict[str, frozenset[str]],
    weights: dict[str, float],
) -> _Candidate | None:
    ranked = [
        _Candidate(target, *overlap(query, docs[f"route:{target}"], weights)) for target in routes
    ]
    ranked.sort(key=lambda c: (-c.score, c.name))
    return ranked[0] if ranked else None


def _fallback_route(request: AgentTurnInput, routes: dict[str, str]) -> str | None:
    """The route meant for "something else" / "another request", if the agent has one."""
    return next(
        (r.target_agent for r in request.routes
         if r.target_agent in routes and _FALLBACK.search(r.condition)),
        None,
    )  # fmt: skip


def _routes(request: AgentTurnInput) -> dict[str, str]:
    """Target -> text describing when to go there; limited to the handoff tool's enum."""
    tool = next((t for t in request.tools if t.name == HANDOFF_TOOL), None)
    target = tool.parameters.get("properties", {}).get("target_agent", {}) if tool else {}
    allowed = set(target["enum"]) if isinstance(target.get("enum"), list) else None
    routes = {
        r.target_agent: f"{r.condition} {dialogue.own_description(r.target_description)}"
        for r in request.routes
        if r.target_agent != request.agent and (allowed is None or r.target_agent in allowed)
    }
    if not routes and tool is not None and allowed:
        # Open routing (generic handoff) lists targets only in the tool's description.
        described = tool.description.split("transfer to:", 1)[-1]
        for entry in described.split("; "):
            name, _, text = entry.partition(": ")
            if name.strip() in allowed and name.strip() != request.agent:
                routes[name.strip()] = dialogue.own_description(text)
    return routes


def _ask_for(candidate: _Candidate, offered: dict[str, ToolSchema]) -> str:
    properties = offered[candidate.name].parameters.get("properties", {})
    needed = []
    for name in candidate.filled.missing if candidate.filled else []:
        described = str(properties.get(name, {}).get("description", "")).split(",")[0]
        said = to_caller(described).rstrip(".").lower() or name.replace("_", " ")
        needed.append(said if re.match(r"(?:the|your|a|an)\b", said) else f"the {said}")
    listing = ", ".join(needed[:-1]) + (" and " if len(needed) > 1 else "") + needed[-1]
    return f"I can do that. I'll just need {listing}."
