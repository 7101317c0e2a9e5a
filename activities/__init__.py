"""Temporal activities: LLM turns, speech, business tools and handoff resolution."""
