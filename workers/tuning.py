"""A worker process's limits, set by `baton worker`'s flags (this module imports nothing
heavy, so the CLI can show the defaults without loading the workflow sandbox)."""

from __future__ import annotations

from dataclasses import dataclass

#: Workflow tasks one calls worker runs at once (its replays compete for one interpreter).
MAX_CONCURRENT_WORKFLOW_TASKS = 8
#: Seconds a stopping worker gives the activities it holds to finish (a reply being spoken is
#: the longest); an orchestrator's kill grace (Kubernetes: 30 s) must be longer.
DEFAULT_DRAIN_SECONDS = 20.0
#: Past the drain, the SDK cancels what is left; this long more and the process exits anyway.
SHUTDOWN_SLACK_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True)
class WorkerTuning:
    """Per-process limits, one set for every queue the process serves (`baton worker` flags).

    The defaults and the measurements behind them are in docs/PERFORMANCE.md."""

    #: Workflow tasks at once on the calls queue: few, each fast, so a replacement rebuilding
    #: hundreds of calls never overruns the 2 s workflow task timeout.
    max_workflow_tasks: int = MAX_CONCURRENT_WORKFLOW_TASKS
    #: Activities at once per activity queue (None: the SDK's 100; tools: 16 threads).
    max_activities: int | None = None
    #: Long polls held open per queue and kind of task (the SDK's default, 5).
    pollers: int = 5
    #: Calls kept in the calls worker's memory between turns (about 120 KB each).
    sticky_cache: int = 1000
    drain_seconds: float = DEFAULT_DRAIN_SECONDS


#: Threads for the tools queue's synchronous handlers when `max_activities` is not set.
DEFAULT_TOOL_THREADS = 16
