"""OpenCode's database as a source: read byte-exact, while the client writes, and after a
part changed in place (the contract test covers the per-session documents themselves)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson

from archive.db import dump_tables, open_db
from archive.emit import emit_thread
from archive.ingest import IngestOptions, ingest_paths, rebuild, restore
from archive.projection import load_messages
from archive.readonly import ReadOnlyDatabase
from archive.vendors import get
from ingest_helpers import NEVER_IDLE, portable_dump
from opencode_writer import SCHEMA, events, write

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
WRITER = Path(__file__).with_name("opencode_writer.py")
ADAPTER = get("opencode")


def make_db(path: Path, document: Path, stop: int | None = None) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA)
    for ev in events(document)[:stop]:
        write(conn, *ev)
    conn.close()


def test_documents_are_the_event_rows_byte_for_byte(tmp_path: Path) -> None:
    """The document read from the database is the recorded one, byte for byte, and restore
    gives it back; the database is opened read-only (a write through the reader fails)."""
    doc = FIXTURES / "bash.jsonl"
    db_path = tmp_path / "opencode.db"
    make_db(db_path, doc)
    with ReadOnlyDatabase(db_path) as database:
        (got,) = list(ADAPTER.documents(db_path, database.query))
        try:
            database.query("DELETE FROM event", ())
            raise AssertionError("the reader could write")
        except OSError:
            pass
    assert got.data == doc.read_bytes()
    assert got.path == f"{db_path}#{events(doc)[0][0]}.jsonl"
    db = open_db(tmp_path / "a.db")
    s = ingest_paths(db, [db_path], NEVER_IDLE)
    assert s.failed == 0 and s.lines == doc.read_bytes().count(b"\n")
    (restored,) = restore(db, tmp_path / "out")
    assert restored.sha256 == hashlib.sha256(doc.read_bytes()).hexdigest()


def test_default_location_and_rerun(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    data.mkdir(parents=True)
    make_db(data / "opencode.db", FIXTURES / "text.jsonl")
    env = {"HOME": str(home)}
    db = open_db(tmp_path / "a.db")
    first = ingest_paths(db, None, IngestOptions(providers=("opencode",), env=env))
    assert first.files_changed == 1 and first.messages_added > 0
    before = dump_tables(db)
    again = ingest_paths(db, None, IngestOptions(providers=("opencode",), env=env))
    assert again.files_changed == 0 and again.lines == 0
    assert dump_tables(db) == before
    assert db.execute("SELECT count(*) FROM source_paths WHERE missing = 1").fetchone()[0] == 0


def test_ingest_while_the_client_writes(tmp_path: Path) -> None:
    """A second process writes the session an event per transaction (WAL) while ingest runs
    again and again: every run succeeds, and the archive ends equal to one ingest of the
    finished database."""
    doc = FIXTURES / "bash.jsonl"
    live = tmp_path / "live" / "opencode.db"
    live.parent.mkdir()
    go = tmp_path / "go"  # the writer stops half-way until the test has read it there
    half = len(events(doc)) // 2
    writer = subprocess.Popen([sys.executable, str(WRITER), str(doc), str(live), "--delay", "0.01",
                               "--pause-after", str(half), "--until", str(go)])  # fmt: skip
    db = open_db(tmp_path / "inc.db")
    runs = 0
    partial = False
    try:
        while writer.poll() is None or runs == 0:
            if live.exists():
                s = ingest_paths(db, [live], IngestOptions(idle_seconds=10**9, batch_lines=3))
                assert s.failed == 0, s.problems
                runs += 1
                n = db.execute("SELECT coalesce(sum(line_count), 0) FROM generations").fetchone()[0]
                partial = partial or 0 < n < len(events(doc))
                if n >= half:
                    go.touch()
            time.sleep(0.005)
    finally:
        go.touch()  # a run that failed half-way must not leave the writer waiting (its error is the one to see)
        writer.wait(timeout=60)
    assert writer.returncode == 0
    ingest_paths(db, [live], NEVER_IDLE)
    assert runs >= 2 and partial, "no ingest ran while the writer was part-way"
    whole = open_db(tmp_path / "whole.db")
    ingest_paths(whole, [live], NEVER_IDLE)
    assert portable_dump(db) == portable_dump(whole)
    assert db.execute("SELECT count(*) FROM generations").fetchone()[0] == 1  # appended, never rewritten


def _changed_tool_part(doc: Path) -> tuple[str, int, str, str, bytes]:
    """A new version of the session's first completed tool part, its output cleared as
    OpenCode does when it compacts old tool results (``state.time.compacted``)."""
    evs = events(doc)
    for aggregate, _seq, _eid, kind, raw in evs:
        data = json.loads(raw)
        part = data.get("part") or {}
        if kind.startswith("message.part.updated") and part.get("type") == "tool" and part["state"]["status"] == "completed":
            part["state"]["output"] = "[Old tool result content cleared]"
            part["state"]["time"]["compacted"] = part["state"]["time"]["end"] + 1000
            seq = evs[-1][1] + 1
            return aggregate, seq, f"evt_sesh_test_{seq}", kind, json.dumps(data, separators=(",", ":")).encode()
    raise AssertionError("no completed tool part")


def test_a_part_updated_after_it_was_archived(tmp_path: Path) -> None:
    """OpenCode rewrites a part in place (a new event): the canonical message takes the new
    content at its place, nothing is added or counted twice, rebuild agrees."""
    doc = FIXTURES / "bash.jsonl"
    db_path = tmp_path / "opencode.db"
    make_db(db_path, doc)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [db_path], NEVER_IDLE)
    thread = events(doc)[0][0]
    before = load_messages(db.conn, "m.thread_id = ?", (thread,))
    usage = db.execute("SELECT count(*), sum(input_tokens), sum(output_tokens) FROM usage").fetchone()
    ev = _changed_tool_part(doc)
    conn = sqlite3.connect(db_path, isolation_level=None)
    write(conn, *ev)
    conn.close()
    s = ingest_paths(db, [db_path], NEVER_IDLE)
    assert s.lines == 1 and s.messages_added == 0
    after = load_messages(db.conn, "m.thread_id = ?", (thread,))
    assert [m.id for m in after] == [m.id for m in before]
    pid = json.loads(ev[4])["part"]["id"]
    changed = [m for m in after if m.id == pid + ":result"]
    assert changed and changed[0].content[0].output == "[Old tool result content cleared]"
    old = [m for m in before if m.id == pid + ":result"][0]
    assert old.content[0].output != changed[0].content[0].output
    assert [m for m in after if m.id != pid + ":result"] == [m for m in before if m.id != pid + ":result"]
    assert db.execute("SELECT count(*), sum(input_tokens), sum(output_tokens) FROM usage").fetchone() == usage
    dumped = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == dumped


def test_usage_is_opencode_step_finish_in_neutral_buckets(tmp_path: Path) -> None:
    """Every step-finish part is one response: input without the cache, output with reasoning."""
    doc = FIXTURES / "reasoning.jsonl"
    db = open_db(tmp_path / "a.db")
    copy = tmp_path / doc.name
    copy.write_bytes(doc.read_bytes())
    ingest_paths(db, [copy], NEVER_IDLE)
    finishes = []
    for _a, _s, _e, kind, raw in events(doc):
        part = orjson.loads(raw).get("part") or {}
        if part.get("type") == "step-finish":
            finishes.append(part["tokens"])
    got = db.execute("SELECT input_tokens, cache_read_tokens, output_tokens, reasoning_tokens FROM usage ORDER BY key").fetchall()
    want = sorted((t["input"], t["cache"]["read"], t["output"] + t["reasoning"], t["reasoning"]) for t in finishes)
    assert sorted(tuple(r) for r in got) == want and any(t["reasoning"] for t in finishes)


def test_emit_builds_an_import_file(tmp_path: Path) -> None:
    """An OpenCode thread emitted to OpenCode is built (its documents are not files OpenCode
    reads): an ``opencode import`` document with the session's own ids."""
    doc = FIXTURES / "bash.jsonl"
    db = open_db(tmp_path / "a.db")
    copy = tmp_path / doc.name
    copy.write_bytes(doc.read_bytes())
    ingest_paths(db, [copy], NEVER_IDLE)
    thread = events(doc)[0][0]
    out = emit_thread(db, thread, "opencode")
    assert not out.exact
    (name, data), = out.files.items()
    assert name == f"opencode/opencode-import/{thread}.json"
    exported = orjson.loads(data)
    assert exported["info"]["id"] == thread
    ids = [m["info"]["id"] for m in exported["messages"]]
    assert ids == sorted(ids) and all(i.startswith("msg_") for i in ids)
    tools = [p for m in exported["messages"] for p in m["parts"] if p["type"] == "tool"]
    assert [t["state"]["status"] for t in tools] == ["completed", "completed"]
    assert "opencode import" in (out.resume_hint or "")
    finishes = [p["id"] for m in exported["messages"] for p in m["parts"] if p["type"] == "step-finish"]
    recorded = [orjson.loads(raw)["part"]["id"] for _a, _s, _e, kind, raw in events(doc)
                if b'"type":"step-finish"' in raw]
    assert finishes == recorded  # the same responses, by the same ids


