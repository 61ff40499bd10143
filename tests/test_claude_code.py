"""Claude Code adapter: parsing real fixtures (golden dumps, counts, resumability, reports),
lines built from the format notes for kinds no fixture has, robustness, locations."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from archive.model import Attachment, FileChange, Message, Reasoning, Text, ToolCall, ToolResult, Unknown, WebSearch
from archive.vendors.base import (
    LINES,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    SNAPSHOT,
    UNKNOWN,
    WARNING,
    MessageRow,
    Report,
    Row,
    ThreadFact,
    UsageRow,
)
from archive.vendors.claude_code import ADAPTER
from archive.vendors.claude_code.emit import cwd_slug
from helpers import parse_bytes, report_kinds, source_for, unexplained_offsets

FIXTURES = Path(__file__).parent / "fixtures" / "claude-code"
NAMES = sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*.jsonl"))
RECORDED = "recorded/cc-2.1.197-bash-resume.jsonl"
SHORT = "marot__spotter__short.jsonl"
COMPACT_MAIN = "oneryalcin__fasthooks__sample_main_transcript.jsonl"
INLINE = "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
# Claude Code 1.0.x --resume (issue 33): the first session, and the new file that repeats it
RESUMED = {v: sorted(n for n in NAMES if n.startswith(f"resume-1.0/{v}/")) for v in ("1.0.3", "1.0.56")}
RESUME_FIRST = [n for v in RESUMED.values() for n in v if n.endswith(("89678499-0c8c-4424-8998-a2a8783053af.jsonl",
                                                                      "ab6f3510-1626-4bff-b991-a3b11c85f4c6.jsonl"))]
RESUME_COPY = [n for v in RESUMED.values() for n in v if n not in RESUME_FIRST]
# Claude Code 2.0.30 (issue 33): a session and its two warmup sidechains (agent-<8hex>.jsonl)
WARMUP = sorted(n for n in NAMES if n.startswith("warmup-2.0/"))
WARMUP_SESSION = [n for n in WARMUP if not n.split("/")[-1].startswith("agent-")]
WARMUP_AGENTS = [n for n in WARMUP if n not in WARMUP_SESSION]


def parse(name: str, resume_every: int | None = None) -> list[tuple[int, Row]]:
    path = FIXTURES / name
    return parse_bytes(ADAPTER, path.read_bytes(), source_for(path, "claude-code"), resume_every=resume_every)


def parse_lines(lines: list[Any], path: str = "/h/.claude/projects/-p/0f000000-0000-4000-8000-000000000001.jsonl") -> list[tuple[int, Row]]:
    data = b"".join((x if isinstance(x, bytes) else orjson.dumps(x)) + b"\n" for x in lines)
    return parse_bytes(ADAPTER, data, source_for(Path(path), "claude-code"))


def messages(rows: list[tuple[int, Row]]) -> list[Message]:
    return [r.message for _, r in rows if isinstance(r, MessageRow)]


def facts(rows: list[tuple[int, Row]]) -> dict[str, dict[str, Any]]:
    """Thread facts folded as ingest folds them (top-level overwrite, metadata merge)."""
    out: dict[str, dict[str, Any]] = {}
    for _, r in rows:
        if isinstance(r, ThreadFact):
            t = out.setdefault(r.thread_id, {})
            for k, v in r.fields.items():
                if k == "metadata":
                    t.setdefault("metadata", {}).update(v)
                else:
                    t[k] = v
    return out


def blocks(rows: list[tuple[int, Row]], kind: type) -> list[Any]:
    return [b for m in messages(rows) for b in m.content if isinstance(b, kind)]


# ---------------------------------------------------------------- every fixture


@pytest.mark.parametrize("name", NAMES)
def test_open_calls_are_closed_by_their_results(name: str) -> None:
    path = FIXTURES / name
    parser = ADAPTER.parser(source_for(path, "claude-code"))
    for off, line in enumerate(path.read_bytes().splitlines()):
        list(parser.feed(off, line))
    assert not parser.state()["calls"]  # every call of these fixtures got its result


# name -> (roles, tool calls, results paired with a call, file changes, web searches, turns, injected)
COUNTS: dict[str, tuple[dict[str, int], int, int, int, int, int, int]] = {
    "d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": ({"user": 14, "assistant": 15}, 12, 12, 0, 0, 1, 1),
    INLINE: ({"user": 25, "assistant": 28}, 21, 21, 1, 0, 3, 1),
    "marot__spotter__agent-aac57f5.jsonl": ({"user": 13, "assistant": 15}, 12, 12, 0, 0, 1, 0),
    "marot__spotter__agent-acompact-e1f845.jsonl": ({"user": 4, "assistant": 1}, 0, 0, 0, 0, 1, 3),
    SHORT: ({"user": 4, "assistant": 5, "system": 2}, 2, 2, 0, 0, 1, 1),
    "marot__spotter__tool_heavy.jsonl": ({"user": 13, "assistant": 9, "system": 2}, 6, 6, 0, 1, 3, 4),
    "oneryalcin__fasthooks__sample_agent_sidechain.jsonl": ({"user": 1, "assistant": 1}, 0, 0, 0, 0, 1, 0),
    COMPACT_MAIN: ({"user": 19, "assistant": 28, "system": 1}, 10, 10, 3, 0, 6, 3),
    RECORDED: ({"user": 3, "assistant": 4}, 1, 1, 0, 0, 2, 0),
    **{n: ({"user": 2, "assistant": 2}, 1, 1, 0, 0, 1, 0) for n in RESUME_FIRST},
    **{n: ({"user": 3, "assistant": 3}, 1, 1, 0, 0, 2, 0) for n in RESUME_COPY},
    **{n: ({"user": 2, "assistant": 2}, 1, 1, 0, 0, 1, 0) for n in WARMUP_SESSION},
    **{n: ({"user": 1, "assistant": 1}, 0, 0, 0, 0, 1, 0) for n in WARMUP_AGENTS},  # "Warmup" and its answer
}


@pytest.mark.parametrize("name", NAMES)
def test_counts(name: str) -> None:
    rows = parse(name)
    msgs = messages(rows)
    roles, n_calls, n_paired, n_changes, n_searches, n_turns, n_injected = COUNTS[name]
    assert dict(Counter(m.role for m in msgs)) == roles
    calls = {b.call_id for b in blocks(rows, ToolCall)}
    results = blocks(rows, ToolResult)
    assert len(calls) == n_calls
    assert sum(1 for r in results if r.call_id in calls) == n_paired == len(results)
    assert len(blocks(rows, FileChange)) == n_changes
    assert len(blocks(rows, WebSearch)) == n_searches
    assert len(blocks(rows, Attachment)) == 0
    assert len({m.turn_id for m in msgs if m.turn_id}) == n_turns
    assert sum(1 for m in msgs if (m.extra or {}).get("injected")) == n_injected
    # every line is its own message (its id the line's uuid, or for 1.0.x main-thread lines
    # what a resume's copy repeats: archive/vendors/claude_code/resume.py)
    assert len({m.id for m in msgs}) == len(msgs)


REPORTS: dict[str, dict[tuple[str, str], int]] = {
    "d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": {},
    INLINE: {},
    "marot__spotter__agent-aac57f5.jsonl": {(SKIPPED, "progress"): 12},
    "marot__spotter__agent-acompact-e1f845.jsonl": {},
    SHORT: {(SKIPPED, "file-history-snapshot"): 1, (SKIPPED, "progress"): 3},
    "marot__spotter__tool_heavy.jsonl": {(SKIPPED, "file-history-snapshot"): 3, (SKIPPED, "progress"): 10, (SKIPPED, "queue-operation"): 2},
    "oneryalcin__fasthooks__sample_agent_sidechain.jsonl": {},
    # 8 of the 10 snapshots name backups: one checkpoint per file backed up (issue 38)
    COMPACT_MAIN: {(SKIPPED, "file-history-snapshot"): 2, (METADATA, "file checkpoint"): 15,
                   (SKIPPED, "system/stop_hook_summary"): 5},
    RECORDED: {(SKIPPED, "attachment"): 2, (SKIPPED, "last-prompt"): 2, (SKIPPED, "mode"): 1, (SKIPPED, "queue-operation"): 4},
    **{n: {} for n in RESUME_FIRST + RESUME_COPY + WARMUP_AGENTS},
    **{n: {(SKIPPED, "queue-operation"): 2} for n in WARMUP_SESSION},
}


@pytest.mark.parametrize("name", NAMES)
def test_report_kinds(name: str) -> None:
    assert dict(report_kinds(parse(name))) == REPORTS[name]


# ---------------------------------------------------------------- specific fixtures


def test_recorded_2_1_197_turns_and_metadata() -> None:
    rows = parse(RECORDED)
    sid = "7767af10-96b1-4f0a-b48d-8e085110fdc1"
    msgs = messages(rows)
    assert {m.thread_id for m in msgs} == {sid}
    prompts = [m for m in msgs if m.role == "user" and m.turn_id == m.id]
    assert [p.content[0].text for p in prompts] == [  # type: ignore[union-attr]
        "SUBTASK: count the files here with a shell command",
        "thanks, and again",
    ]
    # the tool-result line belongs to the first turn, it does not open one
    result = next(m for m in msgs if any(isinstance(b, ToolResult) for b in m.content))
    assert result.turn_id == prompts[0].id
    assert result.extra and result.extra["toolUseResult"]["stdout"] == "2"
    t = facts(rows)[sid]
    assert t["createdAt"] == "2026-11-30T00:31:10.795Z"  # the first record (a queue-operation)
    assert t["metadata"] == {
        "provider": "claude-code",
        "cwd": "/home/dev/hello-app",
        "gitBranch": "master",
        "version": "2.1.197",
        "entrypoint": "sdk-cli",
        "permissionMode": "default",
        "model": "claude-opus-4-8",
    }
    # metadata facts only when a value changes: one for the envelope, one for the model
    assert sum(1 for _, r in rows if isinstance(r, ThreadFact) and "metadata" in r.fields) == 2
    first = msgs[1]
    assert first.provenance and first.provenance.extra == {"messageId": "msg_scn009"}
    assert first.provenance.source_id == first.id and first.provenance.session_id == sid


def test_usage_split_responses_counted_once() -> None:
    rows = parse(RECORDED)
    latest: dict[str, UsageRow] = {}
    for _, r in rows:
        if isinstance(r, UsageRow):
            latest[r.key] = r  # ingest keeps the row of the latest line per key
    # msg_scn009 is written as 2 lines (text, tool_use), each repeating 109 in / 29 out /
    # 9000 cache read / 50 cache write; msg_scn010 = 110/30/10000/50; msg_scn011 = 111/31/11000/50.
    # Counted once per response: input 109+110+111 = 330, output 29+30+31 = 90,
    # cache read 9000+10000+11000 = 30000, cache write 50*3 = 150.
    # (Summing per line would give input 109*2+110+111 = 439.)
    assert sorted(latest) == ["claude-code:msg_scn009", "claude-code:msg_scn010", "claude-code:msg_scn011"]
    assert sum(r.usage.input_tokens or 0 for r in latest.values()) == 330
    assert sum(r.usage.output_tokens or 0 for r in latest.values()) == 90
    assert sum(r.usage.cache_read_tokens or 0 for r in latest.values()) == 30000
    assert sum(r.usage.cache_write_tokens or 0 for r in latest.values()) == 150
    assert sum(1 for _, r in rows if isinstance(r, UsageRow)) == 4


def test_usage_growing_snapshot_keeps_last_line() -> None:
    rows = parse(COMPACT_MAIN)
    latest = {r.key: r for _, r in rows if isinstance(r, UsageRow)}
    # msg_01AodYGsM7TAPZ95Z72L7Gz9: thinking line says output 8, the tool_use line 231
    assert latest["claude-code:msg_01AodYGsM7TAPZ95Z72L7Gz9"].usage.output_tokens == 231
    assert len(latest) == 12  # 12 distinct message.id over 28 assistant lines


def test_short_split_response_and_blocks() -> None:
    rows = parse(SHORT)
    msgs = messages(rows)
    asst = [m for m in msgs if m.role == "assistant"]
    assert len(asst) == 5 and {m.provenance.extra["messageId"] for m in asst} == {"msg_01MKH1ccEGrZGNPvu8pYiiQa"}  # type: ignore[union-attr,index]
    reasoning = blocks(rows, Reasoning)
    assert len(reasoning) == 1 and reasoning[0].extra["signature"].startswith("EsMCCkYICxgCKkDuNR00")
    raw = (FIXTURES / SHORT).read_bytes()
    assert reasoning[0].extra["signature"].encode() in raw  # byte-exact
    errors = [r for r in blocks(rows, ToolResult) if r.is_error]
    assert len(errors) == 2
    system = [m for m in msgs if m.role == "system"]
    assert [m.extra["subtype"] for m in system] == ["local_command", "local_command"]  # type: ignore[index]


def test_compaction_and_write_file_changes() -> None:
    rows = parse(COMPACT_MAIN)
    msgs = messages(rows)
    boundary = next(m for m in msgs if m.role == "system")
    assert boundary.extra["subtype"] == "compact_boundary"  # type: ignore[index]
    assert boundary.extra["compactMetadata"] == {"trigger": "manual", "preTokens": 21558}  # type: ignore[index]
    assert boundary.parent_id == "a222e3e0-a2be-4b98-a091-da5ee8b3cc7b"  # the logical parent
    summary = next(m for m in msgs if (m.extra or {}).get("isCompactSummary"))
    assert summary.extra["injected"] is True  # type: ignore[index]
    changes = blocks(rows, FileChange)
    assert [c.path for c in changes] == ["/workspace/hello_world.py", "/workspace/number_generator.py", "/workspace/data.txt"]
    assert changes[0].patch == '--- /dev/null\n+++ b/workspace/hello_world.py\n@@ -0,0 +1,1 @@\n+print("Hello, World!")\n'
    assert changes[0].call_id == "toolu_01HaquTrAhq2raBg86UfK1s6"
    assert all(c.extra == {"kind": "create"} for c in changes)


def test_multiedit_file_change_from_structured_patch() -> None:
    (change,) = blocks(parse(INLINE), FileChange)
    assert change.path == "/path/to/Demo/CLAUDE.md" and change.call_id == "toolu_018awfyyafbNVMNu6kfSRuKi"
    assert change.patch.startswith("--- a/path/to/Demo/CLAUDE.md\n+++ b/path/to/Demo/CLAUDE.md\n@@ -1,44 +1,68 @@\n # TODO App Project\n")


def test_inline_sidechains_become_child_threads() -> None:
    rows = parse(INLINE)
    sid = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    # 1.0.x main-thread messages are named by what a resume repeats, their uuid in provenance
    by_uuid = {m.provenance.source_id: m.id for m in messages(rows) if m.provenance is not None}
    threads = facts(rows)
    children = {k: v for k, v in threads.items() if k != sid}
    assert children == {
        f"{sid}/sidechain-6340ddef-f656-4b72-a065-82390f637678": {
            "parentThreadId": sid,
            "originMessageId": by_uuid["a2bbaa8d-3c70-46f0-8abf-933c123d557d"],  # holds Task toolu_014YF9...
            "title": "Check package configuration",
            "createdAt": "2025-09-07T09:52:27.016Z",
            "metadata": children[f"{sid}/sidechain-6340ddef-f656-4b72-a065-82390f637678"]["metadata"],
        },
        f"{sid}/sidechain-83e2917c-8940-4df6-a5a5-f2514f0d08c5": {
            "parentThreadId": sid,
            "originMessageId": by_uuid["cfca867b-e0bb-4682-a5ff-2dd1b228a44f"],
            "title": "Analyze current project structure",
            "createdAt": "2025-09-07T09:52:53.270Z",
            "metadata": children[f"{sid}/sidechain-83e2917c-8940-4df6-a5a5-f2514f0d08c5"]["metadata"],
        },
    }
    origin = next(m for m in messages(rows) if m.id == by_uuid["a2bbaa8d-3c70-46f0-8abf-933c123d557d"])
    assert any(isinstance(b, ToolCall) and b.name == "Task" for b in origin.content)
    per_thread = Counter(m.thread_id for m in messages(rows))
    assert per_thread == {sid: 31, f"{sid}/sidechain-6340ddef-f656-4b72-a065-82390f637678": 7, f"{sid}/sidechain-83e2917c-8940-4df6-a5a5-f2514f0d08c5": 15}


@pytest.mark.parametrize(
    "name,thread,agent",
    [
        ("marot__spotter__agent-aac57f5.jsonl", "ae4a77f8-aedd-4bc1-888f-c94edc91af04/agent-aac57f5", "aac57f5"),
        ("marot__spotter__agent-acompact-e1f845.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569/agent-acompact-e1f845", "acompact-e1f845"),
        ("oneryalcin__fasthooks__sample_agent_sidechain.jsonl", "c45af7b1-cb7c-4e51-93db-8cbb250a877a/agent-af1ff21", "af1ff21"),
    ],
)
def test_agent_files_are_child_threads(name: str, thread: str, agent: str) -> None:
    rows = parse(name)
    assert {m.thread_id for m in messages(rows)} == {thread}
    t = facts(rows)[thread]
    assert t["parentThreadId"] == thread.split("/")[0] and t["agentId"] == agent
    # roots of compaction agents point into the trunk: no dangling-parent warning there
    assert not [r for _, r in rows if isinstance(r, Report) and r.kind == WARNING]


# ---------------------------------------------------------------- lines built from the format notes

SID = "0f000000-0000-4000-8000-000000000001"


def env(uuid: str, parent: str | None = None, **kw: Any) -> dict[str, Any]:
    d = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/p", "sessionId": SID, "version": "2.1.80", "gitBranch": "main", "uuid": uuid, "timestamp": "2026-03-01T10:00:00.000Z"}
    d.update(kw)
    return d


def user(uuid: str, content: Any, parent: str | None = None, **kw: Any) -> dict[str, Any]:
    return env(uuid, parent, type="user", message={"role": "user", "content": content}, **kw)


def assistant(uuid: str, content: list[Any], parent: str | None, mid: str = "msg_1", **kw: Any) -> dict[str, Any]:
    usage = {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}
    msg = {"model": "claude-opus-4-6", "id": mid, "type": "message", "role": "assistant", "content": content, "stop_reason": None, "usage": usage}
    return env(uuid, parent, type="assistant", message=msg, requestId="req_1", **kw)


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def test_built_blocks_redacted_thinking_image_document_unknown() -> None:
    rows = parse_lines(
        [
            user("u1", [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}, {"type": "text", "text": "what is this?"}]),
            assistant("a1", [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}], "u1"),
            assistant("a2", [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}], "a1"),
            user("u2", [{"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}, "title": "spec"}], "a2"),
        ]
    )
    m = messages(rows)
    img, text = m[0].content
    assert isinstance(img, Attachment) and img.media_type == "image/png" and img.data == PNG
    assert isinstance(text, Text) and m[0].turn_id == "u1"
    (red,) = m[1].content
    assert isinstance(red, Reasoning) and red.redacted is True and red.text is None
    assert red.extra == {"data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
    (unk,) = m[2].content
    assert isinstance(unk, Unknown) and unk.source_type == "server_tool_use" and unk.raw["id"] == "srvtoolu_1"
    (doc,) = m[3].content
    assert isinstance(doc, Attachment) and doc.media_type == "application/pdf" and doc.extra == {"title": "spec", "kind": "document"}


def test_built_tool_result_with_image_list_and_edit() -> None:
    edit_result = {
        "filePath": "/p/a.py",
        "oldString": "x = 1",
        "newString": "x = 2",
        "structuredPatch": [{"oldStart": 3, "oldLines": 1, "newStart": 3, "newLines": 1, "lines": ["-x = 1", "+x = 2"]}],
    }
    rows = parse_lines(
        [
            user("u1", "look and fix"),
            assistant("a1", [{"type": "tool_use", "id": "toolu_r", "name": "Read", "input": {"file_path": "/p/s.png"}}], "u1"),
            user("u2", [{"type": "tool_result", "tool_use_id": "toolu_r", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}], "a1"),
            assistant("a2", [{"type": "tool_use", "id": "toolu_e", "name": "Edit", "input": {"file_path": "/p/a.py"}}], "u2", mid="msg_2"),
            user("u3", [{"type": "tool_result", "tool_use_id": "toolu_e", "content": "ok"}], "a2", toolUseResult=edit_result),
        ]
    )
    m = messages(rows)
    res, att = m[2].content
    assert isinstance(res, ToolResult) and res.output == [{"type": "image", "attachment": 0}]
    assert isinstance(att, Attachment) and att.data == PNG and att.extra == {"callId": "toolu_r"}
    res2, change = m[4].content
    assert isinstance(change, FileChange) and change.path == "/p/a.py" and change.call_id == "toolu_e"
    assert change.patch == "--- a/p/a.py\n+++ b/p/a.py\n@@ -3,1 +3,1 @@\n-x = 1\n+x = 2\n"
    assert all(mm.turn_id == "u1" for mm in m)


def test_built_titles_in_priority_order() -> None:
    rows = parse_lines(
        [
            {"type": "summary", "summary": "Old summary", "leafUuid": "x"},  # before any sessionId: the file name
            {"type": "ai-title", "aiTitle": "AI title", "sessionId": SID},
            {"type": "custom-title", "customTitle": "My title", "sessionId": SID},
            {"type": "ai-title", "aiTitle": "Later AI title", "sessionId": SID},
            {"type": "summary", "summary": "Later summary", "leafUuid": "y"},
        ]
    )
    assert [r.fields["title"] for _, r in rows if isinstance(r, ThreadFact)] == ["Old summary", "AI title", "My title"]
    assert facts(rows)[SID]["title"] == "My title"
    assert report_kinds(rows) == Counter({(METADATA, "ai-title"): 1, (METADATA, "summary"): 1})


def test_built_system_records_and_bookkeeping() -> None:
    api_error = env("s1", None, type="system", subtype="api_error", level="error", error={"status": 529, "error": {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}}, retryInMs=500, retryAttempt=1, maxRetries=10)
    synthetic = assistant("a9", [{"type": "text", "text": "API Error: Overloaded"}], "p1", mid="m9", isApiErrorMessage=True, error="unknown")
    synthetic["message"]["model"] = "<synthetic>"
    rows = parse_lines(
        [
            {"type": "permission-mode", "permissionMode": "plan", "sessionId": SID},
            api_error,
            env("s2", "s1", type="system", subtype="turn_duration", durationMs=1234),
            env("s3", "s2", type="system", subtype="away_summary", content="While you were away: tests pass"),
            env("s4", "s3", type="system", subtype="brand_new_kind", content="something new"),
            env("s5", "s4", type="system", subtype="brand_new_silent"),
            env("p1", "s5", type="progress", data={"type": "agent_progress", "agentId": "a1", "message": {}}, toolUseID="t", parentToolUseID="t"),
            {"type": "some-future-record", "sessionId": SID},
            {"type": "pr-link", "prNumber": 3, "prUrl": "https://x/3", "sessionId": SID},
            synthetic,
        ]
    )
    assert dict(report_kinds(rows)) == {
        (METADATA, "permission-mode"): 1,
        (SKIPPED, "system/api_error"): 1,
        (SKIPPED, "system/turn_duration"): 1,
        (UNKNOWN, "system/brand_new_kind"): 1,
        (UNKNOWN, "system/brand_new_silent"): 1,
        # an agent_progress line without a subagent message copies nothing: bookkeeping, not
        # a duplicate (issue 18: duplicate only when a twin holds the same content)
        (SKIPPED, "progress"): 1,
        (UNKNOWN, "some-future-record"): 1,
        (SKIPPED, "pr-link"): 1,
    }
    m = messages(rows)
    assert [x.role for x in m] == ["system", "system", "assistant"]
    assert m[0].content == (Text(text="While you were away: tests pass"),)
    assert isinstance(m[1].content[1], Unknown)
    assert m[2].extra and m[2].extra["isApiErrorMessage"] is True
    # a synthetic reply is neither usage nor the thread's model
    assert not [r for _, r in rows if isinstance(r, UsageRow)]
    assert facts(rows)[SID]["metadata"]["permissionMode"] == "plan"
    assert "model" not in facts(rows)[SID]["metadata"]


def test_usage_key_falls_back_to_request_id_then_uuid() -> None:
    a = assistant("a1", [{"type": "text", "text": "hi"}], None)
    del a["message"]["id"]
    b = assistant("a2", [{"type": "text", "text": "hi"}], "a1")
    del b["message"]["id"], b["requestId"]
    keys = [r.key for _, r in parse_lines([a, b]) if isinstance(r, UsageRow)]
    assert keys == ["claude-code:req_1", "claude-code:a2"]
    (u, _) = [r.usage for _, r in parse_lines([a, b]) if isinstance(r, UsageRow)]
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (5, 7, 100, 20)


def test_trunk_agent_result_links_child_thread() -> None:
    rows = parse_lines(
        [
            user("u1", "research X"),
            assistant("a1", [{"type": "tool_use", "id": "toolu_t", "name": "Agent", "input": {"description": "Research X", "prompt": "go", "subagent_type": "Explore"}}], "u1"),
            user("u2", [{"type": "tool_result", "tool_use_id": "toolu_t", "content": [{"type": "text", "text": "found"}]}], "a1", toolUseResult={"status": "completed", "agentId": "ab12cd3"}),
            assistant("a2", [{"type": "tool_use", "id": "toolu_t2", "name": "Task", "input": {"description": "Older style"}}], "u2", mid="m2"),
            user("u3", [{"type": "tool_result", "tool_use_id": "toolu_t2", "content": [{"type": "text", "text": "done"}, {"type": "text", "text": "agentId: ffee001 (for resuming)"}]}], "a2"),
        ]
    )
    t = facts(rows)
    assert t[f"{SID}/agent-ab12cd3"] == {"parentThreadId": SID, "originMessageId": "a1", "agentId": "ab12cd3", "title": "Research X"}
    assert t[f"{SID}/agent-ffee001"] == {"parentThreadId": SID, "originMessageId": "a2", "agentId": "ffee001", "title": "Older style"}


def test_agent_meta_json_snapshot() -> None:
    path = Path("/h/.claude/projects/-p") / SID / "subagents" / "agent-ab12cd3.meta.json"
    doc = orjson.dumps({"agentType": "Explore", "description": "Research X", "toolUseId": "toolu_t", "spawnDepth": 1})
    rows = parse_bytes(ADAPTER, doc, source_for(path, "claude-code", kind=SNAPSHOT))
    assert facts(rows) == {
        f"{SID}/agent-ab12cd3": {
            "agentId": "ab12cd3",
            "parentThreadId": SID,
            "title": "Research X",
            "metadata": {"agentType": "Explore", "spawnDepth": 1, "spawnCallId": "toolu_t"},
        }
    }
    nested = orjson.dumps({"agentType": "Explore", "description": "d", "toolUseId": "toolu_u", "spawnDepth": 2})
    (row,) = [r for _, r in parse_bytes(ADAPTER, nested, source_for(path, "claude-code", kind=SNAPSHOT))]
    assert isinstance(row, ThreadFact) and "parentThreadId" not in row.fields


# ---------------------------------------------------------------- robustness


def test_torn_glued_nul_and_bad_bytes() -> None:
    good = orjson.dumps(user("u1", "hello"))
    second = orjson.dumps(assistant("a1", [{"type": "text", "text": "hi"}], "u1"))
    torn = b'{"type":"pr-link","sessionId":"' + SID.encode() + b'","prNu' + second
    glued = orjson.dumps(user("u2", "again", "a1")) + orjson.dumps(assistant("a2", [{"type": "text", "text": "ok"}], "u2", mid="m2"))
    rows = parse_lines(
        [
            good,
            torn,
            b"\x00" * 64,
            glued,
            b'{"type":"user","message":{"role":"user","content":"caf\xe9"},"uuid":"u3","sessionId":"' + SID.encode() + b'"}',
            b'{"type":"user","message":',
            b"[1,2]",
            b"   ",
        ]
    )
    assert [m.id for m in messages(rows)] == ["u1", "a1", "u2", "a2", "u3"]
    assert messages(rows)[4].content == (Text(text="caf\ufffd"),)
    kinds = report_kinds(rows)
    assert kinds == Counter(
        {
            (PARSE_ERROR, "torn record"): 1,
            (PARSE_ERROR, "NUL bytes"): 1,
            (PARSE_ERROR, "glued records"): 1,
            (WARNING, "invalid UTF-8"): 1,
            (PARSE_ERROR, "invalid JSON"): 1,
            (PARSE_ERROR, "not a JSON object"): 1,
        }
    )
    data = b"".join(x + b"\n" for x in [good, torn, b"\x00" * 64, glued])
    assert unexplained_offsets(data, parse_bytes(ADAPTER, data, source_for(Path("/x.jsonl"), "claude-code"))) == []


def test_unexpected_shapes_never_raise() -> None:
    lines = [
        {"type": "user", "message": "not an object", "uuid": "u0"},
        {"type": "assistant", "message": {"content": "plain string"}, "uuid": "a0", "sessionId": SID},
        {"type": "user", "message": {"content": [None, 3, {"type": "tool_result"}]}, "uuid": "u1", "sessionId": SID},
        {"type": 7},
        {"type": "system"},
        {"type": "progress", "data": None},
        {"type": "summary"},
        {"type": "assistant", "message": {"content": [{"type": "tool_use"}], "usage": {"input_tokens": "x"}}, "uuid": "a1"},
    ]
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    rows = parse_bytes(ADAPTER, data, source_for(Path("/x.jsonl"), "claude-code"))
    assert len(messages(rows)) == 3
    assert unexplained_offsets(data, rows) == []


def test_dangling_parent_and_cycles_warn_but_keep() -> None:
    rows = parse_lines(
        [
            user("u1", "hi", "missing-parent"),
            user("u2", "self", "u2"),
            assistant("a1", [{"type": "text", "text": "x"}], "a2"),  # forward reference...
            assistant("a2", [{"type": "text", "text": "y"}], "a1", mid="m2"),  # ...closing a cycle
        ]
    )
    assert [m.id for m in messages(rows)] == ["u1", "u2", "a1", "a2"]
    assert report_kinds(rows) == Counter({(WARNING, "dangling parentUuid"): 2, (WARNING, "parentUuid cycle"): 2})


def test_timestamps_out_of_order_are_normal() -> None:
    rows = parse_lines([user("u1", "a", timestamp="2026-01-01T10:00:00Z"), user("u2", "b", "u1", timestamp="2025-01-01T10:00:00Z")])
    assert not [r for _, r in rows if isinstance(r, Report)]


# ---------------------------------------------------------------- locations


def test_default_roots(tmp_path: Path) -> None:
    assert ADAPTER.default_roots({}, tmp_path) == [tmp_path / ".claude" / "projects"]
    assert ADAPTER.default_roots({"CLAUDE_CONFIG_DIR": "/cfg/claude"}, tmp_path) == [Path("/cfg/claude/projects")]


@pytest.mark.parametrize(
    "rel,kind",
    [
        (f"projects/-home-me-app/{SID}.jsonl", LINES),
        ("projects/-home-me-app/agent-af1ff21.jsonl", LINES),
        (f"projects/-home-me-app/{SID}/subagents/agent-aac57f5.jsonl", LINES),
        (f"projects/-home-me-app/{SID}/subagents/agent-acompact-e1f845.jsonl", LINES),
        (f"projects/-home-me-app/{SID}/subagents/workflows/run1/agent-a1.jsonl", LINES),
        (f"projects/-home-me-app/{SID}/subagents/agent-aac57f5.meta.json", SNAPSHOT),
        (f"projects/-home-me-app/{SID}/subagents/workflows/run1/journal.jsonl", None),
        ("projects/-home-me-app/skill-injections.jsonl", None),
        ("projects/-home-me-app/sessions-index.json", None),
        (f"projects/-home-me-app/{SID}/tool-results/x.txt", SNAPSHOT),  # a companion of the session (2.1.x)
        ("projects/-home-me-app/not-a-session/tool-results/x.txt", None),
        # side files (issue 38): sources of their own, read by archive/vendors/claude_code/side.py
        ("history.jsonl", LINES),
        (".claude.json", SNAPSHOT),
        (f"file-history/{SID}/8c79874ff79ae9d2@v2", SNAPSHOT),
        (f"file-history/{SID}/notes.txt", None),
        (f"todos/{SID}-agent-{SID}.json", SNAPSHOT),
        (f"tasks/{SID}/1.json", SNAPSHOT),
        (f"tasks/{SID}/.highwatermark", None),
        ("plans/cheerful-giggling-bunny.md", SNAPSHOT),
        ("settings.json", None),
        ("backups/.claude.json.backup.1796172533339", None),
    ],
)
def test_classify(rel: str, kind: str | None) -> None:
    assert ADAPTER.classify(Path("/home/me/.claude") / rel) == kind


def test_detect() -> None:
    for name in NAMES:
        assert ADAPTER.detect((FIXTURES / name).read_bytes()[:65536]), name
    assert not ADAPTER.detect(b'{"timestamp":"2025-01-01T00:00:00Z","type":"session_meta","payload":{}}\n')
    assert not ADAPTER.detect(b'{"v":1,"id":"t","createdAt":"2025-01-01T00:00:00Z"}\n')
    assert not ADAPTER.detect(b"not json\n")


def test_slug() -> None:
    assert cwd_slug("/Users/me/.config/foo") == "-Users-me--config-foo"
    assert cwd_slug("/home/USER/projects/spotter-worktrees/spotter-dov") == "-home-USER-projects-spotter-worktrees-spotter-dov"
    assert cwd_slug("H:\\PRISM") == "H--PRISM"


def test_large_tool_use_result_is_stored_once_and_read_back_from_its_line(tmp_path: Path) -> None:
    """toolUseResult repeats the tool output: above 2 KiB messages.extra holds a reference
    and every reader of the archive gets the value of the stored line back."""
    from archive.db import open_db
    from archive.ingest import IngestOptions, ingest_paths
    from archive.projection import LINE_REF
    from archive.store import SqliteMessageStore

    fixtures = Path(__file__).parent / "fixtures" / "claude-code"
    files = [fixtures / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
             fixtures / "marot__spotter__tool_heavy.jsonl"]  # fmt: skip
    expected: list[bytes] = []
    for f in files:
        for line in f.read_bytes().splitlines():
            d = orjson.loads(line)
            if isinstance(d, dict) and "toolUseResult" in d:
                expected.append(orjson.dumps(d["toolUseResult"], option=orjson.OPT_SORT_KEYS))
    db_path = tmp_path / "a.db"
    ingest_paths(open_db(db_path), files, IngestOptions(idle_seconds=10**9))
    db = open_db(db_path)
    refs = db.execute(
        "SELECT count(*) FROM messages WHERE json_extract(extra, '$.toolUseResult') = json_object(?, 'toolUseResult')",
        (LINE_REF,),
    ).fetchone()[0]
    assert refs == 5
    assert db.execute("SELECT max(length(extra)) FROM messages").fetchone()[0] < 2048 + 1024
    store = SqliteMessageStore(db_path)
    got = [
        orjson.dumps(m.extra["toolUseResult"], option=orjson.OPT_SORT_KEYS)
        for t in store.list_threads() for m in store.get_messages(t.id) if m.extra and "toolUseResult" in m.extra
    ]  # fmt: skip
    assert sorted(got) == sorted(expected)


def test_repaired_line_keeps_its_large_tool_use_result_inline(tmp_path: Path) -> None:
    """A line the adapter repaired (NUL padding after a crash) would not parse back as it
    is, so its toolUseResult stays in messages.extra and still comes back whole."""
    from archive.db import open_db
    from archive.ingest import IngestOptions, ingest_paths
    from archive.store import SqliteMessageStore

    src = Path(__file__).parent / "fixtures" / "claude-code" / "marot__spotter__tool_heavy.jsonl"
    lines = src.read_bytes().splitlines()
    big = next(i for i, line in enumerate(lines)
               if len(orjson.dumps(orjson.loads(line).get("toolUseResult"))) >= 2048)  # fmt: skip
    lines[big] = lines[big] + b"\x00" * 64
    f = tmp_path / "s.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    db_path = tmp_path / "a.db"
    ingest_paths(open_db(db_path), [f], IngestOptions(idle_seconds=10**9))
    uuid = orjson.loads(lines[big].rstrip(b"\x00"))["uuid"]
    expected = orjson.loads(lines[big].rstrip(b"\x00"))["toolUseResult"]
    db = open_db(db_path)
    (extra,) = db.execute("SELECT extra FROM messages WHERE id LIKE ?", (f"%{uuid}%",)).fetchone()
    assert orjson.loads(extra)["toolUseResult"] == expected
    store = SqliteMessageStore(db_path)
    got = [m.extra["toolUseResult"] for t in store.list_threads() for m in store.get_messages(t.id)
           if m.extra and uuid in m.id and "toolUseResult" in m.extra]  # fmt: skip
    assert got == [expected]


def test_tool_result_without_an_id_gives_its_blocks_one_call_id():
    """A tool_result missing tool_use_id: the result and the file change read from its
    toolUseResult share the same (empty) call id, never the string 'None'."""
    line = orjson.dumps({
        "type": "user", "uuid": "11111111-1111-4111-8111-111111111111",
        "sessionId": "22222222-2222-4222-8222-222222222222", "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": "user", "content": [{"type": "tool_result", "content": "edited"}]},
        "toolUseResult": {"filePath": "/w/a.py", "oldString": "a", "newString": "b",
                          "structuredPatch": [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1,
                                               "lines": ["-a", "+b"]}]},
    })  # fmt: skip
    rows = [r for _o, r in parse_bytes(ADAPTER, line + b"\n", source_for(Path("s.jsonl"), "claude-code"))]
    blocks = [b for r in rows if isinstance(r, MessageRow) for b in r.message.content]
    assert {type(b).__name__ for b in blocks} == {"ToolResult", "FileChange"}
    assert {b.call_id for b in blocks} == {""}
