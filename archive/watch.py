"""Live ingest while ``serve`` runs (issue 41): watch the vendors' folders and ingest what
changes, within seconds, with the same engine and lock as ``ingest``.

Invariants:

* **Same engine, same lock.** A pass is a plain ``ingest`` (no paths: every vendor's default
  and side roots, then the project-local files, ``ingest_paths``), under ``ingest_lock`` taken
  without waiting: while a CLI ``ingest`` (or ``rebuild``) holds it, the pass is skipped and
  the next tick tries again, so nothing is lost and no one waits on the server. What the pass
  added is embedded for search by meaning when that extra is installed (as ``ingest`` does).
* **Cheap when idle.** Between passes only ``stat`` runs: a tick lists (path, size, mtime)
  of every file under the vendors' roots, of every archived file outside them (project-local
  logs, files ingested by hand) and of the named roots' project-local files
  (``project_roots.candidates``, globs only); a pass runs when that listing differs from the
  last pass's, and at least every ``FULL_SECONDS`` regardless (a file that appears in a
  folder nothing lists yet). Polling, not inotify: no dependency, it works on every file
  system (network mounts, bind mounts in containers), for roots that do not exist yet, and
  the measured cost of a tick is small (docs/web.md).
* **Never in a request.** The watcher is a daemon thread of the ``serve`` process with its own
  write connection; request handlers stay read-only (``archive.serve``). A pass's failure is
  reported (``status``) and retried on the next change, never raised into the server.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import project_roots, semantic
from .errors import ArchiveError
from .ingest import IngestLocked, IngestOptions, ingest_lock, ingest_paths, open_archive
from .vendors import VENDORS

INTERVAL = 1.0  # seconds between ticks
FULL_SECONDS = 60.0  # a pass at least this often, changes seen or not


@dataclass
class Status:
    passes: int = 0  # passes that ran (the lock was free)
    skipped_locked: int = 0  # ticks that found the lock held by another writer
    last_pass_at: float | None = None
    last_pass_seconds: float | None = None
    last_error: str | None = None
    last_summary: dict[str, Any] = field(default_factory=dict)


def _roots(env: Mapping[str, str]) -> list[str]:
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    out: list[str] = []
    for a in VENDORS:
        for r in [*a.default_roots(env, home), *a.side_roots(env, home)]:
            s = os.path.abspath(r)
            if s not in out:
                out.append(s)
    return out


def _walk(root: str, into: dict[str, tuple[int, int]]) -> None:
    stack = [root]
    seen: set[tuple[int, int]] = set()
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in seen:  # a link loop
                continue
            seen.add((st.st_dev, st.st_ino))
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=True):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=True):
                    s = e.stat(follow_symlinks=True)
                    into[e.path] = (s.st_size, s.st_mtime_ns)
            except OSError:
                continue


def _stat(path: str, into: dict[str, tuple[int, int]]) -> None:
    try:
        s = os.stat(path)
    except OSError:
        return
    into[path] = (s.st_size, s.st_mtime_ns)


def listing(db_path: str | os.PathLike[str], env: Mapping[str, str]) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file a plain ingest would look at (module docstring)."""
    out: dict[str, tuple[int, int]] = {}
    roots = _roots(env)
    for r in roots:
        if os.path.isdir(r):
            _walk(r, out)
        else:
            _stat(r, out)
    if not os.path.exists(db_path):
        return out
    conn = sqlite3.connect(f"file:{os.fspath(db_path)}?mode=ro", uri=True, timeout=5)
    try:
        prefixes = tuple(r.rstrip("/") + "/" for r in roots)
        for (p,) in conn.execute("SELECT path FROM source_paths WHERE missing = 0"):
            if not p.startswith(prefixes) and p not in out:
                _stat(p, out)
        for p in project_roots.candidates(conn, list(VENDORS), env, lambda s: False, lambda p, a, k: str(p)):
            _stat(p, out)
    except sqlite3.Error:
        pass  # an archive being created or migrated: the next tick lists it
    finally:
        conn.close()
    return out


class Watcher:
    """Ticks every ``interval`` seconds on a daemon thread (``start``/``stop``), or one tick at
    a time (``tick``, for tests)."""

    def __init__(self, db_path: str | os.PathLike[str], env: Mapping[str, str] | None = None,
                 interval: float = INTERVAL, full_seconds: float = FULL_SECONDS,
                 log: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.db_path = Path(db_path)
        self.env = dict(os.environ if env is None else env)
        self.interval = interval
        self.full_seconds = full_seconds
        self.status = Status()
        self.log = log or (lambda msg: print(f"watch: {msg}", file=sys.stderr, flush=True))
        self._last: dict[str, tuple[int, int]] | None = None
        self._last_pass = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> bool:
        """One look: a pass when something changed (or none ran for ``full_seconds``);
        whether a pass ran."""
        now = listing(self.db_path, self.env)
        due = self._last is None or now != self._last or time.monotonic() - self._last_pass >= self.full_seconds
        if not due:
            return False
        if not self.ingest():
            return False  # the lock was held: the listing is kept as unseen, the next tick retries
        self._last = now
        return True

    def ingest(self) -> bool:
        """A plain ingest under the lock, not waiting for it; False when another writer holds it."""
        started = time.monotonic()
        try:
            with ingest_lock(self.db_path, None):
                db = open_archive(self.db_path)
                try:
                    summary = ingest_paths(db, None, IngestOptions(env=self.env))
                    if semantic.available():
                        try:
                            semantic.update(db)
                        except ArchiveError as e:
                            self.log(f"semantic index not updated: {e}")
                finally:
                    db.conn.close()
        except IngestLocked:
            self.status.skipped_locked += 1
            return False
        except Exception as e:  # noqa: BLE001 - a failed pass is reported and retried, never raised into the server
            self.status.last_error = f"{type(e).__name__}: {e}"
            self.log(f"ingest failed: {self.status.last_error}")
            self._last_pass = time.monotonic()
            return True
        self.status.passes += 1
        self.status.last_error = None
        self.status.last_pass_at = time.time()
        self.status.last_pass_seconds = time.monotonic() - started
        self.status.last_summary = summary.to_dict()
        self._last_pass = time.monotonic()
        return True

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception as e:  # noqa: BLE001 - the watcher outlives a bad tick
                self.log(f"tick failed: {type(e).__name__}: {e}")
            self._stop.wait(self.interval)

    def start(self) -> Watcher:
        self._thread = threading.Thread(target=self._run, name="sesh-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
