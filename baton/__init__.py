"""Baton: durable handoff orchestration for AI voice agents.

This package holds what every process shares: the command line and (later) the wire contracts
between the media gateway, the workers and Temporal.
"""
