"""A call bundle: every run of one call, each run's full history in Temporal's own JSON form, the
scenario snapshot the call pinned, and a manifest with the SHA-256 of each part.

A bundle is self-contained: reading one needs no server and no worker, only the codec keys the
call was recorded with (for decoding its payloads, which stay as exported: ciphertext when the
codec was on). `load_call` takes a call id (read from Temporal) or a file, which may also be a
bare Temporal history such as tests/histories/*.json (a multi-run call split into
`NAME.run1.json`, `NAME.run2.json`, ...).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import History, HistoryEvent
from temporalio.client import Client, WorkflowHistory
from temporalio.service import RPCError, RPCStatusCode

from audit.errors import AuditError
from audit.events import Event, events_of, payloads
from audit.payloads import PayloadReader
from contracts.snapshot import LOAD_CALL_SNAPSHOT, CallSnapshot
from contracts.temporal import workflow_id_for
from runtime.temporal_client import connect, temporal_address
from workflows.state import CallSessionInput

BUNDLE_FORMAT = "baton-call-bundle"
BUNDLE_FORMAT_VERSION = 1
#: A continue-as-new chain longer than this is not a call but a runaway; stop following it.
MAX_RUNS = 10_000
_RUN_FILE = re.compile(r"^(?P<stem>.+)\.run(?P<number>\d+)\.json$")


@dataclass(frozen=True)
class RunHistory:
    """One run of the call and its full history as Temporal's JSON (`{"events": [...]}`)."""

    run_id: str
    history: dict[str, Any]


@dataclass(frozen=True)
class CallBundle:
    """Everything an auditor needs about one call, with the hash of each part."""

    call_id: str
    workflow_id: str
    runs: list[RunHistory]
    #: The pinned snapshot as JSON (`CallSnapshot`), None when the call never loaded one.
    snapshot: dict[str, Any] | None
    snapshot_hash: str
    baton_version: str
    patch_ids: list[str]
    exported_at: str
    manifest: dict[str, str] = field(default_factory=dict)

    def parts(self) -> dict[str, Any]:
        """The hashed parts by name: the metadata, the snapshot, and one per run."""
        meta = {
            "call_id": self.call_id,
            "workflow_id": self.workflow_id,
            "run_ids": [run.run_id for run in self.runs],
            "snapshot_hash": self.snapshot_hash,
            "baton_version": self.baton_version,
            "patch_ids": self.patch_ids,
            "exported_at": self.exported_at,
        }
        parts: dict[str, Any] = {"metadata": meta, "snapshot": self.snapshot}
        for index, run in enumerate(self.runs, start=1):
            parts[f"run{index}:{run.run_id}"] = run.history
        return parts

    def computed_manifest(self) -> dict[str, str]:
        return {name: sha256_of(value) for name, value in self.parts().items()}

    def check_hashes(self) -> str | None:
        """The name of the first part whose hash does not match the manifest (or that the
        manifest lacks or has too many of), None when every part matches."""
        computed = self.computed_manifest()
        for name in [*computed, *(n for n in self.manifest if n not in computed)]:
            if computed.get(name) != self.manifest.get(name):
                return name
        return None

    def histories(self) -> list[WorkflowHistory]:
        """Each run's history as the SDK's `WorkflowHistory` (for the `Replayer`)."""
        try:
            return [_parse_history(self.workflow_id, run.history) for run in self.runs]
        except Exception as error:  # protobuf's ParseError and friends: the JSON is not a history
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise AuditError(f"a run of call {self.call_id!r} is not a history: {first}") from None

    def call_snapshot(self) -> CallSnapshot | None:
        """The pinned snapshot as the model the workflow used."""
        return None if self.snapshot is None else CallSnapshot.model_validate(self.snapshot)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": BUNDLE_FORMAT,
            "format_version": BUNDLE_FORMAT_VERSION,
            "call_id": self.call_id,
            "workflow_id": self.workflow_id,
            "exported_at": self.exported_at,
            "baton_version": self.baton_version,
            "patch_ids": self.patch_ids,
            "snapshot_hash": self.snapshot_hash,
            "snapshot": self.snapshot,
            "runs": [{"run_id": run.run_id, "history": run.history} for run in self.runs],
            "manifest": self.manifest,
        }


def _parse_history(workflow_id: str, history: dict[str, Any]) -> WorkflowHistory:
    """The SDK's `WorkflowHistory.from_json`, without its copy when it would change nothing.

    The SDK deep-copies the whole dict, then renames the enum values of Temporal's UI/CLI JSON
    (`WorkflowExecutionStarted`) to protobuf's (`EVENT_TYPE_WORKFLOW_EXECUTION_STARTED`):
    a third of parsing a long call, though a bundle's runs are protobuf's JSON already. A
    strict parse accepts only protobuf's enum names (each carries the prefix the SDK adds, so
    its renaming would have been a no-op) and known fields; anything else is left to the SDK.
    """
    try:
        parsed = json_format.ParseDict(history, History())
    except json_format.ParseError:
        return WorkflowHistory.from_json(workflow_id, history)
    return WorkflowHistory(workflow_id, parsed.events)


