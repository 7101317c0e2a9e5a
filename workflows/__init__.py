"""Temporal workflows (the call session). Deterministic code only: no I/O, no clocks."""
