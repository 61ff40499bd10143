"""Format drift (issue 18): the newest clients' records, the rule for what may be left out
of the projection, deduplication by content, coverage per client version, labels and the
single WebSearch.

The rule under test: only bookkeeping the model never saw may be ``skipped``; a line
whose content the model read becomes a message (marked ``injected`` where the harness
wrote it). Inputs are the real recordings (tests/fixtures/recorded/), the public
fixtures, and lines built from the format notes (tests/fixtures/drift/, SOURCES.md).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.emit import emit_thread
from archive.ingest import ingest_paths
from archive.model import Message, Text, ToolResult
from archive.store import SqliteMessageStore
from archive.vendors.base import DUPLICATE, METADATA, SKIPPED, EmitOptions, MessageRow, Report, Row
from archive.vendors.claude_code import ADAPTER as CLAUDE
from archive.vendors.codex import ADAPTER as CODEX
from helpers import parse_bytes, source_for

HERE = Path(__file__).parent
RECORDED = HERE / "fixtures" / "recorded"
NEW = RECORDED / "claude-code-2.1.332"
OLD = RECORDED / "claude-code-2.1.197"
DRIFT = HERE / "fixtures" / "drift"


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.jsonl"))


def _parse(adapter: Any, path: Path) -> list[tuple[int, Row]]:
    return parse_bytes(adapter, path.read_bytes(), source_for(path, adapter.name))


def _lines(path: Path) -> dict[int, Any]:
    out, off = {}, 0
    for raw in path.read_bytes().split(b"\n"):
        if raw.strip():
            out[off] = orjson.loads(raw)
        off += len(raw) + 1
    return out


def _by_offset(rows: list[tuple[int, Row]]) -> dict[int, list[Row]]:
    out: dict[int, list[Row]] = {}
    for off, r in rows:
        out.setdefault(off, []).append(r)
    return out


def _ingest(tmp_path: Path, *paths: Path) -> Path:
    db_path = tmp_path / "a.db"
    db = open_db(db_path)
    ingest_paths(db, list(paths))
    db.conn.close()
    return db_path


# ---------------------------------------------------------------- the newest Claude Code


def test_new_recordings_have_no_unknown_lines(tmp_path: Path) -> None:
    db = open_db(_ingest(tmp_path, NEW))
    kinds = dict(db.execute("SELECT kind, count(*) FROM reports GROUP BY kind").fetchall())
    assert kinds.get("unknown", 0) == 0 and kinds.get("unexplained", 0) == 0, kinds
    # the five request records of 2.1.332 are all there, and classified
    reasons = {r: k for k, r in db.execute("SELECT DISTINCT kind, reason FROM reports").fetchall()}
    assert {r: reasons.get(r) for r in ("api-request", "api-request-shape", "api-request-blob", "atis-latch", "tools-used")} == {
        "api-request": METADATA, "api-request-shape": METADATA, "api-request-blob": DUPLICATE,
        "atis-latch": SKIPPED, "tools-used": SKIPPED}


@pytest.mark.parametrize("folder", [NEW, OLD], ids=["2.1.332", "2.1.197"])
def test_claude_rule_per_record_type(folder: Path) -> None:
    """Per record type of the recordings: what the model read is a message, injected where
    the harness wrote it; what is skipped carries nothing the model read."""
    seen: Counter[str] = Counter()
    for path in _files(folder):
        lines = _lines(path)
        rows = _by_offset(_parse(CLAUDE, path))
        for off, d in lines.items():
            out = rows.get(off, [])
            msgs = [r.message for r in out if isinstance(r, MessageRow)]
            kinds = {r.kind for r in out if isinstance(r, Report)}
            t = d.get("type")
            if t == "attachment":
                a = d["attachment"]
                key = f"attachment/{a['type']}" + ("/rendered" if d.get("rendered") else "")
                model_read = bool(d.get("rendered")) or a["type"] in ("queued_command", "hook_additional_context")
                if model_read:
                    assert len(msgs) == 1 and msgs[0].role == "user", (path.name, key)
                    assert (msgs[0].extra or {}).get("injected") is True, key
                    if d.get("rendered"):
                        assert [b.text for b in msgs[0].content] == [r["content"] for r in d["rendered"]]
                else:
                    assert not msgs and kinds == {SKIPPED}, (path.name, key, kinds)
            elif t in ("api-request", "api-request-shape"):
                key = t
                assert not msgs and kinds == {METADATA}
            elif t == "api-request-blob":
                key = t
                assert not msgs and kinds == {DUPLICATE}
            elif t in ("atis-latch", "tools-used", "queue-operation", "last-prompt", "cost-state", "mode", "file-history-snapshot"):
                key = t
                assert not msgs and SKIPPED in kinds, (t, kinds)
            elif t in ("user", "assistant"):
                key = t
                assert len(msgs) == 1
                text = d["message"]["content"] if isinstance(d["message"]["content"], str) else ""
                if text.startswith(("<task-notification>", "<system-reminder>")) or d.get("isMeta"):
                    assert (msgs[0].extra or {}).get("injected") is True, text[:80]
            else:
                key = t
            seen[key] += 1
    # the recordings hold the kinds this test is about
    if folder is NEW:
        for key in ("api-request", "api-request-shape", "api-request-blob", "atis-latch", "tools-used",
                    "attachment/queued_command/rendered", "attachment/date/rendered", "attachment/prompt_snapshot"):
            assert seen[key], (key, seen)
    else:
        assert seen["attachment/queued_command"], seen


def _thread_messages(db_path: Path, pred: Any) -> tuple[Any, list[Message]]:
    store = SqliteMessageStore(db_path)
    for t in store.list_threads():
        ms = store.get_messages(t.id)
        if pred(t, ms):
            return t, ms
    raise AssertionError("no such thread")


def _texts(m: Message) -> str:
    return "\n".join(b.text for b in m.content if isinstance(b, Text)) + "\n".join(
        str(b.output) for b in m.content if isinstance(b, ToolResult))


@pytest.mark.parametrize("folder", [NEW, OLD], ids=["2.1.332", "2.1.197"])
def test_background_agent_result_is_in_the_parent_where_the_model_read_it(folder: Path, tmp_path: Path) -> None:
    db_path = _ingest(tmp_path, folder / "bgagent")
    thread, ms = _thread_messages(db_path, lambda t, ms: t.parent_thread_id is None)
    i = next(k for k, m in enumerate(ms) if "[bg-done] 4 5 6" in _texts(m))
    note = ms[i]
    assert note.role == "user" and (note.extra or {}).get("injected") is True
    assert (note.extra or {}).get("conversation") is True  # conversation, not context
    assert not any((m.extra or {}).get("conversation") for m in ms if m is not note)
    assert (note.extra or {}).get("attachment") == "queued_command"
    assert "<task-notification>" in _texts(note)
    # read after the Bash result that was running when the helper finished, before the answer
    assert any(isinstance(b, ToolResult) and "completed with no output" in str(b.output) for m in ms[:i] for b in m.content)
    assert ms[i + 1:] and all(m.role != "assistant" or "Done waiting." in _texts(m) for m in ms[i + 1:] if m.role == "assistant")
    # the child thread holds the helper's own work
    _, child = _thread_messages(db_path, lambda t, ms: t.parent_thread_id == thread.id)
    assert any("[bg-done] 4 5 6" in _texts(m) for m in child)
    # cross-vendor emits carry the notification
    db = open_db(db_path)
    for target in ("claude-code", "codex", "gemini", "qwen"):  # the last two leave other injected context out
        out = emit_thread(db, thread.id, target, exact=False, options=EmitOptions(cwd="/tmp/p"))
        files = b"".join(out.files.values())
        assert b"[bg-done] 4 5 6" in files and b"task-notification" in files, target


# ---------------------------------------------------------------- dedupe by content: Codex user_message


def _codex(lines: list[dict[str, Any]], resume_every: int | None = None) -> list[tuple[int, Row]]:
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    return parse_bytes(CODEX, data, source_for(Path("/h/.codex/sessions/rollout-x.jsonl"), "codex"), resume_every=resume_every)


META = {"timestamp": "2026-01-04T11:59:02.952Z", "type": "session_meta",
        "payload": {"id": "019b88e0-0b0f-7bb0-a9ba-5cc2d8dffde9", "timestamp": "2026-01-04T11:59:02.927Z", "cwd": "/p",
                    "cli_version": "0.77.0"}}


def _ev(text: str, ts: str = "2026-01-04T12:00:00.000Z") -> dict[str, Any]:
    return {"timestamp": ts, "type": "event_msg", "payload": {"type": "user_message", "message": text, "images": []}}


def _item(role: str, text: str, ts: str = "2026-01-04T12:00:00.100Z") -> dict[str, Any]:
    kind = "input_text" if role == "user" else "output_text"
    return {"timestamp": ts, "type": "response_item", "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}}


def _user_texts(rows: list[tuple[int, Row]]) -> list[str]:
    return [b.text for _, r in rows if isinstance(r, MessageRow) and r.message.role == "user" for b in r.message.content if isinstance(b, Text)]


@pytest.mark.parametrize("order", ["item-first", "event-first"])
def test_codex_user_message_with_its_twin_is_a_duplicate(order: str) -> None:
    pair = [_item("user", "fix the bug"), _ev("fix the bug")] if order == "item-first" else [_ev("fix the bug"), _item("user", "fix the bug")]
    for every in (None, 1):
        rows = _codex([META, *pair, _item("assistant", "done")], resume_every=every)
        assert _user_texts(rows) == ["fix the bug"]
        assert any(isinstance(r, Report) and r.kind == DUPLICATE and r.reason == "user_message" for _, r in rows)


def test_codex_orphan_user_message_is_projected() -> None:
    """A review subagent's prompt (0.77) exists only as the event: it becomes the message."""
    review = {"timestamp": "2026-01-04T12:05:09.476Z", "type": "event_msg",
              "payload": {"type": "entered_review_mode", "target": {"type": "baseBranch", "branch": "main"}}}
    for every in (None, 1):
        rows = _codex([META, _ev("ls"), review], resume_every=every)
        assert _user_texts(rows) == ["ls"]
        (msg,) = [r.message for _, r in rows if isinstance(r, MessageRow)]
        assert msg.ts == "2026-01-04T12:00:00.000Z" and (msg.extra or {}).get("fromEvent") == "user_message"
        assert not any(isinstance(r, Report) and r.kind == DUPLICATE for _, r in rows)
    # the model's answer settles it too, and the answer's turn is the prompt's
    rows = _codex([META, _ev("hello"), _item("assistant", "hi")])
    user, answer = [r.message for _, r in rows if isinstance(r, MessageRow)]
    assert user.role == "user" and answer.turn_id == user.turn_id


