"""Keeping the derived per-thread tables current: ``file_touches`` (``archive/file_index.py``)
and ``thread_signals`` (``archive/signals.py``).

Invariants:

* A thread is queued in ``_derived_dirty`` whenever one of its messages is written, moved
  or deleted, or its ``threads`` row is written (a new cwd); the queue commits with the
  rows that caused it. Triggers (migration m110) queue deletions and moves of messages and
  writes of ``threads`` rows; written messages are queued by their writer, the projector
  (``queue``, once per batch from ``Projector.refold``: migration m138 dropped the trigger
  that ran once per message row). Anything else that inserts ``messages`` rows must call
  ``queue`` for their threads. ``refresh`` recomputes exactly the queued
  threads, whole, and empties the queue, inside the caller's transaction: at the end of
  every ingest run, rebuild and forget, and in the message store's writes. A thread is
  scanned once per run however many commits the run made (a 600 MB session re-scanned at
  each of its commits cost more than the rest of the index); a run that is killed leaves
  its threads queued, and the next run's end computes them.
* The saved copies of the scopes (project folders) the queued threads belong to are linked
  again first (``saved_copies.relink``).
* A queued thread that no longer exists loses its rows. User data (tags, notes) is not
  derived and is never touched here.
* One streamed scan of the thread's blocks serves both tables: the signals are tallied as
  the rows come (``signals.Tally``), no list of its blocks is kept. A tool result's text
  and output are not read (only the first characters of text blocks, for
  ``Adapter.message_signal``), each column only for the block types that use it, and a
  call's input is held only while its paths are read (and as the previous call's, for
  retries).
  Cost, measured on the bench corpus: docs/file-history.md, docs/benchmarks.md.
* An ingest run computes the same rows while its projector writes the messages (``Live``),
  for the threads it writes whole and in order; ``refresh`` writes those without reading
  them back, and reads back the others. The two give the same rows
  (tests/test_derived_queue.py; ``scripts/derived_digest.py --as-ingested``).
* An empty ``file_touches`` filled for ``BULK_THREADS`` threads or more (a first ingest, an
  upgrade) is written without its lookup indexes, which are created again from their own
  SQL before ``refresh`` returns or raises: the schema a run commits is always the same.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from collections.abc import Iterable
from typing import Any

import orjson

from . import file_index, saved_copies, signals
from .rows import _BLOCK_COL_NAMES, _MESSAGE_COL_NAMES
from .vendors import get as get_adapter
from .vendors.base import Adapter

TEXT_PREFIX = 200  # what Adapter.message_signal sees of a message's first text
BULK_THREADS = 200  # queued threads from which an empty index is filled without its indexes
# where ``Live.message`` reads its columns in the rows the projector writes (no dict per row)
_M_ID, _M_THREAD, _M_ROLE, _M_TS, _M_INJECTED, _M_EXTRA = map(
    _MESSAGE_COL_NAMES.index, ("id", "thread_id", "role", "ts", "injected", "extra"))
_B_TYPE, _B_TEXT, _B_CALL, _B_TOOL, _B_INPUT, _B_ERROR, _B_PATH = map(
    _BLOCK_COL_NAMES.index, ("type", "text", "call_id", "tool_name", "input", "is_error", "path"))
_SIGNAL_COLS = ("thread_id", "tool_calls", "tool_errors", "retries", "same_file_edits", "compactions",
                "interrupted_turns", "ending", "first_ts", "last_ts", "duration_seconds", "active_seconds")  # fmt: skip


def queue(conn: sqlite3.Connection, thread_ids: "set[str] | list[str]") -> None:
    """Queue these threads for ``refresh`` (caller's transaction)."""
    if thread_ids:
        try:
            conn.executemany("INSERT OR IGNORE INTO _derived_dirty VALUES (?)", [(t,) for t in thread_ids])
        except sqlite3.OperationalError:  # an archive migrated before m110 made the queue
            pass


def refresh(conn: sqlite3.Connection, live: Live | None = None) -> int:
    """Recompute the queued threads' derived rows (caller's transaction); how many.
    ``live``: what the run's projector computed while it wrote them (``Live``)."""
    try:
        queued = [r[0] for r in conn.execute("SELECT thread_id FROM _derived_dirty")]
    except sqlite3.OperationalError:  # an earlier migration rebuilding before m110 made the tables
        return 0
    if not queued:
        return 0
    # a first ingest (or an upgrade) fills an empty index: its lookup indexes are built once
    # at the end, which costs less than keeping four of them in order row by row
    bulk = len(queued) >= BULK_THREADS and conn.execute("SELECT 1 FROM file_touches LIMIT 1").fetchone() is None
    saved_copies.relink(conn, queued)  # a copy or a session of theirs changed: its scope again
    indexes = file_index.drop_indexes(conn) if bulk else []
    try:
        for tid in queued:
            if live is None or not live.write(tid, fresh=bulk):
                refresh_thread(conn, tid, fresh=bulk)
    finally:
        file_index.create_indexes(conn, indexes)
        if live is not None:
            live.close()
    conn.execute("DELETE FROM _derived_dirty")
    return len(queued)


def refresh_thread(conn: sqlite3.Connection, thread_id: str, *, fresh: bool = False) -> None:
    """Recompute one thread's rows; ``fresh``: the index holds none of them (nothing to delete)."""
    provider, cwd = file_index.thread_cwd(conn, thread_id)
    if not fresh:
        conn.execute("DELETE FROM file_touches WHERE thread_id = ?", (thread_id,))
    if provider is None and not conn.execute("SELECT 1 FROM threads WHERE id = ?", (thread_id,)).fetchone():
        conn.execute("DELETE FROM thread_signals WHERE thread_id = ?", (thread_id,))
        return
    try:
        adapter = get_adapter(provider or "")
    except KeyError:
        adapter = None
    # an adapter that marks no message: its messages' extra JSON need not be read
    marks = adapter is not None and type(adapter).message_signal is not Adapter.message_signal
    cur = conn.execute(
        # only what the two tables read, each column for the block types that use it: a tool
        # result's text or output can be megabytes, and a value not read is not a Python object
        f"SELECT m.id, m.role, m.ts, m.injected, {'m.extra' if marks else 'NULL'}, b.position, b.type, "
        "CASE WHEN b.type IN ('tool_call', 'file_change') THEN b.tool_name END, "
        "CASE WHEN b.type IN ('tool_call', 'file_change') THEN b.input END, "
        "CASE WHEN b.type = 'file_change' THEN b.path END, "
        "CASE WHEN b.type IN ('tool_call', 'tool_result') THEN b.call_id END, "
        "CASE WHEN b.type = 'tool_result' THEN b.is_error END, "
        f"CASE WHEN b.type = 'text' THEN substr(b.text, 1, {TEXT_PREFIX}) END "
        # the block types the two tables read: a reasoning block or an image is skipped
        "FROM messages m LEFT JOIN blocks b ON b.message_id = m.id "
        "AND b.type IN ('text', 'tool_call', 'tool_result', 'file_change') WHERE m.thread_id = ? "
        "ORDER BY m.source_id, m.generation, m.offset, m.sub, b.position",
        (thread_id,),
    )
    indexer = file_index.ThreadIndexer(conn, thread_id, provider, cwd)
    add = indexer.add
    tally = signals.Tally(adapter.message_signal if marks else None)
    block, message = tally.block, tally.message
    # one pass: a message is given to the tally once its blocks are read (its first text)
    current: tuple[object, ...] | None = None
    first_text: str | None = None
    has_text = False
    for mid, role, ts, injected, extra, pos, btype, name, inp, bpath, call_id, is_error, text in cur:
        if current is None or current[0] != mid:
            if current is not None:
                message(*current[1:], first_text, has_text)
            current, first_text, has_text = (mid, role, ts, injected, extra), None, False
        if pos is None:
            continue
        if btype == "text":
            if text:
                if first_text is None:
                    first_text = text
                if not has_text and text.strip():
                    has_text = True
            block(btype, name, None, call_id, is_error, bool(text and text.strip()))
            continue
        # a call's input as it is stored: retries compare inputs (the previous call's only)
        block(btype, name, inp or None, call_id, is_error, False)
        if btype == "tool_call" or btype == "file_change":
            add(mid, ts, pos, btype, name, inp, bpath)
    if current is not None:
        message(*current[1:], first_text, has_text)
    _write_signals(conn, thread_id, tally.result(indexer.finish()))


def _write_signals(conn: sqlite3.Connection, thread_id: str, s: dict[str, object]) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO thread_signals ({', '.join(_SIGNAL_COLS)}) VALUES ({', '.join('?' * len(_SIGNAL_COLS))})",
        (thread_id, *(s[c] for c in _SIGNAL_COLS[1:])),
    )


