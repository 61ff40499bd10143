"""Re-deriving sources inside a running engine's transaction: the rows derived from some
sources deleted and derived again from their stored lines (``rebuild``, and sources whose
thread id another vendor took while ingesting: ``archive/identity.py``).

It receives the engine; it never creates one (``rebuild.py`` does), so the engine may call it."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from sqlite_utils import Database

from ..identity import outranked_sources
from ..lines import Pieces, iter_stored_spans
from ..projection import dumps, fold_thread, index_text
from ..vendors import get as get_adapter
from ..vendors.base import (
    SourceInfo,
)
from .generations import source_rows
from .options import BATCH_LINES

if TYPE_CHECKING:
    from .engine import Engine


def rederive_outranked(engine: Engine) -> None:
    """At the end of an ingest run, inside the caller's transaction: re-derive the sources
    whose thread id another vendor, ranked first, now holds (``ThreadNames.outranked``), so
    that they take their namespaced id, as they would have had that vendor come first."""
    # the run's summary counts what it read, not these lines read again from the archive
    summary, added = engine.summary, engine.projector.messages_added
    lines, reports = summary.lines, summary.reports.copy()
    while engine.names.outranked:
        outranked, engine.names.outranked = engine.names.outranked, set()
        uids = outranked_sources(engine.conn, outranked)
        sources = [s for uid in uids for s in source_rows(Database(engine.conn), None, uid) if s[1] == uid]
        rederive(engine, sharing_messages(engine.conn, sources))
    index_text(engine.conn)
    summary.lines, summary.reports, engine.projector.messages_added = lines, reports, added


def sharing_messages(conn: sqlite3.Connection, sources: list[tuple[int, str, str, str]]) -> list[tuple[int, str, str, str]]:
    """``sources`` and every other source holding a message id one of them holds, in source
    order (as ``generations.source_rows`` gives them): which thread owns a message two
    sources carry (an emitted copy read back and its original) is decided as they are
    applied, so re-deriving one of them alone would keep the owner the old names gave it,
    where a rebuild, applying both, ranks them afresh."""
    if not sources:
        return sources
    ids = dumps([s[0] for s in sources])
    return conn.execute(
        "SELECT id, uid, provider, kind FROM sources WHERE kind != 'store' AND (id IN (SELECT value FROM json_each(:ids)) "
        "OR id IN (SELECT o.source_id FROM message_occurrences o WHERE o.message_id IN (SELECT message_id FROM "
        "message_occurrences WHERE source_id IN (SELECT value FROM json_each(:ids))))) ORDER BY id",
        {"ids": ids},
    ).fetchall()


def rederive(engine: Engine, sources: list[tuple[int, str, str, str]]) -> None:
    """Delete the rows derived from ``sources`` and derive them again (caller's transaction)."""
    conn = engine.conn
    ids = [s[0] for s in sources]
    marks = ", ".join("?" * len(ids))
    threads = {r[0] for r in conn.execute(f"SELECT thread_id FROM thread_facts WHERE source_id IN ({marks})", ids)}
    threads |= {r[0] for r in conn.execute(f"SELECT thread_id FROM messages WHERE source_id IN ({marks})", ids)}
    if engine.projector.live is not None:  # their messages go: read back at the run's end
        engine.projector.live.spoil(*threads)
    conn.execute(f"DELETE FROM blocks WHERE message_id IN (SELECT id FROM messages WHERE source_id IN ({marks}))", ids)
    for table in ("messages", "message_occurrences", "thread_facts", "usage", "reports"):
        conn.execute(f"DELETE FROM {table} WHERE source_id IN ({marks})", ids)
    # derived from the copies: found again while the lines are applied
    conn.execute("DELETE FROM thread_lineage WHERE thread_id IN (SELECT value FROM json_each(?))", (dumps(sorted(threads)),))
    for sid, uid, prov, kind in sources:
        adapter = get_adapter(prov)
        gens = conn.execute("SELECT generation FROM generations WHERE source_id = ? ORDER BY generation", (sid,)).fetchall()
        # parsers may read ids from the file name (Claude's agent meta.json, a session's
        # leading summary): they see the first path, as at ingest (Engine._parser_path)
        first_path = conn.execute("SELECT coalesce(first_path, last_path, '') FROM sources WHERE id = ?", (sid,)).fetchone()[0]
        for (g,) in gens:
            parser = adapter.parser(SourceInfo(uid, prov, first_path, g, kind), None)
            for n, (offset, length, _term, line) in enumerate(iter_stored_spans(conn, sid, g), 1):
                rows = engine._refused(length) if isinstance(line, Pieces) else engine._feed(parser, offset, line)
                engine.projector.apply(prov, (sid, g, offset), engine.names.map_rows(prov, rows))
                if n % BATCH_LINES == 0:
                    engine.projector.flush()  # memory stays bounded whatever the archive's size
            engine.projector.flush()
            conn.execute(
                "UPDATE generations SET parser_state = ? WHERE source_id = ? AND generation = ?",
                (dumps(parser.state()), sid, g),
            )
    engine.projector.flush()
    for tid in sorted(threads | engine.projector.dirty_threads):
        exists = conn.execute(  # a thread holding only copies of others' messages (a fork) stays, as at ingest
            "SELECT 1 FROM thread_facts WHERE thread_id = ? UNION SELECT 1 FROM messages WHERE thread_id = ? "
            "UNION SELECT 1 FROM message_occurrences WHERE thread_id = ?",
            (tid, tid, tid),
        ).fetchone()
        if exists:
            fold_thread(conn, tid)
        else:
            conn.execute("DELETE FROM threads WHERE id = ?", (tid,))
    engine.projector.dirty_threads.clear()