def test_emit_from_another_vendor_splits_steps_at_tool_results() -> None:
    """Claude Code keeps tool results in user messages: the result goes into its tool part
    and the answer after it starts a new OpenCode message (a step), as OpenCode writes it."""
    from archive.model import Message, Text, Thread, ToolCall, ToolResult, Usage
    from archive.vendors.base import EmitOptions

    t = Thread(id="claude-thread", created_at="2026-01-01T00:00:00Z", metadata={"cwd": "/w", "model": "claude-x"})
    msgs = [
        Message(id="u1", thread_id=t.id, role="user", ts="2026-01-01T00:00:01Z", content=(Text("go"),)),
        Message(id="a1", thread_id=t.id, role="assistant", ts="2026-01-01T00:00:02Z",
                content=(Text("Running."), ToolCall(call_id="c1", name="Bash", input={"command": "ls"})),
                usage=Usage(input_tokens=10, output_tokens=7, cache_read_tokens=3, reasoning_tokens=2)),
        Message(id="u2", thread_id=t.id, role="user", ts="2026-01-01T00:00:03Z",
                content=(ToolResult(call_id="c1", output=[{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),)),
        Message(id="a2", thread_id=t.id, role="assistant", ts="2026-01-01T00:00:04Z", content=(Text("Done."),)),
    ]
    out = ADAPTER.emit(t, msgs, (), EmitOptions(model="m", model_provider="mock"))
    doc = orjson.loads(next(iter(out.files.values())))
    roles = [m["info"]["role"] for m in doc["messages"]]
    assert roles == ["user", "assistant", "assistant"]
    first, second = doc["messages"][1]["parts"], doc["messages"][2]["parts"]
    tool = next(p for p in first if p["type"] == "tool")
    assert tool["state"] == {**tool["state"], "status": "completed", "output": "a\nb", "input": {"command": "ls"}}
    assert [p["text"] for p in second if p["type"] == "text"] == ["Done."]
    finish = next(p for p in first if p["type"] == "step-finish")
    assert finish["tokens"] == {"total": 20, "input": 10, "output": 5, "reasoning": 2, "cache": {"read": 3, "write": 0}}
    assert doc["messages"][1]["info"]["modelID"] == "m" and doc["messages"][1]["info"]["providerID"] == "mock"
    ids = [p["id"] for m in doc["messages"] for p in m["parts"]]
    assert [m["info"]["id"] for m in doc["messages"]] == sorted(m["info"]["id"] for m in doc["messages"])
    assert first == sorted(first, key=lambda p: p["id"]) and len(set(ids)) == len(ids)
    assert out.counts.get("tool output: text blocks joined into one string") == 1
    assert doc["info"]["title"] == "go"  # an untitled thread is listed by its first prompt
    assert not any("no part before its step-finish" in reason for reason in out.counts)
    bare = [*msgs[:3], Message(id="a3", thread_id=t.id, role="assistant", ts="2026-01-01T00:00:05Z", content=(),
                           usage=Usage(input_tokens=4, output_tokens=1))]
    counts = ADAPTER.emit(t, bare, (), EmitOptions(model="m", model_provider="mock")).counts
    assert counts.get("usage: no part before its step-finish to name the response (read back, it counts a second time)") == 1


def test_emit_titles_an_untitled_thread_by_its_first_prompt_not_injected_context() -> None:
    from archive.model import Message, Text, Thread
    from archive.vendors.base import EmitOptions

    t = Thread(id="claude-thread", created_at="2026-01-01T00:00:00Z", metadata={"cwd": "/w"})
    msgs = [
        Message(id="c", thread_id=t.id, role="user", ts="2026-01-01T00:00:00Z", content=(Text("<context>x</context>"),),
                extra={"injected": True}),
        Message(id="u", thread_id=t.id, role="user", ts="2026-01-01T00:00:01Z",
                content=(Text("Fix the   flaky\ntest " + "in the browser suite " * 6),)),
    ]
    doc = orjson.loads(next(iter(ADAPTER.emit(t, msgs, (), EmitOptions(model="m", model_provider="mock")).files.values())))
    title = doc["info"]["title"]
    assert title.startswith("Fix the flaky test in the browser suite") and title.endswith("…") and len(title) == 80
    untitled = Thread(id="empty", created_at="2026-01-01T00:00:00Z", metadata={"cwd": "/w"})
    doc = orjson.loads(next(iter(ADAPTER.emit(untitled, [], (), EmitOptions(model="m", model_provider="mock")).files.values())))
    assert doc["info"]["title"] == "Imported session"


def test_restore_gives_the_session_as_opencode_imports_it(tmp_path: Path) -> None:
    """``restore`` writes the event documents byte for byte and, beside them, each session in
    the JSON ``opencode import`` reads (the documents are not a file OpenCode reads)."""
    from click.testing import CliRunner

    from archive.cli import cli

    doc = FIXTURES / "bash.jsonl"
    db_path = tmp_path / "opencode.db"
    make_db(db_path, doc)
    archive = tmp_path / "a.db"
    db = open_db(archive)
    assert ingest_paths(db, [db_path], NEVER_IDLE).failed == 0
    (thread,) = [r[0] for r in db.execute("SELECT id FROM threads")]
    db.conn.close()
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["restore", str(out), "--db", str(archive)])
    assert r.exit_code == 0, r.output
    imports = sorted(out.rglob("opencode-import/*.json"))
    assert [p.name for p in imports] == [f"{thread}.json"]
    data = orjson.loads(imports[0].read_bytes())
    assert data["info"]["id"] == thread and data["messages"]
    assert "opencode import" in r.output and str(imports[0]) in r.output
    documents = [p for p in out.rglob("*") if p.is_file() and p not in imports]
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in documents] == [hashlib.sha256(doc.read_bytes()).hexdigest()]


