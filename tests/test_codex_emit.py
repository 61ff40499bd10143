"""Codex emit: parse -> emit -> parse keeps roles, texts, tool calls and results in
order; cross-vendor messages are transformed with every change counted."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from archive.model import (
    Attachment,
    FileChange,
    Message,
    Reasoning,
    Text,
    Thread,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
    WebSearch,
)
from archive.vendors.base import CHILD_THREADS_NOT_WRITTEN, EMIT_MARK, EmitOptions, MessageRow, ThreadFact, UsageRow
from archive.vendors.codex import ADAPTER
from helpers import parse_bytes, report_kinds, source_for, split_lines, unexplained_offsets

FIX = Path(__file__).parent / "fixtures" / "codex"
RFC3339_MS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def parse(data: bytes) -> list:
    return parse_bytes(ADAPTER, data, source_for(Path("rollout-x.jsonl"), "codex"))


def thread_and_messages(rows: list) -> tuple[Thread, list[Message]]:
    facts = [r for _, r in rows if isinstance(r, ThreadFact)]
    tid = facts[0].thread_id
    fields: dict = {}
    meta: dict = {}
    for f in facts:
        if f.thread_id == tid:
            meta.update(f.fields.get("metadata", {}))
            fields.update({k: v for k, v in f.fields.items() if k != "metadata"})
    thread = Thread(id=tid, created_at=fields["createdAt"], metadata=meta)
    # as the store keeps them: once per id, a revision (an emitted message's further part) in
    # the first version's place
    msgs: dict[str, Message] = {}
    for _, r in rows:
        if isinstance(r, MessageRow) and (r.revises or r.message.id not in msgs):
            msgs[r.message.id] = r.message
    return thread, list(msgs.values())


def signature(msgs: list[Message]) -> list:
    out = []
    for m in msgs:
        for b in m.content:
            if isinstance(b, Text):
                out.append((m.role, "text", b.text))
            elif isinstance(b, ToolCall):
                out.append((m.role, "call", b.call_id, b.name, b.input))
            elif isinstance(b, ToolResult):
                out.append((m.role, "result", b.call_id, b.output))
            elif isinstance(b, Reasoning):
                out.append((m.role, "reasoning", b.text, b.redacted))
            elif isinstance(b, FileChange):
                out.append((m.role, "file", b.path, b.patch))
            else:
                out.append((m.role, type(b).__name__))
    return out


def check_lines(data: bytes) -> list[dict]:
    lines = [orjson.loads(ln) for _, ln in split_lines(data)]
    assert data.endswith(b"\n") and len(lines) == data.count(b"\n")
    assert lines[0]["type"] == "session_meta"
    assert all(RFC3339_MS.match(d["timestamp"]) for d in lines)
    assert [d["timestamp"] for d in lines] == sorted(d["timestamp"] for d in lines)
    # the envelope Codex writes, and the emit mark (a field Codex ignores and keeps; test_clients)
    assert all(set(d) - {EMIT_MARK} == {"timestamp", "type", "payload"} for d in lines)
    assert EMIT_MARK in lines[0] and lines[0][EMIT_MARK].get("t")
    return lines


@pytest.mark.parametrize(
    "name, counts",
    [
        ("lanegrid__agtrace__codex_session.jsonl", {}),
        ("recorded/codex-0.171.0-exec-resume.jsonl", {}),
        ("AcidicSoil__codex-session-viewer__example.jsonl", {}),
    ],
)
def test_round_trip(name: str, counts: dict) -> None:
    thread, msgs = thread_and_messages(parse((FIX / name).read_bytes()))
    result = ADAPTER.emit(thread, msgs)
    assert result.counts == counts
    ((path, data),) = result.files.items()
    lines = check_lines(data)
    meta = lines[0]["payload"]
    assert result.thread_id == meta["id"] and UUID7.match(meta["id"])
    assert result.resume_hint == f"codex resume {meta['id']}"
    assert path == f"sessions/{meta['timestamp'][:4]}/{meta['timestamp'][5:7]}/{meta['timestamp'][8:10]}/rollout-{meta['timestamp'][:19].replace(':', '-')}-{meta['id']}.jsonl"
    assert meta["cwd"] == thread.metadata["cwd"] and meta["source"] == "cli"
    # the session picker reads user_message events near the top
    assert any(d["type"] == "event_msg" and d["payload"]["type"] == "user_message" for d in lines[:10])
    rows2 = parse(data)
    assert unexplained_offsets(data, rows2) == []
    _, msgs2 = thread_and_messages(rows2)
    assert signature(msgs2) == signature(msgs)
    # encrypted reasoning is written back verbatim
    enc = [b.extra["encryptedContent"] for m in msgs for b in m.content if isinstance(b, Reasoning) and b.extra]
    enc2 = [b.extra["encryptedContent"] for m in msgs2 for b in m.content if isinstance(b, Reasoning) and b.extra]
    assert enc == enc2
    assert ADAPTER.emit(thread, msgs).files == result.files  # repeatable


def test_round_trip_turns_and_usage() -> None:
    thread, msgs = thread_and_messages(parse((FIX / "lanegrid__agtrace__codex_session.jsonl").read_bytes()))
    data = next(iter(ADAPTER.emit(thread, msgs).files.values()))
    lines = check_lines(data)
    kinds = [(d["type"], d["payload"].get("type")) for d in lines]
    assert kinds.count(("event_msg", "task_started")) == 2 and kinds.count(("turn_context", None)) == 2
    calls = {d["payload"]["call_id"] for d in lines if d["payload"].get("type") in ("function_call", "custom_tool_call")}
    outs = [d["payload"]["call_id"] for d in lines if d["payload"].get("type") in ("function_call_output", "custom_tool_call_output")]
    assert sorted(outs) == sorted(calls) and len(outs) == len(set(outs)) == 5
    rows2 = parse(data)
    assert ("duplicate", "user_message") in report_kinds(rows2)


def _cross_vendor() -> tuple[Thread, list[Message]]:
    thread = Thread(id="claude-session-1", created_at="2026-03-01T12:00:00Z", metadata={"cwd": "/work/app", "gitBranch": "main"}, parent_thread_id="p0")

    def msg(i: int, role: str, *content, **kw) -> Message:  # type: ignore[no-untyped-def]
        return Message(id=f"m{i}", thread_id=thread.id, role=role, ts=f"2026-03-01T12:00:{i:02d}Z", content=tuple(content), **kw)

    diff = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n import os\n-x = 1\n+x = 2\n"
    msgs = [
        msg(1, "system", Text("You are helpful.")),
        msg(2, "user", Text("fix app.py"), Attachment(media_type="image/png", data="iVBORw0KGgo="), Attachment(media_type="application/pdf", data="JVBERi0=")),
        msg(3, "assistant", Reasoning(text="Let me look."), Reasoning(redacted=True, extra={"signature": "abc"}), Text("Looking."),
            ToolCall(call_id="toolu_1", name="Bash", input={"command": "cat app.py"})),
        msg(4, "user", ToolResult(call_id="toolu_1", output=[{"type": "text", "text": "import os\nx = 1"}])),
        msg(5, "assistant", ToolCall(call_id="toolu_2", name="Edit", input={"file_path": "app.py"}),
            FileChange(call_id="toolu_2", path="app.py", patch=diff), usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=50)),
        msg(6, "user", ToolResult(call_id="toolu_2", output="ok", is_error=True)),
        msg(7, "assistant", WebSearch(query="python os", results=[{"url": "u"}]), ToolCall(call_id="toolu_3", name="Read", input={"p": 1}),
            Unknown(source_type="thing", raw={}), Attachment(media_type="image/png", data="AAAA")),
        msg(8, "user", ToolResult(call_id="toolu_404", output="stray")),
        msg(9, "assistant", Text("Done."), FileChange(call_id=None, path="b.py", patch=diff)),
    ]
    return thread, msgs


def test_cross_vendor_emit_counts_every_change() -> None:
    thread, msgs = _cross_vendor()
    result = ADAPTER.emit(thread, msgs, children=[object()])
    assert result.counts == {
        CHILD_THREADS_NOT_WRITTEN: 1,
        "thread: parentThreadId not representable (emitted as a standalone session)": 1,
        "message: system role written as developer": 1,
        "attachment: not an image": 1,
        "reasoning: written as summary only (no Codex encrypted content)": 1,
        "reasoning: redacted block without Codex ciphertext dropped": 1,
        "tool_result: output serialised to a string": 1,
        "tool_call: Edit with file changes written as apply_patch": 1,
        "usage: token_count written from message usage": 1,
        "tool_result: isError flag not representable": 1,
        "web_search: results not representable": 1,
        "block: unknown not representable": 1,
        "attachment: assistant images are not representable": 1,
        "tool_result: no matching tool call, dropped": 1,
        "tool_call: no result, 'aborted' output added": 1,
        "file_change: no tool call to carry it": 1,
    }
    data = next(iter(result.files.values()))
    lines = check_lines(data)
    payloads = [d["payload"] for d in lines]
    assert payloads[0]["git"] == {"branch": "main"} and payloads[0]["cwd"] == "/work/app"
    (patch_call,) = [p for p in payloads if p.get("type") == "custom_tool_call"]
    assert patch_call == {
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": "toolu_2",
        "name": "apply_patch",
        "input": "*** Begin Patch\n*** Update File: app.py\n@@\n import os\n-x = 1\n+x = 2\n*** End Patch",
    }
    outs = {p["call_id"]: p for p in payloads if p.get("type", "").endswith("_output")}
    assert outs["toolu_1"] == {"type": "function_call_output", "call_id": "toolu_1", "output": "import os\nx = 1"}
    assert outs["toolu_2"]["type"] == "custom_tool_call_output" and outs["toolu_3"]["output"] == "aborted"
    (bash,) = [p for p in payloads if p.get("type") == "function_call" and p["name"] == "Bash"]
    assert orjson.loads(bash["arguments"]) == {"command": "cat app.py"}
    user = next(p for p in payloads if p.get("type") == "message" and p["role"] == "user")
    assert user["content"] == [{"type": "input_text", "text": "fix app.py"}, {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]
    token = next(p for p in payloads if p.get("type") == "token_count")
    # Codex counts the 50 cached tokens inside its input; read back, the buckets are as emitted
    assert token["info"]["total_token_usage"]["input_tokens"] == 150
    assert token["info"]["total_token_usage"]["cached_input_tokens"] == 50
    # and Codex's own parser reads it back: same texts, calls (Edit became apply_patch)
    rows = parse(data)
    assert unexplained_offsets(data, rows) == []
    _, back = thread_and_messages(rows)
    texts = [b.text for m in back for b in m.content if isinstance(b, Text)]
    assert texts == ["You are helpful.", "fix app.py", "Looking.", "Done."]
    assert [b.name for m in back for b in m.content if isinstance(b, ToolCall)] == ["Bash", "apply_patch", "Read"]
    assert [(b.path, b.extra["op"]) for m in back for b in m.content if isinstance(b, FileChange)] == [("app.py", "update")]
    assert [b.query for m in back for b in m.content if isinstance(b, WebSearch)] == ["python os"]
    assert [b.text for m in back for b in m.content if isinstance(b, Reasoning)] == ["Let me look."]
    (usage,) = [r.usage for _, r in rows if isinstance(r, UsageRow)]
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (100, 50, 20)
    users = [m for m in back if m.role == "user" and not (m.extra or {}).get("injected")]
    assert len({m.turn_id for m in users}) == 1  # one user turn; tool results do not open turns


def test_reasoning_can_be_dropped() -> None:
    thread, msgs = _cross_vendor()
    result = ADAPTER.emit(thread, msgs, options=EmitOptions(reasoning="drop"))
    assert result.counts["reasoning: dropped (redacted or summaries disabled)"] == 1
    assert b'"type":"reasoning"' not in next(iter(result.files.values()))


# ---------------------------------------------------------------- images in tool results

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
DOT = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


def _outputs(data: bytes) -> dict[str, object]:
    return {d["payload"]["call_id"]: d["payload"]["output"] for d in check_lines(data) if d["payload"].get("type", "").endswith("_output")}


def test_codex_view_image_output_is_written_as_a_list() -> None:
    (path,) = (RECORDED / "codex-0.171.0" / "image").rglob("rollout-*.jsonl")
    recorded = [orjson.loads(ln) for _, ln in split_lines(path.read_bytes())]
    (want,) = [d["payload"]["output"] for d in recorded if d["payload"].get("type") == "function_call_output" and isinstance(d["payload"]["output"], list)]
    thread, msgs = thread_and_messages(parse(path.read_bytes()))
    result = ADAPTER.emit(thread, msgs)
    assert not any(reason.startswith("tool_result") for reason in result.counts), result.counts
    data = next(iter(result.files.values()))
    assert list(_outputs(data).values()).count(want) == 1  # the list as Codex wrote it, detail included
    _, back = thread_and_messages(parse(data))
    assert signature(back) == signature(msgs)


def test_claude_tool_result_images_become_input_images() -> None:
    from archive.vendors import claude_code

    (path,) = (RECORDED / "claude-code-2.1.197" / "image").rglob("*.jsonl")
    rows = parse_bytes(claude_code.ADAPTER, path.read_bytes(), source_for(path, "claude-code"))
    msgs = [r.message for _, r in rows if isinstance(r, MessageRow)]
    (att,) = [b for m in msgs for b in m.content if isinstance(b, Attachment)]
    assert att.extra and att.extra.get("callId")  # the parser keeps it next to its result
    thread = Thread(id="claude-image", created_at=msgs[0].ts, metadata={"cwd": "/work"})
    result = ADAPTER.emit(thread, msgs)
    assert result.counts.get("tool_result: image written as an input_image") == 1
    assert "tool_result: output serialised to a string" not in result.counts
    data = next(iter(result.files.values()))
    assert _outputs(data)[att.extra["callId"]] == [{"type": "input_image", "image_url": f"data:image/png;base64,{DOT}"}]
    # the image is inside the output, not repeated as a user image message
    users = [d["payload"] for d in check_lines(data) if d["payload"].get("type") == "message" and d["payload"]["role"] == "user"]
    assert not any(p["type"] == "input_image" for u in users for p in u["content"])
    _, back = thread_and_messages(parse(data))
    (res,) = [b for m in back for b in m.content if isinstance(b, ToolResult) and isinstance(b.output, list)]
    assert res.output == [{"type": "input_image", "image_url": f"data:image/png;base64,{DOT}"}]


def test_tool_result_image_shapes() -> None:
    thread = Thread(id="t-img", created_at="2026-03-01T12:00:00Z", metadata={"cwd": "/w"})

    def msg(i: int, role: str, *content) -> Message:  # type: ignore[no-untyped-def]
        return Message(id=f"m{i}", thread_id=thread.id, role=role, ts=f"2026-03-01T12:00:{i:02d}Z", content=tuple(content))

    output = [{"type": "text", "text": "two files:"}, {"type": "image", "attachment": 0}, {"type": "document", "attachment": 1},
              {"type": "image", "attachment": 2}, {"type": "image", "source": {"type": "url", "url": "https://x/y.jpg"}}, {"k": 1}]
    msgs = [
        msg(1, "user", Text("look")),
        msg(2, "assistant", ToolCall(call_id="c1", name="Read", input={"p": "a"}), ToolCall(call_id="c2", name="apply_patch", input="*** Begin Patch")),
        msg(3, "user",
            ToolResult(call_id="c1", output=output),
            Attachment(media_type="image/jpeg", data="/9j/", extra={"callId": "c1"}),
            Attachment(media_type="application/pdf", data="JVBERi0=", extra={"callId": "c1", "kind": "document"}),
            ToolResult(call_id="c2", output=[{"type": "text", "text": "ok"}, {"type": "image", "attachment": 0}]),
            Attachment(media_type="image/png", data="AAAA", extra={"callId": "c2"}),
            ToolResult(call_id="c404", output=[{"type": "image", "attachment": 0}]),
            Attachment(media_type="image/png", data="BBBB", extra={"callId": "c404"})),
    ]
    result = ADAPTER.emit(thread, msgs)
    assert result.counts == {
        "tool_result: image written as an input_image": 2,
        "tool_result: non-image attachment written as text": 1,
        "tool_result: image placeholder without its attachment dropped": 1,
        "tool_result: list item serialised to text": 1,
        "tool_result: images in a custom tool output written as [image] text": 1,
        "tool_result: no matching tool call, dropped": 1,
        "attachment: its tool result was dropped": 1,
    }
    data = next(iter(result.files.values()))
    outs = _outputs(data)
    assert outs["c1"] == [
        {"type": "input_text", "text": "two files:"},
        {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"},
        {"type": "input_text", "text": "[attachment application/pdf]"},
        {"type": "input_image", "image_url": "https://x/y.jpg"},
        {"type": "input_text", "text": '{"k":1}'},
    ]
    assert outs["c2"] == "ok\n[image]"  # a freeform tool's output stays text
    assert b"BBBB" not in data  # the attachment of the dropped result is not a user image
