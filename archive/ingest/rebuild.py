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

import os
import time

from sqlite_utils import Database

from .. import secrets, semantic
from ..db import open_db
from ..derived import refresh as refresh_derived
from ..errors import ArchiveError
from ..identity import merged_claims, outranked_sources
from ..projection import index_text, resolve_origins
from ..vendors import VENDORS
from .engine import Engine
from .generations import source_rows
from .options import Summary
from .rederive import rederive


def rebuild(db: Database, provider: str | None = None, source: str | None = None) -> Summary:
    """Re-derive the projection of the chosen sources from their stored lines alone."""
    sources = source_rows(db, provider, source)
    if (provider or source) and not sources:
        raise ArchiveError("no source matches")
    return rebuild_sources(db, sources)


def split_merged(db: Database) -> list[str]:
    """Re-derive the sources of vendors whose rows sit in a thread another vendor, ranked
    first, holds (an archive from before thread claims: ``identity.merged_claims``); their
    uids. Nothing to do, and one indexed query, on an archive that has none."""
    uids = outranked_sources(db.conn, merged_claims(db.conn))
    if uids:
        rebuild_sources(db, [s for uid in uids for s in source_rows(db, None, uid) if s[1] == uid])
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
            refresh_derived(conn)
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


def upgrade(db: Database) -> list[str]:
    """Re-derive the rows of every provider whose adapter is newer (``Adapter.revision``)
    than the one those rows were derived with; returns the providers rebuilt.

    An archive from before revisions were recorded holds revision 1 rows for each provider
    it has sources of. A fresh archive records the current revisions and rebuilds nothing."""
    recorded = dict(db.execute("SELECT provider, revision FROM adapter_revisions").fetchall())
    present = {r[0] for r in db.execute("SELECT DISTINCT provider FROM sources")}
    rebuilt = []
    for adapter in VENDORS:
        have = recorded.get(adapter.name, 1 if adapter.name in present else adapter.revision)
        if have < adapter.revision and adapter.name in present:
            rebuild(db, provider=adapter.name)
            rebuilt.append(adapter.name)
        if recorded.get(adapter.name) != adapter.revision:
            db.execute(
                "INSERT OR REPLACE INTO adapter_revisions (provider, revision) VALUES (?, ?)",
                (adapter.name, adapter.revision),
            )
    split_merged(db)
    return rebuilt


def open_archive(path: str | os.PathLike[str]) -> Database:
    """Open the archive for a command: ``db.open_db`` (created privately, migrated), then
    ``upgrade``: the rows of every provider whose adapter is newer are derived again, so the
    archive reads as a fresh ingest of its stored lines would."""
    db = open_db(path)
    upgrade(db)
    return db