def _input_key(inp: str | None) -> object:
    """What a call's input is compared by for retries: the text, a digest for a long one
    (a thread's last call is held until the run's end)."""
    if not inp:
        return None
    return inp if len(inp) <= 256 else hashlib.sha256(inp.encode("utf-8", "surrogatepass")).digest()


# The paths a run's calls name wait for their thread's cwd (known at the run's end) in a scratch
# database of their own: a file, so that a big first import keeps them on disk, not in memory.
# Not TEMP: the ingest loop keeps its statement journals in memory (``temp_store``, engine.py),
# and a temp table would then live in memory too.
SCRATCH = "ingest_scratch"


def attach_scratch(conn: sqlite3.Connection) -> None:
    """Attach the scratch database (outside a transaction), unless it is; its file is
    unlinked at once, so nothing is left behind when the process ends, however it ends."""
    if any(r[1] == SCRATCH for r in conn.execute("PRAGMA database_list")):
        return
    fd, path = tempfile.mkstemp(prefix="sesh-archive-scratch-", suffix=".db")
    os.close(fd)
    try:
        conn.execute("ATTACH DATABASE ? AS " + SCRATCH, (path,))
        # rolled back with the run's transaction (Live.discard trusts nothing after one anyway)
        conn.execute(f"PRAGMA {SCRATCH}.journal_mode = MEMORY")
        conn.execute(f"PRAGMA {SCRATCH}.synchronous = OFF")
    finally:
        try:
            os.unlink(path)
        except OSError:  # a system that cannot unlink an open file: gone at detach_scratch
            pass


