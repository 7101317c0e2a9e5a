"""Fault injection with real processes: Baton processes to kill -9, test-only slow parts that
make a kill land inside an activity, and the checks a call must pass after each fault.

Used by `tests/workflow/test_fault_*.py` and `benchmarks/bench_chaos.py`.
"""
