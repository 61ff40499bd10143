"""The derived tables' queue (issue 42, archive/derived.py, migration m138): the projector
queues the threads whose messages it writes, once per batch, instead of a trigger per message
row; every writer of messages and threads still gets its threads recomputed, and an
incremental run leaves the index and the signals a full recompute would give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from archive.db import open_db
from archive.derived import refresh
from archive.ingest import ingest_paths, rebuild
from archive.model import Message, ToolCall
from archive.store import SqliteMessageStore

FIX = Path(__file__).parent / "fixtures"
CLAUDE_FILES = FIX / "recorded" / "claude-code-2.1.332" / "files"
TS = "2026-11-29T10:%02d:%02d.000Z"
TABLES = ("file_touches", "thread_signals")


def _rec(tid: str, i: int, role: str, content: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"v": 1, "id": f"{tid}-m{i}", "threadId": tid, "role": role, "ts": TS % divmod(i * 7, 60),
                         "content": content}) + b"\n"  # fmt: skip


def _edit(i: int, path: str) -> list[dict[str, Any]]:
    return [{"type": "tool_call", "callId": f"c{i}", "name": "Edit",
             "input": {"file_path": path, "old_string": "a", "new_string": "b"}}]  # fmt: skip


def _result(i: int, error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "callId": f"c{i}", "output": "no" if error else "ok", "isError": error}]


def _session(tid: str, n: int) -> bytes:
    head = orjson.dumps({"v": 1, "id": tid, "createdAt": TS % (0, 0), "metadata": {"cwd": "/repo"}}) + b"\n"
    body = b"".join(
        _rec(tid, 2 * i + 1, "assistant", _edit(i, f"src/f{i % 3}.py")) + _rec(tid, 2 * i + 2, "tool", _result(i, i == 2))
        for i in range(n)
    )
    return head + _rec(tid, 0, "user", [{"type": "text", "text": "edit them"}]) + body


def _tables(db: Any) -> dict[str, list[Any]]:
    return {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES}


def _recomputed(db: Any) -> dict[str, list[Any]]:
    """What a full recompute gives: the tables emptied and every thread computed again."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("DELETE FROM file_touches")
        db.execute("DELETE FROM thread_signals")
        db.execute("INSERT INTO _derived_dirty SELECT id FROM threads")
        refresh(db.conn)
        return _tables(db)
    finally:
        db.execute("ROLLBACK")


def test_a_first_ingest_queues_each_thread_once_per_batch_not_once_per_message(tmp_path: Path) -> None:
    (tmp_path / "canon").mkdir()
    (tmp_path / "canon" / "s.jsonl").write_bytes(_session("many", 60))
    db = open_db(tmp_path / "a.db")
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    ingest_paths(db, [tmp_path / "canon"])
    db.conn.set_trace_callback(None)
    messages = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    queued = [s for s in statements if "_derived_dirty" in s]
    assert messages == 121
    # no trigger runs an INSERT into the queue per message row (m110's ran 121 here): the
    # projector's one statement per batch queues the thread
    per_row = db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages' "
                         "AND sql LIKE '%AFTER INSERT%' AND sql LIKE '%_derived_dirty%'").fetchall()  # fmt: skip
    assert per_row == []
    assert 0 < len([s for s in queued if s.startswith("INSERT OR IGNORE INTO _derived_dirty")]) < 10, queued
    assert db.execute("SELECT count(*) FROM thread_signals WHERE tool_calls = 60").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM file_touches").fetchone()[0] == 60
    assert not db.execute("SELECT 1 FROM _derived_dirty").fetchone()


def test_an_appended_line_updates_the_index_and_signals_as_a_full_recompute(tmp_path: Path) -> None:
    (tmp_path / "canon").mkdir()
    f = tmp_path / "canon" / "s.jsonl"
    f.write_bytes(_session("grow", 4))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [tmp_path / "canon", CLAUDE_FILES])
    first = _tables(db)
    assert first == _recomputed(db)
    # one more edit of a file already edited, and its failing result: the thread's touches,
    # same-file edits, errors and ending change; the other threads' rows do not
    with f.open("ab") as out:
        out.write(_rec("grow", 9, "assistant", _edit(9, "src/f0.py")) + _rec("grow", 10, "tool", _result(9, True)))
    ingest_paths(db, [tmp_path / "canon", CLAUDE_FILES])
    second = _tables(db)
    assert second == _recomputed(db)
    assert second != first
    sig = db.execute("SELECT tool_calls, tool_errors, same_file_edits, ending FROM thread_signals WHERE thread_id = 'grow'").fetchone()
    assert tuple(sig) == (5, 2, 2, "errored")
    assert db.execute("SELECT count(*) FROM file_touches WHERE thread_id = 'grow'").fetchone()[0] == 5
    assert not db.execute("SELECT 1 FROM _derived_dirty").fetchone()