def sha256_of(value: Any) -> str:
    """The SHA-256 of a value's canonical JSON (sorted keys, no spaces), so the hash is of the
    content, however a file writer laid it out."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def baton_version() -> str:
    try:
        return metadata.version("baton")
    except metadata.PackageNotFoundError:
        return "unknown"


# -- building -------------------------------------------------------------------------------


async def bundle_from_histories(
    workflow_id: str, histories: list[dict[str, Any]], *, reader: PayloadReader | None = None
) -> CallBundle:
    """A bundle of the given runs (first run first), with its snapshot, patch ids and
    manifest worked out from their events."""
    if not histories:
        raise AuditError(f"workflow {workflow_id!r} has no history")
    parsed = [_events(history) for history in histories]
    runs = [
        RunHistory(run_id=_run_id(events) or f"run{n}", history=raw)
        for n, (events, raw) in enumerate(zip(parsed, histories, strict=True), start=1)
    ]
    snapshot = await _pinned_snapshot(parsed, reader or PayloadReader())
    bundle = CallBundle(
        call_id=workflow_id.removeprefix(workflow_id_for("")),
        workflow_id=workflow_id,
        runs=runs,
        snapshot=None if snapshot is None else snapshot.model_dump(mode="json"),
        snapshot_hash="" if snapshot is None else snapshot.content_hash,
        baton_version=baton_version(),
        patch_ids=patch_ids(parsed),
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    return _with_manifest(bundle)


def _with_manifest(bundle: CallBundle) -> CallBundle:
    return dataclasses.replace(bundle, manifest=bundle.computed_manifest())


def _events(history: dict[str, Any]) -> list[Event]:
    try:
        events = list(events_of(history))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise AuditError(f"not a Temporal history (bad event: {error})") from None
    if not events or events[0].type != "WORKFLOW_EXECUTION_STARTED":
        raise AuditError("not a Temporal history: it does not begin with the workflow's start")
    return events


def _run_id(events: list[Event]) -> str:
    return str(events[0].attrs.get("originalExecutionRunId") or "") if events else ""


def patch_ids(runs: list[list[Event]]) -> list[str]:
    """The workflow patch ids the runs recorded (their `core_patch` markers), first seen first."""
    seen: list[str] = []
    for events in runs:
        for event in events:
            if event.type != "MARKER_RECORDED" or event.attrs.get("markerName") != "core_patch":
                continue
            for payload in payloads((event.attrs.get("details") or {}).get("patch-data")):
                # Core writes patch markers itself, as plain JSON outside the codec.
                patch = json.loads(payload.data).get("id")
                if isinstance(patch, str) and patch not in seen:
                    seen.append(patch)
    return seen


async def recorded_snapshot(runs: list[RunHistory], reader: PayloadReader) -> CallSnapshot | None:
    """The snapshot the call pinned as its runs' histories record it, read afresh: the bundle's
    own `snapshot` part is a copy, which `audit verify` checks against this."""
    return await _pinned_snapshot([_events(run.history) for run in runs], reader)


async def _pinned_snapshot(runs: list[list[Event]], reader: PayloadReader) -> CallSnapshot | None:
    """The result of the call's `load_call_snapshot`, else the snapshot a later run was
    carried into with (a bundle whose first run is missing)."""
    for events in runs:
        scheduled: set[int] = set()
        for event in events:
            attrs = event.attrs
            if event.type == "ACTIVITY_TASK_SCHEDULED":
                if (attrs.get("activityType") or {}).get("name") == LOAD_CALL_SNAPSHOT:
                    scheduled.add(event.id)
                continue
            done = event.type == "ACTIVITY_TASK_COMPLETED"
            if done and int(attrs.get("scheduledEventId") or 0) in scheduled:
                return await reader.value(payloads(attrs.get("result")), CallSnapshot)
    for events in runs:
        sent = payloads(events[0].attrs.get("input")) if events else []
        if sent:
            started = await reader.value(sent, CallSessionInput)
            if started.carried is not None and started.carried.snapshot is not None:
                return started.carried.snapshot
    return None


def _started(history: WorkflowHistory) -> Any:
    first: HistoryEvent | None = history.events[0] if history.events else None
    if first is None or first.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
        return None
    return first.workflow_execution_started_event_attributes


# -- from Temporal ----------------------------------------------------------------------------


async def export_call(
    call_id: str, *, address: str | None = None, client: Client | None = None
) -> CallBundle:
    """The bundle of a call read from Temporal: every run of its continue-as-new chain, from the
    first, whether the call has ended or still runs."""
    where = temporal_address(address)
    if client is None:
        try:
            client = await connect(address)
        except RuntimeError as error:
            first = str(error).splitlines()[0][:200]
            raise AuditError(f"cannot reach Temporal at {where}: {first}") from None
    workflow_id = workflow_id_for(call_id)
    try:
        latest = await client.get_workflow_handle(workflow_id).fetch_history()
        start = _started(latest)
        run_id = start.first_execution_run_id if start is not None else ""
        histories: list[dict[str, Any]] = []
        while run_id and len(histories) < MAX_RUNS:
            run = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            histories.append(run.to_json_dict())
            run_id = _next_run_id(run)
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise AuditError(f"no call {call_id!r} on the Temporal server at {where}") from None
        raise AuditError(f"Temporal at {where} refused to read call {call_id!r}: {error}") from None
    return await bundle_from_histories(workflow_id, histories)


def _next_run_id(history: WorkflowHistory) -> str:
    last = history.events[-1] if history.events else None
    if last is None or last.event_type != EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        return ""
    return last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id


# -- files ------------------------------------------------------------------------------------


def write_bundle(bundle: CallBundle, path: Path) -> None:
    path.write_text(json.dumps(bundle.to_json(), indent=1, ensure_ascii=False) + "\n")


def read_bundle_json(data: dict[str, Any], name: str) -> CallBundle:
    """A bundle from its JSON; its hashes are not checked here (see `check_hashes`)."""
    if data.get("format") != BUNDLE_FORMAT:
        raise AuditError(f"{name} is not a Baton call bundle")
    if data.get("format_version") != BUNDLE_FORMAT_VERSION:
        raise AuditError(
            f"{name} is bundle format {data.get('format_version')!r}; this Baton reads "
            f"{BUNDLE_FORMAT_VERSION}"
        )
    try:
        return CallBundle(
            call_id=str(data["call_id"]),
            workflow_id=str(data["workflow_id"]),
            runs=[RunHistory(str(r["run_id"]), dict(r["history"])) for r in data["runs"]],
            snapshot=data.get("snapshot"),
            snapshot_hash=str(data.get("snapshot_hash") or ""),
            baton_version=str(data.get("baton_version") or ""),
            patch_ids=[str(p) for p in data.get("patch_ids") or []],
            exported_at=str(data.get("exported_at") or ""),
            manifest={str(k): str(v) for k, v in dict(data.get("manifest") or {}).items()},
        )
    except (KeyError, TypeError, ValueError) as error:
        raise AuditError(f"{name} is a damaged bundle (missing or bad {error})") from None


async def read_call_file(path: Path) -> CallBundle:
    """A bundle file as it is, or a bare Temporal history (with its sibling `.runN.json`
    files) made into a bundle."""
    data = _load_json(path)
    if isinstance(data, dict) and "events" in data:
        paths = history_run_files(path)
        histories = [data if p == path else _load_json(p) for p in paths]
        return await bundle_from_histories(_workflow_id_in(data, path), histories)
    if isinstance(data, dict) and "format" in data:
        return read_bundle_json(data, str(path))
    raise AuditError(f"{path} is neither a Baton call bundle nor a Temporal history")


def history_run_files(path: Path) -> list[Path]:
    """`path`, or every `STEM.runN.json` beside it in run order when it is one of them."""
    match = _RUN_FILE.match(path.name)
    if match is None:
        return [path]
    stem = match.group("stem")
    numbered = []
    for sibling in path.parent.glob(f"{stem}.run*.json"):
        found = _RUN_FILE.match(sibling.name)
        if found is not None and found.group("stem") == stem:
            numbered.append((int(found.group("number")), sibling))
    return [sibling for _, sibling in sorted(numbered)]


def _workflow_id_in(history: dict[str, Any], path: Path) -> str:
    events = history.get("events") or [{}]
    started = events[0].get("workflowExecutionStartedEventAttributes") or {}
    return str(started.get("workflowId") or workflow_id_for(path.name.split(".")[0]))


def _load_json(path: Path) -> Any:
    try:
        with _no_cycle_collection():
            return json.loads(path.read_bytes())
    except OSError as error:
        raise AuditError(f"cannot read {path}: {error.strerror}") from None
    except ValueError:
        raise AuditError(f"{path} is not JSON (neither a call bundle nor a history)") from None


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cycle collector paused while a file parses: parsed JSON holds no cycles, yet a
    bundle's million new containers set off collections that walk them all again and again
    (about a tenth of reading a long call into a report). Counting references still frees
    everything as usual."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


async def load_call(source: str, *, address: str | None = None) -> CallBundle:
    """A call by id (read from Temporal) or from a file (a bundle or a bare history; reads
    nothing else)."""
    path = Path(source)
    if path.is_file():
        return await read_call_file(path)
    if source.endswith(".json") or path.is_dir():
        raise AuditError(f"{source} is not a file (a call id or a bundle file is needed)")
    return await export_call(source, address=address)
