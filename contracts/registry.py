"""Pydantic models of the three registries: agents, scenarios and business tools.

The models are strict (unknown fields are errors, types are not coerced) so a typo in YAML is
reported instead of silently ignored. Cross-file rules (does this agent exist? is this template
valid?) live in `registries.validation`, which has the whole registry in view.
"""

from __future__ import annotations

import json
import re
from difflib import get_close_matches
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from contracts.speech import SPEECH_PROVIDERS
from contracts.transfer import TransferKind, TransferTarget
from contracts.words import DEFAULT_BACKCHANNELS, check_backchannels

HandoffType = Literal["announced", "discrete"]

#: The one tool every agent with an outbound route receives (seed model: unified handoffs).
HANDOFF_TOOL = "handoff_to_agent"


_T = TypeVar("_T")
#: A YAML list kept as an immutable tuple (strict mode alone would refuse the list).
Items = Annotated[tuple[_T, ...], Field(strict=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# --- agents -------------------------------------------------------------------------------


#: A BCP-47 language tag as speech services take it: language, optional script, region.
BCP47_TAG = r"^[a-z]{2,3}(-[A-Z][a-z]{3})?(-([A-Z]{2}|[0-9]{3}))?$"


class VoiceConfig(_Strict):
    name: str = "en-US-JennyNeural"
    rate: str = "+0%"
    style: str = "neutral"


class ModelConfig(_Strict):
    name: str = "gpt-4o-mini"
    temperature: float = Field(default=0.3, ge=0.0, le=2.0)
    max_tokens: int = Field(default=400, gt=0, le=32_000)
    #: Tried once for a turn the model failed (5xx, timeout, refused connection, after the
    #: retries): another model name or Azure deployment on the same provider, or "offline"
    #: (a person takes the call, with a ticket). None: the scenario's `model_fallback`.
    fallback: str | None = Field(default=None, min_length=1, max_length=200)


class SpeechFallback(_Strict):
    """Speech providers that take over a caller's segment or a reply's text the worker's own
    recognizer or synthesizer fails on with an error a retry could cure (5xx, timeout, refused
    connection): one of `SPEECH_PROVIDERS`, e.g. `offline` behind Azure Speech. Each role
    unset: the scenario's `speech_fallback`, then the worker's BATON_STT_FALLBACK /
    BATON_TTS_FALLBACK."""

    recognizer: str | None = None
    synthesizer: str | None = None

    @field_validator("recognizer", "synthesizer")
    @classmethod
    def _known_provider(cls, provider: str | None) -> str | None:
        if provider is not None and provider not in SPEECH_PROVIDERS:
            hint = get_close_matches(provider.lower(), SPEECH_PROVIDERS, n=1)
            fix = f"did you mean {hint[0]!r}?" if hint else "or leave it out"
            raise ValueError(
                f"{provider!r} is not a speech provider; use one of "
                f"{', '.join(SPEECH_PROVIDERS)} ({fix})"
            )
        return provider

    def over(self, default: SpeechFallback) -> SpeechFallback:
        """This agent's choice for each role, else `default`'s (the scenario's)."""
        return SpeechFallback(
            recognizer=self.recognizer or default.recognizer,
            synthesizer=self.synthesizer or default.synthesizer,
        )


class LegacyHandoffConfig(_Strict):
    """The pre-scenario way to route: a per-target tool such as `handoff_fraud_agent`."""

    trigger: str | None = None
    is_entry_point: bool = False


class AgentConfig(_Strict):
    """One agent, after the shared defaults have been deep-merged under its own YAML."""

    name: str = Field(min_length=1, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    description: str = ""
    greeting: str | None = None
    return_greeting: str | None = None
    tools: Items[str] = ()
    voice: VoiceConfig = VoiceConfig()
    model: ModelConfig = ModelConfig()
    #: The prompt template's source text (the loader reads the file named in YAML).
    prompt: str = ""
    #: File the prompt came from, for error messages; empty for inline prompts.
    prompt_file: str = ""
    template_vars: dict[str, Any] = Field(default_factory=dict)
    handoff: LegacyHandoffConfig = LegacyHandoffConfig()
    #: BCP-47 tag the agent speaks and hears: the recognizer's locale and the voice's.
    language: str = Field(default="en-US", pattern=BCP47_TAG)
    #: Recognizer and synthesizer that cover this agent's speech when the worker's fail.
    speech_fallback: SpeechFallback = SpeechFallback()

    @model_validator(mode="after")
    def _no_duplicate_tools(self) -> AgentConfig:
        seen: set[str] = set()
        for tool in self.tools:
            if tool in seen:
                raise ValueError(f"tool {tool!r} is listed twice; list each tool once")
            seen.add(tool)
        return self


# --- scenarios ----------------------------------------------------------------------------


class ToolResultRule(_Strict):
    """A route taken by code, not by the model: once the source agent's business tool `tool`
    returns a result whose fields equal all of `equals` (e.g. `verify_identity` returning
    `verified: true`), the caller goes to the route's target."""

    tool: str = Field(min_length=1)
    #: Result field -> the value it must have (compared with its type: `true` is not `1`).
    equals: dict[str, Any] = Field(min_length=1)

    def matches(self, tool: str, result: Any) -> bool:
        """Whether `tool` returning `result` (a tool's JSON object) takes this route."""
        if tool != self.tool or not isinstance(result, dict):
            return False
        return all(
            key in result and type(result[key]) is type(value) and result[key] == value
            for key, value in self.equals.items()
        )

    def describe(self) -> str:
        """The rule in words, for reasons and reports: `verify_identity returned verified=true`."""
        fields = ", ".join(f"{key}={json.dumps(value)}" for key, value in self.equals.items())
        return f"{self.tool} returned {fields}"


class HandoffEdge(_Strict):
    """A directed route `from_agent -> to_agent` of the scenario graph."""

    from_agent: str = Field(min_length=1)
    to_agent: str = Field(min_length=1)
    tool: str = HANDOFF_TOOL
    #: None inherits the scenario's `handoff_type`.
    type: HandoffType | None = None
    share_context: bool = True
    handoff_condition: str = ""
    context_vars: dict[str, str] = Field(default_factory=dict)
    #: Also taken with no model decision when the source agent's tool returns a matching result.
    on_tool_result: ToolResultRule | None = None


class GenericHandoffConfig(_Strict):
    """Routes not drawn as edges: `handoff_to_agent` to any allowed target."""

    enabled: bool = False
    #: Empty means every agent of the scenario.
    allowed_targets: Items[str] = ()
    default_type: HandoffType | None = None
    share_context: bool = True


#: A SIP URI, or on ACS a Communication Services or Teams user's raw id.
_SIP_ADDRESSES = ("sip:", "sips:", "8:acs:", "8:orgid:")


class EscalationTarget(_Strict):
    """Where escalated callers go: an E.164 number, a SIP URI, or a named queue (a console
    queue on the browser channel, a TaskRouter workflow or Twilio queue on Twilio, a Job Router
    queue id on ACS). ACS has no SIP-URI participant: there a `sip` target
    names the person's VoIP identity, a Communication Services (`8:acs:...`) or Teams
    (`8:orgid:...`) user."""

    kind: TransferKind
    address: str = Field(min_length=1, max_length=300)
    #: What the console and the audit timeline call it ("Fraud desk").
    label: str = Field(default="", max_length=100)

    @model_validator(mode="after")
    def _address_fits_kind(self) -> EscalationTarget:
        if self.kind == "phone" and not re.fullmatch(r"\+[1-9][0-9]{6,14}", self.address):
            raise ValueError("a phone target's address is an E.164 number such as +14155550100")
        if self.kind == "sip" and not self.address.startswith(_SIP_ADDRESSES):
            raise ValueError(
                "a sip target's address is a SIP URI such as sip:desk@pbx.example "
                "(on ACS, a user: 8:acs:... or 8:orgid:...)"
            )
        return self

    def to_transfer(self) -> TransferTarget:
        return TransferTarget(kind=self.kind, address=self.address, label=self.label)


class EscalationConfig(_Strict):
    """Where a scenario's escalations are transferred to a person, once the ticket is filed.

    The most specific target wins: the escalation's reason, then the agent holding the call,
    then the default. No target at all keeps the plain escalation (ticket, caller told so).
    """

    default_target: EscalationTarget | None = None
    #: Agent name -> target (e.g. FraudAgent -> the fraud desk).
    agent_targets: dict[str, EscalationTarget] = Field(default_factory=dict)
    #: Escalation reason (contracts.metrics.EscalationReason) -> target.
    reason_targets: dict[str, EscalationTarget] = Field(default_factory=dict)
    #: How long a caller waits on hold for a person before the call ends with the ticket kept.
    hold_timeout_seconds: float = Field(default=120.0, gt=0, le=3600, strict=False)

    def target_for(self, reason: str, agent: str) -> EscalationTarget | None:
        return (
            self.reason_targets.get(reason) or self.agent_targets.get(agent) or self.default_target
        )


class ScenarioConfig(_Strict):
    name: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_-]*$")
    description: str = ""
    start_agent: str | None = None
    #: Empty means every agent in the agent store.
    agents: Items[str] = ()
    handoff_type: HandoffType = "announced"
    handoffs: Items[HandoffEdge] = ()
    generic_handoff: GenericHandoffConfig = GenericHandoffConfig()
    agent_defaults: dict[str, Any] = Field(default_factory=dict)
    template_vars: dict[str, Any] = Field(default_factory=dict)
    escalation: EscalationConfig = EscalationConfig()
    #: Every agent's fallback model unless it names its own (see `ModelConfig.fallback`).
    model_fallback: str | None = Field(default=None, min_length=1, max_length=200)
    #: Every agent's speech fallback, role by role, unless it names its own.
    speech_fallback: SpeechFallback = SpeechFallback()
    #: A caller left this long with nothing said hears a filler ("One moment, please.").
    filler_after_seconds: float = Field(default=1.5, gt=0, le=10, strict=False)
    #: The longest a caller waits in silence on the model in one turn: past it the turn ends
    #: with an honest apology (and counts toward escalation), never minutes of silence.
    max_silence_seconds: float = Field(default=8.0, ge=2, le=60, strict=False)
    #: The caller's language (the signed profile's `language`) -> the agent that takes the
    #: call; a full tag ("es-MX") is tried first, then its language ("es"), then `start_agent`.
    start_agent_by_language: dict[str, str] = Field(default_factory=dict)
    #: Said over a reply, these resume it instead of cutting it (contracts.words); [] turns
    #: that off, so any speech long enough cuts in.
    backchannels: Items[str] = DEFAULT_BACKCHANNELS

    @field_validator("backchannels")
    @classmethod
    def _usable_backchannels(cls, phrases: tuple[str, ...]) -> tuple[str, ...]:
        return check_backchannels(phrases)

    def type_of(self, edge: HandoffEdge) -> HandoffType:
        return edge.type or self.handoff_type


# --- handoff decisions ------------------------------------------------------------------


class HandoffResolution(BaseModel):
    """The outcome of one handoff request; also what history records for auditors."""

    model_config = ConfigDict(frozen=True)

    success: bool
    target_agent: str | None = None
    source_agent: str | None = None
    tool_name: str | None = None
    system_vars: dict[str, Any] = Field(default_factory=dict)
    greet_on_switch: bool = False
    share_context: bool = True
    handoff_type: HandoffType = "announced"
    error: str | None = None
    #: Why the switch happened, kept even when `share_context` hides it from the target.
    reason: str = ""
    #: Where the source agent may go instead, on failure.
    valid_targets: tuple[str, ...] = ()

    @property
    def is_discrete(self) -> bool:
        return self.handoff_type == "discrete"

    @property
    def is_announced(self) -> bool:
        return self.handoff_type == "announced"


# --- tools --------------------------------------------------------------------------------


class ToolSpec(_Strict):
    """A business tool as the LLM sees it, plus what Baton needs to run it safely."""

    name: str = Field(min_length=1, pattern=r"^[a-zA-Z_][a-zA-Z0-9_]{0,63}$")
    description: str = Field(min_length=1)
    #: JSON schema of the arguments (an object schema).
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    #: Function name in the Python module beside the YAML file; defaults to `name`.
    handler: str | None = None
    #: Changes data: runs exactly once per call and activity even when retried.
    mutates: bool = False
    #: Ends the agent's part of the call (escalation to a human, hang-up).
    ends_conversation: bool = False
    #: Hands the caller to a human queue: the call ends as `escalated`, with a ticket.
    escalates: bool = False

    @model_validator(mode="after")
    def _object_schema(self) -> ToolSpec:
        if self.parameters.get("type") != "object":
            raise ValueError("parameters must be a JSON schema with type: object")
        props = self.parameters.get("properties", {})
        if not isinstance(props, dict):
            raise ValueError("parameters.properties must be a mapping of argument schemas")
        for required in self.parameters.get("required", []):
            if required not in props:
                raise ValueError(f"required argument {required!r} is not in properties")
        return self

    @property
    def handler_name(self) -> str:
        return self.handler or self.name


class ToolFile(_Strict):
    tools: Items[ToolSpec]
