"""Crush (issue 36): one SQLite database per project, ``<project>/.crush/crush.db``, read
read-only (WAL-safe) as one document per session. The database here is written from Crush's
documented schema (tests/crush_writer.py: the client cannot be installed offline)."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path

from archive.db import dump_tables, open_db
from archive.ingest import ingest_paths, restore
from archive.readonly import ReadOnlyDatabase
from archive.vendors import get
from crush_writer import CHILD, PARENT, T0, write
from ingest_helpers import NEVER_IDLE

ADAPTER = get("crush")
FIXTURES = Path(__file__).parent / "fixtures" / "crush"


def _aged(db: Path) -> Path:
    old = time.time() - 60  # not changed within the last instant: its stats are trusted
    os.utime(db, (old, old))
    return db


def test_documents_are_the_fixtures_and_the_reader_cannot_write(tmp_path: Path) -> None:
    db = write(tmp_path / "proj")
    with ReadOnlyDatabase(db) as database:
        docs = {Path(d.path).name: d.data for d in ADAPTER.documents(db, database.query)}
        try:
            database.query("DELETE FROM messages", ())
            raise AssertionError("the reader could write")
        except OSError:
            pass
    assert docs == {f"crush.db#{PARENT}.jsonl": (FIXTURES / "parent.jsonl").read_bytes().replace(
                        b"/tmp/crush-project", str(tmp_path / "proj").encode()),
                    f"crush.db#{CHILD}.jsonl": (FIXTURES / "child.jsonl").read_bytes()}


def test_a_project_database_archived_whole(tmp_path: Path) -> None:
    """Sessions, the sub-agent's session as a child thread, messages with their blocks (the
    zstd-compressed parts too), session usage and cost raw, cwd = the project; a rerun reads
    nothing; restore gives each document back byte for byte."""
    project = tmp_path / "proj"
    crush_db = _aged(write(project))
    db = open_db(tmp_path / "a.db")
    s = ingest_paths(db, [crush_db], NEVER_IDLE)
    assert s.failed == 0 and s.files_changed == 2 and not s.reports.get("unexplained")
    threads = {r[0]: r[1:] for r in db.execute("SELECT id, provider, parent_thread_id, cwd, title FROM threads")}
    assert threads[PARENT] == ("crush", None, str(project), "Run echo and look at an image")
    assert threads[CHILD][:3] == ("crush", PARENT, str(project))
    kinds = [r[0] for r in db.execute(
        "SELECT b.type FROM blocks b JOIN messages m ON m.id = b.message_id WHERE m.thread_id = ? "
        "ORDER BY m.ts, b.position", (PARENT,))]
    assert kinds.count("tool_call") == 2 and kinds.count("tool_result") == 2 and "reasoning" in kinds
    calls = {r[0]: r[1:] for r in db.execute("SELECT tool_name, input, output, is_error FROM tool_calls")}
    assert json.loads(calls["bash"][0]) == {"command": "echo hello-from-bash"}
    assert "hello-from-bash" in calls["bash"][1] and not calls["bash"][2]  # paired with its result
    assert json.loads(calls["agent"][0]) == {"prompt": "Describe dot.png"}  # from the zstd frame
    (usage,) = db.execute("SELECT input_tokens, output_tokens, extra, message_id, model FROM usage WHERE thread_id = ?",
                          (PARENT,)).fetchall()  # one row per session: Crush keeps no usage per message
    assert usage[:2] == (1830, 41) and json.loads(usage[2])["vendor"]["cost"] == 0.00612
    assert usage[3:] == ("11111111-0000-4000-8000-000000000006", "m")  # carried by the last answer
    before = dump_tables(db)
    again = ingest_paths(db, [crush_db], NEVER_IDLE)
    assert again.files_changed == 0 and again.lines == 0 and dump_tables(db) == before
    out = {r.path.name: r.sha256 for r in restore(db, tmp_path / "out")}
    with ReadOnlyDatabase(crush_db) as database:
        for d in ADAPTER.documents(crush_db, database.query):
            assert out[Path(d.path).name] == hashlib.sha256(d.data).hexdigest()


def test_a_session_that_grows_is_a_new_generation(tmp_path: Path) -> None:
    """Crush updates its rows in place: a new message (and the session's counters) rewrite
    the document; the old generation's messages stay, the new one adds the new message."""
    crush_db = _aged(write(tmp_path / "proj"))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [crush_db], NEVER_IDLE)
    con = sqlite3.connect(crush_db)
    con.execute("INSERT INTO messages (id, session_id, role, parts, model, created_at, updated_at) VALUES (?,?,?,?,?,?,?)",
                ("11111111-0000-4000-8000-000000000007", PARENT, "user",
                 '[{"type":"text","data":{"text":"Thanks."}},{"type":"finish","data":{"reason":"stop","time":0}}]',
                 None, T0 + 20, T0 + 20))
    con.execute("UPDATE sessions SET message_count = 7 WHERE id = ?", (PARENT,))
    con.commit()
    con.close()
    s = ingest_paths(db, [crush_db], NEVER_IDLE)
    assert s.failed == 0 and s.files_changed == 1
    texts = [r[0] for r in db.execute("SELECT text FROM blocks b JOIN messages m ON m.id = b.message_id "
                                      "WHERE m.thread_id = ? AND b.type = 'text'", (PARENT,))]
    assert "Thanks." in texts and texts.count("Running echo.") == 1


def test_project_hooks_find_databases_in_project_folders(tmp_path: Path) -> None:
    """``project_patterns`` (the hook of the project-roots discovery), ``project_sources``
    over a list of folders, ``project_dirs`` from Crush's own projects.json."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    write(a)
    write(b)
    c.mkdir()
    assert ADAPTER.project_patterns == (".crush/crush.db",)
    assert list(ADAPTER.project_sources([a, b, c, a])) == [a / ".crush" / "crush.db", b / ".crush" / "crush.db"]
    assert ADAPTER.classify(a / ".crush" / "crush.db") == "records"
    assert ADAPTER.classify(a / "crush.db") is None and ADAPTER.default_roots({}, tmp_path) == []
    data = tmp_path / "home" / ".local" / "share" / "crush"
    data.mkdir(parents=True)
    (data / "projects.json").write_text(json.dumps({"projects": [
        {"path": str(a), "data_dir": str(a / ".crush"), "last_accessed": "2026-01-01T00:00:00Z"},
        {"path": str(c), "data_dir": str(b / ".crush"), "last_accessed": "2026-01-01T00:00:00Z"}]}))
    assert ADAPTER.project_dirs({}, tmp_path / "home") == [a, c, b]
    assert ADAPTER.project_dirs({"CRUSH_GLOBAL_DATA": str(tmp_path / "none")}, tmp_path / "home") == []
