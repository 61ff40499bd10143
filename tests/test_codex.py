"""Codex rollout parser: golden dumps, counts, resumability, usage arithmetic, forks,
unknown types, G0 documents. Emit is in test_codex_emit.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from archive.model import Attachment, FileChange, Message, Reasoning, Text, ToolCall, ToolResult, Unknown, WebSearch
from archive.vendors.base import LINES, SNAPSHOT, MessageRow, Report, Row, ThreadFact, UsageRow
from archive.vendors.codex import ADAPTER
from archive.vendors.codex.parse import parse_patch
from helpers import parse_bytes, report_kinds, rows_dump, source_for, split_lines, unexplained_offsets

FIX = Path(__file__).parent / "fixtures" / "codex"

AGTRACE = "lanegrid__agtrace__codex_session.jsonl"  # 0.66.0, G2
REVIEW = "lanegrid__agtrace__rollout-parent-019b88e0.jsonl"  # 0.77.0 excerpt
G1 = "AcidicSoil__codex-session-viewer__example.jsonl"  # bare JSONL, Sep 2025
G3 = "jazzyalex__agent-sessions__small.jsonl"  # composite 0.146.0 coverage file
RECORDED = "recorded/codex-0.171.0-exec-resume.jsonl"
R020 = "recorded/codex-0.20.0-shell-resume.jsonl"  # the real 0.20.0: G1, resumed with experimental_resume
R047 = "recorded/codex-0.47.0-shell-resume.jsonl"  # the real 0.47.0: G2, resumed with exec resume
FIXTURES = [AGTRACE, REVIEW, G1, G3, RECORDED, R020, R047]


def parse(data: bytes, name: str = "rollout-x.jsonl", resume_every: int | None = None, kind: str = LINES) -> list[tuple[int, Row]]:
    return parse_bytes(ADAPTER, data, source_for(Path(name), "codex", kind=kind), resume_every=resume_every)


def parse_fixture(name: str) -> tuple[bytes, list[tuple[int, Row]]]:
    data = (FIX / name).read_bytes()
    return data, parse(data, name)


def messages(rows: list[tuple[int, Row]]) -> list[Message]:
    return [r.message for _, r in rows if isinstance(r, MessageRow)]


def blocks(msgs: list[Message], kind: type) -> list:
    return [b for m in msgs for b in m.content if isinstance(b, kind)]


def usage_totals(rows: list[tuple[int, Row]]) -> dict[str, int]:
    # what ingest does: rows sharing a key are one response, the latest wins
    by_key = {r.key: r.usage for _, r in rows if isinstance(r, UsageRow)}
    out = Counter()
    for u in by_key.values():
        for name in ("input_tokens", "cache_read_tokens", "output_tokens", "reasoning_tokens"):
            out[name] += getattr(u, name) or 0
    out["responses"] = len(by_key)
    return dict(out)


def line(ts: str, kind: str, payload: dict) -> bytes:
    return orjson.dumps({"timestamp": ts, "type": kind, "payload": payload})


# ---------------------------------------------------------------- every fixture


@pytest.mark.parametrize("name", FIXTURES)
def test_event_views_never_copy_content(name: str) -> None:
    """user_message / agent_message / agent_reasoning / item_completed repeat response
    items: each text appears in one message only, and an event line yields a message only
    to project a user_message event that has no response_item twin (issue 18)."""
    data, rows = parse_fixture(name)
    kinds = {off: orjson.loads(ln).get("type") for off, ln in split_lines(data)}
    from_events = [r.message for off, r in rows if isinstance(r, MessageRow) and kinds[off] == "event_msg"]
    assert all((m.extra or {}).get("fromEvent") == "user_message" and m.role == "user" for m in from_events)
    texts = Counter(b.text for b in blocks(messages(rows), Text) if not b.text.startswith("[trimmed"))
    assert [t for t, n in texts.items() if n > 1] == []


# ---------------------------------------------------------------- counts per fixture


def test_agtrace_066_counts() -> None:
    _, rows = parse_fixture(AGTRACE)
    msgs = messages(rows)
    assert Counter(m.role for m in msgs) == {"user": 3, "assistant": 13, "tool": 5}
    assert [m for m in msgs if m.extra and m.extra.get("injected")][0].content[0].text.startswith("<environment_context>")
    calls, results = blocks(msgs, ToolCall), blocks(msgs, ToolResult)
    assert len(calls) == 5 and {c.call_id for c in calls} == {r.call_id for r in results}
    assert [r.is_error for r in results] == [False, False, True, True, False]
    (fc,) = blocks(msgs, FileChange)
    assert (fc.path, fc.call_id, fc.extra) == ("myapp/hoge.py", "call_pBXH93fl6ZXH2svDOFIlr8GA", {"op": "add"})
    assert fc.patch == "*** Add File: myapp/hoge.py\n+print(1 + 1)"
    reasoning = blocks(msgs, Reasoning)
    assert len(reasoning) == 6 and all(r.text and r.extra["encryptedContent"].startswith("gAAAA") for r in reasoning)
    assert blocks(msgs, WebSearch) == []
    # two user turns (no task events in 0.66): each opened by the typed message
    users = [m for m in msgs if m.role == "user" and not (m.extra or {}).get("injected")]
    assert [m.turn_id for m in users] == [m.id for m in users]
    assert len({m.turn_id for m in msgs if m.turn_id}) == 2
    assert all(m.extra["model"] == "gpt-5.1-codex-max" for m in msgs if m.role == "assistant")
    fact = next(r for _, r in rows if isinstance(r, ThreadFact))
    assert fact.thread_id == "019b04ae-b1c6-7c72-a134-a4c2de66058c"
    assert fact.fields["createdAt"] == "2025-12-09T19:55:16.295Z"
    assert fact.fields["metadata"] == {
        "provider": "codex",
        "cwd": "/Users/test_user/agent-sample",
        "originator": "codex_cli_rs",
        "version": "0.66.0",
        "modelProvider": "openai",
        "source": "cli",
        "gitBranch": "codex",
        "gitCommit": "1cea5ec49574a868eb98893e46bcb775539f798e",
    }
    kinds = report_kinds(rows)
    assert kinds[("duplicate", "user_message")] == 2 and kinds[("duplicate", "agent_reasoning")] == 6
    assert kinds[("metadata", "ghost_snapshot")] == 2


def test_agtrace_066_token_totals_hand_computed() -> None:
    """14 token_count lines: 1 with info null, 13 with totals. 0.66 writes each total
    twice, so 7 distinct cumulative totals remain (3505, 7216, 11031, 14739, 18584, 22601,
    26740 input). Their deltas are 3505+3711+3815+3708+3845+4017+4139 = 26740 input,
    3072+3072+3584+3072+3072+3072+3968 = 22912 cached, 101+40+26+37+128+38+38 = 408 output,
    64+0+0+0+64+0+0 = 128 reasoning: the final total, counted once. The neutral input
    leaves the cached part out (26740 - 22912); Codex's own figures stay beside it."""
    _, rows = parse_fixture(AGTRACE)
    assert sum(r.usage.extra["vendor"]["input_tokens"] for _, r in rows if isinstance(r, UsageRow)) == 26740
    assert usage_totals(rows) == {
        "input_tokens": 26740 - 22912,
        "cache_read_tokens": 22912,
        "output_tokens": 408,
        "reasoning_tokens": 128,
        "responses": 7,
    }
    skipped = [r.detail for _, r in rows if isinstance(r, Report) and r.reason == "token_count"]
    assert len(skipped) == 7 and skipped[0] == "info is null (rate limits only)"


