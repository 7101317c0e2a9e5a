"""The embedded offline policy: a deterministic, rule-based stand-in for a chat model.

`policy.OfflineChatModel` plays the turn; the other modules are its parts (reading the
conversation, extracting values, filling tool arguments, summarising tool results, text
features). Nothing here touches the network.
"""
