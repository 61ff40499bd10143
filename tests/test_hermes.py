"""Hermes Agent (issue 35): its ``state.db`` read where the client left it (rows still in the
WAL), without disturbing it, incrementally; ``HERMES_HOME``; the JSON snapshots; emit's
export document and its marks. The contract (tests/test_contract.py) runs on the documents
in tests/fixtures/hermes/; the real client runs in tests/test_clients_hermes.py."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import orjson
from click.testing import CliRunner

from archive.cli import cli
from archive.db import dump_tables, open_db
from archive.emit import emit_thread, write_files
from archive.ingest import ingest_paths
from archive.projection import load_messages
from archive.vendors.hermes import ADAPTER
from archive.vendors.hermes.parse import message_mark
from ingest_helpers import NEVER_IDLE

FIXTURES = Path(__file__).parent / "fixtures"
STATE = FIXTURES / "hermes" / "state-0.19.0"
SID = "20261202_042505_c1b4d6"
CLAUDE_BASH = FIXTURES / "recorded" / "claude-code-2.1.197" / "bash" / "projects"


def run(*args: str, env: dict[str, str] | None = None) -> str:
    res = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def place_state(hermes_home: Path) -> Path:
    """The recorded state.db with its WAL, as Hermes 0.19.0 left them (the resume's rows are
    only in the WAL: the main file holds the first four messages)."""
    hermes_home.mkdir(parents=True, exist_ok=True)
    past = 1_767_225_600 * 10**9  # written long before the test reads it, as a client's database at rest
    for f in STATE.iterdir():
        if f.name.endswith("-shm"):
            continue  # an index of the WAL a reader of the fixture folder in place may leave (semantic_eval)
        shutil.copyfile(f, hermes_home / f.name)
        os.utime(hermes_home / f.name, ns=(past, past))
    return hermes_home / "state.db"


def test_the_wal_is_read_and_the_database_is_left_as_it_was(tmp_path: Path, isolated_home: Path) -> None:
    db_file = place_state(isolated_home / ".hermes")
    before = {f.name: f.read_bytes() for f in db_file.parent.iterdir()}
    main_only = sqlite3.connect(f"file:{db_file}?immutable=1", uri=True)
    assert main_only.execute("SELECT count(*) FROM messages").fetchone() == (4,)
    main_only.close()
    db = str(tmp_path / "a.db")
    summary = json.loads(run("--db", db, "ingest", "--json"))
    assert summary["failed"] == 0 and summary["unread"] == []
    threads = json.loads(run("--db", db, "threads", "--json", "--all"))
    assert [t["id"] for t in threads] == [SID]
    archive = open_db(db)
    msgs = load_messages(archive.conn, "m.thread_id = ?", (SID,))
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert msgs[-1].content[0].text == "OK."  # type: ignore[union-attr]
    call = msgs[1].content[1]
    assert call.name == "terminal" and call.input == {"command": "echo hello-from-terminal"}  # type: ignore[union-attr]
    assert msgs[2].content[0].output["output"] == "hello-from-terminal"  # type: ignore[union-attr]
    assert msgs[3].content[0].text == "The command printed the greeting."  # type: ignore[union-attr]
    meta = archive.conn.execute("SELECT metadata FROM threads WHERE id = ?", (SID,)).fetchone()[0]
    assert json.loads(meta)["cwd"] == "/tmp/hrec/r1/work"
    # Hermes's totals: input apart from cache reads, output with reasoning (its own figures)
    usage = archive.conn.execute("SELECT input_tokens, cache_read_tokens, output_tokens, reasoning_tokens "
                                 "FROM usage WHERE thread_id = ?", (SID,)).fetchall()  # fmt: skip
    assert usage == [(417, 417, 76, 9)]
    # carried by the last answer (the canonical model keeps usage on a message), so a
    # canonical round trip keeps the session's totals
    carrier = archive.conn.execute("SELECT message_id FROM usage WHERE thread_id = ?", (SID,)).fetchone()[0]
    assert carrier == msgs[-1].id and msgs[-1].usage is not None and msgs[-1].usage.output_tokens == 76
    # read-only: the client's files are as they were (no checkpoint, no new file but -shm)
    after = {f.name: f.read_bytes() for f in db_file.parent.iterdir() if f.name != "state.db-shm"}
    assert after == before
    # a rerun changes nothing
    dump = dump_tables(archive)
    assert json.loads(run("--db", db, "ingest", "--json"))["files_changed"] == 0
    assert dump_tables(open_db(db)) == dump


def test_new_rows_continue_the_session_and_totals_are_a_new_generation(tmp_path: Path, isolated_home: Path) -> None:
    db_file = place_state(isolated_home / ".hermes")
    archive = open_db(tmp_path / "a.db")
    ingest_paths(archive, [db_file.parent], NEVER_IDLE)
    lines = archive.conn.execute("SELECT count(*) FROM source_lines").fetchone()[0]
    # Hermes appends a turn: two message rows, the totals updated in place
    conn = sqlite3.connect(db_file)
    for role, text in (("user", "[more] again"), ("assistant", "Again.")):
        conn.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)",
                     (SID, role, text, 1796185400.0))
    conn.execute("UPDATE session_model_usage SET input_tokens = input_tokens + 10, output_tokens = output_tokens + 2, "
                 "api_call_count = api_call_count + 1 WHERE session_id = ?", (SID,))
    conn.commit()
    conn.close()
    ingest_paths(archive, [db_file.parent], NEVER_IDLE)
    gens = dict(archive.conn.execute("SELECT last_path, current_generation FROM sources").fetchall())
    assert gens[f"{db_file}#{SID}.jsonl"] == 1  # the messages only grew: the same generation, continued
    assert gens[f"{db_file}#{SID}.session.jsonl"] == 2  # the rewritten totals: a new generation
    # two message lines and the new session document's two lines are all that was added
    assert archive.conn.execute("SELECT count(*) FROM source_lines").fetchone()[0] == lines + 4
    msgs = load_messages(archive.conn, "m.thread_id = ?", (SID,))
    assert [m.content[0].text for m in msgs[-2:]] == ["[more] again", "Again."]  # type: ignore[union-attr]
    # the totals' latest version counts, once
    assert archive.conn.execute("SELECT input_tokens, output_tokens FROM usage").fetchall() == [(427, 78)]


def test_hermes_home_is_honoured(tmp_path: Path, isolated_home: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    elsewhere = tmp_path / "elsewhere"
    place_state(elsewhere)
    monkeypatch.setenv("HERMES_HOME", str(elsewhere))
    assert ADAPTER.default_roots({"HERMES_HOME": str(elsewhere)}, isolated_home) == [elsewhere]
    db = str(tmp_path / "a.db")
    assert json.loads(run("--db", db, "ingest", "--json"))["files_seen"] >= 1
    assert [t["id"] for t in json.loads(run("--db", db, "threads", "--json", "--all"))] == [SID]


def test_restore_gives_the_documents_and_the_export_hermes_imports(tmp_path: Path, isolated_home: Path) -> None:
    db_file = place_state(isolated_home / ".hermes")
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", str(db_file.parent))
    out = tmp_path / "restored"
    run("--db", db, "restore", str(out))
    restored = {p.name: p for p in out.rglob("*") if p.is_file()}
    assert restored[f"state.db#{SID}.jsonl"].read_bytes() == (FIXTURES / "hermes" / "bash-0.19.0.jsonl").read_bytes()
    export = orjson.loads(restored[f"{SID}.json"].read_bytes())
    assert export["id"] == SID and [m["role"] for m in export["messages"]][:3] == ["user", "assistant", "tool"]


def test_a_claude_thread_emitted_to_hermes_comes_back_as_a_hand_off(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(CLAUDE_BASH, src / "projects")
    archive = open_db(tmp_path / "a.db")
    ingest_paths(archive, [src], NEVER_IDLE)
    (tid,) = [r[0] for r in archive.conn.execute("SELECT id FROM threads WHERE parent_thread_id IS NULL")]
    out = emit_thread(archive, tid, "hermes", exact=False)
    (rel,) = list(out.files)
    assert rel.startswith(".hermes/hermes-import/") and "hermes --resume" in (out.resume_hint or "")
    doc = orjson.loads(out.files[rel])
    assert doc["messages"] and all(message_mark(m) is not None for m in doc["messages"])
    calls = [c for m in doc["messages"] for c in m.get("tool_calls") or []]
    results = [m for m in doc["messages"] if m["role"] == "tool"]
    assert calls and {c["id"] for c in calls} == {r["tool_call_id"] for r in results}
    assert all(isinstance(c["function"]["arguments"], str) for c in calls)
    write_files(out, tmp_path / "emitted")
    again = open_db(tmp_path / "again.db")
    ingest_paths(again, [tmp_path / "emitted"], NEVER_IDLE)
    (hermes_thread,) = [r for r in again.conn.execute("SELECT id, metadata FROM threads")]
    assert json.loads(hermes_thread[1])["emittedFrom"] == tid
    original = {m.id for m in load_messages(archive.conn, "m.thread_id = ?", (tid,))}
    back = {m.id for m in load_messages(again.conn, "m.thread_id = ?", (hermes_thread[0],))}
    assert back and back <= original  # the archived messages, under their own ids
    # the totals emit wrote are the origin's responses: not counted a second time
    assert again.conn.execute("SELECT count(*) FROM usage").fetchone()[0] == 0


def test_a_0_13_snapshot_and_its_database_are_one_conversation(tmp_path: Path, isolated_home: Path) -> None:
    """Hermes 0.13.0 wrote every CLI session twice: state.db (schema 11, no usage rows: the
    session totals count) and ``sessions/session_<id>.json``, rewritten after each turn."""
    shutil.copytree(FIXTURES / "hermes" / "state-0.13.0", isolated_home / ".hermes")
    sid = "20261202_043738_8c0b40"
    db = str(tmp_path / "a.db")
    summary = json.loads(run("--db", db, "ingest", "--json"))
    assert summary["failed"] == 0
    archive = open_db(db)
    kinds = {r[0] for r in archive.conn.execute("SELECT kind FROM sources")}
    assert kinds == {"lines", "snapshot"}
    msgs = load_messages(archive.conn, "m.thread_id = ?", (sid,))
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    # each message read from both, stored once
    occurrences = archive.conn.execute("SELECT count(*) FROM message_occurrences").fetchone()[0]
    assert occurrences == 12
    assert archive.conn.execute("SELECT input_tokens, output_tokens FROM usage").fetchall() == [(297, 76)]
    # the snapshot alone (the database gone) is the whole conversation too
    other = open_db(tmp_path / "b.db")
    ingest_paths(other, [isolated_home / ".hermes" / "sessions"], NEVER_IDLE)
    alone = load_messages(other.conn, "m.thread_id = ?", (sid,))
    assert [m.id for m in alone] == [m.id for m in msgs]
