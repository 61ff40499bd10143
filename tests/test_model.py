"""Canonical model: seed camelCase round trips, forward compatibility, JSONL readability."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from archive.model import (
    Attachment,
    FileChange,
    Message,
    ModelError,
    Provenance,
    Reasoning,
    Text,
    Thread,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
    WebSearch,
    block_from_dict,
)

EVERY_BLOCK = [
    {"type": "text", "text": "hello"},
    {"type": "reasoning", "text": "thinking", "signature": "sig=="},
    {"type": "reasoning", "redacted": True},
    {"type": "tool_call", "callId": "c1", "name": "Bash", "input": {"command": "ls"}},
    {"type": "tool_result", "callId": "c1", "output": "a\nb", "isError": True},
    {"type": "tool_result", "callId": "c2", "output": [{"type": "text", "text": "x"}]},
    {"type": "file_change", "callId": "c3", "path": "a.py", "patch": "@@ -1 +1 @@\n-a\n+b\n"},
    {"type": "web_search", "callId": "w1", "query": "sqlite fts5", "results": [{"url": "u"}]},
    {"type": "attachment", "mediaType": "image/png", "data": "aGVsbG8="},
    {"type": "attachment", "uri": "file:///tmp/x.png"},
    {"type": "unknown", "sourceType": "server_tool_use", "raw": {"type": "server_tool_use", "id": 1}},
]


@pytest.mark.parametrize("d", EVERY_BLOCK, ids=lambda d: d["type"])
def test_block_round_trip(d):
    block = block_from_dict(d)
    assert not isinstance(block, Unknown) or d["type"] == "unknown"
    assert block.to_dict() == d


def test_block_classes():
    assert isinstance(block_from_dict(EVERY_BLOCK[0]), Text)
    assert isinstance(block_from_dict(EVERY_BLOCK[1]), Reasoning)
    assert block_from_dict(EVERY_BLOCK[1]).extra == {"signature": "sig=="}
    assert isinstance(block_from_dict(EVERY_BLOCK[3]), ToolCall)
    assert block_from_dict(EVERY_BLOCK[4]).is_error is True
    assert isinstance(block_from_dict(EVERY_BLOCK[6]), FileChange)
    assert isinstance(block_from_dict(EVERY_BLOCK[7]), WebSearch)
    assert isinstance(block_from_dict(EVERY_BLOCK[8]), Attachment)


def test_unknown_block_type_is_kept_raw_not_raised():
    d = {"type": "hologram", "frames": [1, 2]}
    block = block_from_dict(d)
    assert isinstance(block, Unknown)
    assert block.source_type == "hologram" and block.raw == d
    # a known type missing its required fields is also kept, never an exception
    bad = block_from_dict({"type": "tool_call", "name": "x"})
    assert isinstance(bad, Unknown) and bad.raw == {"type": "tool_call", "name": "x"}
    assert isinstance(block_from_dict("just a string"), Unknown)


def test_message_and_thread_round_trip():
    m = {
        "v": 1, "id": "m1", "threadId": "t1", "turnId": "m0", "parentId": "m0", "role": "assistant",
        "ts": "2026-01-01T00:00:00Z", "runId": "r1", "content": EVERY_BLOCK,
        "usage": {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 3, "cacheWriteTokens": 4, "reasoningTokens": 5},
        "provenance": {"provider": "claude-code", "channel": "session-file", "sessionId": "s", "sourceId": "u",
                       "sidechain": False, "requestId": "req"},
        "raw": {"anything": [1]}, "model": "claude-x",
    }  # fmt: skip
    msg = Message.from_dict(m)
    assert msg.to_dict() == m
    assert msg.usage == Usage(1, 2, 3, 4, 5)
    assert msg.provenance == Provenance("claude-code", "session-file", "s", "u", False, {"requestId": "req"})
    t = {"v": 1, "id": "t1", "agentId": "a", "parentThreadId": "p", "originMessageId": "m0", "title": "T",
         "createdAt": "2026-01-01T00:00:00Z", "metadata": {"cwd": "/x"}}  # fmt: skip
    assert Thread.from_dict(t).to_dict() == t


def test_version_and_required_fields():
    with pytest.raises(ModelError):
        Message.from_dict({"v": 2, "id": "m", "threadId": "t", "role": "user", "ts": None, "content": []})
    with pytest.raises(ModelError):
        Message.from_dict({"v": 1, "id": "m", "role": "user"})
    with pytest.raises(ModelError):
        Thread.from_dict({"v": 1, "id": "t"})
    assert Message(id="m", thread_id="t", role="user", ts=None).to_dict()["v"] == 1


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=20))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8,
)
ids = st.text(min_size=1, max_size=12)
blocks = st.one_of(
    st.builds(Text, text=st.text()),
    st.builds(Reasoning, text=st.one_of(st.none(), st.text()), redacted=st.one_of(st.none(), st.booleans())),
    st.builds(ToolCall, call_id=ids, name=ids, input=json_values),
    st.builds(ToolResult, call_id=ids, output=json_values, is_error=st.one_of(st.none(), st.booleans())),
    st.builds(FileChange, call_id=st.one_of(st.none(), ids), path=st.one_of(st.none(), st.text()),
              patch=st.one_of(st.none(), st.text())),
    st.builds(WebSearch, call_id=st.one_of(st.none(), ids), query=st.text(), results=json_values),
    st.builds(Attachment, media_type=st.one_of(st.none(), st.text(max_size=10)), uri=st.one_of(st.none(), st.text()),
              data=st.one_of(st.none(), st.text(), st.just("aGVsbG8=")),
              extra=st.one_of(st.none(), st.just({"callId": "c1", "text": "caption", "path": "/x.png"}))),
    st.builds(Unknown, source_type=st.text(max_size=10), raw=json_values),
)  # fmt: skip
messages = st.builds(
    Message,
    id=ids,
    thread_id=ids,
    role=st.sampled_from(["user", "assistant", "system", "tool"]),
    ts=st.one_of(st.none(), st.just("2026-01-01T00:00:00Z")),
    content=st.lists(blocks, max_size=5).map(tuple),
    turn_id=st.one_of(st.none(), ids),
    parent_id=st.one_of(st.none(), ids),
    usage=st.one_of(st.none(), st.builds(Usage, input_tokens=st.one_of(st.none(), st.integers(0, 10**9)),
                                         output_tokens=st.one_of(st.none(), st.integers(0, 10**9)))),
    provenance=st.one_of(st.none(), st.builds(Provenance, provider=st.sampled_from(["claude-code", "codex", "clm"]))),
    raw=json_values,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(messages)
def test_property_message_round_trip_through_jsonl(msg):
    line = orjson.dumps(msg.to_dict())
    assert b"\n" not in line
    back = Message.from_dict(orjson.loads(line))
    assert back == msg
    assert back.to_dict() == msg.to_dict()


def test_jsonl_file_is_read_line_by_line_by_orjson(tmp_path):
    from archive.store import JsonlMessageStore

    path = tmp_path / "store.jsonl"
    store = JsonlMessageStore(path)
    store.put_thread(Thread(id="t", created_at="2026-01-01T00:00:00Z", title="line\nbreak"))
    store.append_message(Message(id="m", thread_id="t", role="user", ts=None, content=(Text("a\nb\u2028c"),)))
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    records = [orjson.loads(x) for x in lines[:-1]]
    assert records[0]["v"] == 1 and records[1]["content"][0]["text"] == "a\nb\u2028c"
