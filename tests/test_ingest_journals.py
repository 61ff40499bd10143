"""Where an ingest keeps its statement journals and the paths waiting for their thread's cwd
(archive/ingest/engine.py ``_temp_store``, archive/derived.py ``attach_scratch``).

The file loop's transactions keep statement journals in memory (every row is a statement
journalling the few pages it changes; in a file that was two write calls a page); the run's end,
which may delete whole sources, keeps them in files. No temp table may exist while ``temp_store``
changes (SQLite drops them), so the paths wait in a scratch database of their own, attached for
the run and gone after it."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from archive.db import open_db
from archive.derived import SCRATCH, attach_scratch
from archive.ingest import ingest_paths, rebuild
from test_derived_queue import CLAUDE_FILES, TABLES, _recomputed, _session, _tables


def _traced(db: Any) -> list[str]:
    seen: list[str] = []
    db.conn.set_trace_callback(seen.append)
    return seen


def _home(tmp_path: Path, n: int = 3) -> Path:
    canon = tmp_path / "canon"
    canon.mkdir(exist_ok=True)
    for i in range(n):
        (canon / f"s{i}.jsonl").write_bytes(_session(f"t{i}", 4 + i))
    return canon


def _attached(db: Any) -> list[str]:
    return [r[1] for r in db.execute("PRAGMA database_list").fetchall()]


def test_the_file_loop_journals_in_memory_and_the_run_end_in_files(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    seen = _traced(db)
    ingest_paths(db, [_home(tmp_path), CLAUDE_FILES])
    mode, begins = "FILE", []
    for sql in seen:
        if sql.startswith("PRAGMA temp_store = "):
            mode = sql.removeprefix("PRAGMA temp_store = ")
        elif sql == "BEGIN IMMEDIATE":
            begins.append(mode)
    assert len(begins) >= 2, seen
    assert begins[:-1] == ["MEMORY"] * (len(begins) - 1)  # the file loop's transactions
    assert begins[-1] == "FILE"  # the run's end: rederive_outranked, the derived tables
    assert db.execute("PRAGMA temp_store").fetchone()[0] == 1  # FILE again for what follows
    # changing temp_store drops temp tables: the run must not use any
    assert not [s for s in seen if "CREATE TEMP" in s.upper() or "temp." in s]
    assert [s for s in seen if s.startswith("INSERT INTO blocks (")], "blocks written directly"


def test_the_paths_wait_in_a_scratch_database_that_leaves_nothing_behind(tmp_path: Path, monkeypatch: Any) -> None:
    scratch_dir = tmp_path / "tmp"
    scratch_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_dir))
    db = open_db(tmp_path / "a.db")
    seen = _traced(db)
    canon = _home(tmp_path)
    ingest_paths(db, [canon])
    assert any(s.startswith(f"INSERT INTO {SCRATCH}._live_touches") for s in seen), "the paths went elsewhere"
    assert SCRATCH not in _attached(db)
    assert list(scratch_dir.iterdir()) == []
    assert db.execute("SELECT count(*) FROM file_touches").fetchone()[0] > 0
    # a second run on the same connection (``watch``) attaches it again
    with (canon / "s0.jsonl").open("ab") as f:
        f.write(_session("t9", 3).split(b"\n", 1)[1])
    (canon / "s9.jsonl").write_bytes(_session("t9", 3))
    ingest_paths(db, [canon])
    assert SCRATCH not in _attached(db) and list(scratch_dir.iterdir()) == []
    got = _tables(db)
    assert got == _recomputed(db)
    assert any("t9" in r[0] for r in got["file_touches"]), got["file_touches"]


def test_a_scratch_left_attached_by_an_interrupted_run_is_emptied_not_trusted(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    attach_scratch(db.conn)  # as a run stopped before its end leaves it on a long-lived connection
    db.execute(f"CREATE TABLE {SCRATCH}._live_touches "
               "(thread_id TEXT, message_id TEXT, position INTEGER, ts TEXT, tool_name TEXT, found TEXT)")  # fmt: skip
    stale = ("canonical-t0", "canonical-t0-m1", 0, None, "Edit", '[["/elsewhere/stale.py","changed"]]')
    db.execute(f"INSERT INTO {SCRATCH}._live_touches VALUES (?, ?, ?, ?, ?, ?)", stale)
    db.conn.commit()
    ingest_paths(db, [_home(tmp_path, 1)])
    assert SCRATCH not in _attached(db)
    paths = {r[0] for r in db.execute("SELECT path FROM file_touches")}
    assert paths and "/elsewhere/stale.py" not in paths, paths
    assert _tables(db) == _recomputed(db)
    assert set(TABLES) <= set(_tables(db))


def test_a_long_threads_paths_are_written_in_batches_as_a_full_recompute_gives(tmp_path: Path, monkeypatch: Any) -> None:
    """Whether computed as the run writes (``Live``) or read back (``refresh_thread``), a
    thread's rows go in batches (``file_index.ThreadIndexer``): never all of them in memory."""
    from archive import file_index

    monkeypatch.setattr(file_index.ThreadIndexer, "BATCH", 7)  # many batches from a short thread
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [_home(tmp_path, 2)])
    canon = tmp_path / "canon"
    (canon / "long.jsonl").write_bytes(_session("long", 40))
    writes: list[str] = []
    db.conn.set_trace_callback(lambda s: writes.append(s) if s.startswith("INSERT OR REPLACE INTO file_touches") else None)
    ingest_paths(db, [canon])
    db.conn.set_trace_callback(None)
    got = _tables(db)
    long_rows = [r for r in got["file_touches"] if "long" in r[0]]
    assert len(long_rows) == 40  # one Edit a call
    assert len(writes) >= 40 // 7  # in several statements, not one list of the thread's rows
    signals = db.execute("SELECT same_file_edits FROM thread_signals WHERE thread_id LIKE '%long%'").fetchall()
    assert signals == [(40 - 3,)]  # three paths, each changed again after its first edit
    writes.clear()
    db.conn.set_trace_callback(lambda s: writes.append(s) if s.startswith("INSERT OR REPLACE INTO file_touches") else None)
    assert got == _recomputed(db)  # refresh_thread's path: the same indexer, the same batches
    db.conn.set_trace_callback(None)
    assert len(writes) >= 40 // 7


