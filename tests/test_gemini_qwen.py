"""Gemini CLI and Qwen Code adapters beyond the shared contract (tests/test_contract.py):
where they look, what they claim, and the operation-log cases the recordings do not show
(a legacy single-document session, ``$rewindTo``, a rewrite that updates a message)."""

from __future__ import annotations

from pathlib import Path

import orjson

from archive.model import Text, ToolCall, ToolResult
from archive.vendors import VENDORS, get
from archive.vendors.base import DUPLICATE, LINES, METADATA, SNAPSHOT, MessageRow, Report, UsageRow
from helpers import parse_bytes, source_for

FIXTURES = Path(__file__).parent / "fixtures"
GEMINI, QWEN = get("gemini"), get("qwen")
SHELL = FIXTURES / "gemini" / "gemini-0.61.0-shell.jsonl"


def test_roots_honour_the_vendor_variables(tmp_path: Path) -> None:
    home = Path("/home/me")
    assert GEMINI.default_roots({}, home) == [home / ".gemini" / "tmp"]
    assert GEMINI.default_roots({"GEMINI_CLI_HOME": "/srv/g"}, home) == [Path("/srv/g/.gemini/tmp")]
    # the second root: 0.1.x's tmp/ layout, always under the home's .qwen
    assert QWEN.default_roots({}, home) == [home / ".qwen" / "projects", home / ".qwen" / "tmp"]
    assert QWEN.default_roots({"QWEN_HOME": "/srv/q"}, home)[0] == Path("/srv/q/projects")
    assert QWEN.default_roots({"QWEN_HOME": "/srv/q", "QWEN_RUNTIME_DIR": "/run/q"}, home)[0] == Path("/run/q/projects")


def test_classify() -> None:
    g = Path("/h/.gemini/tmp/app")
    assert GEMINI.classify(g / "chats" / "session-2026-11-30T16-32-57053931.jsonl") == LINES
    assert GEMINI.classify(g / "chats" / "session-2025-06-01T10-00-1a2b3c4d.json") == SNAPSHOT
    assert GEMINI.classify(g / "chats" / "57053931-af8b" / "0f1e2d3c.jsonl") == LINES  # a subagent
    assert GEMINI.classify(g / "logs.json") == SNAPSHOT  # the prompt log (tests/test_gemini_qwen_old.py)
    assert GEMINI.classify(g / ".project_root") is None
    q = Path("/h/.qwen/projects/-work-app")
    assert QWEN.classify(q / "chats" / "34cc8787-e443-4cd2-b8fb-a266f876d01d.jsonl") == LINES
    assert QWEN.classify(q / "chats" / "34cc8787.runtime.json") is None
    assert QWEN.classify(q / "meta.json") is None


def test_detect_tells_qwen_from_claude_code() -> None:
    qwen_head = (FIXTURES / "qwen" / "qwen-0.24.4-text.jsonl").read_bytes()[:65536]
    gemini_head = SHELL.read_bytes()[:65536]
    claude_head = next(p for p in sorted((FIXTURES / "claude-code").rglob("*.jsonl"))).read_bytes()[:65536]
    claimed = {name: [a.name for a in VENDORS if a.detect(head)][:1] for name, head in
               (("qwen", qwen_head), ("gemini", gemini_head), ("claude", claude_head))}
    assert claimed == {"qwen": ["qwen"], "gemini": ["gemini"], "claude": ["claude-code"]}


def _rows(adapter, data: bytes, name: str = "s.jsonl", kind: str = LINES):
    return [r for _, r in parse_bytes(adapter, data, source_for(Path(name), adapter.name, kind))]


def _messages(rows) -> list:
    """The messages as the projection stores them: a revision replaces the version before
    it, in that version's place."""
    out: dict[str, object] = {}
    for r in rows:
        if isinstance(r, MessageRow):
            assert r.revises == (r.message.id in out), r
            out[r.message.id] = r.message
    return list(out.values())