def test_codex_orphan_user_message_real_file(tmp_path: Path) -> None:
    """lanegrid/agtrace rollout-parent-019b88e0 (0.77.0): was 0 messages and an empty emit."""
    src = HERE / "fixtures" / "codex" / "lanegrid__agtrace__rollout-parent-019b88e0.jsonl"
    db_path = _ingest(tmp_path, src)
    _, ms = _thread_messages(db_path, lambda t, ms: True)
    assert [_texts(m) for m in ms] == ["ls"]
    out = emit_thread(open_db(db_path), ms[0].thread_id, "codex", exact=False)
    (data,) = out.files.values()
    assert b'"ls"' in data


def test_codex_held_prompt_survives_a_cut_and_a_growing_file() -> None:
    lines = [META, _ev("ls")]
    first = _codex(lines)
    assert _user_texts(first) == []  # held: the file may still get its item
    grown = _codex(lines + [_item("assistant", "a.txt")], resume_every=1)
    assert _user_texts(grown) == ["ls"]


# ---------------------------------------------------------------- dedupe by content: Claude agent_progress


def test_orphan_agent_progress_populates_the_child_thread(tmp_path: Path) -> None:
    """2.1.x with the subagent's own file gone: agent_progress lines are the only copy."""
    parent = DRIFT / "claude-code-agent-progress" / "projects" / "-p" / "0f1e2d3c-0000-4000-8000-00000000aaaa.jsonl"
    db_path = _ingest(tmp_path / "a", parent)
    thread, _ = _thread_messages(db_path, lambda t, ms: t.parent_thread_id is None)
    child, ms = _thread_messages(db_path, lambda t, ms: t.parent_thread_id == thread.id)
    assert child.agent_id == "a1b2c3d" and [m.role for m in ms] == ["user", "assistant", "user", "assistant"]
    assert "SUBTASK: count" in _texts(ms[0]) and "3 files" in _texts(ms[3])
    db = open_db(db_path)
    assert not db.execute("SELECT count(*) FROM reports WHERE kind = 'duplicate' AND reason = 'progress'").fetchone()[0]