def detach_scratch(conn: sqlite3.Connection) -> None:
    """Detach the scratch database (outside a transaction), if attached."""
    for _seq, name, path in conn.execute("PRAGMA database_list").fetchall():
        if name == SCRATCH:
            conn.execute("DETACH DATABASE " + SCRATCH)
            if path and os.path.exists(path):
                os.unlink(path)


class _Thread:
    __slots__ = ("provider", "key", "tally")

    def __init__(self, provider: str | None, tally: signals.StreamTally) -> None:
        self.provider, self.key, self.tally = provider, (-1,), tally


class Live:
    """The derived rows of the threads an ingest run writes, computed while the projector
    writes their messages (``Projector.live``): no read of the threads back at the run's end.

    Invariants:

    * Exact or nothing: a thread is computed here only when the run gives it every message
      it has, each once, in conversation order (the key order of ``refresh_thread``'s read),
      with the times in order, and its provider at the end is the one its lines were read
      with; anything else (a thread holding messages before the run, a copy owned elsewhere
      or taking a message over, a message replaced, a re-derived source, a rolled back
      transaction) leaves it to ``refresh_thread``, which reads it from the archive.
    * Bounded memory: per thread its signals' running figures (``signals.StreamTally``: the
      last call's input as a digest when long); the paths each call names, as written, go
      to the scratch database per batch and are normalised against the thread's cwd, which is
      known only at the end, by ``write``.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.threads: dict[str, _Thread] = {}
        self.spoiled: set[str] = set()
        self.broken = False
        self._providers: dict[int, str | None] = {}
        self._readers: dict[str | None, file_index._BlockReader] = {}
        self._marks: dict[str | None, bool] = {}
        self._pending: list[tuple[object, ...]] = []
        self._named: set[str] = set()  # the threads a call of which named a path (their rows in the scratch table)
        attach_scratch(conn)
        try:  # an earlier run's on this connection, interrupted
            conn.execute(f"DELETE FROM {SCRATCH}._live_touches")
        except sqlite3.OperationalError:
            pass

    def spoil(self, *thread_ids: str) -> None:
        for tid in thread_ids:
            self.spoiled.add(tid)
            self.threads.pop(tid, None)

    def discard(self) -> None:
        """The transaction was rolled back: nothing computed so far holds."""
        self.broken = True
        self.threads.clear()
        self._pending = []

    def new_source(self, source_id: int, provider: str) -> None:
        """A source the transaction inserted: its provider, without reading it back."""
        self._providers[source_id] = provider

    def _provider(self, source_id: int) -> str | None:
        if source_id not in self._providers:
            row = self.conn.execute("SELECT provider FROM sources WHERE id = ?", (source_id,)).fetchone()
            self._providers[source_id] = row[0] if row else None
        return self._providers[source_id]

    def _start(self, thread_id: str, source_id: int) -> _Thread | None:
        if thread_id in self.spoiled or self.broken:
            return None
        if self.conn.execute("SELECT 1 FROM messages WHERE thread_id = ? LIMIT 1", (thread_id,)).fetchone():
            self.spoiled.add(thread_id)  # messages from earlier runs: read back at the end
            return None
        provider = self._provider(source_id)
        if provider not in self._readers:
            adapter = file_index._adapter(provider)
            self._readers[provider] = file_index._BlockReader(adapter, None)
            self._marks[provider] = adapter is not None and type(adapter).message_signal is not Adapter.message_signal
        signal_of = file_index._adapter(provider).message_signal if self._marks[provider] else None  # type: ignore[union-attr]
        t = self.threads[thread_id] = _Thread(provider, signals.StreamTally(signal_of))
        return t

    def message(self, key: tuple[int, int, int, int], values: tuple[object, ...], blocks: list[tuple[object, ...]]) -> None:
        """One message row as written (``rows.message_values``) and its block rows
        (``rows.block_tuple``), by position."""
        tid = values[_M_THREAD]
        assert isinstance(tid, str)
        t = self.threads.get(tid) or self._start(tid, key[0])
        if t is None:
            return
        if key <= t.key:
            self.spoil(tid)  # not in conversation order
            return
        t.key = key
        tally = t.tally
        block = tally.block
        mid, ts = values[_M_ID], values[_M_TS]
        found_of = self._readers[t.provider].found
        first_text: str | None = None
        has_text = False
        pos = -1
        for b in blocks:
            pos += 1
            btype = b[_B_TYPE]
            if btype == "text":
                text = b[_B_TEXT]
                if text:
                    assert isinstance(text, str)
                    text = text[:TEXT_PREFIX]
                    if first_text is None:
                        first_text = text
                    if not has_text and text.strip():
                        has_text = True
                block(btype, None, None, None, None, bool(text and text.strip()))
            elif btype == "tool_call" or btype == "file_change":
                name, inp = b[_B_TOOL], b[_B_INPUT]
                block(btype, name, _input_key(inp), b[_B_CALL] if btype == "tool_call" else None, None, False)  # type: ignore[arg-type]
                found = found_of(btype, name, inp, b[_B_PATH] if btype == "file_change" else None)  # type: ignore[arg-type]
                if found:
                    try:
                        self._pending.append((tid, mid, pos, ts, name, orjson.dumps(found)))
                        self._named.add(tid)
                    except TypeError:  # a path orjson cannot write (a lone surrogate): read back
                        self.spoil(tid)
                        return
            elif btype == "tool_result":
                block(btype, None, None, b[_B_CALL], b[_B_ERROR], False)
        extra = values[_M_EXTRA] if self._marks[t.provider] else None
        tally.message(values[_M_ROLE], ts, values[_M_INJECTED], extra, first_text, has_text)  # type: ignore[arg-type]
        if tally.unordered:
            self.spoil(tid)

    def flush(self) -> None:
        """The batch's paths into the scratch database (the caller's transaction)."""
        if not self._pending or self.broken:
            return
        self.conn.execute(
            f"CREATE TABLE IF NOT EXISTS {SCRATCH}._live_touches "
            "(thread_id TEXT, message_id TEXT, position INTEGER, ts TEXT, tool_name TEXT, found TEXT)"
        )
        self.conn.execute(f"CREATE INDEX IF NOT EXISTS {SCRATCH}._live_touches_thread ON _live_touches(thread_id)")
        self.conn.executemany(f"INSERT INTO {SCRATCH}._live_touches VALUES (?, ?, ?, ?, ?, ?)", self._pending)
        self._pending = []

    def write(self, thread_id: str, *, fresh: bool) -> bool:
        """Write the thread's rows if computed here (``refresh``'s transaction); False: not."""
        t = self.threads.pop(thread_id, None)
        if t is None or thread_id in self.spoiled or self.broken:
            return False
        provider, cwd = file_index.thread_cwd(self.conn, thread_id)
        if provider != t.provider:
            return False
        self.flush()
        if not fresh:
            self.conn.execute("DELETE FROM file_touches WHERE thread_id = ?", (thread_id,))
        indexer = file_index.ThreadIndexer(self.conn, thread_id, None, cwd)  # the paths are found already
        found: Iterable[tuple[Any, ...]] = ()  # no call of the thread named a path: nothing to read back
        if thread_id in self._named:
            found = self.conn.execute(
                f"SELECT message_id, position, ts, tool_name, found FROM {SCRATCH}._live_touches WHERE thread_id = ? "
                "ORDER BY rowid",
                (thread_id,),
            )
        for mid, pos, ts, name, pairs in found:
            indexer.emit(mid, ts, pos, name, [tuple(p) for p in orjson.loads(pairs)])
        _write_signals(self.conn, thread_id, t.tally.result(indexer.finish()))
        return True

    def close(self) -> None:
        self.threads.clear()
        self._pending = []
        self._named.clear()
        try:
            self.conn.execute(f"DELETE FROM {SCRATCH}._live_touches")
        except sqlite3.OperationalError:
            pass
