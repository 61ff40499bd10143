"""Test helpers shared by the adapter tests: run a parser over a file, check resumability,
compare with golden files."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from archive.model import Message, Text, ToolCall, ToolResult
from archive.vendors.base import (
    LINES,
    Adapter,
    BlobRow,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
)


def split_lines(data: bytes) -> list[tuple[int, bytes]]:
    """(offset, line without newline) for every complete line, as ingest feeds them."""
    out, pos = [], 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            break
        out.append((pos, data[pos:nl]))
        pos = nl + 1
    return out


def source_for(path: Path, provider: str, kind: str = LINES, source_id: str = "src-test") -> SourceInfo:
    return SourceInfo(source_id=source_id, provider=provider, path=str(path), generation=1, kind=kind)


def parse_bytes(adapter: Adapter, data: bytes, source: SourceInfo, resume_every: int | None = None) -> list[tuple[int, Row]]:
    """Feed every line; with resume_every=k, rebuild the parser from a JSON round trip of
    its state every k lines (what ingest does between batches and runs)."""
    parser = adapter.parser(source, None)
    rows: list[tuple[int, Row]] = []
    lines = split_lines(data) if source.kind == LINES else [(0, data)]
    for i, (offset, line) in enumerate(lines):
        if resume_every and i and i % resume_every == 0:
            state = orjson.loads(orjson.dumps(parser.state()))
            parser = adapter.parser(source, state)
        rows.extend((offset, r) for r in parser.feed(offset, line))
    return rows


def row_to_json(row: Row) -> dict[str, Any]:
    if isinstance(row, MessageRow):
        return {"message": row.message.to_dict()}
    if isinstance(row, ThreadFact):
        return {"thread": row.thread_id, "fields": row.fields}
    if isinstance(row, UsageRow):
        d = dataclasses.asdict(row)
        d["usage"] = row.usage.to_dict()
        return {"usage": d}
    if isinstance(row, BlobRow):
        import hashlib

        return {"blob": hashlib.sha256(row.data).hexdigest(), "mediaType": row.media_type}
    if isinstance(row, Report):
        return {"report": dataclasses.asdict(row)}
    raise TypeError(row)


def rows_dump(rows: list[tuple[int, Row]]) -> bytes:
    """A stable, reviewable dump: one JSON object per row, prefixed by the line offset."""
    out = [orjson.dumps({"offset": off, **row_to_json(r)}, option=orjson.OPT_SORT_KEYS) for off, r in rows]
    return b"\n".join(out) + b"\n"


def check_golden(path: Path, actual: bytes, update: bool) -> None:
    if update or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(actual)
        if not update:
            raise AssertionError(f"golden file {path} was missing and has been written; review and rerun")
        return
    expected = path.read_bytes()
    assert actual == expected, f"output differs from {path}; rerun with --update-golden and review the diff"


def report_kinds(rows: list[tuple[int, Row]]) -> Counter[tuple[str, str]]:
    return Counter((r.kind, r.reason) for _, r in rows if isinstance(r, Report))


def unexplained_offsets(data: bytes, rows: list[tuple[int, Row]]) -> list[int]:
    """Offsets of non-blank lines for which the parser yielded nothing (ingest would flag them)."""
    seen = {off for off, _ in rows}
    return [off for off, line in split_lines(data) if line.strip() and off not in seen]


def tool_name(name: str, target: str) -> str:
    # Claude Code accepts tool names of [A-Za-z0-9_-]{1,64}; its emitter rewrites others (counted)
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "tool" if target == "claude-code" else name


def conversation(messages) -> list[tuple]:
    """What must survive any hand-off: user and assistant texts, tool calls (name) and
    results (text), in order. Injected context, system messages and reasoning are reported
    transformations, not compared."""
    out: list[tuple] = []
    for m in messages:
        if (m.extra or {}).get("injected") or m.role == "system":
            continue
        for b in m.content:
            if isinstance(b, Text) and b.text.strip():
                out.append(("text", m.role if m.role != "tool" else "user", b.text.strip()))
            elif isinstance(b, ToolCall):
                out.append(("call", b.name))
            elif isinstance(b, ToolResult):
                out.append(("result", b.output if isinstance(b.output, str) else None))
    return out


def assert_same_conversation(before: list[Message], after: list[Message], target: str, label: str = "") -> None:
    """A hand-off to ``target`` kept the conversation: the same tool calls in order, every
    assistant text, and (where the target keeps them) the tool results."""
    b, a = conversation(before), conversation(after)
    if target == "clm":  # clm keeps no error flags and joins text blocks; compare texts and calls
        b = [x for x in b if x[0] != "result"]
        a = [x for x in a if x[0] != "result"]
    assert [x[1] for x in a if x[0] == "call"] == [tool_name(x[1], target) for x in b if x[0] == "call"], label
    assert {x for x in a if x[0] == "text"} >= {x for x in b if x[0] == "text" and x[1] == "assistant"}, label
