"""Golden reports of the committed histories: one Markdown and one JSON report per call in
tests/histories, kept in tests/audit/goldens.

Regenerate them on purpose (after a change to what the reports say) with
`python -m tests.audit.goldens [NAME-PREFIX ...]`, then read the diff before committing it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from audit.bundle import load_call
from audit.report import render
from audit.timeline import read_timeline

HISTORIES = Path(__file__).parent.parent / "histories"
GOLDENS = Path(__file__).parent / "goldens"
#: One file per call: a call split into runs is read from its first run's file.
CALLS = sorted(p for p in HISTORIES.glob("*.json") if ".run" not in p.name or ".run1." in p.name)


def golden_name(history: Path) -> str:
    return history.name.removesuffix(".json").removesuffix(".run1")


async def reports(history: Path) -> dict[str, str]:
    """The call's report in each golden format."""
    timeline = await read_timeline(await load_call(str(history)))
    return {fmt: render(timeline, fmt) for fmt in ("md", "json")}


async def regenerate(names: list[str]) -> None:
    """Write the goldens of the calls whose golden name starts with one of `names` (all when
    none is given: a new version's calls only with e.g. `v10-`)."""
    GOLDENS.mkdir(exist_ok=True)
    for history in CALLS:
        if names and not golden_name(history).startswith(tuple(names)):
            continue
        for fmt, text in (await reports(history)).items():
            (GOLDENS / f"{golden_name(history)}.{fmt}").write_text(text, encoding="utf-8")
        print(f"wrote goldens for {history.name}")


if __name__ == "__main__":
    from tests.conftest import TEST_CODEC_KEYS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="golden name prefixes (default: every call)")
    os.environ["BATON_CODEC_KEYS"] = TEST_CODEC_KEYS  # the key the committed histories hold
    asyncio.run(regenerate(parser.parse_args().names))
