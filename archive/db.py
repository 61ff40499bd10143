"""Opening the archive database.

Invariants:

* The file is created with mode 0600, in a folder created 0700, before SQLite writes a
  byte: it holds whatever secrets users pasted into their agents. WAL and SHM side files
  (and the ingest lock) get the same mode.
* Every open applies pending migrations (``archive.migrations``), so a database is always
  at the current schema, and records the current adapter revision of every provider that
  has no rows yet. Re-deriving the rows of a provider whose adapter is newer than its rows
  is ``ingest.open_archive``'s part (the layer that can rebuild); the commands open the
  archive through it. A read-only open never migrates and never creates.
* WAL journal and a busy timeout, so readers (Datasette, ``search``) keep working while an
  ingest writes.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path

from sqlite_utils import Database

from .errors import ArchiveError
from .migrations import migrations

__all__ = ["ArchiveError", "default_db_path", "dump_tables", "open_db", "open_readonly", "private_dir"]

BUSY_TIMEOUT_MS = 30_000

# CPython 3.11's sqlite3 sends every parameter that is not exactly an int, float, str or
# bytearray through its adapter protocol, and for None and bytes, with no adapter registered,
# that protocol raises and clears an AttributeError with a formatted message for each value
# bound (88,000 of them in a first ingest of 15 MB of sessions: 2% of its instructions). A
# registered adapter is found before that. Both give the value back unchanged: ``{}.get`` is a
# C function returning None for any argument, ``bytes(b)`` is ``b``. Process-wide, like every
# sqlite3 adapter; Python 3.12 no longer raises there, and these cost nothing there.
sqlite3.register_adapter(type(None), {}.get)
sqlite3.register_adapter(bytes, bytes)


def default_db_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("SESH_ARCHIVE_DB"):
        return Path(os.path.expanduser(env["SESH_ARCHIVE_DB"]))
    data_home = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "sesh-archive" / "archive.db"


def private_dir(folder: Path) -> None:
    """Create ``folder`` (and missing parents) mode 0700, before anything is written in it;
    an existing folder keeps the mode its owner gave it."""
    old_umask = os.umask(0o077)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    finally:
        os.umask(old_umask)


def _create_private(path: Path) -> None:
    private_dir(path.parent)
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)


def _statements(sql: str):
    """The complete statements of ``sql`` in order: pieces cut at each ``;`` joined until SQLite
    says the statement is complete (a ``;`` inside a string or a trigger body is not an end)."""
    pending = ""
    for piece in sql.split(";"):
        pending = pending + piece + ";" if pending else piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \t\r\n;"):
                yield pending
            pending = ""
    if pending.strip(" \t\r\n;"):
        yield pending[:-1]  # text after the last ``;``: a statement without its end, or a comment


class ArchiveDatabase(Database):
    """sqlite-utils' ``Database`` whose ``executescript`` inside a transaction (every migration
    runs in one) cuts the script in linear time: sqlite-utils 4.2 re-joins the text at every
    character (quadratic), which made creating an archive take 2.3-2.9 s, ~85% of it there."""

    def executescript(self, sql: str) -> sqlite3.Cursor:
        if not self.conn.in_transaction:
            return super().executescript(sql)
        cursor = self.conn.cursor()
        for statement in _statements(sql):
            cursor.execute(statement)
        return cursor


def open_db(path: str | os.PathLike[str], *, migrate: bool = True) -> Database:
    """Open (creating privately if needed) and migrate the archive at ``path``."""
    path = Path(path)
    if not path.exists():
        old_umask = os.umask(0o077)
        try:
            _create_private(path)
        except FileExistsError:
            pass
        finally:
            os.umask(old_umask)
    old_umask = os.umask(0o077)  # the -wal and -shm files SQLite creates next to it
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        db = ArchiveDatabase(conn, execute_plugins=False)  # see open_readonly
        if migrate:
            migrations.apply(db)
            record_new_providers(db)
    finally:
        os.umask(old_umask)
    return db


def record_new_providers(db: Database) -> None:
    """The current revision of every registered adapter whose provider has neither a
    recorded revision nor rows: rows it derives from now on are of that revision. (A
    provider with rows and no record holds revision 1 rows: ``ingest.upgrade`` rebuilds it.)"""
    from .vendors import VENDORS

    recorded = {r[0] for r in db.execute("SELECT provider FROM adapter_revisions")}
    present = {r[0] for r in db.execute("SELECT DISTINCT provider FROM sources")}
    for adapter in VENDORS:
        if adapter.name not in recorded and adapter.name not in present:
            db.execute("INSERT INTO adapter_revisions (provider, revision) VALUES (?, ?)", (adapter.name, adapter.revision))


def open_readonly(path: str | os.PathLike[str]) -> Database:
    """Open an existing archive for reading only; never creates or migrates."""
    path = Path(path)
    if not path.exists():
        raise ArchiveError(f"no archive at {path}: run `sesh-archive ingest` first")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    # sqlite-utils plugins are not ours to run on the archive, and finding them scans every
    # installed distribution (~45 ms of each command)
    return Database(conn, execute_plugins=False)


def dump_tables(db: Database, exclude: tuple[str, ...] = ("ingest_runs", "_sqlite_migrations")) -> dict[str, list[tuple]]:
    """Every row of every ordinary table, in a canonical order, surrogate block ids left out.
    The invariant tests (idempotent, incremental = whole, rebuild = ingest) compare these."""
    from .lines import iter_stored_lines

    out: dict[str, list[tuple]] = {}
    for table in db.table_names():
        if table in exclude or table.startswith("blocks_fts") or table.startswith("sqlite_"):
            continue
        if table in ("source_chunks", "secret_scan_progress"):
            continue  # where batches fell is not content; source_lines below carries the bytes
        if table.startswith("semantic_"):
            continue  # the vectors: a disposable index a step after ingest builds (tests/test_semantic.py checks it)
        if table == "source_lines":
            out[table] = sorted(
                (sid, g, *line)
                for sid, g in db.execute("SELECT DISTINCT source_id, generation FROM source_lines").fetchall()
                for line in iter_stored_lines(db.conn, sid, g)
            )
            continue
        cols = [c.name for c in db[table].columns]
        if table == "blocks":
            cols = [c for c in cols if c != "id"]
        elif table in ("secret_findings", "secret_values"):  # surrogate ids and scan times
            cols = [c for c in cols if c not in ("id", "block_id", "first_seen")]
        sql = f"select {', '.join(cols)} from [{table}]"
        rows = [tuple(r) for r in db.execute(sql).fetchall()]
        out[table] = sorted(rows, key=repr)
    # the full-text index must agree with the blocks it indexes
    fts = db.execute(
        "select b.message_id, b.position from blocks_fts f join blocks b on b.id = f.rowid "
        "where blocks_fts match 'a OR the OR e' order by 1, 2"
    ).fetchall() if "blocks_fts" in db.table_names() else []
    out["blocks_fts(sample)"] = [tuple(r) for r in fts]
    return out
