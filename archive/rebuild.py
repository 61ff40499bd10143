"""Re-deriving the projection from the source layer: ``rebuild``, and the re-derivation of
sources whose thread ids moved while ingesting (``archive/identity.py``).

Invariants:

* **Rebuild equals ingest.** The chosen sources' rows (messages, blocks, occurrences, facts,
  usage, reports, the lineage of their threads) are deleted and derived again from their
  stored lines alone, generation by generation, through the same parsers, the same thread
  naming (``ThreadNames``: the claims stay) and the same projector as ingest; every thread
  they touched is folded again, or deleted when nothing holds it any more.
* One transaction: a failure leaves the archive as it was.
"""

from __future__ import annotations

import time

from sqlite_utils import Database

from . import secrets, semantic
from .db import ArchiveError
from .identity import merged_claims, outranked_sources
from .ingest import BATCH_LINES, Engine, Summary, _source_rows
from .lines import Pieces, iter_stored_spans
from .projection import dumps, fold_thread, index_text, resolve_origins
from .vendors import get as get_adapter
from .vendors.base import SourceInfo


def rebuild(db: Database, provider: str | None = None, source: str | None = None) -> Summary:
    """Re-derive the projection of the chosen sources from their stored lines alone."""
    sources = _source_rows(db, provider, source)
    if (provider or source) and not sources:
        raise ArchiveError("no source matches")
    return rebuild_sources(db, sources)


def split_merged(db: Database) -> list[str]:
    """Re-derive the sources of vendors whose rows sit in a thread another vendor, ranked
    first, holds (an archive from before thread claims: ``identity.merged_claims``); their
    uids. Nothing to do, and one indexed query, on an archive that has none."""
    uids = outranked_sources(db.conn, merged_claims(db.conn))
    if uids:
        rebuild_sources(db, [s for uid in uids for s in _source_rows(db, None, uid) if s[1] == uid])
    return uids


def rebuild_sources(db: Database, sources: list[tuple[int, str, str, str]]) -> Summary:
    engine = Engine(db, command="rebuild")
    started = time.monotonic()
    with engine.guard(started):
        engine._start_run()
        conn = engine.conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            rederive(engine, sources)
            engine.summary.files_seen += len(sources)
            resolve_origins(conn)
            index_text(conn)
            secrets.scan_new(conn)  # the rebuilt blocks' findings (the old ones went with their blocks)
            semantic.settle(conn)  # blocks written again as they were keep their vectors (issue 40)
            conn.execute("COMMIT")
        except KeyboardInterrupt:
            # one transaction: nothing of it stays, and the run says so (Ctrl-C, SIGTERM)
            engine._rollback()
            engine.summary = Summary(command="rebuild", run_id=engine.summary.run_id)
            engine.projector.messages_added = 0
            engine._end_interrupted(started)
            raise
        except BaseException:
            engine._rollback()
            raise
        engine.summary.messages_added = engine.projector.messages_added
        engine._finish_run(started)
    return engine.summary


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
        sources = [s for uid in uids for s in _source_rows(Database(engine.conn), None, uid) if s[1] == uid]
        rederive(engine, sources)
    index_text(engine.conn)
    summary.lines, summary.reports, engine.projector.messages_added = lines, reports, added


def rederive(engine: Engine, sources: list[tuple[int, str, str, str]]) -> None:
    """Delete the rows derived from ``sources`` and derive them again (caller's transaction)."""
    conn = engine.conn
    ids = [s[0] for s in sources]
    marks = ", ".join("?" * len(ids))
    threads = {r[0] for r in conn.execute(f"SELECT thread_id FROM thread_facts WHERE source_id IN ({marks})", ids)}
    threads |= {r[0] for r in conn.execute(f"SELECT thread_id FROM messages WHERE source_id IN ({marks})", ids)}
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
        exists = conn.execute(
            "SELECT 1 FROM thread_facts WHERE thread_id = ? UNION SELECT 1 FROM messages WHERE thread_id = ?",
            (tid, tid),
        ).fetchone()
        if exists:
            fold_thread(conn, tid)
        else:
            conn.execute("DELETE FROM threads WHERE id = ?", (tid,))
    engine.projector.dirty_threads.clear()
