"""The file index: one ``file_touches`` row per file a tool call or a file-change block
read, created, changed, deleted or named (``archive/derived.py`` keeps it current).

Invariants:

* Derived from ``blocks`` alone, thread by thread: indexing a thread deletes its rows and
  writes them again, so the index equals what a fresh build from the projection gives
  (``rebuild`` equals ingest, and an upgrade builds it from the archive it finds).
* What a call touched is the adapter's to say (``Adapter.touched_paths``: the usual path
  keys, patch headers, a conservative reading of shell commands); a tool the thread's
  adapter does not map (a canonical import, an unknown vendor) is read with the kind any
  adapter gives that name. Nothing here names a vendor.
* Paths are normalised against the thread's cwd (its parent's for a subagent): ``src/a.py``
  in a session run in ``/repo`` is ``/repo/src/a.py``; ``..`` and ``.`` are folded, ``~`` is
  left as written (the archive does not know whose home it was). A relative path in a
  thread without a cwd stays relative.
"""

from __future__ import annotations

import orjson
import posixpath
import sqlite3
from collections import Counter
from collections.abc import Iterator
from typing import Any

from .signals import changed_paths
from .vendors import VENDORS
from .vendors import get as get_adapter
from .vendors.base import Adapter
from .vendors.tool_paths import default_touched_paths, may_name_paths

_ANY_KIND: dict[str, str] = {}


def _any_kind(name: str | None) -> str | None:
    if not _ANY_KIND:
        for a in reversed(VENDORS):  # the first registered vendor wins a shared name
            _ANY_KIND.update(getattr(a, "tool_kinds", None) or {})
    return _ANY_KIND.get(name or "", name)


def _adapter(provider: str | None) -> Adapter | None:
    try:
        return get_adapter(provider or "")
    except KeyError:
        return None


def normalise(path: str, cwd: str | None) -> str:
    """``path`` joined to ``cwd`` when relative and ``cwd`` is known, ``..`` and ``.`` folded."""
    p = path.strip()
    if p.startswith("file://"):
        p = p[len("file://") :]
    if not p.startswith(("/", "~")) and cwd:
        p = posixpath.join(cwd, p)
    return posixpath.normpath(p)


def call_touches(adapter: Adapter | None, tool_name: str | None, value: Any) -> Iterator[tuple[str, str]]:
    """The ``(path as written, action)`` pairs of one tool call's input."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except ValueError:
            pass
    if adapter is not None and (tool_name or "") in adapter.tool_kinds:
        yield from adapter.touched_paths(tool_name, value)
    else:
        yield from default_touched_paths(_any_kind(tool_name), value)


def drop_indexes(conn: sqlite3.Connection) -> list[str]:
    """Drop ``file_touches``' lookup indexes (not its primary key); their SQL, for
    ``create_indexes`` (caller's transaction: a failure before it rolls back with it)."""
    found = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'file_touches' AND sql IS NOT NULL"
    ).fetchall()
    for name, _sql in found:
        conn.execute(f'DROP INDEX "{name}"')
    return [sql for _name, sql in found]


def create_indexes(conn: sqlite3.Connection, sqls: list[str]) -> None:
    for sql in sqls:
        conn.execute(sql)


def thread_cwd(conn: sqlite3.Connection, thread_id: str) -> tuple[str | None, str | None]:
    """The thread's provider and cwd (its parent's cwd when it has none)."""
    row = conn.execute(
        "SELECT t.provider, coalesce(t.cwd, p.cwd) FROM threads t LEFT JOIN threads p ON p.id = t.parent_thread_id "
        "WHERE t.id = ?",
        (thread_id,),
    ).fetchone()
    return (row[0], row[1]) if row else (None, None)


