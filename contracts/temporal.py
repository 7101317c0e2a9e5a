"""What every process must agree on with Temporal: namespace, task queues, the call workflow's
type and id, and the search attributes that make calls findable."""

from __future__ import annotations

NAMESPACE = "default"
WORKFLOW_NAME = "CallSessionWorkflow"

# Task queues: each scales as its own worker fleet.
CALLS_QUEUE = "baton-calls"
LLM_QUEUE = "baton-llm"
SPEECH_QUEUE = "baton-speech"
TOOLS_QUEUE = "baton-tools"
QUEUES = {"calls": CALLS_QUEUE, "llm": LLM_QUEUE, "speech": SPEECH_QUEUE, "tools": TOOLS_QUEUE}

#: Custom search attributes the workflow upserts (registered by `baton server`).
SEARCH_ATTRIBUTES: dict[str, str] = {
    "BatonScenario": "Keyword",
    "BatonActiveAgent": "Keyword",
    "BatonStatus": "Keyword",
    "BatonVisitedCount": "Int",
}


#: A workflow task outlives its worker by at most this long: after a `calls` worker dies
#: mid-task, another picks the call up this soon (Temporal's default is 10 s).
WORKFLOW_TASK_TIMEOUT_SECONDS = 2.0


def workflow_id_for(call_id: str) -> str:
    """The workflow id of a call: starting twice for one call id reaches the same workflow."""
    return f"call-{call_id}"
