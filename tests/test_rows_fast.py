"""rows.block_tuple and rows.message_values (the rows ingest builds without a dict per
block or message, issue 37) give exactly the values of the general, dict-based way: for
hand-made edge cases of every block type and for every message of the golden files."""

from __future__ import annotations

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
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
    WebSearch,
)
from archive.rows import (
    _BLOCK_COL_NAMES,
    LINE_REF,
    LINE_REF_MIN,
    _block_row_general,
    block_row,
    block_tuple,
    dumps,
    message_columns,
    message_values,
)

GOLDEN = Path(__file__).parent / "golden"


def _reference_message_columns(msg: Message, line_backed: tuple[str, ...] = ()) -> dict[str, Any]:
    """message_columns as it was before issue 37 (a dict, always a copy of ``extra``)."""
    extra = dict(msg.extra or {})
    if msg.raw is not None:
        extra["raw"] = msg.raw
    for k in line_backed:
        v = extra.get(k)
        if isinstance(v, (dict, list, str)) and len(v) and len(dumps(v)) >= LINE_REF_MIN:
            extra[k] = {LINE_REF: k}
    model = extra.get("model")
    return {
        "id": msg.id,
        "thread_id": msg.thread_id,
        "role": msg.role,
        "ts": msg.ts,
        "turn_id": msg.turn_id,
        "parent_id": msg.parent_id,
        "run_id": msg.run_id,
        "model": model if isinstance(model, str) else None,
        "injected": 1 if extra.get("injected") else 0,
        "provenance": dumps(msg.provenance.to_dict()) if msg.provenance else None,
        "usage": dumps(msg.usage.to_dict()) if msg.usage else None,
        "extra": dumps(extra) if extra else None,
    }


EDGE_BLOCKS = [
    Text("hello"),
    Text(None),  # type: ignore[arg-type]
    Text("x", extra={"cache_control": {"type": "ephemeral"}}),
    Text("x", extra={}),
    Text(None, extra={"text": "from extra"}),  # type: ignore[arg-type]
    Reasoning("why", True),
    Reasoning("why", False, extra={"signature": "abc"}),
    Reasoning(None, None),
    ToolCall("c1", "Bash", {"command": "ls", "n": [1, 2.5, None]}),
    ToolCall("c1", "", None),
    ToolCall(None, "Read", "a string input"),  # type: ignore[arg-type]
    ToolCall("c2", "Edit", {"a": 1}, extra={"caller": "x", "type": "ignored"}),
    ToolResult("c1", "out", False),
    ToolResult("c1", "out", True),
    ToolResult("c1", None, None),
    ToolResult("c1", [{"type": "text", "text": "a"}, {"type": "image"}], None),
    ToolResult("c1", {"stdout": "a", "code": 0}, None, extra={"duration": 3}),
    ToolResult(None, "", None),  # type: ignore[arg-type]
    FileChange("c1", "a.py", "@@ -1 +1 @@"),
    FileChange(None, None, None),
    FileChange("c1", "a.py", None, extra={"kind": "add"}),
    WebSearch("c1", "query", [{"url": "u"}]),
    WebSearch(None, "query", None),
    WebSearch(None, "q", {"r": 1}, extra={"results": "shadowed", "x": 1}),
    Attachment("image/png", None, "aGVsbG8="),
    Attachment("image/png", "file:///a.png", None),
    Attachment(None, None, "not base64!"),
    Attachment("image/png", None, None, extra={"blobSha256": "0" * 64}),
    Unknown("weird", {"a": 1}),
    Unknown("weird", None),
    Unknown(None, [1, 2]),  # type: ignore[arg-type]
    Unknown("weird", {"a": 1}, extra={"more": True}),
    # an extra that names no seed field: the fast way, the extra after the type's other fields
    Text(None, extra={"x": 1}),  # type: ignore[arg-type]
    ToolCall(None, "Bash", None, extra={"caller": {"type": "direct"}}),  # type: ignore[arg-type]
    ToolResult("c1", {"a": [1]}, True, extra={"exitCode": 0}),
    FileChange(None, "a.py", None, extra={"op": "update"}),
    WebSearch("c1", "q", [1], extra={"x": 1, "y": None}),
    WebSearch("c1", "q", None, extra={"x": 1}),
    Attachment("image/png", "u", "aGVsbG8=", extra={"name": "a.png"}),
    Attachment("image/png", "u", None, extra={"name": "a.png"}),
    Reasoning("r", None, extra={"signature": "s", "encryptedContent": "e"}),
    # an extra naming a seed field: the general way
    ToolCall(None, "Bash", None, extra={"callId": "from extra"}),  # type: ignore[arg-type]
    Attachment("image/png", "u", None, extra={"data": "aGVsbG8="}),
    Unknown("weird", None, extra={"raw": 1, "z": 2}),
]


@pytest.mark.parametrize("block", EDGE_BLOCKS, ids=lambda b: f"{type(b).__name__}")
@pytest.mark.parametrize("sha", [None, "f" * 64])
def test_block_tuple_equals_the_general_row(block: Any, sha: str | None) -> None:
    general = _block_row_general("m1", 3, block, sha)
    assert block_tuple("m1", 3, block, sha) == tuple(general[c] for c in _BLOCK_COL_NAMES)
    assert block_row("m1", 3, block, sha) == general
    assert list(block_row("m1", 3, block, sha)) == list(_BLOCK_COL_NAMES)


def _golden_messages() -> list[Message]:
    out = []
    for path in sorted(GOLDEN.rglob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            d = orjson.loads(line)
            if isinstance(d, dict) and isinstance(d.get("message"), dict):
                out.append(Message.from_dict(d["message"]))
    return out


def test_golden_messages_rows_equal_the_general_rows() -> None:
    messages = _golden_messages()
    assert len(messages) > 1000
    blocks = 0
    for msg in messages:
        for i, b in enumerate(msg.content):
            general = _block_row_general(msg.id, i, b, None)
            assert block_tuple(msg.id, i, b, None) == tuple(general[c] for c in _BLOCK_COL_NAMES), (msg.id, i)
            blocks += 1
        keys = tuple((msg.extra or {}).keys())
        for line_backed in ((), keys, ("toolUseResult", "payload")):
            ref = _reference_message_columns(msg, line_backed)
            assert message_columns(msg, line_backed) == ref
            assert message_values(msg, line_backed) == tuple(ref.values())
    assert blocks > 1000


@pytest.mark.parametrize(
    "msg",
    [
        Message("m", "t", "user", None),
        Message("m", "t", "assistant", "2026-01-01T00:00:00Z", raw={"a": 1}, extra={"model": "x", "injected": True}),
        Message("m", "t", "assistant", None, extra={"model": 3, "injected": 0}),
        Message("m", "t", "assistant", None, extra={}),
        Message("m", "t", "user", None, usage=Usage(1, 2, extra={"k": 1}), provenance=Provenance("p", session_id="s")),
        Message("m", "t", "user", None, extra={"big": "x" * LINE_REF_MIN, "small": "y", "esc": '"' * 1100}),
    ],
)
def test_message_values_equal_the_reference(msg: Message) -> None:
    for line_backed in ((), ("big", "small", "esc", "absent")):
        ref = _reference_message_columns(msg, line_backed)
        assert message_columns(msg, line_backed) == ref
        assert message_values(msg, line_backed) == tuple(ref.values())