def test_recorded_0171_counts_and_totals() -> None:
    data, rows = parse_fixture(RECORDED)
    msgs = messages(rows)
    assert Counter(m.role for m in msgs) == {"system": 1, "user": 3, "assistant": 4, "tool": 1}
    injected = [m for m in msgs if (m.extra or {}).get("injected")]
    assert [m.role for m in injected] == ["system", "user"]  # skills (developer), environment
    assert [b.text for m in msgs if m.role == "user" and m not in injected for b in m.content] == ["say hi and run echo", "and again"]
    # Codex's own turn ids (task_started / passthrough), not message ids
    assert {m.turn_id for m in msgs} == {"01a229dd-03e8-7903-9314-a4f9d54e881b", "01a229dd-05d8-73c1-9a5c-243b7fb82f12"}
    (call,) = blocks(msgs, ToolCall)
    assert (call.name, call.input) == ("exec_command", {"cmd": "echo hello-from-codex-mock"})
    (result,) = blocks(msgs, ToolResult)
    assert result.call_id == call.call_id == "call_mock0" and result.extra == {"exitCode": 0} and result.is_error is False
    assert all(m.extra["model"] == "gpt-5.1-codex" for m in msgs if m.role == "assistant")
    # usage from token_usage_record, never again from the token_count twin; it equals
    # the final cumulative total Codex reports on its last token_count line
    last = orjson.loads(split_lines(data)[29][1])["payload"]["info"]["total_token_usage"]
    totals = usage_totals(rows)
    assert totals == {
        "input_tokens": last["input_tokens"],
        "cache_read_tokens": last["cached_input_tokens"],
        "output_tokens": last["output_tokens"],
        "reasoning_tokens": last["reasoning_output_tokens"],
        "responses": 3,
    }
    assert (totals["input_tokens"], totals["output_tokens"]) == (60, 27)
    keys = [r.key for _, r in rows if isinstance(r, UsageRow)]
    assert keys == [f"codex:01a229dd-03c9-7373-8563-568dd22f194d:resp_mock{i}" for i in range(3)]
    fact = next(r for _, r in rows if isinstance(r, ThreadFact))
    assert fact.fields["metadata"]["version"] == "0.171.0" and fact.fields["metadata"]["model"] == "gpt-5.1-codex"