def test_agent_progress_with_its_twin_is_stored_once(tmp_path: Path) -> None:
    folder = DRIFT / "claude-code-agent-progress"
    alone = open_db(_ingest(tmp_path / "a", folder / "projects" / "-p" / "0f1e2d3c-0000-4000-8000-00000000aaaa.jsonl"))
    both = open_db(_ingest(tmp_path / "b", folder))
    q = "SELECT id, thread_id FROM messages ORDER BY id"
    assert alone.execute(q).fetchall() == both.execute(q).fetchall()  # the subagent file adds no message
    # every subagent line and its agent_progress copy are occurrences of one message
    twice = both.execute("SELECT count(*) FROM (SELECT message_id FROM message_occurrences GROUP BY message_id HAVING count(*) = 2)").fetchone()[0]
    assert twice == 4
    usage = both.execute("SELECT count(*), sum(output_tokens) FROM usage").fetchone()
    assert usage == alone.execute("SELECT count(*), sum(output_tokens) FROM usage").fetchone()


# ---------------------------------------------------------------- coverage per vendor version


def _future_file(tmp_path: Path) -> Path:
    """A 2.1.332 recording plus two lines of a record type no adapter knows."""
    src = next((NEW / "text").rglob("*.jsonl"))
    dest = tmp_path / "home" / "projects" / src.parent.name / src.name
    dest.parent.mkdir(parents=True)
    sid = dest.stem
    extra = [{"type": "quantum-ledger", "sessionId": sid, "entries": [1, 2]}, {"type": "quantum-ledger", "sessionId": sid}]
    dest.write_bytes(src.read_bytes() + b"".join(orjson.dumps(x) + b"\n" for x in extra))
    return dest


