"""Read-only queries behind ``status`` and the archive check every read command makes
(``stats`` and the other read commands are in queries.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .errors import ArchiveError
from .ingest import lock_held

# tables every archive has had since its first migration
_ARCHIVE_TABLES = {"sources", "source_lines", "threads", "messages"}


_NEEDS_RECOVERY = ("SQLITE_READONLY_ROLLBACK", "SQLITE_READONLY_RECOVERY", "SQLITE_READONLY_CANTINIT")


def _tables(path: Path, mode: str) -> tuple[set[str], bool]:
    """The file's table names, and whether its migrations are this archive's."""
    conn = sqlite3.connect(f"file:{path}?mode={mode}", uri=True)
    try:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        ours = "_sqlite_migrations" in names and conn.execute(
            "SELECT 1 FROM _sqlite_migrations WHERE migration_set = 'sesh-archive' LIMIT 1").fetchone() is not None
    finally:
        conn.close()
    return names, ours


def check_archive(path: Path) -> None:
    """Raise ``ArchiveError`` (one line) unless ``path`` is an existing archive database.

    Opens read-only (``mode=ro``): never creates the file, never migrates, never writes;
    so a read command pointed at a wrong path leaves nothing behind. The one exception is
    SQLite's own crash recovery (a journal to roll back, a WAL index to rebuild), which a
    read-only connection refuses and any writable one does first."""
    if not path.exists():
        raise ArchiveError(f"no archive at {path}: run `sesh-archive ingest` first (or give --db)")
    if path.is_dir():
        raise ArchiveError(f"{path} is a folder, not an archive database")
    try:
        try:
            names, ours = _tables(path, "ro")
        except sqlite3.DatabaseError as e:
            if getattr(e, "sqlite_errorname", None) not in _NEEDS_RECOVERY:
                raise
            # a writer killed mid-transaction left a journal to roll back (or a WAL index to
            # rebuild), which a read-only connection may not do: SQLite's own recovery, as any
            # writable open does it (mode=rw never creates the file). Refusing here refused the
            # archive on every later run, read commands included.
            names, ours = _tables(path, "rw")
    except sqlite3.DatabaseError as e:
        raise ArchiveError(f"{path} is not a sesh-archive database ({e})") from None
    # no table but sqlite-utils' bookkeeping, or our own migrations begun: an archive whose
    # first ingest was stopped before its migrations committed (SIGKILL, disk full); the next
    # ingest carries on, as it would with a new file
    if names - {"_sqlite_migrations"} and not ours and not _ARCHIVE_TABLES <= names:
        raise ArchiveError(f"{path} is not a sesh-archive database (an SQLite file without the archive's tables)")


def archive_status(db: Database, db_path: Path) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in (db_path, Path(f"{db_path}-wal")) if p.exists())
    providers: dict[str, dict[str, Any]] = {}

    def slot(name: str) -> dict[str, Any]:
        return providers.setdefault(
            name, {"provider": name, "sources": 0, "threads": 0, "messages": 0, "missing_files": 0}
        )

    for prov, n in db.execute("SELECT provider, count(*) FROM sources WHERE kind != 'store' GROUP BY provider"):
        slot(prov)["sources"] = n
    for prov, n in db.execute("SELECT coalesce(provider, '?'), count(*) FROM threads GROUP BY 1"):
        slot(prov)["threads"] = n
    for prov, n in db.execute(
        "SELECT coalesce(t.provider, '?'), count(*) FROM messages m LEFT JOIN threads t ON t.id = m.thread_id GROUP BY 1"
    ):
        slot(prov)["messages"] = n
    missing = []
    for prov, path in db.execute(
        "SELECT s.provider, p.path FROM source_paths p JOIN sources s ON s.id = p.source_id "
        "WHERE p.missing = 1 AND NOT EXISTS (SELECT 1 FROM source_paths q WHERE q.source_id = p.source_id "
        "AND q.missing = 0) ORDER BY p.path"
    ):
        slot(prov)["missing_files"] += 1
        missing.append({"provider": prov, "path": path})
    run = db.execute(
        "SELECT command, started_at, finished_at, status, files_seen, files_changed, bytes_read, lines, "
        "messages_added FROM ingest_runs ORDER BY id DESC LIMIT 1"
    ).fetchone()
    keys = ("command", "started_at", "finished_at", "status", "files_seen", "files_changed", "bytes_read",
            "lines", "messages_added")  # fmt: skip
    last = dict(zip(keys, run)) if run else None
    if last and last["status"] == "running" and not lock_held(db_path):
        # killed (SIGKILL, power loss) before it could close its row: the next run marks it
        # interrupted too; until then readers say so instead of trusting its empty counts
        last["status"] = "interrupted"
    # the folders of sessions the last ingest over the default locations did not read (archive/unread.py)
    unread = db.execute(
        "SELECT json_extract(problems, '$.unread') FROM ingest_runs WHERE command = 'ingest' AND finished_at IS NOT NULL "
        "AND json_valid(problems) AND json_type(problems, '$.unread') IS NOT NULL ORDER BY id DESC LIMIT 1"
    ).fetchone()
    return {
        "database": str(db_path),
        "size_bytes": size,
        "providers": sorted(providers.values(), key=lambda p: p["provider"]),
        "last_run": last,
        "missing_sources": missing,
        "unread": json.loads(unread[0]) if unread and unread[0] else [],
    }
