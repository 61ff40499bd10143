"""OpenCode parts as the database logs them (issue 33), on a public real session
(tests/fixtures/opencode/public/SOURCES.md): a tool part in any state is the model's call
(one left ``running`` when the session ended is kept, unfinished), and a session emitted
back to OpenCode names each message once, its parallel tool calls in one message.

Checked by hand with the real client: the emitted file of the cut log, given to
``opencode import`` (1.18.33, tests/clients/runner.opencode_import), is imported, and
``opencode export`` gives its two calls back ``running`` and its 15 messages once each."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import orjson

from archive.db import open_db
from archive.emit import emit_thread
from archive.ingest import ingest_paths
from archive.model import Reasoning, ToolCall, ToolResult
from archive.projection import load_messages
from ingest_helpers import NEVER_IDLE
from opencode_writer import SCHEMA, events, write

PUBLIC = Path(__file__).parent / "fixtures" / "opencode" / "public" / "suhd550-dev__stunning-memory__ses_04ca851f.jsonl"
PARALLEL = "msg_fb35c08180010wCjFOQK7OaiSh"  # an assistant message with two tool parts
BOTH_RUNNING = 143  # events of the log up to the one where both of its calls are running


def archive_of(tmp_path: Path, stop: int | None = None):
    """The session as ingest reads the database OpenCode wrote, its log cut after ``stop`` events."""
    home = tmp_path / "home" / ".local" / "share" / "opencode"
    home.mkdir(parents=True)
    conn = sqlite3.connect(home / "opencode.db", isolation_level=None)
    conn.executescript(SCHEMA)
    for ev in events(PUBLIC)[:stop]:
        write(conn, *ev)
    conn.close()
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, [home / "opencode.db"], NEVER_IDLE)
    assert summary.failed == 0 and not summary.reports.get("unexplained")
    return db, events(PUBLIC)[0][0]


def test_a_tool_part_still_running_when_the_session_ended_is_kept_unfinished(tmp_path: Path) -> None:
    db, thread = archive_of(tmp_path, BOTH_RUNNING)
    msgs = [m for m in load_messages(db.conn, "m.thread_id = ?", (thread,)) if m.turn_id == PARALLEL]
    assert [type(b) for m in msgs for b in m.content] == [Reasoning, ToolCall, ToolCall]  # OpenCode's part order
    calls = [b for m in msgs for b in m.content if isinstance(b, ToolCall)]
    assert [(c.extra or {}).get("status") for c in calls] == ["running", "running"]
    assert all((c.extra or {}).get("unfinished") and c.input for c in calls)
    # the rest of the log finishes them: the same messages, revised in place, and their results
    db2, _ = archive_of(tmp_path / "whole")
    whole = [m for m in load_messages(db2.conn, "m.thread_id = ?", (thread,)) if m.turn_id == PARALLEL]
    done = [b for m in whole for b in m.content if isinstance(b, ToolCall)]
    assert [c.call_id for c in done] == [c.call_id for c in calls]
    assert not any((c.extra or {}).get("unfinished") for c in done)
    assert sum(isinstance(b, ToolResult) for m in whole for b in m.content) == 2
    assert [m.id for m in whole][:3] == [m.id for m in msgs]


def test_emitted_session_names_each_message_once(tmp_path: Path) -> None:
    db, thread = archive_of(tmp_path)
    out = emit_thread(db, thread, "opencode", exact=False)
    ((_, data),) = out.files.items()
    doc = orjson.loads(data)
    ids = [m["info"]["id"] for m in doc["messages"]]
    assert len(ids) == len(set(ids)), [i for i, n in Counter(ids).items() if n > 1]
    parts = [p["id"] for m in doc["messages"] for p in m["parts"]]
    assert len(parts) == len(set(parts))
    (parallel,) = [m for m in doc["messages"] if m["info"]["id"] == PARALLEL]
    tools = [p for p in parallel["parts"] if p["type"] == "tool"]
    assert [t["state"]["status"] for t in tools] == ["completed", "completed"]
    assert [p["type"] for p in parallel["parts"]][-1] == "step-finish"
    # every OpenCode message of the log is one message of the file
    logged = {orjson.loads(raw)["info"]["id"] for _a, _s, _e, kind, raw in events(PUBLIC) if kind.startswith("message.updated")}
    assert set(ids) == logged


def test_an_unfinished_call_is_emitted_running_and_read_back_unfinished(tmp_path: Path) -> None:
    db, thread = archive_of(tmp_path, BOTH_RUNNING)
    out = emit_thread(db, thread, "opencode", exact=False)
    ((name, data),) = out.files.items()
    doc = orjson.loads(data)
    tools = [p for m in doc["messages"] if m["info"]["id"] == PARALLEL for p in m["parts"] if p["type"] == "tool"]
    assert [t["state"]["status"] for t in tools] == ["running", "running"]
    assert out.counts.get("tool call unfinished when its session ended: written as running") == 2
    dest = tmp_path / "emitted" / name
    dest.parent.mkdir(parents=True)
    dest.write_bytes(data)
    db2 = open_db(tmp_path / "again.db")
    ingest_paths(db2, [dest], NEVER_IDLE)
    again = [b for m in load_messages(db2.conn, "1", ()) for b in m.content if isinstance(b, ToolCall)]
    assert [(c.extra or {}).get("unfinished") for c in again][-2:] == [True, True]
