"""Schema: migrations produce schema.sql; the database is private and in WAL mode."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from archive.db import default_db_path, open_db
from archive.ingest import open_archive

FIXTURES = Path(__file__).parent / "fixtures"

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


def test_an_archive_from_before_m005_upgrades_with_its_index_and_totals(tmp_path):
    """An archive written by the m001-m004 schema (FTS fed by per-row triggers, no usage
    totals) gains a complete FTS mark, usage totals equal to its usage rows, and keeps
    answering searches."""
    from sqlite_utils import Database

    from archive import migrations

    path = tmp_path / "old.db"
    old = Database(path)
    migrations.migrations.apply(old, stop_before="m005_fts_per_commit")
    # rows appended through the store: no adapter re-derives them on open (see the next test)
    old.execute("INSERT INTO sources (id, uid, provider, kind) VALUES (1, 'u', 'store', 'store')")
    for i, (text, provider) in enumerate([("alpha quokka", "codex"), ("beta", "claude-code"), ("quokka gamma", "codex")]):
        old.execute("INSERT INTO messages (id, thread_id, role, source_id, generation, offset, sub) "
                    "VALUES (?, 't', 'assistant', 1, 1, ?, 0)", (f"m{i}", i))  # fmt: skip
        old.execute("INSERT INTO blocks (message_id, position, type, text) VALUES (?, 0, 'text', ?)", (f"m{i}", text))
        old.execute("INSERT INTO usage (key, thread_id, provider, model, ts, input_tokens, output_tokens, "
                    "cache_read_tokens, source_id, generation, offset) VALUES (?, 't', ?, 'x', ?, 100, 7, 40, 1, 1, ?)",
                    (f"k{i}", provider, f"2026-10-0{i + 1}T10:00:00Z", i))  # fmt: skip
    old.conn.commit()
    old.conn.close()

    db = open_db(path)
    assert db.execute("SELECT indexed_upto FROM blocks_fts_progress").fetchone()[0] == 3
    db.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('integrity-check', 1)")
    hits = db.execute("SELECT b.message_id FROM blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid "
                      "WHERE blocks_fts MATCH 'quokka' ORDER BY 1").fetchall()  # fmt: skip
    assert hits == [("m0",), ("m2",)]
    per_row = db.execute("SELECT day, provider, model, count(*), sum(input_tokens), sum(output_tokens), "
                         "sum(cache_read_tokens), sum(cache_write_tokens), sum(reasoning_tokens) "
                         "FROM usage_responses GROUP BY 1, 2, 3 ORDER BY 1, 2, 3").fetchall()  # fmt: skip
    assert db.execute("SELECT * FROM usage_daily ORDER BY 1, 2, 3").fetchall() == per_row
    # usage rows hold neutral buckets: the views take them as stored, whatever the provider
    assert [r[4] for r in per_row] == [100, 100, 100]


def test_an_archive_from_before_neutral_usage_is_rederived_on_open(tmp_path):
    """Before m008, Codex usage rows kept cached input inside input_tokens and the views took
    it out. Opening such an archive re-derives the Codex rows from the stored lines: every
    table then equals a fresh ingest's, the usage totals included."""
    from sqlite_utils import Database

    from archive import migrations
    from archive.db import dump_tables
    from archive.ingest import IngestOptions, ingest_paths

    files = sorted((FIXTURES / "codex").glob("*.jsonl")) + sorted((FIXTURES / "claude-code").glob("*.jsonl"))
    old_path = tmp_path / "old.db"
    old = Database(old_path)
    migrations.migrations.apply(old, stop_before="m008_neutral_usage")
    migrations.m010_17_fork_lineage(old)  # what today's projection writes to (idempotent, applied again on open)
    migrations.m070_33_thread_claims(old)  # the thread claims today's ingest records (idempotent too)
    old.conn.close()
    # today's parser on the m007 schema, then Codex's input put back as Codex reported it
    # (what the adapter of that time stored); the m006 triggers keep the totals as they were
    old = open_db(old_path, migrate=False)
    ingest_paths(old, files, IngestOptions(idle_seconds=10**9))
    old.execute("UPDATE usage SET input_tokens = json_extract(extra, '$.vendor.input_tokens') WHERE provider = 'codex'")
    raw = old.execute("SELECT sum(input_tokens) FROM usage_daily WHERE provider = 'codex'").fetchone()[0]
    old.conn.close()

    fresh = open_db(tmp_path / "fresh.db")
    ingest_paths(fresh, files, IngestOptions(idle_seconds=10**9))
    upgraded = open_archive(old_path)  # the commands' open: migrations, then rows re-derived
    from archive.vendors import get

    # the revision that re-derived the rows: neutral usage came with 2 (issue 18 made it 3)
    assert get("codex").revision >= 2
    assert upgraded.execute("SELECT provider, revision FROM adapter_revisions WHERE provider = 'codex'").fetchall() == [
        ("codex", get("codex").revision)]
    skip = ("ingest_runs", "_sqlite_migrations", "adapter_revisions")
    assert dump_tables(upgraded, exclude=skip) == dump_tables(fresh, exclude=skip)
    totals = "SELECT provider, sum(responses), sum(input_tokens), sum(cache_read_tokens) FROM usage_totals GROUP BY 1"
    assert upgraded.execute(totals).fetchall() == fresh.execute(totals).fetchall()
    fresh_input = fresh.execute("SELECT sum(input_tokens) FROM usage WHERE provider = 'codex'").fetchone()[0]
    assert raw is not None and fresh_input < raw  # the old figures did count the cache once more
    # one rebuild per provider whose adapter is newer than its rows, once
    newer = upgraded.execute("SELECT count(*) FROM adapter_revisions WHERE revision > 1 "
                             "AND provider IN (SELECT provider FROM sources)").fetchone()[0]
    assert open_db(old_path).execute("SELECT count(*) FROM ingest_runs WHERE command = 'rebuild'").fetchone()[0] == newer >= 1


def test_a_migration_script_is_cut_where_sqlite_says_a_statement_ends(tmp_path):
    """Migrations run in a transaction, where ``executescript`` cuts the script itself (sqlite3's
    own would commit first): a ``;`` in a string or a trigger body is not an end, a comment
    after the last statement is harmless, and the script runs whole and in order."""
    from archive.db import _statements

    script = """
        CREATE TABLE t (a TEXT);  -- one
        INSERT INTO t VALUES ('x;y'); INSERT INTO t VALUES ('it''s; fine');;
        CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN
            UPDATE t SET a = a || ';' WHERE rowid = new.rowid;
            SELECT 1;
        END;
        INSERT INTO t VALUES ('z');
        -- trailing comment"""
    stmts = [s.strip() for s in _statements(script)]
    assert len(stmts) == 6
    assert stmts[2].startswith("INSERT INTO t VALUES ('it''s; fine')") and stmts[3].startswith("CREATE TRIGGER")
    assert stmts[3].endswith("END;") and stmts[5] == "-- trailing comment"
    db = open_db(tmp_path / "x.db")
    with db.conn:
        db.conn.execute("BEGIN")
        db.executescript(script)
        assert db.conn.in_transaction  # not committed behind the caller's back
    assert [r[0] for r in db.conn.execute("SELECT a FROM t ORDER BY rowid")] == ["x;y", "it's; fine", "z;"]
