"""What the chaos soak (`benchmarks.bench_chaos`) recorded, and the figures it prints from it:
each call's turns and checks, the faults injected, and per fault kind the stalls they caused.
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.stats import pct
from registries.demo_data import default_database_path
from tests.faults.checks import Transcript, audit_transcript, tool_effects, tool_results
from tests.faults.processes import Fault

FAULT_KINDS = ("calls", "llm", "speech", "tools", "gateway", "server")
#: What only voice calls need: without them neither runs, nor is killed.
VOICE_KINDS = ("speech", "gateway")
CALL_ID = re.compile(r"chaos-[0-9a-f]{12}")


@dataclass
class Turn:
    sent: float
    replied: float


@dataclass
class CallRecord:
    call_id: str
    said: list[str] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    status: str = "active"
    stuck: str = ""
    audited: bool = False
    lost: int = 0
    duplicated: int = 0
    silent: int = 0
    unanswered: int = 0
    #: Utterances the workflow refused because the call had ended (the caller was told so).
    refused: int = 0
    end_reason: str = ""
    #: `time.monotonic()` of the call's last reply.
    last_reply: float = 0.0
    #: block_card results that applied the block (or found it applied) and that failed.
    block_ok: int = 0
    block_failed: int = 0
    #: Through the gateway, heard as audio (benchmarks/chaos_voice.py).
    voice: bool = False
    #: Voice replies whose audio never reached the caller: when their lines were said.
    unheard: list[float] = field(default_factory=list)
    #: When a voice caller was back on a gateway after its line dropped (benchmarks.chaos_voice).
    back: list[float] = field(default_factory=list)


def check_call(record: CallRecord, transcript: Transcript, said: list[str]) -> None:
    """Check `transcript` for the utterances `said` (see tests/faults/checks.py)."""
    audit = audit_transcript(transcript, said)
    record.audited = True
    record.lost = len(audit.lost)
    record.duplicated = len(audit.duplicated)
    record.silent = len(audit.silent)
    record.unanswered = len(audit.unanswered)
    results = tool_results(transcript, "block_card")
    record.block_failed = sum(1 for result in results if "error" in result)
    record.block_ok = len(results) - record.block_failed


class ChaosFigures:
    """The calls placed, the faults injected and the errors met, and the figures from them."""

    def __init__(self, kinds: tuple[str, ...]) -> None:
        #: The kinds of process the scheduler kills, in the order the report lists them.
        self.kinds = kinds
        self.records: list[CallRecord] = []
        self.faults: list[Fault] = []
        self.fault_errors: list[str] = []
        self.caller_errors: Counter[str] = Counter()
        #: CPU seconds used by each kind of process this bench started (replaced ones included).
        self.cpu: defaultdict[str, float] = defaultdict(float)

    def gateway_death_before(self, at: float) -> Fault | None:
        """The latest gateway kill before `at`: the one a redial then answers (kills 30-60 s
        apart, each paired with every redial within a minute, counted one redial twice)."""
        deaths = [f for f in self.faults if f.kind == "gateway" and f.killed_mono < at]
        return max(deaths, key=lambda f: f.killed_mono, default=None)

    def fault_near(self, mono: float, after: float = 15.0) -> str:
        """Which fault `mono` fell in: from a kill to `after` seconds past its replacement's
        start-up ("no fault" otherwise), to tell faults' effects from the load's."""
        for fault in reversed(self.faults):
            if fault.killed_mono <= mono <= fault.up_mono + after:
                return f"during or just after a {fault.kind} fault"
        return "with no fault near"

    def stalls(
        self,
    ) -> tuple[dict[str, list[float]], dict[str, list[float]], list[float], list[float]]:
        """Per fault kind, each stalled turn's wait from the replacement being up to its
        reply, of every call and of the voice calls alone (whose reply is the first audio
        heard, a filler included); and the latency of turns no fault touched.

        A turn is stalled by the latest fault killed before its reply whose replacement came
        up after the turn was sent (the turn was in flight while something it needed was
        dead, or was sent during the outage). A turn that ended before the replacement was up
        did not wait for it.
        """
        stalled: dict[str, list[float]] = {kind: [] for kind in FAULT_KINDS}
        heard: dict[str, list[float]] = {kind: [] for kind in FAULT_KINDS}
        untouched: list[float] = []
        voice_untouched: list[float] = []
        for record in self.records:
            # A text call goes through neither the gateway nor the speech worker.
            faults = [f for f in self.faults if record.voice or f.kind not in VOICE_KINDS]
            for turn in record.turns:
                culprit = None
                for fault in faults:
                    if fault.killed_mono < turn.replied and turn.sent < fault.up_mono:
                        culprit = fault
                if culprit is None:
                    (voice_untouched if record.voice else untouched).append(
                        turn.replied - turn.sent
                    )
                elif turn.replied >= culprit.up_mono:
                    stalled[culprit.kind].append(turn.replied - culprit.up_mono)
                    if record.voice:
                        heard[culprit.kind].append(turn.replied - culprit.up_mono)
        return stalled, heard, untouched, voice_untouched

    def report(self, elapsed: float, drain_left: int) -> None:
        records = self.records
        audited = [r for r in records if r.audited]
        statuses = Counter(r.status for r in audited)
        stuck = [r for r in records if r.stuck]
        said = sum(len(r.said) for r in records)
        print(f"\nran {elapsed / 60:.1f} min; faults injected: {len(self.faults)} ", end="")
        kinds = Counter(f.kind for f in self.faults)
        print("(" + ", ".join(f"{k} {kinds[k]}" for k in self.kinds) + ")")
        for error in self.fault_errors:
            print(f"  replacement failed: {error}")
        print(
            f"calls placed {len(records)}: completed {statuses['completed']}, ended otherwise "
            f"{sum(statuses.values()) - statuses['completed']} "
            f"({', '.join(f'{s} {n}' for s, n in statuses.items() if s != 'completed') or '-'}), "
            f"stuck {len(stuck)}, still running when the drain ended {drain_left}"
        )
        for reason, count in Counter(r.stuck for r in stuck).most_common():
            print(f"  stuck: {reason}: {count}")
        ended = Counter(r.end_reason[:100] for r in audited if r.status != "completed")
        for reason, count in ended.most_common(8):
            near = Counter(
                self.fault_near(r.last_reply)
                for r in audited
                if r.status != "completed" and r.end_reason[:100] == reason
            )
            where = ", ".join(f"{n} {kind}" for kind, n in near.most_common())
            print(f"  ended: {reason}: {count} ({where})")
        for error, count in self.caller_errors.most_common():
            print(f"  caller error: {error}: {count}")
        print(
            f"utterances said {said}: lost {sum(r.lost for r in audited)}, duplicated "
            f"{sum(r.duplicated for r in audited)}, answered with silence "
            f"{sum(r.silent for r in audited)}, unanswered as the call ended "
            f"{sum(r.unanswered for r in audited)} (in {len(audited)} calls read back); "
            f"refused as the call had ended {sum(r.refused for r in records)}"
        )
        # Idempotency keys name their call; this bench's call ids are easy to find in them.
        effects = tool_effects(default_database_path(), "block_card")
        by_call = Counter(match.group(0) for e in effects if (match := CALL_ID.search(e["key"])))
        applied = sum(by_call[r.call_id] for r in audited)
        # A result that says the card is blocked needs its effect, and nothing else may add one.
        unbacked = sum(max(0, r.block_ok - by_call[r.call_id]) for r in audited)
        extra = sum(max(0, by_call[r.call_id] - r.block_ok - r.block_failed) for r in audited)
        # Every script asks for the block (its third line): a call past it with no block_card
        # at all means the model never got to act (as when voice calls heard only apologies).
        never = sum(1 for r in audited if len(r.said) >= 3 and not r.block_ok + r.block_failed)
        print(
            f"block_card: {sum(r.block_ok for r in audited)} done, "
            f"{sum(r.block_failed for r in audited)} failed (the caller was told), "
            f"{never} calls asked and got none; {applied} effects recorded: results without "
            f"an effect {unbacked}, effects beyond the tool calls {extra}"
        )
        stalled, heard, untouched, voice_untouched = self.stalls()
        print(f"turn latency, no fault in flight: {summary(untouched)}")
        voice = [r for r in records if r.voice]
        if voice:
            print(
                f"voice calls {len(voice)}: first audio of a reply, no fault in flight: "
                f"{summary(voice_untouched)}; replies never heard "
                f"{sum(len(r.unheard) for r in voice)}"
            )
            back = [
                at - death.up_mono
                for r in voice
                for at in r.back
                if (death := self.gateway_death_before(at)) and at <= death.up_mono + 60
            ]
            print(f"  redialed after a gateway fault, back on the line: {summary(back)}")
            near = Counter(self.fault_near(sent) for r in voice for sent in r.unheard)
            for where, count in near.most_common():
                print(f"  never heard: {count} {where}")
        print(
            "CPU, cores busy on average: "
            + ", ".join(f"{kind} {seconds / elapsed:.2f}" for kind, seconds in self.cpu.items())
        )
        print("stall, from the replacement being up to the call's next reply:")
        for kind in self.kinds:
            outages = [f.outage for f in self.faults if f.kind == kind]
            outage = f"; down {statistics.median(outages):.2f} s (p50)" if outages else ""
            print(f"  {kind:<8} {summary(stalled[kind])}{outage}")
        if voice:
            print("  of which voice calls, to the first audio heard (a filler or the reply):")
            for kind in self.kinds:
                print(f"    {kind:<8} {summary(heard[kind])}")


async def sample_load(loads: list[float], every: float = 15.0) -> None:
    """The machine's 1-minute load average, every `every` seconds, until cancelled."""
    while True:
        await asyncio.sleep(every)
        loads.append(os.getloadavg()[0])


def cpu_seconds(pid: int | None) -> float:
    """User plus system CPU time of a live process of ours, from /proc (0 if unreadable)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(samples: list[float]) -> str:
    if not samples:
        return "no samples"
    return (
        f"p50 {statistics.median(samples):6.2f} s   p95 {pct(samples, 0.95):6.2f} s   "
        f"max {max(samples):6.2f} s   (n={len(samples)})"
    )
