"""Activities `synthesize_speech` and `transcribe_segment` (speech queue). The audio itself
travels over the gRPC media plane (`contracts/proto/media.proto`), never through history."""

from __future__ import annotations

from contracts._base import Payload

SYNTHESIZE_SPEECH = "synthesize_speech"
TRANSCRIBE_SEGMENT = "transcribe_segment"

#: gRPC metadata on `FollowReplyText`: when the followed reply began (the first attempt of its
#: speech was scheduled), in Unix seconds. A gateway that started after that and holds nothing of
#: the reply knows its text went to the gateway before it (killed since, say) and answers
#: NOT_FOUND at once instead of waiting for text that will never come.
REPLY_STARTED_METADATA = "baton-reply-started"

#: The speech providers a worker can build (activities.speech_providers.factory), and so the
#: names a registry's `speech_fallback` may give.
SPEECH_PROVIDERS = ("offline", "offline-light", "openai", "azure-openai", "azure")


class SynthesisRequest(Payload):
    call_id: str
    gateway_address: str
    agent: str
    text: str
    voice: str = ""
    rate: str = "+0%"
    #: The agent's language (BCP-47): a provider picks that locale's voice when `voice` is
    #: empty or speaks another language.
    locale: str = ""
    utterance_id: str = ""
    #: Speak the reply the LLM worker publishes under this id (see `SpokenReply`), sentence by
    #: sentence as it is written, instead of `text`.
    follow_reply_id: str = ""
    #: The provider (one of SPEECH_PROVIDERS) that speaks a text the worker's synthesizer fails
    #: on, from the agent's or scenario's `speech_fallback`; "" keeps the worker's own
    #: BATON_TTS_FALLBACK. Defaulted, so requests recorded before it still decode.
    fallback_provider: str = ""


class SynthesisResult(Payload):
    chars_played: int
    played_ms: int
    completed: bool
    #: The gateway stopped the reply because the caller spoke over it.
    barged_in: bool = False
    #: What was synthesized, for a followed reply (the workflow compares it with the model's).
    spoken_text: str = ""


class TranscriptionRequest(Payload):
    call_id: str
    gateway_address: str
    segment_ref: str
    locale: str = "en-US"
    #: Set for a segment said over a paused reply: the phrases that make it a backchannel.
    #: The worker tells the gateway what the words are (contracts.words) as soon as it has them.
    backchannels: list[str] | None = None
    #: The provider that hears a segment the worker's recognizer fails on (as for synthesis).
    fallback_provider: str = ""


class TranscriptionResult(Payload):
    text: str
    confidence: float = 0.0
    #: The gateway resumed the paused reply: the words were only a backchannel, not a turn.
    backchannel: bool = False
