"""Baton's own metrics: names, labels and the values a label may take.

Shared by the three places that record them (workflows through the SDK's replay-safe meter,
activities and the gateway through prometheus_client) and by the one that exposes them
(`runtime.baton_metrics`), so a name is spelled once. Labels carry only bounded values from
the registry or from Baton's own code: never a call id, a caller's words or anything about
the caller. docs/METRICS.md says what each one means.
"""

from __future__ import annotations

from typing import Literal

#: Histogram, seconds: one stage of answering a caller (label `stage`).
TURN_STAGE_SECONDS = "baton_turn_stage_seconds"
#: Counter: handoffs by `scenario`, `source`, `target`, `type` and `outcome`.
HANDOFFS = "baton_handoffs"
#: Counter: calls handed to a human, by `reason` (an `EscalationReason`).
ESCALATIONS = "baton_escalations"
#: Counter: caller speech over a reply, by `outcome` (confirmed or resumed).
BARGE_INS = "baton_barge_ins"
#: Counter: utterances dropped or delivered again, by `outcome`.
UTTERANCES = "baton_utterances"
#: Gauges (gateway): calls and caller WebSockets held right now, by `transport`.
ACTIVE_CALLS = "baton_active_calls"
WEBSOCKET_CONNECTIONS = "baton_websocket_connections"
#: Counter (gateway): caller frames refused, by `transport`.
BAD_FRAMES = "baton_bad_frames"
#: Counter (gateway): calls whose workflow no worker took, by `outcome` (`UnservedOutcome`).
UNSERVED_CALLS = "baton_unserved_calls"
#: Counter: chat model and speech provider failures, by `provider` and `retryable`.
PROVIDER_ERRORS = "baton_provider_errors"
#: Counter: model tokens by `agent`, `model` and `kind` (prompt or completion).
LLM_TOKENS = "baton_llm_tokens"

Stage = Literal["stt", "model", "tool", "tts_first_byte", "speech_to_first_audio"]
HandoffOutcome = Literal["accepted", "refused", "loop_guard"]
EscalationReason = Literal[
    "scenario_unavailable",  # the scenario could not be loaded at call start
    "render_error",  # a prompt, greeting or handoff context failed to render
    "model_failures",  # the model failed several turns in a row
    "model_unavailable",  # the model failed and the agent's fallback is a person (offline)
    "refused_tool_calls",  # the model kept calling tools that were refused
    "loop_guard",  # too many handoffs, or ping-pong between two agents
    "agent_requested",  # an agent called its escalation tool
    "queue_unserved",  # no worker took work off a queue
]
BargeInOutcome = Literal["confirmed", "resumed", "backchannel"]
UtteranceOutcome = Literal["dropped", "retried"]
#: apologized: the caller was told (the gateway's own voice); recovered: a worker took the call
#: after that; ended: none did in time and the gateway hung up (media_gateway.unserved).
UnservedOutcome = Literal["apologized", "recovered", "ended"]

#: Every Baton metric: its kind, label names and help text (Prometheus' HELP line).
METRICS: dict[str, tuple[Literal["counter", "gauge", "histogram"], tuple[str, ...], str]] = {
    TURN_STAGE_SECONDS: ("histogram", ("stage",), "Seconds one stage of a caller turn took."),
    HANDOFFS: (
        "counter",
        ("scenario", "source", "target", "type", "outcome"),
        "Handoffs between agents, by outcome (accepted, refused, loop_guard).",
    ),
    ESCALATIONS: ("counter", ("reason",), "Calls escalated to a human, by reason."),
    BARGE_INS: (
        "counter",
        ("outcome",),
        "Speech over a reply: confirmed, resumed (noise) or backchannel.",
    ),
    UTTERANCES: ("counter", ("outcome",), "Utterances dropped, or delivered again (retried)."),
    ACTIVE_CALLS: ("gauge", ("transport",), "Calls this gateway holds now."),
    WEBSOCKET_CONNECTIONS: ("gauge", ("transport",), "Caller WebSockets open on this gateway."),
    BAD_FRAMES: ("counter", ("transport",), "Caller frames refused as malformed or unexpected."),
    UNSERVED_CALLS: (
        "counter",
        ("outcome",),
        "Calls no workflow worker took: the gateway apologized, then recovered or ended.",
    ),
    PROVIDER_ERRORS: (
        "counter",
        ("provider", "retryable"),
        "Chat model and speech provider failures, by provider and whether a retry can help.",
    ),
    LLM_TOKENS: ("counter", ("agent", "model", "kind"), "Model tokens, prompt or completion."),
}
