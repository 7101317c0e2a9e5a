"""Child processes that die with the process that started them, however it dies.

`EmbeddedTemporal` runs `temporal server start-dev` in a session of its own, so that Ctrl-C in
a terminal reaches only Baton, which then stops the server cleanly. A clean exit stops it, but
a `kill -9`, an OOM kill or a crash of Baton runs no Python code at all: the server lived on,
holding its port and its SQLite file, and the next `baton server` said the port was in use.

Linux has one mechanism that needs nothing from the dying process: the parent-death signal
(`prctl(PR_SET_PDEATHSIG)`), set in the child between fork and exec and kept across exec.
`subprocess` has no option for it and no dependency sets it (psutil only inspects processes),
so it is hand-written here with ctypes. Elsewhere the child starts as before and only a clean
exit stops it.

The kernel sends that signal when the *thread* that forked the child ends, not the process
(see prctl(2)). A server started from a short-lived thread (`asyncio.to_thread`, an executor,
an event loop run in a thread) would be killed as that thread ends, so every child is forked
from one daemon thread that lasts as long as the process.
"""

from __future__ import annotations

import ctypes
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: SIGKILL rather than SIGTERM: once the parent is gone nobody is left to escalate if a graceful
#: shutdown hangs, and the dev server's SQLite store (WAL journal) is safe against a process
#: kill (tests/temporal/test_server_lifetime.py kills it so and reopens the store).
PARENT_DEATH_SIGNAL = signal.SIGKILL

_Prctl = Callable[[int, int, int, int, int], int]
_T = TypeVar("_T")


def _load_prctl() -> _Prctl | None:
    """libc's prctl, resolved now: looking a symbol up after fork could take a lock that some
    other thread held at the fork, and the child would hang before exec."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    prctl.restype = ctypes.c_int
    return prctl  # type: ignore[no-any-return]


_PRCTL = _load_prctl()


def supported() -> bool:
    """Whether children started here die with this process on any death (Linux)."""
    return _PRCTL is not None


def _die_with(parent: int, prctl: _Prctl) -> Callable[[], None]:
    """What the child runs between fork and exec. Only calls made ready beforehand: no imports
    and no symbol lookups (see `_load_prctl`)."""

    def in_child() -> None:
        if prctl(_PR_SET_PDEATHSIG, PARENT_DEATH_SIGNAL, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
        # The parent may have died between fork and prctl; then no signal will ever come.
        if os.getppid() != parent:
            os.kill(os.getpid(), PARENT_DEATH_SIGNAL)

    return in_child


class _Forker:
    """The one daemon thread every tethered child is forked from (see the module docstring)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def run(self, job: Callable[[], _T]) -> _T:
        with self._lock:
            # Not alive after os.fork() in a child of ours (only the forking thread survives).
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._serve, name="baton-child-forker", daemon=True
                )
                self._thread.start()
        done: Future[_T] = Future()
        self._jobs.put((job, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            job, done = self._jobs.get()
            try:
                done.set_result(job())
            except BaseException as exc:  # handed to the caller, who raises it
                done.set_exception(exc)


_FORKER = _Forker()


def popen_tethered(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """`subprocess.Popen(args, **kwargs)` whose child gets `PARENT_DEATH_SIGNAL` when this
    process dies, on Linux; a plain `Popen` elsewhere."""
    prctl = _PRCTL
    if prctl is None:
        return subprocess.Popen(args, **kwargs)
    if "preexec_fn" in kwargs:
        raise ValueError("popen_tethered sets preexec_fn itself")
    tether = _die_with(os.getpid(), prctl)
    return _FORKER.run(lambda: subprocess.Popen(args, preexec_fn=tether, **kwargs))