def test_g1_bare_counts() -> None:
    data, rows = parse_fixture(G1)
    msgs = messages(rows)
    assert Counter(m.role for m in msgs) == {"user": 6, "assistant": 33, "tool": 13}
    assert sum(1 for m in msgs if (m.extra or {}).get("injected")) == 2  # user_instructions, environment_context
    calls, results = blocks(msgs, ToolCall), blocks(msgs, ToolResult)
    assert len(calls) == 13 and [c.call_id for c in calls] == [r.call_id for r in results]
    assert calls[0].name == "task-master-ai__next_task" and calls[0].input == {"projectRoot": "/home/user/projects/codex-session-viewer"}
    reasoning_items = [m for m in msgs if m.extra["codexType"] == "reasoning"]
    assert len(reasoning_items) == 14
    redacted = [b for b in blocks(msgs, Reasoning) if b.redacted]
    assert len(redacted) == 5 and all(b.extra["encryptedContent"] for b in redacted)
    assert all(m.provenance.source_id.startswith("rs_") for m in reasoning_items)
    assert len({m.turn_id for m in msgs if m.turn_id}) == 4
    assert report_kinds(rows) == {("skipped", "record_type state"): 39}
    assert all(m.ts is None for m in msgs)  # G1 lines carry no timestamps
    facts = [r for _, r in rows if isinstance(r, ThreadFact)]
    assert facts[0].thread_id == "cf4def41-21e0-4b91-adb4-5397c1492084"
    assert facts[1].fields == {"metadata": {"cwd": "/home/user/projects/codex-session-viewer"}}


@pytest.mark.parametrize("name", [R020, R047])
def test_recorded_old_releases_read_whole(name: str) -> None:
    """0.20.0 and 0.47.0 (scripts/record_codex_old.py): every prompt, reasoning, text, call
    and result, in order, and the resumed turn in the same thread."""
    _, rows = parse_fixture(name)
    msgs = [m for m in messages(rows) if not (m.extra or {}).get("injected")]
    shown = [(m.role, type(b).__name__, getattr(b, "text", None) or getattr(b, "name", None)) for m in msgs for b in m.content]
    assert shown == [
        ("user", "Text", "[shell] Run two commands."),
        ("assistant", "Reasoning", "Two commands: one prints, one fails."),
        ("assistant", "Text", "Running echo."),
        ("assistant", "ToolCall", "shell"),
        ("tool", "ToolResult", None),
        ("assistant", "ToolCall", "shell"),
        ("tool", "ToolResult", None),
        ("assistant", "Text", "The second command failed as expected."),
        ("user", "Text", "[more] Say what the first printed."),
        ("assistant", "Text", "The first printed hello-from-shell."),
    ]
    calls, results = blocks(msgs, ToolCall), blocks(msgs, ToolResult)
    assert [c.input["command"][-1] for c in calls] == ["echo hello-from-shell", "ls /nonexistent-sesh-dir"]
    assert [c.call_id for c in calls] == [r.call_id for r in results]
    assert "hello-from-shell" in str(results[0].output) and "No such file" in str(results[1].output)
    assert len({m.thread_id for m in msgs}) == 1
    assert not [r for _, r in rows if isinstance(r, Report) and r.kind in ("unknown", "invalid", "parse_error")]