def test_images_of_a_tool_result_become_its_attachments() -> None:
    """A tool result's images (a Claude image moved to an Attachment block, a Codex
    input_image) are written as OpenCode keeps them: the text as ``state.output``, each image
    a ``file`` part with a data: URL in ``state.attachments`` (not JSON text in the output)."""
    from archive.model import Attachment, Message, Text, Thread, ToolCall, ToolResult
    from archive.vendors.base import EmitOptions

    t = Thread(id="claude-thread", created_at="2026-01-01T00:00:00Z", metadata={"cwd": "/w", "model": "claude-x"})
    msgs = [
        Message(id="u1", thread_id=t.id, role="user", ts="2026-01-01T00:00:01Z", content=(Text("look"),)),
        Message(id="a1", thread_id=t.id, role="assistant", ts="2026-01-01T00:00:02Z",
                content=(ToolCall(call_id="c1", name="Read", input={"file_path": "dot.png"}),
                         ToolCall(call_id="c2", name="view_image", input={"path": "dot.png"}))),
        Message(id="u2", thread_id=t.id, role="user", ts="2026-01-01T00:00:03Z",
                content=(ToolResult(call_id="c1", output=[{"type": "text", "text": "a picture"}, {"type": "image", "attachment": 0}]),
                         Attachment(media_type="image/png", data="iVBORw0KGgo=", extra={"callId": "c1"}))),
        Message(id="t2", thread_id=t.id, role="tool", ts="2026-01-01T00:00:04Z",
                content=(ToolResult(call_id="c2", output=[{"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4A=="}]),)),
        Message(id="a2", thread_id=t.id, role="assistant", ts="2026-01-01T00:00:05Z", content=(Text("A dot."),)),
    ]
    out = ADAPTER.emit(t, msgs, (), EmitOptions(model="m", model_provider="mock"))
    doc = orjson.loads(next(iter(out.files.values())))
    tools = {p["callID"]: p for m in doc["messages"] for p in m["parts"] if p["type"] == "tool"}
    one, two = tools["c1"]["state"], tools["c2"]["state"]
    assert one["output"] == "a picture" and two["output"] == ""
    assert [(a["type"], a["mime"], a["url"]) for a in one["attachments"]] == [("file", "image/png", "data:image/png;base64,iVBORw0KGgo=")]
    assert [(a["mime"], a["url"]) for a in two["attachments"]] == [("image/jpeg", "data:image/jpeg;base64,/9j/4A==")]
    assert all(a["id"].startswith("prt_") and a["messageID"] == tools["c1"]["messageID"] for a in one["attachments"])
    assert out.counts.get("tool output: images written as the result's attachments") == 2
    assert not any("dropped" in reason or "JSON text" in reason for reason in out.counts), out.counts