def touches(provider: str | None, cwd: str | None, blocks: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """``file_touches`` rows (without the thread id) of a thread's blocks, each block given
    as ``(message_id, ts, position, type, tool_name, input, path)``."""
    reader = _BlockReader(_adapter(provider), cwd)
    rows: list[tuple[Any, ...]] = []
    for block in blocks:
        reader.read(rows, *block)
    return rows


class _BlockReader:
    """The touches of one thread's blocks: its adapter looked up once, each path as written
    normalised once (a thread names the same files again and again)."""

    def __init__(self, adapter: Adapter | None, cwd: str | None) -> None:
        self.adapter, self.cwd = adapter, cwd
        self.kinds = adapter.tool_kinds if adapter is not None else {}
        self.normalised: dict[str, str] = {}

    def read(self, rows: list[tuple[Any, ...]], mid: str, ts: str | None, pos: int, btype: str, name: str | None,
             inp: str | None, bpath: str | None) -> None:  # fmt: skip
        found = self.found(btype, name, inp, bpath)
        if found is not None:
            self.emit(rows, mid, ts, pos, name, found)

    def found(self, btype: str, name: str | None, inp: str | None, bpath: str | None) -> list[tuple[str, str]] | None:
        """The ``(path as written, action)`` pairs of one block; None: it names none."""
        if btype == "file_change":
            return [(bpath, "changed")] if bpath else []
        if btype == "tool_call" and inp:
            key = name or ""
            kind = self.kinds[key] if key in self.kinds else _any_kind(name)
            if isinstance(inp, str) and not may_name_paths(kind, inp):
                return None  # a JSON object with none of the keys a path is read from
            return list(call_touches(self.adapter, name, inp))
        return None

    def emit(self, rows: list[tuple[Any, ...]], mid: str, ts: str | None, pos: int, name: str | None,
             found: list[tuple[str, str]]) -> None:  # fmt: skip
        """The block's rows: each path normalised against the cwd, a (path, action) once."""
        seen: set[tuple[str, str]] = set()
        for written, action in found:
            path = self.normalised.get(written)
            if path is None:
                path = self.normalised[written] = normalise(written, self.cwd)
            if not path or path == "." or (path, action) in seen:
                continue
            seen.add((path, action))
            rows.append((mid, pos, len(seen) - 1, ts, path, posixpath.basename(path) or path, action, name))


class ThreadIndexer:
    """Writes a thread's ``file_touches`` rows block by block (the caller deleted the old
    ones), in batches: only the batch not yet written is held, so a long thread's rows are
    never all in memory. ``finish`` returns how many times each path was changed (what the
    signals read of them, ``signals.changed_paths``)."""

    BATCH = 1000

    def __init__(self, conn: sqlite3.Connection, thread_id: str, provider: str | None, cwd: str | None) -> None:
        self.conn, self.thread_id = conn, thread_id
        self.rows: list[tuple[Any, ...]] = []  # the batch not yet written
        self.changed: Counter[str] = Counter()
        self._reader = _BlockReader(_adapter(provider), cwd)

    def add(self, mid: str, ts: str | None, pos: int, btype: str, name: str | None, inp: str | None,
            bpath: str | None) -> None:  # fmt: skip
        self._reader.read(self.rows, mid, ts, pos, btype, name, inp, bpath)
        if len(self.rows) >= self.BATCH:
            self._write()

    def emit(self, mid: str, ts: str | None, pos: int, name: str | None, found: list[tuple[str, str]]) -> None:
        """A block whose paths were found already, as written (``derived.Live``)."""
        self._reader.emit(self.rows, mid, ts, pos, name, found)
        if len(self.rows) >= self.BATCH:
            self._write()

    def _write(self) -> None:
        if not self.rows:
            return
        self.conn.executemany(
            "INSERT OR REPLACE INTO file_touches (thread_id, message_id, position, seq, ts, path, name, action, tool_name) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(self.thread_id, *r) for r in self.rows],
        )
        changed_paths(self.rows, self.changed)
        self.rows = []

    def finish(self) -> Counter[str]:
        self._write()
        return self.changed