def test_047_counts_before_items_go_to_their_response() -> None:
    """Before 0.66 a response's token_count is written before its items (0.47.0 recorded:
    count, then reasoning/text/call; 0.66 writes it after them). Each count goes to its own
    response, the first assistant item after it; the repeated total counts once."""
    data, rows = parse_fixture(R047)
    msgs = {m.id: m for m in messages(rows)}
    usage = [r for _, r in rows if isinstance(r, UsageRow)]
    vendor = [(r.usage.extra["vendor"]["input_tokens"], r.usage.output_tokens) for r in usage]
    assert vendor == [(21, 159), (37, 62), (47, 57), (53, 56)]  # the mock's four responses
    firsts = [("Reasoning", "Two commands: one prints, one fails."), ("ToolCall", "shell"),
              ("Text", "The second command failed as expected."), ("Text", "The first printed hello-from-shell.")]
    got = [(type(msgs[r.message_id].content[0]).__name__,
            getattr(msgs[r.message_id].content[0], "text", None) or msgs[r.message_id].content[0].name) for r in usage]
    assert got == firsts
    assert msgs[usage[1].message_id].content[0].input["command"][-1] == "ls /nonexistent-sesh-dir"
    # read line by line from any cut, the held count lands on the same message
    for every in (1, 3):
        again = parse(data, R047, resume_every=every)
        assert [r.message_id for _, r in again if isinstance(r, UsageRow)] == [r.message_id for r in usage]


def test_g3_coverage_file_is_read_leniently() -> None:
    _, rows = parse_fixture(G3)
    msgs = messages(rows)
    (ws,) = blocks(msgs, WebSearch)
    assert ws.query == "example" and ws.call_id == "ws-1"
    atts = blocks(msgs, Attachment)
    assert len(atts) == 2 and all(a.extra == {"detail": "auto", "imageUrl": None} for a in atts)
    first_user = next(m for m in msgs if m.role == "user")
    assert first_user.turn_id == "019fc8be-0000-7000-8000-000000000001"
    assert [type(b) for b in first_user.content] == [Text, Attachment]
    encrypted_only = [b for b in blocks(msgs, Reasoning) if b.redacted]
    assert len(encrypted_only) == 1
    # later metas (subagent, forked) are lineage records, not the file's own thread
    facts = [r for _, r in rows if isinstance(r, ThreadFact)]
    assert facts[0].thread_id == "019fc8be-3658-7ca3-9e29-000000000000"
    assert any(f.fields.get("metadata", {}).get("subagent") for f in facts[1:])
    assert ("duplicate", "web_search_end") in report_kinds(rows)


def test_review_excerpt_imports() -> None:
    _, rows = parse_fixture(REVIEW)
    # the review prompt exists only as the event (no response item): it is the user message,
    # projected when review mode starts (issue 18; it was a "duplicate" of nothing before)
    (msg,) = messages(rows)
    assert msg.role == "user" and [b.text for b in msg.content] == ["ls"] and msg.ts == "2026-01-04T12:01:36.936Z"
    facts = [r for _, r in rows if isinstance(r, ThreadFact)]
    assert facts[0].thread_id == "019b88e0-0b0f-7bb0-a9ba-5cc2d8dffde9"
    assert facts[1].fields == {"metadata": {"model": "gpt-5.2-codex"}}  # cwd unchanged
    assert report_kinds(rows) == {("metadata", "user_message"): 1, ("warning", "user_message"): 1,
                                  ("metadata", "entered_review_mode"): 1}