def test_future_record_type_warns_and_shows_in_coverage(tmp_path: Path) -> None:
    path = _future_file(tmp_path)
    db = str(tmp_path / "a.db")
    r = CliRunner().invoke(cli, ["--db", db, "ingest", str(path.parent.parent)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    warning = [line for line in r.stderr.splitlines() if "warning:" in line and "unknown record types" in line]
    assert warning and "claude-code 2.1.332" in warning[0] and "quantum-ledger (2)" in warning[0], r.stderr
    r = CliRunner().invoke(cli, ["--db", db, "status", "--json"], catch_exceptions=False)
    cov = {(c["provider"], c["client_version"]): c for c in json.loads(r.stdout)["coverage"]}
    c = cov[("claude-code", "2.1.332")]
    assert c["kinds"]["unknown"]["lines"] == 2 and c["lines"] == sum(k["lines"] for k in c["kinds"].values())
    assert abs(sum(k["share"] for k in c["kinds"].values()) - 100) < 0.1
    assert c["kinds"]["message"]["lines"] > 0
    r = CliRunner().invoke(cli, ["--db", db, "status"], catch_exceptions=False)
    assert "claude-code 2.1.332" in r.stdout and "unknown" in r.stdout
    # a second run over the same bytes meets nothing new: no warning
    r = CliRunner().invoke(cli, ["--db", db, "ingest", str(path.parent.parent)], catch_exceptions=False)
    assert "unknown record types" not in r.stderr


def test_known_source_without_messages_warns(tmp_path: Path) -> None:
    path = tmp_path / "home" / "projects" / "-p" / "0f000000-0000-4000-8000-0000000000ff.jsonl"
    path.parent.mkdir(parents=True)
    lines = [{"type": "queue-operation", "operation": "enqueue", "timestamp": "2026-01-01T00:00:00Z", "sessionId": path.stem},
             {"type": "quantum-ledger", "sessionId": path.stem, "version": "9.9.9"}]
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    r = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "ingest", str(path)], catch_exceptions=False)
    assert "yields no messages from 2 line(s)" in r.stderr and "quantum-ledger" in r.stderr, r.stderr


