"""Cline CLI beyond the contract test: where its sessions are found, a rewritten transcript
kept as generations with its messages stored once, the subagent a child thread, the
``sessions.db`` row ``--install`` adds for ``cline --id``, and hand-offs with Claude Code both
ways. Fixtures: tests/fixtures/cline (the recording after the resume) and
tests/fixtures/recorded/cline-3.0.65/generation-1 (the same session before it)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import orjson

from archive.db import open_db
from archive.emit import emit_thread, install_files
from archive.ingest import IngestOptions, ingest_paths
from archive.projection import load_messages
from archive.vendors import get
from archive.vendors.base import EMIT_MARK, EmitOptions
from helpers import assert_same_conversation

FIXTURES = Path(__file__).parent / "fixtures"
FINAL = FIXTURES / "cline" / "sessions"
FIRST = FIXTURES / "recorded" / "cline-3.0.65" / "generation-1" / "sessions"
SID = "1796185298768_whbno"
CHILD = f"{SID}__agent_1796185304894_0tbq3g"
CLAUDE = FIXTURES / "recorded" / "claude-code-2.1.197" / "bash" / "projects"
NEVER_IDLE = IngestOptions(idle_seconds=10**9)
ADAPTER = get("cline")


def test_roots_honour_the_vendors_variables() -> None:
    home = Path("/h")
    assert ADAPTER.default_roots({}, home) == [home / ".cline" / "data" / "sessions"]
    assert ADAPTER.default_roots({"CLINE_DIR": "/c"}, home) == [Path("/c/data/sessions")]
    assert ADAPTER.default_roots({"CLINE_DIR": "/c", "CLINE_DATA_DIR": "/d"}, home) == [Path("/d/sessions")]
    assert ADAPTER.default_roots({"CLINE_DATA_DIR": "/d", "CLINE_SESSION_DATA_DIR": "/s"}, home) == [Path("/s")]


def test_a_home_under_cline_dir_is_found(tmp_path: Path, monkeypatch) -> None:
    from click.testing import CliRunner

    from archive.cli import cli

    shutil.copytree(FINAL, tmp_path / "elsewhere" / "data" / "sessions")
    monkeypatch.setenv("CLINE_DIR", str(tmp_path / "elsewhere"))
    res = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "ingest", "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    db = open_db(tmp_path / "a.db")
    assert db.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (SID,)).fetchone()[0] == 8


def _count(db, sql: str, *args) -> int:
    return db.execute(sql, args).fetchone()[0]


def test_rewritten_transcript_is_a_generation_and_adds_new_messages_once(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    shutil.copytree(FIRST, folder)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [folder], NEVER_IDLE)
    assert _count(db, "SELECT count(*) FROM messages WHERE thread_id = ?", SID) == 6
    assert _count(db, "SELECT count(*) FROM usage WHERE thread_id = ?", SID) == 3
    for p in (FINAL / SID).iterdir():  # the client rewrites the files in place on resume
        (folder / SID / p.name).write_bytes(p.read_bytes())
    ingest_paths(db, [folder], NEVER_IDLE)
    assert _count(db, "SELECT count(*) FROM messages WHERE thread_id = ?", SID) == 8
    assert _count(db, "SELECT count(*) FROM usage WHERE thread_id = ?", SID) == 4
    assert _count(db, "SELECT count(*) FROM generations g JOIN sources s ON s.id = g.source_id "
                      "WHERE s.last_path LIKE ?", f"%{SID}.messages.json") == 2
    # the subagent: a child thread of the session, its usage its own
    assert _count(db, "SELECT count(*) FROM threads WHERE id = ? AND parent_thread_id = ?", CHILD, SID) == 1
    assert _count(db, "SELECT count(*) FROM usage WHERE thread_id = ?", CHILD) == 2
    meta = json.loads(db.execute("SELECT metadata FROM threads WHERE id = ?", (SID,)).fetchone()[0])
    assert meta["cwd"] == "/tmp/cl1/proj" and meta["version"] == "3.0.65" and meta["model"] == "mock-model"


def test_usage_is_in_the_neutral_buckets_with_the_raw_metrics_kept(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [FINAL], NEVER_IDLE)
    doc = orjson.loads((FINAL / SID / f"{SID}.messages.json").read_bytes())
    raw = [m["metrics"] for m in doc["messages"] if "metrics" in m]
    rows = db.execute("SELECT input_tokens, cache_read_tokens, output_tokens FROM usage WHERE thread_id = ? "
                      "ORDER BY ts", (SID,)).fetchall()
    # Cline's inputTokens counts the cached prompt (an OpenAI-compatible server's prompt_tokens)
    assert [tuple(r) for r in rows] == [(m["inputTokens"] - m["cacheReadTokens"], m["cacheReadTokens"],
                                         m["outputTokens"]) for m in raw]


def _sessions_db(path: Path) -> None:
    # the columns of Cline CLI 3.0.65's sessions table that have no default
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE sessions (session_id TEXT PRIMARY KEY, source TEXT NOT NULL, pid INTEGER NOT NULL, "
        "started_at TEXT NOT NULL, ended_at TEXT, exit_code INTEGER, status TEXT NOT NULL, "
        "status_lock INTEGER NOT NULL DEFAULT 0, interactive INTEGER NOT NULL, provider TEXT NOT NULL, "
        "model TEXT NOT NULL, cwd TEXT NOT NULL, workspace_root TEXT NOT NULL, team_name TEXT, "
        "enable_tools INTEGER NOT NULL, enable_spawn INTEGER NOT NULL, enable_teams INTEGER NOT NULL, "
        "parent_session_id TEXT, parent_agent_id TEXT, agent_id TEXT, conversation_id TEXT, "
        "is_subagent INTEGER NOT NULL DEFAULT 0, prompt TEXT, metadata_json TEXT, transcript_path TEXT NOT NULL "
        "DEFAULT '', hook_path TEXT NOT NULL, messages_path TEXT, updated_at TEXT NOT NULL)")
    conn.commit()
    conn.close()


def test_install_registers_the_session_where_cline_looks_for_it(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [FINAL], NEVER_IDLE)
    home = tmp_path / "home"
    env = {"HOME": str(home)}
    out = emit_thread(db, SID, "cline", exact=False, options=EmitOptions(cwd="/work/proj"))
    missing = emit_thread(db, SID, "cline", exact=False, options=EmitOptions(cwd="/work/proj"))
    # no sessions.db yet (the client never ran): the files, and a note saying what to do
    install_files(missing, env, home)
    assert any("not found; run the client once" in n for n in missing.notes), missing.notes
    shutil.rmtree(home / ".cline" / "data" / "sessions")
    _sessions_db(home / ".cline" / "data" / "db" / "sessions.db")
    install_files(out, env, home)
    assert any("sessions row added" in n for n in out.notes), out.notes
    conn = sqlite3.connect(home / ".cline" / "data" / "db" / "sessions.db")
    row = conn.execute("SELECT session_id, cwd, status, messages_path, model FROM sessions").fetchall()
    messages = home / ".cline" / "data" / "sessions" / out.target_id / f"{out.target_id}.messages.json"
    assert row == [(out.target_id, "/work/proj", "completed", str(messages), "mock-model")]
    assert messages.is_file()
    doc = orjson.loads(messages.read_bytes())
    assert [m["role"] for m in doc["messages"]] == ["user", "assistant", "user", "assistant", "user", "assistant",
                                                    "user", "assistant"]
    assert all(EMIT_MARK in m for m in doc["messages"])
    assert doc["messages"][0]["content"][0]["text"] == '<user_input mode="act">list files here please</user_input>'


def test_emitted_session_read_back_is_a_hand_off_not_a_copy(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [FINAL], NEVER_IDLE)
    out = emit_thread(db, SID, "cline", exact=False)
    folder = tmp_path / "emitted"
    for rel in out.files:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(out.files[rel])
    before = _count(db, "SELECT count(*) FROM messages")
    usage = _count(db, "SELECT count(*) FROM usage")
    ingest_paths(db, [folder], NEVER_IDLE)
    assert _count(db, "SELECT count(*) FROM messages") == before and _count(db, "SELECT count(*) FROM usage") == usage
    meta = json.loads(db.execute("SELECT metadata FROM threads WHERE id = ?", (out.target_id,)).fetchone()[0])
    assert meta["emittedFrom"] == SID


def _round_trip(src: Path, target: str, tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [src], NEVER_IDLE)
    (tid,) = [r[0] for r in db.execute("SELECT id FROM threads WHERE parent_thread_id IS NULL AND EXISTS "
                                       "(SELECT 1 FROM messages m WHERE m.thread_id = threads.id)")]
    before = load_messages(db.conn, "m.thread_id = ?", (tid,))
    out = emit_thread(db, tid, target, exact=False, options=EmitOptions(cwd="/work/proj"))
    folder = tmp_path / "out"
    for rel in out.files:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(out.files[rel])
    db2 = open_db(tmp_path / "b.db")
    ingest_paths(db2, [folder], NEVER_IDLE)
    assert {r[0] for r in db2.execute("SELECT provider FROM sources")} == {target}
    after = load_messages(db2.conn, "m.thread_id = ?", (out.target_id,))
    assert_same_conversation(before, after, target, tid)


def test_claude_code_thread_hands_off_to_cline(tmp_path: Path) -> None:
    _round_trip(CLAUDE, "cline", tmp_path)


def test_cline_thread_hands_off_to_claude_code(tmp_path: Path) -> None:
    _round_trip(FINAL, "claude-code", tmp_path)
