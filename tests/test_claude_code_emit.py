"""Claude Code emit: canonical threads (from any vendor) -> a Claude Code 2.1.x session.

Round trip: parse a fixture, emit it, parse the emitted files: the same roles, texts,
signed reasoning, tool calls and results come back in order. Cross-vendor input: every
dropped or transformed field is counted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from archive.model import (
    Attachment,
    FileChange,
    Message,
    Provenance,
    Reasoning,
    Text,
    Thread,
    ToolCall,
    ToolResult,
    Unknown,
    WebSearch,
)
from archive.vendors.base import MessageRow, Row, ThreadFact
from archive.vendors.base import EmitError, EmitOptions
from archive.vendors.claude_code import ADAPTER
from helpers import parse_bytes, source_for

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"
NAMES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.jsonl"))
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
ENVELOPE = ("parentUuid", "isSidechain", "type", "uuid", "timestamp", "userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch")


def threads_of(rows: list[tuple[int, Row]]) -> dict[str, tuple[Thread, list[Message]]]:
    """Fold facts and messages per thread, as the store would give them back."""
    fields: dict[str, dict[str, Any]] = {}
    msgs: dict[str, list[Message]] = {}
    for _, r in rows:
        if isinstance(r, ThreadFact):
            f = fields.setdefault(r.thread_id, {})
            for k, v in r.fields.items():
                if k == "metadata":
                    f.setdefault("metadata", {}).update(v)
                else:
                    f[k] = v
        elif isinstance(r, MessageRow):
            msgs.setdefault(r.message.thread_id, []).append(r.message)
    out = {}
    for tid, ms in msgs.items():
        f = {"createdAt": ms[0].ts, **fields.get(tid, {}), "id": tid}
        out[tid] = (Thread.from_dict(f), ms)
    return out


def canonical(name: str) -> tuple[Thread, list[Message], list[tuple[Thread, list[Message]]]]:
    path = FIXTURES / name
    threads = threads_of(parse_bytes(ADAPTER, path.read_bytes(), source_for(path, "claude-code")))
    (root,) = [v for v in threads.values() if v[0].parent_thread_id is None or v[0].parent_thread_id not in threads]
    children = [v for v in threads.values() if v is not root]
    return root[0], root[1], children


def reparse(files: dict[str, bytes]) -> dict[str, tuple[Thread, list[Message]]]:
    rows: list[tuple[int, Row]] = []
    for rel, data in sorted(files.items()):
        path = Path("/h/.claude") / rel
        kind = ADAPTER.classify(path)
        assert kind is not None, rel
        rows += parse_bytes(ADAPTER, data, source_for(path, "claude-code", kind=kind, source_id=rel))
    return threads_of(rows)


def flat(msgs: list[Message]) -> list[tuple[Any, ...]]:
    """What must survive: roles, texts, signed reasoning, tool calls, results, file changes."""
    out: list[tuple[Any, ...]] = []
    for m in msgs:
        for b in m.content:
            if isinstance(b, Text):
                out.append((m.role, "text", b.text))
            elif isinstance(b, Reasoning):
                out.append((m.role, "reasoning", b.text, (b.extra or {}).get("signature")))
            elif isinstance(b, ToolCall):
                out.append((m.role, "tool_call", b.call_id, b.name, b.input))
            elif isinstance(b, ToolResult):
                out.append((m.role, "tool_result", b.call_id, b.output, bool(b.is_error)))
            elif isinstance(b, FileChange):
                out.append((m.role, "file_change", b.call_id, b.path, b.patch))
            elif isinstance(b, WebSearch):
                out.append((m.role, "web_search", b.call_id, b.query))
            else:
                out.append((m.role, type(b).__name__))
    return out


# name -> counts an emit of the parsed fixture reports
EMIT_COUNTS: dict[str, dict[str, int]] = {
    "d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": {},
    "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl": {"file_change: carried by its Edit/Write tool call": 1},
    "marot__spotter__agent-aac57f5.jsonl": {},
    "marot__spotter__agent-acompact-e1f845.jsonl": {},
    "marot__spotter__short.jsonl": {"system message: written as system/informational": 2},
    "marot__spotter__tool_heavy.jsonl": {"system message: written as system/informational": 2, "web_search: carried by its tool call": 1},
    "oneryalcin__fasthooks__sample_agent_sidechain.jsonl": {},
    "oneryalcin__fasthooks__sample_main_transcript.jsonl": {"system message: written as system/informational": 1, "file_change: carried by its Edit/Write tool call": 3},
    "recorded/cc-2.1.197-bash-resume.jsonl": {},
    **{n: {} for n in NAMES if n.startswith("resume-1.0/")},  # Claude Code 1.0.x --resume (issue 33)
    **{n: {} for n in NAMES if n.startswith("warmup-2.0/")},  # Claude Code 2.0.30 warmup sidechains (issue 33)
}


@pytest.mark.parametrize("name", NAMES)
def test_round_trip(name: str) -> None:
    thread, msgs, children = canonical(name)
    result = ADAPTER.emit(thread, msgs, children)
    assert result.counts == EMIT_COUNTS[name]
    back = reparse(result.files)
    sid = result.thread_id
    assert sid is not None and UUID.match(sid)
    main = back[sid]
    assert flat(main[1]) == flat(msgs)
    assert main[0].title == thread.title
    assert (main[0].metadata or {}).get("cwd") == (thread.metadata or {}).get("cwd")
    # children come back as subagent threads of the new session, linked to the same tool call
    got = sorted(flat(ms) for t, ms in back.values() if t.id != sid)
    assert got == sorted(flat(ms) for _, ms in children)
    for t, ms in back.values():
        if t.id == sid:
            continue
        assert t.parent_thread_id == sid
        if any(c.origin_message_id for c, _ in children):
            origin = next(m for m in main[1] if m.id == t.origin_message_id)
            assert any(isinstance(b, ToolCall) and b.name in ("Task", "Agent") for b in origin.content)
    assert ADAPTER.emit(thread, msgs, children).files == result.files  # deterministic


@pytest.mark.parametrize("name", NAMES)
def test_emitted_lines_are_valid_sessions(name: str) -> None:
    thread, msgs, children = canonical(name)
    result = ADAPTER.emit(thread, msgs, children, EmitOptions(cwd="/home/dev/other app"))
    sid = result.thread_id
    assert result.resume_hint == f"cd '/home/dev/other app' && claude --resume {sid}"
    main_rel = f"projects/-home-dev-other-app/{sid}.jsonl"
    assert main_rel in result.files
    for rel, data in result.files.items():
        assert rel.startswith(f"projects/-home-dev-other-app/{sid}")
        if rel.endswith(".meta.json"):
            meta = orjson.loads(data)
            assert set(meta) <= {"agentType", "description", "toolUseId"}
            continue
        assert data.endswith(b"\n") and b"\n\n" not in data
        seen: set[str] = set()
        uses: dict[str, int] = {}
        results: set[str] = set()
        for i, line in enumerate(data.splitlines()):
            d = orjson.loads(line)
            if d["type"] == "custom-title":
                assert d == {"type": "custom-title", "customTitle": thread.title, "sessionId": sid}
                continue
            assert all(k in d for k in ENVELOPE), d
            assert d["sessionId"] == sid and d["cwd"] == "/home/dev/other app" and d["userType"] == "external"
            assert UUID.match(d["uuid"]) and d["uuid"] not in seen
            assert d["parentUuid"] is None if not seen else d["parentUuid"] in seen
            seen.add(d["uuid"])
            if rel != main_rel:
                assert d["isSidechain"] is True and d["agentId"] == Path(rel).stem[len("agent-") :]
            if d["type"] == "assistant":
                assert d["requestId"].startswith("req_") and d["message"]["id"].startswith("msg_")
                for b in d["message"]["content"]:
                    if b["type"] == "tool_use":
                        uses[b["id"]] = i
            if d["type"] == "user" and isinstance(d["message"]["content"], list):
                for b in d["message"]["content"]:
                    if b.get("type") == "tool_result":
                        assert b["tool_use_id"] in uses  # a result follows its call
                        results.add(b["tool_use_id"])
        assert set(uses) == results  # and every call has one


# ---------------------------------------------------------------- cross-vendor input

T = "2026-03-01T10:00:00.000Z"


def msg(i: int, role: str, *content: Any, **extra: Any) -> Message:
    prov = extra.pop("provider", "codex")
    return Message(id=f"m{i}", thread_id="codex-thread", role=role, ts=T, content=content, provenance=Provenance(provider=prov), extra=extra or None)


def codex_thread(**meta: Any) -> Thread:
    return Thread(id="codex-thread", created_at=T, title="Fix the parser", metadata={"cwd": "/work/app", "model": "gpt-5", **meta})


def emitted_lines(result: Any, rel_suffix: str = "") -> list[dict[str, Any]]:
    rel = next(r for r in result.files if r.endswith(rel_suffix or f"{result.thread_id}.jsonl"))
    return [orjson.loads(x) for x in result.files[rel].splitlines()]


def test_cross_vendor_transformations_are_counted() -> None:
    msgs = [
        msg(0, "system", Text(text="<environment_context>cwd</environment_context>")),
        msg(1, "assistant", Text(text="I will start.")),  # opens the conversation: a user line goes first
        msg(2, "user", Text(text="fix it"), Attachment(media_type="image/png", data="iVBORw0KGgo=")),
        msg(3, "assistant", Reasoning(text="thinking aloud"), Reasoning(redacted=True, extra={"encrypted_content": "gAAA"}),
            Reasoning(text="signed", extra={"signature": "EqQBCkYI"}), ToolCall(call_id="call_abc", name="shell", input={"cmd": ["ls"]}),
            ToolCall(call_id="call_patch", name="apply_patch", input="*** Begin Patch"), ToolCall(call_id="call_lost", name="mcp.server/tool", input={})),
        msg(4, "tool", ToolResult(call_id="call_abc", output={"stdout": "a\nb"}), FileChange(call_id="call_patch", path="a.py", patch="@@ -1 +1 @@\n-x\n+y")),
        msg(5, "tool", ToolResult(call_id="call_patch", output="Done", is_error=False)),
        msg(6, "assistant", Text(text=""), WebSearch(query="parser bugs"), Unknown(source_type="compaction", raw={"x": 1}), Attachment(uri="file:///tmp/x.png")),
        msg(7, "tool", ToolResult(call_id="call_abc", output="late duplicate"), ToolResult(call_id="call_nope", output="stray")),
        msg(8, "assistant", ToolCall(call_id="call_end", name="shell", input={"cmd": "true"})),
    ]
    result = ADAPTER.emit(codex_thread(), msgs)
    assert result.counts == {
        "system message: written as system/informational": 1,
        "message: user line inserted before a leading assistant message (the API wants a user turn first)": 1,
        "reasoning: unsigned, written as [reasoning] text": 1,
        "reasoning: redacted or encrypted, dropped": 1,
        "tool_call: id rewritten to toolu_ form": 4,
        "tool_call: non-object input wrapped as {input: ...}": 1,
        "tool_call: name rewritten to Claude's charset": 1,
        "tool_result: output serialised to text": 1,
        "file_change: no Claude edit call, written as text": 1,
        "tool_result: synthesized for a call without result": 2,  # call_lost, call_end
        "text: empty block dropped": 1,
        "web_search: written as text": 1,
        "unknown block dropped: compaction": 1,
        "attachment: not embeddable in a assistant line, written as text": 1,
        "tool_result: answered twice or late, written as text": 1,
        "tool_result: without a call, written as text": 1,
    }
    lines = emitted_lines(result)
    kinds = [(d["type"], _first(d)) for d in lines]
    assert kinds == [
        ("system", "<environment_context>cwd</environment_context>"),
        ("user", "text:[conversation imported by sesh-archive]"),
        ("assistant", "text:I will start."),
        ("user", "text:fix it"),
        ("assistant", "text:[reasoning] thinking aloud"),
        ("assistant", "thinking:signed"),
        ("assistant", "tool_use:shell"),
        ("assistant", "tool_use:apply_patch"),
        ("assistant", "tool_use:mcp_server_tool"),
        ("user", "tool_result:" + '{"stdout":"a\\nb"}'),
        ("user", "text:[file change] a.py\n@@ -1 +1 @@\n-x\n+y"),
        ("user", "tool_result:Done"),
        ("user", "tool_result:[no result recorded]"),
        ("assistant", "text:[web search] parser bugs"),
        ("assistant", "text:[attachment file:///tmp/x.png]"),
        ("user", "text:[tool result call_abc] late duplicate"),
        ("user", "text:[tool result call_nope] stray"),
        ("assistant", "tool_use:shell"),
        ("user", "tool_result:[no result recorded]"),
        ("custom-title", None),
    ]
    image = lines[3]["message"]["content"][1]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    ids = [b["id"] for d in lines if d["type"] == "assistant" for b in d["message"]["content"] if b["type"] == "tool_use"]
    assert all(re.match(r"^toolu_[0-9a-f]{24}$", i) for i in ids) and len(set(ids)) == 4
    # one assistant message per run of assistant lines: same message.id until a user line
    run_ids = [d["message"]["id"] for d in lines[4:9]]
    assert len(set(run_ids)) == 1 and run_ids[0] != lines[2]["message"]["id"]
    assert lines[9]["sourceToolAssistantUUID"] == lines[6]["uuid"]
    assert lines[2]["message"]["model"] == "gpt-5"
    # it parses back without reports of its own
    back = reparse(result.files)
    assert list(back) == [result.thread_id]


def _first(d: dict[str, Any]) -> str | None:
    if d["type"] == "system":
        return d["content"]
    if d["type"] not in ("user", "assistant"):
        return None
    c = d["message"]["content"]
    if isinstance(c, str):
        return "text:" + c
    b = c[0]
    value = {"text": b.get("text"), "thinking": b.get("thinking"), "tool_use": b.get("name"), "tool_result": b.get("content")}.get(b["type"])
    return f"{b['type']}:{value}"


def test_children_become_subagent_files_with_meta() -> None:
    parent = codex_thread()
    child = Thread(id="codex-thread/child-1", created_at=T, parent_thread_id="codex-thread", origin_message_id="m1", title="Explore the repo", metadata={"agentType": "Explore"})
    msgs = [
        msg(0, "user", Text(text="go")),
        msg(1, "assistant", ToolCall(call_id="call_spawn", name="spawn_agent", input={"message": "explore"})),
        msg(2, "tool", ToolResult(call_id="call_spawn", output="explored")),
    ]
    child_msgs = [
        Message(id="c0", thread_id=child.id, role="user", ts=T, content=(Text(text="explore"),)),
        Message(id="c1", thread_id=child.id, role="assistant", ts=T, content=(Text(text="found 3 files"),)),
    ]
    result = ADAPTER.emit(parent, msgs, [(child, child_msgs)])
    sid = result.thread_id
    (agent_rel,) = [r for r in result.files if r.endswith(".jsonl") and "/subagents/" in r]
    aid = Path(agent_rel).stem[len("agent-") :]
    assert agent_rel == f"projects/-work-app/{sid}/subagents/agent-{aid}.jsonl"
    lines = emitted_lines(result)
    spawn_id = lines[1]["message"]["content"][0]["id"]
    assert orjson.loads(result.files[f"projects/-work-app/{sid}/subagents/agent-{aid}.meta.json"]) == {"agentType": "Explore", "description": "Explore the repo", "toolUseId": spawn_id}
    assert lines[2]["toolUseResult"] == {"agentId": aid}
    back = reparse(result.files)
    t, ms = back[f"{sid}/agent-{aid}"]
    # the spawning message read back is the one it was written from (the line's emit mark)
    assert t.parent_thread_id == sid and t.origin_message_id == msgs[1].id and t.title == "Explore the repo"
    assert [b.text for m in ms for b in m.content] == ["explore", "found 3 files"]  # type: ignore[union-attr]


def test_claude_extras_kept_for_claude_sources() -> None:
    tur = {"type": "create", "filePath": "/work/app/a.py", "content": "x\n", "structuredPatch": []}
    msgs = [
        msg(0, "user", Text(text="write a.py"), provider="claude-code"),
        msg(1, "assistant", ToolCall(call_id="toolu_01W", name="Write", input={"file_path": "/work/app/a.py", "content": "x\n"}), provider="claude-code", model="claude-opus-4-6"),
        msg(2, "user", ToolResult(call_id="toolu_01W", output="File created"), FileChange(call_id="toolu_01W", path="/work/app/a.py", patch="+x"),
            provider="claude-code", toolUseResult=tur),
        msg(3, "user", Text(text="Caveat: local commands"), provider="claude-code", isMeta=True, injected=True),
    ]
    result = ADAPTER.emit(codex_thread(), msgs)
    assert result.counts == {"file_change: carried by its Edit/Write tool call": 1}
    lines = emitted_lines(result)
    assert lines[1]["message"]["content"][0]["id"] == "toolu_01W"  # already Claude's form
    assert lines[1]["message"]["model"] == "claude-opus-4-6"
    assert lines[2]["toolUseResult"] == tur
    assert lines[3]["isMeta"] is True
    back = reparse(result.files)[result.thread_id][1]
    assert [type(b).__name__ for b in back[2].content] == ["ToolResult", "FileChange"]


def test_emit_needs_a_cwd() -> None:
    bare = Thread(id="t", created_at=T)
    with pytest.raises(EmitError):
        ADAPTER.emit(bare, [])
    result = ADAPTER.emit(bare, [], options=EmitOptions(cwd="/x"))
    assert result.files == {f"projects/-x/{result.thread_id}.jsonl": b""}


# ---------------------------------------------------------------- images in tool results

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


def _results(lines: list[dict[str, Any]]) -> list[Any]:
    return [b["content"] for d in lines if d["type"] == "user" and isinstance(d["message"]["content"], list)
            for b in d["message"]["content"] if b["type"] == "tool_result"]


def test_codex_view_image_output_becomes_an_image_block() -> None:
    from archive.vendors import codex

    (path,) = (RECORDED / "codex-0.171.0" / "image").rglob("rollout-*.jsonl")
    rows = parse_bytes(codex.ADAPTER, path.read_bytes(), source_for(path, "codex"))
    msgs = [r.message for _, r in rows if isinstance(r, MessageRow)]
    (res,) = [b for m in msgs for b in m.content if isinstance(b, ToolResult) and isinstance(b.output, list)]
    assert res.output[0]["type"] == "input_image"  # how the Codex parser keeps view_image output
    result = ADAPTER.emit(codex_thread(), msgs)
    assert result.counts["tool_result: input_image written as an image block"] == 1
    assert "tool_result: list item serialised to text" not in result.counts
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": DOT}}
    assert [image] in _results(emitted_lines(result))
    # Claude's parser reads it back as its own image tool result: placeholder + Attachment
    ((_, back),) = reparse(result.files).values()
    (m,) = [m for m in back if any(isinstance(b, Attachment) for b in m.content)]
    res2, att = m.content
    assert isinstance(res2, ToolResult) and res2.output == [{"type": "image", "attachment": 0}]
    assert isinstance(att, Attachment) and (att.media_type, att.data, att.extra["callId"]) == ("image/png", DOT, res2.call_id)  # type: ignore[index]


def test_tool_result_input_image_shapes() -> None:
    output = [
        {"type": "input_text", "text": "here:"},
        {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/", "detail": "original"},
        {"type": "input_image", "image_url": "https://example.com/a.png"},
        {"type": "input_image", "image_url": "/tmp/local.png"},
        {"type": "output_text", "text": "done"},
    ]
    msgs = [
        msg(0, "user", Text(text="look")),
        msg(1, "assistant", ToolCall(call_id="call_img", name="view_image", input={"path": "a.jpg"})),
        msg(2, "tool", ToolResult(call_id="call_img", output=output)),
    ]
    result = ADAPTER.emit(codex_thread(), msgs)
    assert result.counts == {
        "tool_call: id rewritten to toolu_ form": 1,
        "tool_result: input_image written as an image block": 2,
        "tool_result: input_image without data or URL written as text": 1,
    }
    assert _results(emitted_lines(result)) == [[
        {"type": "text", "text": "here:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
        {"type": "text", "text": "[image]"},
        {"type": "text", "text": "done"},
    ]]