def test_coverage_view_in_datasette(tmp_path: Path) -> None:
    import asyncio

    from archive.serve import make_datasette

    _future_file(tmp_path)
    db_path = _ingest(tmp_path, tmp_path / "home")
    ds = make_datasette(db_path)

    async def get() -> Any:
        return await ds.client.get(f"/{db_path.stem}/coverage.json?_shape=objects&kind=unknown")

    r = asyncio.run(get())
    assert r.status_code == 200, r.text[:300]
    rows = r.json()["rows"]
    assert [(r["provider"], r["client_version"], r["lines"]) for r in rows] == [("claude-code", "2.1.332", 2)]


# ---------------------------------------------------------------- labels, WebSearch, file changes


@pytest.mark.parametrize("folder", [NEW, OLD], ids=["2.1.332", "2.1.197"])
def test_slash_command_thread_label(folder: Path, tmp_path: Path) -> None:
    db = str(_ingest(tmp_path, folder / "slash"))
    r = CliRunner().invoke(cli, ["--db", db, "threads", "--json"], catch_exceptions=False)
    (t,) = json.loads(r.stdout)
    label = t.get("label") or t.get("title")
    assert label == "/greet Ada", t
    assert "<command" not in r.stdout


@pytest.mark.parametrize("folder", [NEW, OLD], ids=["2.1.332", "2.1.197"])
def test_slash_command_prompt_is_conversation(folder: Path, tmp_path: Path) -> None:
    """The prompt a slash command expanded to (isMeta, right after the command line) is
    marked conversation, so emitters that leave injected context out still write it."""
    db_path = _ingest(tmp_path, folder / "slash")
    thread, ms = _thread_messages(db_path, lambda t, ms: t.parent_thread_id is None)
    marked = [m for m in ms if (m.extra or {}).get("conversation")]
    assert [_texts(m) for m in marked] == ["[greet] Greet the user named Ada.\n"]
    assert (marked[0].extra or {}).get("injected") is True
    db = open_db(db_path)
    for target in ("gemini", "qwen"):
        out = emit_thread(db, thread.id, target, exact=False, options=EmitOptions(cwd="/tmp/p"))
        assert b"Greet the user named Ada" in b"".join(out.files.values()), target


