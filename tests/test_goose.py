"""Goose (issue 36), from its schema (tests/goose_schema.py builds the database; no Goose
client exists here, see tests/fixtures/goose/SOURCES.md): ``sessions.db`` under
``GOOSE_PATH_ROOT`` is archived whole by a plain ingest, read-only, and a rerun changes
nothing; a message Goose adds is read incrementally."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.model import Reasoning, ToolCall, ToolResult
from archive.readonly import ReadOnlyDatabase
from archive.store import SqliteMessageStore
from archive.vendors.goose import ADAPTER
from goose_schema import SESSION, SUBAGENT, build

FIXTURES = Path(__file__).parent / "fixtures" / "goose"


def test_the_fixtures_are_what_the_adapter_reads_from_the_schema(tmp_path: Path) -> None:
    db = build(tmp_path / "sessions.db")
    with ReadOnlyDatabase(db) as r:
        docs = {d.path.rsplit("#", 1)[1]: d.data for d in ADAPTER.documents(db, r.query)}
    assert docs == {f"{s}.jsonl": (FIXTURES / f"schema-v13-{s}.jsonl").read_bytes() for s in (SESSION, SUBAGENT)}


def test_a_plain_ingest_reads_goose_under_its_root(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "goose-root"
    db_file = build(root / "data" / "sessions" / "sessions.db")
    monkeypatch.setenv("GOOSE_PATH_ROOT", str(root))
    before_bytes = db_file.read_bytes()
    archive = open_db(tmp_path / "a.db")
    summary = ingest_paths(archive, None, IngestOptions())
    assert summary.failed == 0 and not summary.reports.get("unexplained")
    assert db_file.read_bytes() == before_bytes  # read-only
    store = SqliteMessageStore(str(tmp_path / "a.db"))
    t = store.get_thread(SESSION)
    assert t is not None and t.title == "Fix failing tests" and t.created_at == "2026-03-01T09:00:00Z"
    assert t.metadata["cwd"] == "/home/me/proj" and t.metadata["model"] == "claude-sonnet-4-5"
    msgs = store.get_messages(SESSION)
    assert [m.id for m in msgs][:2] == [f"msg_{SESSION}_1", f"msg_{SESSION}_2"]
    assert msgs[0].ts == "2026-03-01T09:00:00Z"
    assert isinstance(msgs[1].content[0], Reasoning) and isinstance(msgs[1].content[2], ToolCall)
    assert msgs[1].content[2].name == "developer__shell" and msgs[1].content[2].input == {"command": "pytest -q"}
    result = msgs[2].content[0]
    assert isinstance(result, ToolResult) and result.output == "1 failed, 3 passed" and result.is_error is False
    failed = msgs[4].content[0]
    assert isinstance(failed, ToolResult) and failed.is_error is True
    usage = store.conn.execute("SELECT input_tokens, output_tokens FROM usage WHERE thread_id = ?", (SESSION,)).fetchall()
    assert usage == [(4980, 250)]
    assert store.get_thread(SUBAGENT).metadata["session_type"] == "sub_agent"
    n = store.conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    assert n == 8
    assert ingest_paths(archive, None, IngestOptions()).files_changed == 0

    conn = sqlite3.connect(db_file)  # Goose adds a message
    conn.execute("INSERT INTO messages (session_id, role, content_json, created_timestamp, metadata_json, message_id) "
                 "VALUES (?, 'user', '[{\"type\":\"text\",\"text\":\"try again\"}]', 1772355700, '{}', ?)",
                 (SESSION, f"msg_{SESSION}_7"))  # fmt: skip
    conn.commit()
    conn.close()
    again = ingest_paths(archive, None, IngestOptions())
    assert again.failed == 0 and again.messages_added == 1
    gens = store.conn.execute("SELECT count(*) FROM generations g JOIN sources s ON s.id = g.source_id "
                              "WHERE s.provider = 'goose'").fetchone()[0]  # fmt: skip
    assert gens == 2  # appended: no new generation
