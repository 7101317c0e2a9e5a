"""Where Baton keeps its local data: one rule for every process."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from runtime.settings import settings


def data_dir() -> Path:
    """`$BATON_DATA_DIR`, or `~/.baton` when unset (demo database, dead letters, calls)."""
    base = settings().data_dir
    return Path(base).expanduser() if base else Path.home() / ".baton"


def cache_dir() -> Path:
    """`$BATON_CACHE_DIR`, else `$XDG_CACHE_HOME/baton`, else `~/.cache/baton`.

    For files derived from installed packages, the same for every run on a machine: unlike the
    data folder, which tests (and `baton scenario test`) give a fresh one each.
    """
    chosen = settings()
    if chosen.cache_dir:
        return Path(chosen.cache_dir).expanduser()
    base = Path(chosen.xdg_cache_home).expanduser() if chosen.xdg_cache_home else None
    return (base if base and base.is_absolute() else Path.home() / ".cache") / "baton"


def create_private_file(path: Path, text: str) -> bool:
    """Write `text` to `path`, readable by its owner only, unless `path` exists.

    The first writer wins and nobody ever sees the file half-written: the text goes to a
    temporary file (mode 0600) that is then hard-linked into place, which fails rather than
    replaces when another process got there first. So concurrent first starts (a gateway and a
    worker launched together) all end up reading the one file. True when this call made it.
    """
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 0600
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.link(scratch, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(scratch)
    return True


def keep_owner_only(path: Path) -> None:
    """Create `path` (empty) if missing and make it and its SQLite companions owner-only.

    SQLite gives a new `-wal`, `-shm` or `-journal` file the database file's mode, so a file
    made 0600 before SQLite first opens it keeps every companion private too; companions an
    older version left readable by others are narrowed here as well.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600, exist_ok=True)
    for companion in [path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))]:
        if companion.exists():
            companion.chmod(0o600)