WEBSEARCH = [
    {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "0f000000-0000-4000-8000-0000000000aa", "timestamp": "2026-01-01T00:00:00Z",
     "cwd": "/p", "version": "2.1.332", "message": {"role": "user", "content": "search the web for sesh-archive"}},
    {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "0f000000-0000-4000-8000-0000000000aa", "timestamp": "2026-01-01T00:00:01Z",
     "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5", "content": [
         {"type": "tool_use", "id": "toolu_ws", "name": "WebSearch", "input": {"query": "sesh-archive"}}]}},
    {"type": "user", "uuid": "u2", "parentUuid": "a1", "sessionId": "0f000000-0000-4000-8000-0000000000aa", "timestamp": "2026-01-01T00:00:02Z",
     "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_ws", "content": "Web search results for query: \"sesh-archive\"\n- a result"}]},
     "toolUseResult": {"query": "sesh-archive", "results": [{"tool_use_id": "srvtoolu_1", "content": [{"title": "a result", "url": "https://example.com"}]}], "durationSeconds": 1.2}},
    {"type": "assistant", "uuid": "a2", "parentUuid": "u2", "sessionId": "0f000000-0000-4000-8000-0000000000aa", "timestamp": "2026-01-01T00:00:03Z",
     "message": {"id": "msg_2", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Found it."}]}},
]


def test_claude_websearch_is_written_once_into_codex(tmp_path: Path) -> None:
    path = tmp_path / "projects" / "-p" / "0f000000-0000-4000-8000-0000000000aa.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in WEBSEARCH))
    db = open_db(_ingest(tmp_path, path))
    assert db.execute("SELECT count(*) FROM blocks WHERE type = 'web_search'").fetchone()[0] == 1
    out = emit_thread(db, "0f000000-0000-4000-8000-0000000000aa", "codex", exact=False)
    items = [json.loads(line)["payload"] for data in out.files.values() for line in data.splitlines()]
    types = Counter(p.get("type") for p in items)
    assert types["web_search_call"] == 0 and types["function_call"] == 1 and types["function_call_output"] == 1, types
    assert out.counts.get("web_search: carried by its tool call") == 1


@pytest.mark.parametrize("folder", [NEW, OLD], ids=["2.1.332", "2.1.197"])
def test_file_change_report_names_the_emitted_call(folder: Path, tmp_path: Path) -> None:
    db = open_db(_ingest(tmp_path, folder / "files"))
    (tid,) = [r[0] for r in db.execute("SELECT id FROM threads").fetchall()]
    out = emit_thread(db, tid, "codex", exact=False)
    assert "file_change: no tool call to carry it" not in out.counts, out.counts
    assert out.counts.get("file_change: carried by its tool call") == 2, out.counts
    data = b"".join(out.files.values())
    assert data.count(b'"name":"Edit"') + data.count(b'"name":"Write"') == 2


def test_claude_rule_for_older_attachment_shapes() -> None:
    """Shapes from the format notes that the recordings lack: a queued prompt typed while
    the agent was busy (the user's, a list of blocks or a string), a task notification
    without commandMode, hook_additional_context; and bookkeeping attachments stay skipped."""
    sid = "0f000000-0000-4000-8000-000000000001"

    def att(uid: str, a: dict[str, Any]) -> dict[str, Any]:
        return {"type": "attachment", "uuid": uid, "parentUuid": None, "sessionId": sid, "timestamp": "2026-01-01T00:00:00Z", "attachment": a}

    lines = [att("q1", {"type": "queued_command", "prompt": "also run the tests"}),
             att("q2", {"type": "queued_command", "prompt": [{"type": "text", "text": "<task-notification>done</task-notification>"}]}),
             att("q3", {"type": "hook_additional_context", "content": ["lint is clean"]}),
             att("q4", {"type": "hook_success", "hookName": "SessionStart", "content": ""}),
             att("q5", {"type": "prompt_snapshot", "systemPrompt": ["..."]})]
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    rows = parse_bytes(CLAUDE, data, source_for(Path(f"/h/.claude/projects/-p/{sid}.jsonl"), "claude-code"))
    msgs = {r.message.id: r.message for _, r in rows if isinstance(r, MessageRow)}
    assert [b.text for b in msgs["q1"].content] == ["also run the tests"] and not (msgs["q1"].extra or {}).get("injected")
    assert (msgs["q2"].extra or {}).get("injected") and (msgs["q3"].extra or {}).get("injected")
    assert (msgs["q2"].extra or {}).get("conversation") and not (msgs["q3"].extra or {}).get("conversation")
    assert set(msgs) == {"q1", "q2", "q3"}
    assert Counter(r.kind for _, r in rows if isinstance(r, Report)) == {SKIPPED: 2}


CODEX_FILES = sorted((HERE / "fixtures" / "codex").glob("*.jsonl")) + sorted((HERE / "fixtures" / "codex" / "recorded").glob("*.jsonl")) \
    + sorted((RECORDED / "codex-0.171.0").rglob("*.jsonl"))


@pytest.mark.parametrize("path", CODEX_FILES, ids=lambda p: p.name[:60])
def test_codex_rule_per_record_type(path: Path) -> None:
    """Skipped Codex lines are token counters and G1 state records only; every user_message
    event's text is in exactly one user message (from its item, or from the event)."""
    lines = _lines(path)
    rows = _parse(CODEX, path)
    by_off = _by_offset(rows)
    users = Counter(" ".join(b.text.split()) for _, r in rows if isinstance(r, MessageRow) and r.message.role == "user"
                    for b in r.message.content if isinstance(b, Text))
    for off, d in lines.items():
        for r in by_off.get(off, []):
            if isinstance(r, Report) and r.kind == SKIPPED:
                p = d.get("payload") if isinstance(d.get("payload"), dict) else {}
                assert p.get("type") == "token_count" or "record_type" in d, (off, r)
        p = d.get("payload") if isinstance(d.get("payload"), dict) else {}
        if d.get("type") == "event_msg" and p.get("type") == "user_message" and str(p.get("message") or "").strip():
            text = " ".join(p["message"].split())
            if not text.startswith("[trimmed"):
                assert users[text] == 1, (off, text[:80])
