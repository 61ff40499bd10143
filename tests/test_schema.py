"""Schema: migrations produce schema.sql; the database is private and in WAL mode."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from archive.db import default_db_path, open_db

ROOT = Path(__file__).resolve().parent.parent


def test_migrated_blank_database_equals_schema_sql():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "dump_schema.py"), "--check"],
                            capture_output=True, text=True)  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_schema_sql_builds_the_same_objects_as_the_migrations(tmp_path):
    """schema.sql is a complete description: run on an empty database it creates every
    table, index, trigger and view the migrations create (FTS5 shadow tables included)."""
    import sqlite3

    def objects(conn: sqlite3.Connection) -> set[tuple[str, str]]:
        return {(t, n) for t, n in conn.execute("SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")}

    blank = sqlite3.connect(tmp_path / "from_sql.db")
    blank.executescript((ROOT / "schema.sql").read_text())
    migrated = open_db(tmp_path / "migrated.db")
    assert objects(blank) == objects(migrated.conn)


def test_top_level_files_are_the_packaged_ones():
    for name in ("schema.sql", "datasette-metadata.json"):
        assert (ROOT / name).read_bytes() == (ROOT / "archive" / "data" / name).read_bytes()


def test_database_is_created_private_with_wal(tmp_path):
    path = tmp_path / "sub" / "archive.db"
    db = open_db(path)
    db.execute("INSERT INTO blobs VALUES ('x', NULL, 1, x'00')")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for side in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        if side.exists():
            assert stat.S_IMODE(side.stat().st_mode) & 0o077 == 0
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_migrations_run_once(tmp_path):
    path = tmp_path / "a.db"
    open_db(path).conn.close()
    db = open_db(path)
    names = [r[0] for r in db.execute("SELECT name FROM _sqlite_migrations")]
    assert names == sorted(set(names))


def test_default_path_honours_env(tmp_path):
    assert default_db_path({"SESH_ARCHIVE_DB": str(tmp_path / "x.db")}) == tmp_path / "x.db"
    assert default_db_path({"XDG_DATA_HOME": "/data"}) == Path("/data/sesh-archive/archive.db")
    assert default_db_path({"HOME": "/h"}).name == "archive.db"