# ---------------------------------------------------------------- invented lines


def test_unknown_future_types_never_crash() -> None:
    meta = line("2026-01-01T00:00:00.000Z", "session_meta", {"id": "t1", "timestamp": "2026-01-01T00:00:00.000Z"})
    lines = [
        meta,
        line("2026-01-01T00:00:01.000Z", "hologram_state", {"x": 1}),
        line("2026-01-01T00:00:02.000Z", "response_item", {"type": "telepathy_call", "call_id": "c1"}),
        line("2026-01-01T00:00:03.000Z", "event_msg", {"type": "quantum_event"}),
        line("2026-01-01T00:00:04.000Z", "response_item", {"type": "message", "role": "user", "content": [{"type": "input_smell", "x": 1}]}),
        line("2026-01-01T00:00:05.000Z", "response_item", "not an object"),  # type: ignore[arg-type]
        b"{not json",
        b"[1, 2]",
        orjson.dumps({"weird": True}),
        line("2026-01-01T00:00:06.000Z", "response_item", {"type": "function_call", "name": "x", "arguments": "not json{", "call_id": "c2"}),
        line("2026-01-01T00:00:07.000Z", "event_msg", {"type": "token_count", "info": {"total_token_usage": "bad"}}),
    ]
    data = b"\n".join(lines) + b"\n"
    rows = parse(data)
    assert unexplained_offsets(data, rows) == []
    kinds = report_kinds(rows)
    assert kinds[("unknown", "line type hologram_state")] == 1
    assert kinds[("unknown", "response_item telepathy_call")] == 1
    assert kinds[("unknown", "event_msg quantum_event")] == 1
    assert kinds[("parse_error", "invalid JSON")] == 1 and kinds[("parse_error", "not a JSON object")] == 1
    assert kinds[("invalid", "response_item: payload is not an object")] == 1
    assert kinds[("unknown", "line without type")] == 1
    msgs = messages(rows)
    unknown = blocks(msgs, Unknown)
    assert [u.source_type for u in unknown] == ["telepathy_call", "input_smell"]
    assert unknown[0].raw == {"type": "telepathy_call", "call_id": "c1"}
    call = blocks(msgs, ToolCall)[0]
    assert call.input == "not json{" and call.extra == {"argumentsNotJson": True}


def test_g0_typescript_document() -> None:
    """The TS CLI's pretty-printed JSON, built from the format notes (no real sample)."""
    doc = {
        "session": {"timestamp": "2025-04-20T10:00:00.000Z", "id": "7f3c2a9e-1111-4222-8333-944445555666", "instructions": "be terse"},
        "items": [
            {"type": "message", "id": "msg_u1", "role": "user", "content": [
                {"type": "input_text", "text": "show me a cat"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ]},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}]},
            {"type": "function_call", "id": "fc_1", "name": "shell", "call_id": "call_1",
             "arguments": "{\"command\":[\"apply_patch\",\"*** Begin Patch\\n*** Update File: a.py\\n@@\\n-x\\n+y\\n*** Delete File: b.py\\n*** End Patch\"]}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"output\":\"Done!\",\"metadata\":{\"exit_code\":0,\"duration_seconds\":0.1}}"},
            {"type": "message", "id": "msg_a1", "role": "assistant", "content": [{"type": "output_text", "text": "meow"}]},
        ],
    }
    data = orjson.dumps(doc, option=orjson.OPT_INDENT_2)
    assert ADAPTER.detect(data)
    rows = parse(data, "rollout-2025-04-20-7f3c2a9e.json", kind=SNAPSHOT)
    assert {off for off, _ in rows} == {0}
    fact = rows[0][1]
    assert isinstance(fact, ThreadFact) and fact.thread_id == "7f3c2a9e-1111-4222-8333-944445555666"
    msgs = messages(rows)
    assert [m.role for m in msgs] == ["user", "assistant", "assistant", "tool", "assistant"]
    att = msgs[0].content[1]
    assert isinstance(att, Attachment) and (att.media_type, att.data) == ("image/png", "iVBORw0KGgo=")
    changes = blocks(msgs, FileChange)
    assert [(c.path, c.extra["op"]) for c in changes] == [("a.py", "update"), ("b.py", "delete")]
    assert changes[0].patch == "*** Update File: a.py\n@@\n-x\n+y"
    assert blocks(msgs, ToolResult)[0].extra == {"exitCode": 0, "durationSeconds": 0.1}
    # a new generation of the same document yields the same ids
    assert [m.id for m in messages(parse(data, "rollout-2025-04-20-7f3c2a9e.json", kind=SNAPSHOT))] == [m.id for m in msgs]


