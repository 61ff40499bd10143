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
* An empty ``file_touches`` filled for ``BULK_THREADS`` threads or more (a first ingest, an
  upgrade) is written without its lookup indexes, which are created again from their own
  SQL before ``refresh`` returns or raises: the schema a run commits is always the same.
"""

from __future__ import annotations

import sqlite3

from . import file_index, saved_copies, signals
from .vendors import get as get_adapter
from .vendors.base import Adapter

TEXT_PREFIX = 200  # what Adapter.message_signal sees of a message's first text
BULK_THREADS = 200  # queued threads from which an empty index is filled without its indexes
_SIGNAL_COLS = ("thread_id", "tool_calls", "tool_errors", "retries", "same_file_edits", "compactions",
                "interrupted_turns", "ending", "first_ts", "last_ts", "duration_seconds", "active_seconds")  # fmt: skip


def queue(conn: sqlite3.Connection, thread_ids: "set[str] | list[str]") -> None:
    """Queue these threads for ``refresh`` (caller's transaction)."""
    if thread_ids:
        try:
            conn.executemany("INSERT OR IGNORE INTO _derived_dirty VALUES (?)", [(t,) for t in thread_ids])
        except sqlite3.OperationalError:  # an archive migrated before m110 made the queue
            pass


def refresh(conn: sqlite3.Connection) -> int:
    """Recompute the queued threads' derived rows (caller's transaction); how many."""
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
            refresh_thread(conn, tid, fresh=bulk)
    finally:
        file_index.create_indexes(conn, indexes)
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
    s = tally.result(indexer.finish())
    conn.execute(
        f"INSERT OR REPLACE INTO thread_signals ({', '.join(_SIGNAL_COLS)}) VALUES ({', '.join('?' * len(_SIGNAL_COLS))})",
        (thread_id, *(s[c] for c in _SIGNAL_COLS[1:])),
    )