def test_every_other_writer_of_messages_gets_its_threads_recomputed(tmp_path: Path) -> None:
    (tmp_path / "canon").mkdir()
    (tmp_path / "canon" / "s.jsonl").write_bytes(_session("other", 3))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [tmp_path / "canon", CLAUDE_FILES])
    built = _tables(db)
    # rebuild (and forget, which rebuilds the sources it rewrote) from emptied tables
    db.execute("DELETE FROM file_touches")
    db.execute("DELETE FROM thread_signals")
    rebuild(db)
    assert _tables(db) == built
    # a message appended through the store's interface (the MCP server, emit)
    db.conn.close()
    store = SqliteMessageStore(tmp_path / "a.db")
    call = ToolCall(call_id="cx", name="Edit", input={"file_path": "src/new.py", "old_string": "a", "new_string": "b"})
    store.append_message(Message(id="other-extra", thread_id="other", role="assistant", ts=TS % (9, 0), content=(call,)))
    db = store.db
    assert db.execute("SELECT path FROM file_touches WHERE message_id = 'other-extra'").fetchall() == [("/repo/src/new.py",)]
    assert db.execute("SELECT tool_calls FROM thread_signals WHERE thread_id = 'other'").fetchone()[0] == 4
    assert _tables(db) == _recomputed(db)
    assert not db.execute("SELECT 1 FROM _derived_dirty").fetchone()


def test_what_ingest_computes_as_it_writes_is_what_a_full_recompute_gives(tmp_path: Path, monkeypatch: Any) -> None:
    """Every vendor's fixtures: the threads computed while the projector wrote them
    (``derived.Live``) and the ones read back give the rows a recompute from the archive gives."""
    from archive import derived

    live, read_back = [], []
    write, refresh_thread = derived.Live.write, derived.refresh_thread

    def counted_write(self: Any, thread_id: str, *, fresh: bool) -> bool:
        done = write(self, thread_id, fresh=fresh)
        (live if done else read_back).append(thread_id)
        return done

    monkeypatch.setattr(derived.Live, "write", counted_write)
    db = open_db(tmp_path / "a.db")
    vendors = [p for p in sorted(FIX.iterdir()) if p.is_dir() and p.name not in ("recorded",)]
    ingest_paths(db, [*vendors, CLAUDE_FILES, FIX / "recorded" / "codex-0.171.0" / "patch"])
    monkeypatch.setattr(derived.Live, "write", write)
    built = _tables(db)
    assert built["file_touches"] and built["thread_signals"]
    assert built == _recomputed(db)
    threads = db.execute("SELECT count(*) FROM threads").fetchone()[0]
    # most threads are computed as written; the others (copies, forks, threads re-read) read back
    assert len(live) > threads / 2, (len(live), len(read_back), threads)
    assert refresh_thread is derived.refresh_thread


def test_long_retried_inputs_and_times_out_of_order_as_a_full_recompute(tmp_path: Path) -> None:
    long_edit = [{"type": "tool_call", "callId": "L", "name": "Write", "input": {"file_path": "big.txt", "content": "x" * 5000}}]
    again = [{**long_edit[0], "callId": "L2"}]
    head = orjson.dumps({"v": 1, "id": "long", "createdAt": TS % (0, 0), "metadata": {"cwd": "/repo"}}) + b"\n"
    (tmp_path / "canon").mkdir()
    (tmp_path / "canon" / "long.jsonl").write_bytes(
        head + _rec("long", 1, "assistant", long_edit) + _rec("long", 2, "assistant", again) + _rec("long", 3, "assistant", again)
    )
    # a thread whose third message is stamped before its second (computed from the archive)
    late = _session("late", 2).replace(b'"ts":"' + (TS % divmod(3 * 7, 60)).encode(), b'"ts":"2026-11-29T09:00:00.000Z')
    assert late != _session("late", 2)
    (tmp_path / "canon" / "late.jsonl").write_bytes(late)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [tmp_path / "canon"])
    built = _tables(db)
    assert built == _recomputed(db)
    sig = {r[0]: r[1:] for r in db.execute("SELECT thread_id, tool_calls, retries, duration_seconds FROM thread_signals")}
    assert sig["long"][:2] == (3, 2)
    assert sig["late"][2] == 3600 + 28  # 09:00:00 (the fourth message) to 10:00:28 (the last)
