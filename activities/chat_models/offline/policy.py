"""The offline policy: a small, deterministic rule set that plays an agent without an LLM.

It is not a language model and does not pretend to be one. For a turn it:

a. answers the tool results that just came back (`offline.replies`), unless they report this
   agent's own arrival through a successful handoff, in which case it answers the caller;
b. otherwise says goodbye when the caller does (calling `end_call` if offered), or matches
   the latest utterance by meaning (`offline.ranking`, sentence embeddings) against each
   outbound route's condition, each business tool's description and the agent's own, then
   hands off when a route fits best (a prerequisite route, "before account changes", first),
   calls a tool whose arguments it can fill (`offline.slots`: digits, dates, ids, amounts and
   which "last four" the caller means are rules), or asks for the arguments it is missing;
c. otherwise takes a route back from a closed matter when the request is outside this
   agent's domain, or says what the agent can do.

Decisions are deterministic for a given snapshot: the embedding model runs single-threaded
on fixed weights, and every threshold is a constant below.

It never repeats a tool call with the same arguments within one caller turn, makes at most
two handoffs per caller turn and never hands back to an agent of that turn, and only
calls tools the request offers. Token usage is counted in words, an approximation, so
per-agent usage is recorded the same way for every provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import structlog

from activities.chat_models.base import AgentTurnInput, TextDeltaCallback
from activities.chat_models.offline import dialogue, ranking
from activities.chat_models.offline.extract import clip
from activities.chat_models.offline.meaning import shared_encoder
from activities.chat_models.offline.replies import IDENTIFY, reply_from_tool_result, to_caller
from activities.chat_models.offline.slots import Filled, fill_arguments, ssn_digits_given
from activities.chat_models.offline.text import concepts, stem, words
from contracts.agent_reply import AgentTurnResult, TokenUsage, ToolCall
from contracts.snapshot import ToolSchema

HANDOFF_TOOL = dialogue.HANDOFF_TOOL
END_TOOL = "end_call"
HUMAN_TOOL = "escalate_human"
VERIFY_TOOL = "verify_identity"
MODEL_NAME = "offline-policy"
# Scores are cosine similarities of sentence embeddings (`offline.ranking`), tuned on the
# paraphrase set of benchmarks/bench_offline_policy.py.
#: A route must fit at least this well, and beat the agent's best tool by ROUTE_MARGIN
#: (re-tuned for the 7-bit model: the middle of the range, 0 to 0.005, where the most shipped
#: lines are right; the 8-bit model's was -0.015 to -0.005).
ROUTE_MIN = 0.15
ROUTE_MARGIN = 0.0025
#: An agent the caller reached this turn hands on only along a route fitting this well.
ROUTE_MIN_AFTER_TRANSFER = 0.5
#: A prerequisite route ("before account changes") named by one clause of a longer line must
#: fit that clause at least this well to go first.
PREREQUISITE_MIN = 0.45
#: A route back from a closed matter ("the claim is handled") is not a new request's first pick;
#: less so when the caller says nothing of moving on ("but", "another", "something else"):
#: "a new credit card" at the compliance desk fits "the question is cleared and the caller
#: wants to keep investing" 0.28 by the int8 model, the concierge's work 0.17.
CLOSING_PENALTY = 0.08
CLOSING_PENALTY_UNSAID = 0.12
#: A tool needs this score (similarity plus argument evidence) to be called or asked for;
#: TOOL_MIN_IN_DOMAIN when the line fits the agent's own description at IN_DOMAIN_SELF.
TOOL_MIN = 0.2
TOOL_MIN_IN_DOMAIN = 0.1
IN_DOMAIN_SELF = 0.3
#: Below this, the line is outside the agent's domain and a closing route may take the caller.
IN_DOMAIN_MIN = 0.15
#: Added for each required argument a specific extractor filled (id, digits, date, ...).
ARG_BONUS = 0.1
#: Added when the caller's line holds every content word of a tool's name ("I want to file a
#: claim" and `file_claim`): a stronger sign than sharing words with its description.
NAME_BONUS = 0.05
MAX_HANDOFFS_PER_TURN = 2
#: A line with fewer words than this is read together with the caller's previous one.
SHORT_ANSWER_WORDS = 4

_log = structlog.get_logger(__name__)
_announced = False
_WORD = re.compile(r"[a-z]{2,}")
_BYE = re.compile(
    r"\b(?:bye|goodbye|good bye|that'?s all|that is all|that'?s it|that is it|nothing else|"
    r"no thanks|no thank you|i'?m done|i am done|all set|hang up)\b"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_MORE = re.compile(r"\b(?:another|also|one more|question|but|actually|wait|else i)\b")


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
    filled: Filled | None = None
    required: int = 0
    #: A route back from a closed matter that only its condition matched.
    closing_by_condition: bool = False


class OfflineChatModel:
    """The deterministic offline policy (see the module docstring): rules and sentence
    embeddings from a model shipped in a PyPI package, no network and no language model."""

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
                detail="deterministic rules and sentence-embedding matching, not a language "
                "model; set BATON_CHAT_PROVIDER=openai or azure to use an LLM",
            )
        # The sentence model runs for a few milliseconds and releases the GIL: off the event
        # loop, the worker's other calls keep moving meanwhile.
        decision = await asyncio.to_thread(decide, request)
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
    if _asks_for_person(utterance) and HUMAN_TOOL in offered:
        args = {"reason": "caller asked for a person", "summary": clip(utterance, 200)}
        return Decision(calls=[(HUMAN_TOOL, args)], why="caller asked for a person")
    lowered = utterance.lower().replace("’", "'")
    if _BYE.search(lowered) and not _MORE.search(lowered):
        text = f"Thank you for calling{dialogue.company(request)}. Goodbye!"
        calls = [(END_TOOL, {"reason": "caller done"})] if END_TOOL in offered else []
        return Decision(text=text, calls=calls, why="caller said goodbye")
    if dialogue.is_greeting(utterance):
        # A greeting asks for nothing: however near a route or tool it happens to fall ("hello"
        # fits a nurse line 0.15), the answer is what this agent can do.
        return Decision(text=dialogue.offer_help(request, utterance), why="greeting")
    done = dialogue.calls_since_user(request.messages)
    visited = dialogue.handoff_targets(done) + dialogue.handoff_sources(request.messages)
    routes = [r for r in _routes(request) if r.key.removeprefix("route:") not in visited]
    tools = [t for t in request.tools if _is_business_tool(t.name)]
    own = dialogue.own_description(request.agent_description)
    candidates = [
        ranking.Candidate("self", (own,) if own.strip() else ()),
        *routes,
        *(
            ranking.Candidate(f"tool:{t.name}", (f"{_spoken(t.name)}: {t.description}",))
            for t in tools
        ),
    ]
    # Handed here on a line that closed a matter and asked something else: the desk behind
    # has acted on the closing part by sending the caller here; the rest is this desk's.
    query = ranking.request_part(utterance) if arrived else utterance
    # A short answer ("about $2,500") continues the previous line rather than replacing it.
    if len(utterance.split()) < SHORT_ANSWER_WORDS and earlier:
        query = f"{earlier[0]} {utterance}"
    matches = ranking.rank(shared_encoder(), query, candidates)
    self_score = matches["self"].score
    texts = [utterance, *earlier]
    slots = _SlotContext(dialogue.last_agent_words(request.messages), _ssn_digits(request))
    said = {stem(w) for w in words(utterance)}  # for tools the caller names (NAME_BONUS)
    scored = [
        _score_tool(tool, matches[f"tool:{tool.name}"].score, texts, slots, said) for tool in tools
    ]
    # Best first; on a tie, a tool that can be called now, then the one needing fewer arguments.
    scored.sort(key=lambda c: (-round(c.score, 6), bool(c.filled and c.filled.missing), c.required))
    best_tool = max((c.score for c in scored), default=-1.0)
    handoffs = len(dialogue.handoff_targets(done))
    # Keypad digits alone carry no meaning to match a route by: they are slot values for a
    # tool (an account number, a PIN), never a reason to send the caller elsewhere.
    has_words = _WORD.search(lowered.replace("(keypad)", "")) is not None
    may_hand_off = has_words and HANDOFF_TOOL in offered and handoffs < MAX_HANDOFFS_PER_TURN
    if may_hand_off and routes:
        first = ranking.prerequisite_first(matches, candidates, query, PREREQUISITE_MIN)
        if first is not None:
            target = first.key.removeprefix("route:")
            return _handoff(request, target, f"{first.key} must come first", texts)
        moving_on = _MORE.search(lowered) is not None or "something else" in lowered
        route = max(
            (_route_score(r, matches[r.key], moving_on) for r in routes), key=lambda c: c.score
        )
        # A route back from a closed matter, matched only by its condition, must also fit
        # better than this desk's own work.
        floor = self_score if route.closing_by_condition else ROUTE_MIN
        if arrived and not _MORE.search(utterance.lower()):
            # Just handed here on a line that may only have closed a matter ("the fraud report
            # is complete"): hand on only for a clear request.
            floor = max(floor, ROUTE_MIN_AFTER_TRANSFER)
        if route.score >= max(ROUTE_MIN, floor, best_tool + ROUTE_MARGIN):
            why = f"{route.name} scored {route.score:.2f}"
            return _handoff(request, route.name.removeprefix("route:"), why, texts)
    tool_floor = TOOL_MIN_IN_DOMAIN if self_score >= IN_DOMAIN_SELF else TOOL_MIN
    for candidate in scored:
        if candidate.score < tool_floor or candidate.filled is None:
            break
        args = candidate.filled.arguments
        if candidate.filled.missing:
            return Decision(text=_ask_for(candidate, offered), why=f"{candidate.name} needs args")
        if (candidate.name, dialogue.canonical(args)) not in done:
            why = f"tool {candidate.name} scored {candidate.score:.2f}"
            return Decision(calls=[(candidate.name, args)], why=why)
    fallback = _fallback_route(routes) if may_hand_off and not handoffs else None
    if fallback and max(self_score, best_tool) < IN_DOMAIN_MIN:
        return _handoff(request, fallback, "outside this agent's domain", texts)
    return Decision(text=dialogue.offer_help(request, utterance, arrived=arrived), why="no match")


def _route_score(route: ranking.Candidate, match: ranking.Match, moving_on: bool) -> _Candidate:
    """A closing route's condition ("the fraud matter is handled") shares the topic of the
    desk's own work, so a match on it counts less; a match on what its target does counts."""
    by_condition = route.closing and match.text == 0
    penalty = CLOSING_PENALTY if moving_on else CLOSING_PENALTY_UNSAID
    score = match.score - penalty * by_condition
    return _Candidate(route.key, score, closing_by_condition=by_condition)


