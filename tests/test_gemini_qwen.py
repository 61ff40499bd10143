"""Gemini CLI and Qwen Code adapters beyond the shared contract (tests/test_contract.py):
where they look, what they claim, and the operation-log cases the recordings do not show
(a legacy single-document session, ``$rewindTo``, a rewrite that changes a body)."""

from __future__ import annotations

from pathlib import Path

import orjson

from archive.model import Reasoning, Text, ToolCall, ToolResult
from archive.vendors import VENDORS, get
from archive.vendors.base import DUPLICATE, LINES, METADATA, SNAPSHOT, WARNING, MessageRow, Report, UsageRow
from helpers import parse_bytes, source_for

FIXTURES = Path(__file__).parent / "fixtures"
GEMINI, QWEN = get("gemini"), get("qwen")
SHELL = FIXTURES / "gemini" / "gemini-0.61.0-shell.jsonl"


def test_roots_honour_the_vendor_variables(tmp_path: Path) -> None:
    home = Path("/home/me")
    assert GEMINI.default_roots({}, home) == [home / ".gemini" / "tmp"]
    assert GEMINI.default_roots({"GEMINI_CLI_HOME": "/srv/g"}, home) == [Path("/srv/g/.gemini/tmp")]
    assert QWEN.default_roots({}, home) == [home / ".qwen" / "projects"]
    assert QWEN.default_roots({"QWEN_HOME": "/srv/q"}, home) == [Path("/srv/q/projects")]
    assert QWEN.default_roots({"QWEN_HOME": "/srv/q", "QWEN_RUNTIME_DIR": "/run/q"}, home) == [Path("/run/q/projects")]


def test_classify() -> None:
    g = Path("/h/.gemini/tmp/app")
    assert GEMINI.classify(g / "chats" / "session-2026-11-30T16-32-57053931.jsonl") == LINES
    assert GEMINI.classify(g / "chats" / "session-2025-06-01T10-00-1a2b3c4d.json") == SNAPSHOT
    assert GEMINI.classify(g / "chats" / "57053931-af8b" / "0f1e2d3c.jsonl") == LINES  # a subagent
    assert GEMINI.classify(g / "logs.json") is None
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
    return [r.message for r in rows if isinstance(r, MessageRow)]


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

    # the log splits a response that was rewritten (text, then its calls); the document
    # holds the final version in one piece: the same blocks either way
    flat = sorted(b.to_dict().__repr__() for m in legacy for b in m.content)
    assert flat == sorted(b.to_dict().__repr__() for m in log for b in m.content)
    assert len(view(legacy)) <= len(view(log))


def _gemini_lines(*records: dict) -> bytes:
    head = {"sessionId": "s-1", "projectHash": "h", "startTime": "2026-01-01T00:00:00Z", "lastUpdated": "x", "kind": "main"}
    return b"\n".join(orjson.dumps(r) for r in (head, *records)) + b"\n"


def test_rewrite_adds_calls_once_and_never_replaces_a_body() -> None:
    msg = {"id": "m1", "timestamp": "2026-01-01T00:00:01Z", "type": "gemini", "content": "Looking.", "thoughts": [],
           "tokens": {"input": 100, "output": 10, "cached": 40, "thoughts": 0, "tool": 0, "total": 110}, "model": "gemini-2.5-pro"}
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "success",
            "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command", "response": {"output": "a b"}}}]}
    rows = _rows(GEMINI, _gemini_lines(
        {"id": "u1", "timestamp": "2026-01-01T00:00:00Z", "type": "user", "content": [{"text": "go"}]},
        msg,
        {**msg, "toolCalls": [call]},
        {**msg, "toolCalls": [call]},  # written again: nothing new
        {**msg, "content": "Looking again.", "toolCalls": [call]},  # a changed body: kept as first seen
        {"$rewindTo": "m1"},
    ))
    msgs = _messages(rows)
    assert [(m.role, [type(b) for b in m.content]) for m in msgs] == [
        ("user", [Text]), ("assistant", [Text]), ("assistant", [ToolCall]), ("tool", [ToolResult])]
    assert msgs[1].content[0].text == "Looking."
    usage = [r for r in rows if isinstance(r, UsageRow)]
    assert {r.key for r in usage} == {"gemini:s-1:m1"} and usage[-1].message_id == msgs[1].id
    assert (usage[0].usage.input_tokens, usage[0].usage.cache_read_tokens) == (60, 40)
    reports = [(r.kind, r.reason) for r in rows if isinstance(r, Report)]
    assert (WARNING, "message rewritten with other content; first version kept") in reports
    assert (METADATA, "$rewindTo") in reports
    assert sum(k == DUPLICATE for k, _ in reports) >= 1


def test_gemini_thought_chunks_join_and_subjects_split() -> None:
    rows = _rows(GEMINI, _gemini_lines({
        "id": "m1", "type": "gemini", "content": "x", "thoughts": [
            {"subject": "Plan", "description": "First ", "timestamp": "t"}, {"subject": "", "description": "part.", "timestamp": "t"},
            {"subject": "Check", "description": "Second.", "timestamp": "t"}]}))
    (msg,) = _messages(rows)
    assert [b.text for b in msg.content if isinstance(b, Reasoning)] == ["First part.", "Second."]


def test_qwen_helper_usage_counts_and_its_text_stays_out() -> None:
    rows = _rows(QWEN, (FIXTURES / "qwen" / "qwen-0.24.4-text.jsonl").read_bytes())
    helpers = [m for m in _messages(rows) if (m.extra or {}).get("helper")]
    assert helpers and all(m.role == "system" and m.content == () and m.extra["injected"] for m in helpers)
    keys = {}
    for r in rows:
        if isinstance(r, UsageRow):
            keys[r.key] = r
    # one row per API response (main ones attached to their assistant message)
    assert sum(1 for r in keys.values() if r.message_id in {m.id for m in helpers}) == len(helpers)
    text = b"".join(orjson.dumps(m.to_dict()) for m in _messages(rows))
    assert b"Done." not in text  # the helper's reply text