def test_legacy_single_document_reads_like_the_log() -> None:
    """The pre-JSONL layout (one JSON document with ``messages``) gives the messages the
    operation log gives for the same final history."""
    lines = [orjson.loads(ln) for ln in SHELL.read_bytes().splitlines()]
    header = lines[0]
    final: dict[str, dict] = {}
    for d in lines[1:]:
        if isinstance(d.get("$set"), dict) and isinstance(d["$set"].get("messages"), list):
            final = {m["id"]: m for m in d["$set"]["messages"]}
        elif isinstance(d.get("id"), str):
            final[d["id"]] = d
    doc = {**header, "messages": list(final.values())}
    legacy = _messages(_rows(GEMINI, orjson.dumps(doc), "session-x.json", SNAPSHOT))
    log = _messages(_rows(GEMINI, SHELL.read_bytes()))

    def view(ms):
        return sorted((m.role, tuple(type(b).__name__ for b in m.content)) for m in ms)

    # the log rewrites a response (text, then its calls) and the document holds its final
    # version: the same messages either way
    flat = sorted(b.to_dict().__repr__() for m in legacy for b in m.content)
    assert flat == sorted(b.to_dict().__repr__() for m in log for b in m.content)
    assert view(legacy) == view(log)


def _gemini_lines(*records: dict) -> bytes:
    head = {"sessionId": "s-1", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z", "lastUpdated": "x", "kind": "main"}
    return b"\n".join(orjson.dumps(r) for r in (head, *records)) + b"\n"


def test_a_rewrite_updates_the_message_in_its_place() -> None:
    msg = {"id": "m1", "timestamp": "2026-01-01T00:00:01Z", "type": "gemini", "content": "Looking.", "thoughts": [],
           "tokens": {"input": 100, "output": 10, "cached": 40, "thoughts": 0, "tool": 0, "total": 110}, "model": "gemini-2.5-pro"}
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a b"}}}]}
    rows = _rows(GEMINI, _gemini_lines(
        {"id": "u1", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": [{"text": "go"}]},
        msg,
        {"id": "i1", "timestamp": "2026-01-01T00:00:02Z", "type": "info", "content": "a notice between"},
        {**msg, "toolCalls": [call]},  # gains its call: the row is updated
        {**msg, "toolCalls": [call]},  # written again: nothing new
        {**msg, "content": "Looking again.", "toolCalls": [call]},  # a changed body: the latest wins, as on resume
        {"$rewindTo": "m1"},
    ))
    revisions = [r for r in rows if isinstance(r, MessageRow) and r.revises]
    assert len(revisions) == 2
    msgs = _messages(rows)
    assert [(m.role, [type(b) for b in m.content]) for m in msgs] == [
        ("user", [Text]), ("assistant", [Text, ToolCall]), ("system", [Text]), ("tool", [ToolResult])]
    assert msgs[1].content[0].text == "Looking again."
    usage = [r for r in rows if isinstance(r, UsageRow)]
    assert {r.key for r in usage} == {"gemini:s-1:m1"} and usage[-1].message_id == msgs[1].id
    assert (usage[0].usage.input_tokens, usage[0].usage.cache_read_tokens) == (60, 40)
    reports = [(r.kind, r.reason) for r in rows if isinstance(r, Report)]
    assert (METADATA, "$rewindTo") in reports
    assert sum(k == DUPLICATE for k, _ in reports) >= 1


def test_archive_updates_a_rewritten_message_row(tmp_path: Path) -> None:
    """Ingested whole, or in two runs split between a message and its rewrite, the archive
    holds one row for it (text and call) in its first place, with one response's tokens."""
    from ingest_helpers import ingest, portable_dump

    data = SHELL.read_bytes()
    lines = data.splitlines(keepends=True)
    recs = [orjson.loads(ln) for ln in lines]
    ids = [r.get("id") for r in recs]
    split = next(i for i, v in enumerate(ids) if v and ids.index(v) < i and recs[i].get("toolCalls"))
    vid = ids[split]
    chats = tmp_path / "home" / ".gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    f = chats / SHELL.name
    dumps = []
    for parts in ((data,), (b"".join(lines[:split]), data)):
        db_path = tmp_path / f"a{len(parts)}.db"
        for part in parts:
            f.write_bytes(part)
            db, _ = ingest(db_path, [f])
            db.conn.close()
        db, _ = ingest(db_path, [f])
        row = db.conn.execute(
            "SELECT m.offset, group_concat(b.type, ',') FROM messages m JOIN blocks b ON b.message_id = m.id "
            "WHERE json_extract(m.provenance, '$.sourceId') = ? AND m.role = 'assistant' GROUP BY m.id", (vid,)).fetchall()
        assert row == [(data.index(lines[ids.index(vid)]), row[0][1])] and "tool_call" in row[0][1]
        assert db.conn.execute("SELECT count(*) FROM usage WHERE key LIKE ?", (f"%:{vid}",)).fetchone()[0] == 1
        dumps.append(portable_dump(db))
        db.conn.close()
    assert dumps[0] == dumps[1]


def test_an_emitted_gemini_session_names_its_project(tmp_path: Path) -> None:
    """Gemini CLI's own sessions name their folder only in the context text it writes (left
    out by an emit); the emitted header's ``directories`` names it, so the archive reading
    the session back knows its project. Images of a Copilot tool result go as inlineData,
    and their Attachment blocks are not reported dropped."""
    from ingest_helpers import ingest

    from archive.emit import emit_thread, write_files
    from archive.projection import load_threads
    from archive.vendors.base import EmitOptions

    db, _ = ingest(tmp_path / "a.db", [FIXTURES / "recorded" / "copilot-1.0.102" / "image" / "session-state"])
    (thread,) = load_threads(db.conn, "provider = 'copilot'")
    out = emit_thread(db, thread.id, "gemini", exact=False, options=EmitOptions(cwd="/home/u/proj"))
    assert not [k for k in out.counts if "dropped" in k], out.counts
    assert out.counts["tool result: images as inlineData parts after the functionResponse"] == 1
    (rel,) = out.files
    assert orjson.loads(out.files[rel].split(b"\n", 1)[0])["directories"] == ["/home/u/proj"]
    write_files(out, tmp_path / "out")
    again, _ = ingest(tmp_path / "b.db", [tmp_path / "out"])
    (back,) = load_threads(again.conn, "provider = 'gemini'")
    assert back.metadata["cwd"] == "/home/u/proj"


def test_every_gemini_response_names_its_model_and_so_does_the_thread(tmp_path: Path) -> None:
    """Issue 33: Gemini threads with usage had no model (the parser never named the
    thread's); a response whose record names none (``recordMessage`` called without a
    model) takes the model of the response before it."""
    from archive.db import open_db
    from archive.ingest import IngestOptions, ingest_paths

    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [SHELL], IngestOptions(idle_seconds=10**9))
    assert db.execute("SELECT model FROM threads WHERE provider = 'gemini'").fetchall() == [("gemini-2.5-pro",)]
    assert db.execute("SELECT count(*), count(model) FROM usage").fetchone() == (3, 3)

    tokens = {"input": 100, "output": 10, "cached": 40, "thoughts": 0, "tool": 0, "total": 110}
    rows = _rows(GEMINI, _gemini_lines(
        {"id": "u1", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": [{"text": "go"}]},
        {"id": "m1", "timestamp": "2026-01-01T00:00:01Z", "type": "gemini", "content": "One.", "tokens": tokens,
         "model": "gemini-2.5-flash"},
        {"id": "m2", "timestamp": "2026-01-01T00:00:02Z", "type": "gemini", "content": "Two.", "tokens": tokens},
        {"id": "m3", "timestamp": "2026-01-01T00:00:03Z", "type": "gemini", "content": "Three.", "tokens": tokens,
         "model": "gemini-2.5-pro"},
    ))
    assert [(r.key[-2:], r.model) for r in rows if isinstance(r, UsageRow)] == [
        ("m1", "gemini-2.5-flash"), ("m2", "gemini-2.5-flash"), ("m3", "gemini-2.5-pro")]
    facts = [r.fields["metadata"]["model"] for r in rows if getattr(r, "fields", {}).get("metadata", {}).get("model")]
    assert facts == ["gemini-2.5-flash", "gemini-2.5-pro"]  # the latest response's model is the thread's


def test_qwen_0_5_counts_each_response_once(tmp_path: Path) -> None:
    """Issue 33: Qwen Code 0.5.2's ``prompt_id`` is 13 hex digits, not 0.24.4's
    ``<session>########<n>``: read as a helper's, each response was counted twice (its
    telemetry as a helper's, its assistant record under a key of its own)."""
    from archive.db import open_db
    from archive.ingest import IngestOptions, ingest_paths

    path = FIXTURES / "qwen" / "qwen-0.5.2-shell.jsonl"
    records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assistants = [r for r in records if r["type"] == "assistant"]
    events = [r["systemPayload"]["uiEvent"] for r in records if r.get("subtype") == "ui_telemetry"]
    prompt_ids = {e["prompt_id"] for e in events}
    assert len(prompt_ids) == 1 and "#" not in next(iter(prompt_ids))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [path], IngestOptions(idle_seconds=10**9))
    rows = db.execute("SELECT key, message_id, output_tokens FROM usage ORDER BY ts").fetchall()
    assert [r[1] for r in rows] == [a["uuid"] for a in assistants]  # one per response, on its message
    assert [r[2] for r in rows] == [a["usageMetadata"]["candidatesTokenCount"] for a in assistants] == [58, 57, 14]
    assert {r[0].rsplit(":", 1)[1] for r in rows} == {e["response_id"] for e in events if "input_token_count" in e}
    assert db.execute("SELECT count(*) FROM messages WHERE role = 'system'").fetchone()[0] == 0  # no helper


def test_qwen_assistant_record_claims_its_response_whatever_the_prompt_id() -> None:
    """The assistant record repeats the latest pending response with its figures, the
    session's first, a helper's only when none matches: never a second key."""
    def line(uuid: str, kind: str, **kw) -> dict:
        return {"uuid": uuid, "parentUuid": None, "sessionId": "s-1", "timestamp": "2026-01-01T00:00:00Z",
                "type": kind, "cwd": "/w", "version": "0.5.2", **kw}

    def telemetry(uuid: str, rid: str, prompt_id: str, out: int) -> dict:
        return line(uuid, "system", subtype="ui_telemetry", systemPayload={"uiEvent": {
            "event.name": "qwen-code.api_response", "response_id": rid, "prompt_id": prompt_id, "model": "m",
            "input_token_count": 100, "output_token_count": out, "cached_content_token_count": 0,
            "thoughts_token_count": 0, "total_token_count": 100 + out}})

    meta = {"promptTokenCount": 100, "candidatesTokenCount": 7, "totalTokenCount": 107}
    data = b"\n".join(orjson.dumps(r) for r in (
        line("u1", "user", message={"role": "user", "parts": [{"text": "hi"}]}),
        telemetry("t1", "r-main", "s-1########1", 7),
        telemetry("t2", "r-helper", "s-1#managed-auto-memory-extractor-1a2b#0", 7),  # same figures
        line("a1", "assistant", model="m", message={"role": "model", "parts": [{"text": "Hi."}]}, usageMetadata=meta),
        telemetry("t3", "r-odd", "s-1#odd#0", 7),  # a response whose prompt id looks like a helper's
        line("a2", "assistant", model="m", message={"role": "model", "parts": [{"text": "Again."}]}, usageMetadata=meta),
    )) + b"\n"
    rows = parse_bytes(QWEN, data, source_for(Path("/h/.qwen/projects/-w/chats/s-1.jsonl"), "qwen"))
    latest = {r.key: r for _, r in rows if isinstance(r, UsageRow)}
    assert {k.rsplit(":", 1)[1]: r.message_id for k, r in latest.items()} == {
        "r-main": "a1", "r-helper": "t2", "r-odd": "a2"}