def test_image_url_and_local_image_paths() -> None:
    lines = [
        line("2026-01-01T00:00:00.000Z", "session_meta", {"id": "t1", "timestamp": "2026-01-01T00:00:00.000Z"}),
        line("2026-01-01T00:00:01.000Z", "event_msg", {"type": "user_message", "message": "look", "local_images": ["/tmp/a.png"]}),
        line("2026-01-01T00:00:01.001Z", "response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "https://example.invalid/a.png"}]}),
    ]
    data = b"\n".join(lines) + b"\n"
    (msg,) = messages(parse(data))
    assert msg.content[1] == Attachment(uri="https://example.invalid/a.png")
    assert msg.extra["localImages"] == ["/tmp/a.png"]


def test_parse_patch_move() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-1\n+2\n*** Add File: c.py\n+hi\n*** End Patch"
    assert parse_patch(patch) == [
        ("update", "a.py", "*** Update File: a.py\n*** Move to: b.py\n@@\n-1\n+2", "b.py"),
        ("add", "c.py", "*** Add File: c.py\n+hi", None),
    ]


# ---------------------------------------------------------------- forks


def _parent_and_child() -> tuple[bytes, bytes]:
    pm = {"id": "parent-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
    history = [
        ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}),
        ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}),
        ("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2, "reasoning_output_tokens": 0, "total_tokens": 12}}}),
        ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}),
    ]
    parent = [line("2026-01-01T00:00:00.000Z", "session_meta", pm)]
    parent += [line(f"2026-01-01T00:00:0{i + 1}.000Z", k, p) for i, (k, p) in enumerate(history)]
    child = [
        line("2026-01-02T00:00:00.000Z", "session_meta", {"id": "child-1", "forked_from_id": "parent-1", "timestamp": "2026-01-02T00:00:00.000Z", "cwd": "/c"}),
        line("2026-01-02T00:00:00.001Z", "session_meta", pm),
    ]
    # the replay is written in one burst when the fork is created
    child += [line("2026-01-02T00:00:00.002Z", k, p) for k, p in history]
    child += [
        line("2026-01-02T00:00:09.000Z", "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]}),
        line("2026-01-02T00:00:10.000Z", "event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 25, "cached_input_tokens": 5, "output_tokens": 5, "reasoning_output_tokens": 1, "total_tokens": 30}}}),
    ]
    return b"\n".join(parent) + b"\n", b"\n".join(child) + b"\n"


def test_fork_replay_is_stored_once() -> None:
    parent_data, child_data = _parent_and_child()
    parent_rows = parse(parent_data, "rollout-p.jsonl")
    child_rows = parse(child_data, "rollout-c.jsonl")
    assert rows_dump(parse(child_data, "rollout-c.jsonl", resume_every=1)) == rows_dump(child_rows)
    pm, cm = messages(parent_rows), messages(child_rows)
    # the two "hello"s of the parent differ (occurrence counter); the replay repeats both ids
    assert len({m.id for m in pm}) == 3
    assert [m.id for m in cm[:3]] == [m.id for m in pm]
    # same message apart from the line time (Codex restamps the replay)
    assert [{**m.to_dict(), "ts": None} for m in cm[:3]] == [{**m.to_dict(), "ts": None} for m in pm]
    own = cm[3]
    assert own.thread_id == "child-1" and own.id not in {m.id for m in pm}
    facts = [r for _, r in child_rows if isinstance(r, ThreadFact)]
    assert facts[0].thread_id == "child-1" and facts[0].fields["parentThreadId"] == "parent-1"
    assert facts[-1] == ThreadFact("child-1", {"originMessageId": pm[-1].id})
    # usage: the replayed response has the parent's key; the child's own response is the
    # delta over the parent's cumulative total (25-10 input of which 5 cached, 5-2 output)
    p_keys = {r.key for _, r in parent_rows if isinstance(r, UsageRow)}
    c_usage = [r for _, r in child_rows if isinstance(r, UsageRow)]
    assert c_usage[0].key in p_keys
    assert c_usage[1].thread_id == "child-1"
    assert (c_usage[1].usage.input_tokens, c_usage[1].usage.cache_read_tokens, c_usage[1].usage.output_tokens) == (10, 5, 3)
    assert c_usage[1].usage.extra["vendor"]["input_tokens"] == 15


# ---------------------------------------------------------------- locations


def test_locations_classify_detect(tmp_path: Path) -> None:
    home = tmp_path
    assert ADAPTER.default_roots({}, home) == [home / ".codex/sessions", home / ".codex/archived_sessions"]
    assert ADAPTER.default_roots({"CODEX_HOME": str(tmp_path / "ch")}, home) == [tmp_path / "ch/sessions", tmp_path / "ch/archived_sessions"]
    base = Path("sessions/2025/12/10")
    assert ADAPTER.classify(base / "rollout-2025-12-10T04-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl") == LINES
    assert ADAPTER.classify(base / "rollout-2025-12-10T04-55-16-019b04ae-b1c6-7c72-a134-a4c2de66058c.jsonl.zst") == LINES
    assert ADAPTER.classify(Path("sessions/rollout-2025-04-20-7f3c2a9e.json")) == SNAPSHOT
    assert ADAPTER.classify(Path("history.jsonl")) == LINES  # the prompt history, a side file (issue 38)
    assert ADAPTER.classify(Path("session_index.jsonl")) is None
    for name in (AGTRACE, G1, G3, RECORDED, REVIEW):
        assert ADAPTER.detect((FIX / name).read_bytes()[:65536]), name
    assert not ADAPTER.detect(b'{"v":1,"id":"x","createdAt":"2025-01-01T00:00:00Z"}\n')
    assert not ADAPTER.detect(b"not json")


def test_unknown_line_with_multibyte_text_is_reported_as_unknown():
    """The report keeps the start of the record; a cut inside a UTF-8 sequence must not turn
    an unknown line into a parser failure."""
    from archive.vendors.base import UNKNOWN

    line = orjson.dumps({"timestamp": "2026-01-01T00:00:00Z", "type": "brand_new", "payload": {"t": "é" * 1500}})
    rows = [r for _o, r in parse_bytes(ADAPTER, line + b"\n", source_for(Path("x.jsonl"), "codex"))]
    assert [(r.kind, r.reason) for r in rows] == [(UNKNOWN, "line type brand_new")]


def test_usage_records_without_response_id_or_total_each_count():
    meta = {"timestamp": "2026-08-03T10:48:56.000Z", "type": "session_meta",
            "payload": {"id": "019fc8be-3658-7ca3-9e29-000000000000", "timestamp": "2026-08-03T10:48:56.000Z",
                        "cwd": "/tmp/repo", "originator": "codex_cli_rs", "cli_version": "0.171.0"}}  # fmt: skip
    records = [{"timestamp": f"2026-08-03T10:49:0{i}.000Z", "type": "token_usage_record",
                "payload": {"usage": {"input_tokens": 10 * i, "cached_input_tokens": 0, "output_tokens": i}}}
               for i in (1, 2)]  # fmt: skip
    data = b"".join(orjson.dumps(d) + b"\n" for d in [meta, *records])
    rows = [r for _o, r in parse_bytes(ADAPTER, data, source_for(Path("rollout.jsonl"), "codex"))]
    usage = [r for r in rows if type(r).__name__ == "UsageRow"]
    assert len({u.key for u in usage}) == 2 and sorted(u.usage.output_tokens for u in usage) == [1, 2]