def _asks_for_person(utterance: str) -> bool:
    return "human" in concepts(utterance)


def _is_business_tool(name: str) -> bool:
    return name not in {END_TOOL, HUMAN_TOOL} and not dialogue.is_handoff_tool(name)


def _spoken(tool_name: str) -> str:
    return tool_name.replace("_", " ")


def _tool_texts(tool: ToolSchema) -> tuple[str, ...]:
    """What a tool is for ("block card: Block one of the caller's cards ..."), and what it
    takes ("triage symptoms: The symptoms in the caller's own words.")."""
    properties = tool.parameters.get("properties") or {}
    takes = " ".join(
        str(spec.get("description", "")) for spec in properties.values() if isinstance(spec, dict)
    )
    texts = [f"{_spoken(tool.name)}: {tool.description}"]
    # "Use it when the caller suspects fraud" says when to call it better than the whole text.
    sentences = [s for s in _SENTENCE.split(tool.description) if len(s.split()) >= 4]
    if len(sentences) > 1:
        texts.extend(f"{_spoken(tool.name)}: {sentence}" for sentence in sentences)
    if takes.strip():
        texts.append(f"{_spoken(tool.name)}: {takes}")
    return tuple(texts)


@dataclass(frozen=True)
class _SlotContext:
    """What argument filling reads besides the caller's lines."""

    #: The agent's last words, which a "yes, do it" answers.
    proposal: str = ""
    #: The SSN's last four, never to be taken for a card's.
    ssn_digits: frozenset[str] = frozenset()


