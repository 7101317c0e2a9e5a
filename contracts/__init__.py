"""Baton's cross-process contracts, one home each, grouped by plane.

Every process (the gateway, the workers, the CLI) agrees on these and nothing else, so none of
them imports another's code. This package imports nothing of Baton, only pydantic.

* `temporal`: namespace, task queues, workflow type and id, search attributes.
* `calls`: the call workflow's input, updates, signals and queries, with their payloads.
* `transcript`: the typed conversation items queries return and auditors read.
* one module per activity (`snapshot`, `agent_reply`, `handoff`, `tools`, `speech`,
  `escalation`), each holding the activity's name beside its request and result.
* `registry`: the registry's schema (agents, scenarios, tools), which snapshots carry.
* `gateway_events`: the JSON events the gateway and a browser softphone exchange.
* `proto/media.proto`: the gRPC media plane between speech workers and the gateway.

Payload models are pydantic, carried by the pydantic data converter. New fields always get
defaults, so histories recorded before a field existed keep decoding.
"""
