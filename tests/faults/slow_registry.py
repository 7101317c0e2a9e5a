"""A copy of the shipped registry whose `block_card` is slow, so a kill can land inside it.

The copy's `banking.py` keeps the real handler and wraps it: the card is blocked first (the
effect committed under the tool call's idempotency key, exactly as shipped), then the handler
lingers before returning its result. A worker killed while it lingers has applied the effect
but not reported it, which is the case idempotency exists for: the retry on another worker must
return the stored result, never block the card a second time.

It lingers for a fixed delay (a backend's latency, for the chaos bench) and, with a `Gate`,
for as long as the test holds the gate: the handler marks each entry with a file in the gate's
folder, and waits while the folder's `hold` file exists (bounded, so nothing waits forever).
Files work across processes, which is the point: the handler runs in a `tools` worker the test
started, and the test may kill it.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import yaml

from registries.loading import SHIPPED_REGISTRY

#: The longest a held handler waits for its gate, so a test that fails cannot wedge a worker.
HOLD_LIMIT_SECONDS = 60.0

_WRAPPER = '''

# --- test-only (tests/faults/slow_registry.py): a slow block_card --------------------------
import os as _fault_os
import time as _fault_time
from pathlib import Path as _FaultPath

_FAULT_GATE = {gate!r}
_FAULT_DELAY = {delay!r}
_FAULT_HOLD_LIMIT = {hold_limit!r}
_shipped_block_card = block_card


def block_card(ctx, **arguments):
    """The shipped handler (its effect applied once per idempotency key), then a pause."""
    result = _shipped_block_card(ctx, **arguments)
    if _FAULT_DELAY:
        _fault_time.sleep(_FAULT_DELAY)
    if _FAULT_GATE:
        gate = _FaultPath(_FAULT_GATE)
        (gate / f"entered-{{_fault_time.time_ns()}}-{{_fault_os.getpid()}}").touch()
        deadline = _fault_time.monotonic() + _FAULT_HOLD_LIMIT
        while (gate / "hold").exists() and _fault_time.monotonic() < deadline:
            _fault_time.sleep(0.01)
    return result
'''


class Gate:
    """Holds the slow tool from the test process; see the module docstring."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def hold(self) -> None:
        """From now on the handler waits after its effect, until `release`."""
        (self.folder / "hold").touch()

    def release(self) -> None:
        (self.folder / "hold").unlink(missing_ok=True)

    def entries(self) -> int:
        """How many times the handler has run (and finished its effect)."""
        return sum(1 for _ in self.folder.glob("entered-*"))

    async def entered(self, count: int = 1, timeout: float = 60.0) -> None:
        """Until the handler has run `count` times in all."""
        deadline = time.monotonic() + timeout
        while self.entries() < count:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the slow tool was not entered {count} time(s) in {timeout} s")
            await asyncio.sleep(0.01)


def slow_registry(
    root: Path, *, gate: Gate | None = None, delay: float = 0.0, voice_rate: str | None = None
) -> Path:
    """Copy the shipped registry under `root` with the slow `block_card`; returns its folder.

    `voice_rate` (e.g. "+100%") speeds every agent's voice up: voice calls play each reply in
    real time, and a fault test need not sit through every word of the calls it breaks.
    """
    registry = root / "slow-registry"
    shutil.copytree(SHIPPED_REGISTRY, registry, ignore=shutil.ignore_patterns("__pycache__"))
    module = registry / "toolstore" / "banking.py"
    wrapper = _WRAPPER.format(
        gate=str(gate.folder) if gate else "", delay=delay, hold_limit=HOLD_LIMIT_SECONDS
    )
    module.write_text(module.read_text(encoding="utf-8") + wrapper, encoding="utf-8")
    if voice_rate is not None:
        agents = registry / "agentstore"
        for path in [agents / "_defaults.yaml", *agents.glob("*/agent.yaml")]:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            if isinstance(data.get("voice"), dict) or path.name == "_defaults.yaml":
                data.setdefault("voice", {})["rate"] = voice_rate
                path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return registry
