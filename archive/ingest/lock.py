"""One writer at a time: the archive's write lock."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .options import IngestLocked


@contextmanager
def ingest_lock(db_path: str | os.PathLike[str], wait: float | None = 600.0) -> Iterator[None]:
    """One writer at a time: a second ingest waits up to ``wait`` seconds (None: fail at once)."""
    lock_path = f"{db_path}.lock"
    fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        deadline = time.monotonic() + (wait or 0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if wait is None or time.monotonic() >= deadline:
                    raise IngestLocked(f"another ingest is running on {db_path} (lock {lock_path})")
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def lock_held(db_path: str | os.PathLike[str]) -> bool:
    """Whether an ingest (or rebuild) holds the archive's write lock right now. Never creates
    the lock file: a reader must leave nothing behind."""
    try:
        fd = os.open(f"{db_path}.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False
