"""Reading another program's SQLite database without disturbing it (a ``RECORDS`` source).

Invariants:

* **Read-only, never immutable.** The database is opened through a ``file:...?mode=ro``
  URI: this process cannot write it, and SQLite still takes its shared locks and reads the
  WAL, so rows the client committed a moment ago are seen (``immutable=1`` would skip the
  WAL and could read a torn page while the client writes).
* **Short transactions.** Every ``query`` is one statement in autocommit mode: it reads one
  consistent snapshot and holds its read lock only while it runs, so the client's own
  checkpoints are not held back between queries.
* **Busy is waited out, not fatal.** ``SQLITE_BUSY``/``SQLITE_LOCKED`` (a checkpoint or a
  recovery in progress) is retried with a growing pause, up to ``RETRIES`` times, then
  raised as ``OSError`` so ingest lists the file as unreadable for this run and reads it
  again next run.
* Text comes back as the exact bytes SQLite holds (``text_factory = bytes``): the archive
  stores what was read, byte for byte.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

RETRIES = 8
FIRST_PAUSE = 0.05  # seconds, doubled on every retry (about 13 s in all)
_BUSY = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED (primary codes)


class ReadOnlyDatabase:
    """``with ReadOnlyDatabase(path) as db: db.query(sql, params)``."""

    def __init__(self, path: str | Path, busy_timeout_ms: int = 2000) -> None:
        self.path = Path(path)
        self.busy_timeout_ms = busy_timeout_ms
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> "ReadOnlyDatabase":
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            conn.text_factory = bytes
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA query_only = 1")
        except sqlite3.Error as e:
            raise OSError(f"cannot open {self.path} read-only: {e}") from None
        self.conn = conn
        return self

    def __exit__(self, *exc: object) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """All rows of one read-only statement (one snapshot), retried while the database is busy."""
        assert self.conn is not None, "use ReadOnlyDatabase as a context manager"
        pause = FIRST_PAUSE
        for attempt in range(RETRIES + 1):
            try:
                return self.conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.OperationalError as e:
                code = getattr(e, "sqlite_errorcode", 0) or 0
                busy = code & 0xFF in _BUSY or "locked" in str(e) or "busy" in str(e)
                if not busy or attempt == RETRIES:
                    raise OSError(f"{self.path}: {e}") from None
                time.sleep(pause)
                pause *= 2
            except sqlite3.DatabaseError as e:
                raise OSError(f"{self.path}: {e}") from None
        raise AssertionError("unreachable")