def _ssn_digits(request: AgentTurnInput) -> frozenset[str]:
    said = [m.content or "" for m in request.messages if m.role == "user"]
    given = [
        str(args[name])
        for m in request.messages
        for call in m.tool_calls
        if isinstance(args := _json_object(call.arguments), dict)
        for name in args
        if "ssn" in name
    ]
    return ssn_digits_given(said, given)


def _json_object(text: str | None) -> Any:
    try:
        return json.loads(text or "{}")
    except ValueError:
        return None


def _score_tool(
    tool: ToolSchema,
    similarity: float,
    texts: Sequence[str],
    slots: _SlotContext,
    said: set[str],
) -> _Candidate:
    """Closeness in meaning plus evidence from the arguments the caller's words fill, and from
    the caller naming the tool (`said`: the stems of the caller's line)."""
    filled = fill_arguments(
        tool.parameters, texts, proposal=slots.proposal, identity_digits=slots.ssn_digits
    )
    evidence = ARG_BONUS * filled.specific_required + 0.5 * ARG_BONUS * filled.specific_optional
    named = {stem(w) for w in words(_spoken(tool.name))}
    if named and named <= said:
        evidence += NAME_BONUS  # the caller asked for it by name ("file a claim": file_claim)
    required = len(tool.parameters.get("required") or [])
    return _Candidate(tool.name, similarity + evidence, filled, required)


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


def _fallback_route(routes: Sequence[ranking.Candidate]) -> str | None:
    """The route that returns a caller whose request is outside this agent's domain."""
    return next((r.key.removeprefix("route:") for r in routes if r.closing), None)


def _routes(request: AgentTurnInput) -> list[ranking.Candidate]:
    """The routes out of this agent, limited to the handoff tool's enum."""
    tool = next((t for t in request.tools if t.name == HANDOFF_TOOL), None)
    target = tool.parameters.get("properties", {}).get("target_agent", {}) if tool else {}
    allowed = set(target["enum"]) if isinstance(target.get("enum"), list) else None
    routes = [
        ranking.route_candidate(
            r.target_agent, r.condition, dialogue.own_description(r.target_description)
        )
        for r in request.routes
        if r.target_agent != request.agent and (allowed is None or r.target_agent in allowed)
    ]
    if not routes and tool is not None and allowed:
        # Open routing (generic handoff) lists targets only in the tool's description.
        described = tool.description.split("transfer to:", 1)[-1]
        for entry in described.split("; "):
            name, _, text = entry.partition(": ")
            if name.strip() in allowed and name.strip() != request.agent:
                routes.append(
                    ranking.route_candidate(name.strip(), "", dialogue.own_description(text))
                )
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