def test_blocks_under_the_index_watermark_go_in_one_statement_a_batch(tmp_path: Path) -> None:
    """A rebuild deletes every block and writes them again under ids the full-text index
    already covered: the trigger indexes each at once, in one INSERT ... SELECT a batch (row by
    row statements made FTS5 work 5x as hard). A first ingest's ids are all above it."""
    db = open_db(tmp_path / "a.db")
    seen = _traced(db)
    ingest_paths(db, [_home(tmp_path)])
    assert not [s for s in seen if "_pending_blocks" in s]
    before = db.execute("SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH 'edit' ORDER BY rowid").fetchall()
    seen.clear()
    rebuild(db)
    assert [s for s in seen if s.startswith("INSERT INTO blocks (") and "SELECT" in s]
    assert not [s for s in seen if s.startswith("INSERT INTO blocks (") and "VALUES" in s]
    db.execute("INSERT INTO blocks_fts(blocks_fts) VALUES ('integrity-check')")
    after = db.execute("SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH 'edit' ORDER BY rowid").fetchall()
    assert before and after == before


def test_the_thread_indexer_holds_one_batch_and_counts_the_changed_paths(tmp_path: Path) -> None:
    from archive import file_index

    db = open_db(tmp_path / "a.db")
    ix = file_index.ThreadIndexer(db.conn, "t", None, "/repo")
    held = 0
    for i in range(2 * ix.BATCH + 5):
        ix.emit(f"m{i}", None, 0, "Edit", [(f"src/f{i % 4}.py", "changed"), ("README.md", "read")])
        held = max(held, len(ix.rows))
    assert held < ix.BATCH + 2  # a block's rows at most past the batch, never the thread's
    changed = ix.finish()
    assert changed == {f"/repo/src/f{k}.py": (2 * ix.BATCH + 5 - k + 3) // 4 for k in range(4)}
    assert db.execute("SELECT count(*) FROM file_touches WHERE thread_id = 't'").fetchone()[0] == 2 * (2 * ix.BATCH + 5)
