"""Which workflow patches each history recorded: `python -m tests.histories.markers [FILE|DIR ...]`.

A patch marker (`workflow.patched(...)` taken in a run) is stored unencrypted by the SDK, so
this reads the JSON alone, no key needed. With no argument it reads the committed histories;
`--need ID,ID` exits non-zero naming any patch id that no given history holds.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

HERE = Path(__file__).parent
#: The SDK's marker for `workflow.patched` and the detail that holds its id.
PATCH_MARKER = "core_patch"
PATCH_DETAIL = "patch-data"


def patch_ids(history: Path) -> list[str]:
    """The patch ids a history file recorded, in the order they were first taken."""
    events = json.loads(history.read_text())["events"]
    found: list[str] = []
    for event in events:
        marker = event.get("markerRecordedEventAttributes")
        if marker is None or marker.get("markerName") != PATCH_MARKER:
            continue
        for payload in marker["details"][PATCH_DETAIL]["payloads"]:
            patch = json.loads(base64.b64decode(payload["data"]))["id"]
            if patch not in found:
                found.append(patch)
    return found


def histories(paths: list[str]) -> list[Path]:
    chosen = [Path(p) for p in paths] or [HERE]
    files: list[Path] = []
    for path in chosen:
        files += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="history files or folders (default: committed)")
    parser.add_argument("--need", default="", help="comma-separated patch ids that must occur")
    args = parser.parse_args(argv)
    seen: set[str] = set()
    for history in histories(args.paths):
        try:
            ids = patch_ids(history)
        except (OSError, ValueError, KeyError, TypeError) as error:
            print(f"{history}: not a readable history ({error})", file=sys.stderr)
            return 2
        seen.update(ids)
        print(f"{history.name}: {', '.join(ids) or '(no patches)'}")
    missing = [p for p in args.need.split(",") if p and p not in seen]
    if missing:
        print(f"no history holds patch(es): {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
