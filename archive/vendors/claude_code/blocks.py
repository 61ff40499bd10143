"""Stateless helpers of the Claude Code parser: line decoding, content blocks, file changes
from edits, persisted tool output (``parse.py`` re-exports them)."""

from __future__ import annotations

import base64
import difflib
import hashlib
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    FileChange,
    JsonObject,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
)
from ..base import loads_line
from ..base import nonempty_str as _str
from ..base import (
    PARSE_ERROR,
    WARNING,
    Report,
    stable_id,
)

EDIT_TOOLS = {"Edit", "MultiEdit", "Write"}
BLOOM_BYTES = 4096


# ---------------------------------------------------------------- small helpers


def _as_text(content: Any) -> str | None:
    """The first text of a message content (string or list of blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                return str(b["text"])
    return None


def _hash(text: str | None) -> str | None:
    return stable_id(text, length=16) if text is not None else None


_THREE_WORDS = struct.Struct(">III")


class _Bloom:
    """A fixed-size Bloom filter of uuids: 'not seen' answers are exact, so a dangling-parent
    warning is never false, while the state stays a few KiB however long the file is."""

    def __init__(self, packed: str | None) -> None:
        self.bits = bytearray(zlib.decompress(base64.b64decode(packed))) if packed else bytearray(BLOOM_BYTES)

    def _positions(self, key: str) -> list[int]:
        h = hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()
        return [x % (BLOOM_BYTES * 8) for x in _THREE_WORDS.unpack_from(h)]  # bytes 0-3, 4-7, 8-11, big-endian

    def add(self, key: str) -> None:
        for p in self._positions(key):
            self.bits[p >> 3] |= 1 << (p & 7)

    def __contains__(self, key: str) -> bool:
        return all(self.bits[p >> 3] & (1 << (p & 7)) for p in self._positions(key))

    def pack(self) -> str:
        return base64.b64encode(zlib.compress(bytes(self.bits), 1)).decode("ascii")


def _loads(line: bytes) -> tuple[list[Any], list[Report]]:
    """Decode one line into records. Handles NUL padding, invalid UTF-8 and a torn record
    glued to the next one (claude-code#52387: ``..."prNu{"parentUuid"...``)."""
    reports: list[Report] = []
    if b"\x00" in line:
        # ext4 delayed allocation after a crash leaves NUL runs (claude-code#49876)
        stripped = line.replace(b"\x00", b"")
        reports.append(Report(PARSE_ERROR, "NUL bytes", f"{len(line) - len(stripped)} NUL bytes removed"))
        line = stripped
        if not line.strip():
            return [], reports
    try:
        value, warning = loads_line(line)  # a lone surrogate escape: U+FFFD and a warning
        return [value], reports + ([warning] if warning else [])
    except orjson.JSONDecodeError:
        pass
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "replace")
        try:
            value = orjson.loads(text)
            reports.append(Report(WARNING, "invalid UTF-8", "undecodable bytes replaced by U+FFFD"))
            return [value], reports
        except orjson.JSONDecodeError:
            pass
    # Glued records: try each '{"' that valid JSON could not have put there (a nested
    # object follows ':', ',', '[' or whitespace), leftmost first.
    for m in re.finditer(r'\{"', text):
        p = m.start()
        if p == 0 or text[p - 1] in ':,[ \t\r\n':
            continue
        try:
            tail = orjson.loads(text[p:])
        except orjson.JSONDecodeError:
            continue
        records: list[Any] = []
        try:
            records.append(orjson.loads(text[:p]))
            reports.append(Report(PARSE_ERROR, "glued records", f"two records on one line, split at {p}"))
        except orjson.JSONDecodeError:
            reports.append(Report(PARSE_ERROR, "torn record", f"{p} bytes of a torn record before a glued one"))
        records.append(tail)
        return records, reports
    reports.append(Report(PARSE_ERROR, "invalid JSON", text[:200]))
    return [], reports


# ---------------------------------------------------------------- content blocks


def _patch_from_hunks(path: str, hunks: list[Any]) -> str:
    out = [f"--- a/{path.lstrip('/')}", f"+++ b/{path.lstrip('/')}"]
    for h in hunks:
        if not isinstance(h, dict):
            continue
        out.append(f"@@ -{h.get('oldStart', 0)},{h.get('oldLines', 0)} +{h.get('newStart', 0)},{h.get('newLines', 0)} @@")
        out.extend(str(x) for x in h.get("lines") or [])
    return "\n".join(out) + "\n"


def _patch_for_create(path: str, content: str) -> str:
    lines = content.splitlines()
    out = ["--- /dev/null", f"+++ b/{path.lstrip('/')}", f"@@ -0,0 +1,{len(lines)} @@"]
    out.extend("+" + x for x in lines)
    return "\n".join(out) + "\n"


def _file_change(call_id: str, name: str | None, tur: Any) -> FileChange | None:
    """A FileChange from an Edit/MultiEdit/Write ``toolUseResult`` (structured copy of the
    result that Claude Code keeps beside the model-visible text)."""
    if not isinstance(tur, dict) or not isinstance(tur.get("filePath"), str):
        return None
    if name is not None and name not in EDIT_TOOLS:
        return None
    path = tur["filePath"]
    hunks = tur.get("structuredPatch")
    if isinstance(hunks, list) and hunks:
        kind = "update" if tur.get("type") == "update" else ("create" if tur.get("type") == "create" else "edit")
        return FileChange(call_id=call_id, path=path, patch=_patch_from_hunks(path, hunks), extra={"kind": kind})
    if tur.get("type") == "create" and isinstance(tur.get("content"), str):
        return FileChange(call_id=call_id, path=path, patch=_patch_for_create(path, tur["content"]), extra={"kind": "create"})
    old, new = tur.get("oldString"), tur.get("newString")
    if isinstance(old, str) and isinstance(new, str):
        diff = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{path.lstrip('/')}", f"b/{path.lstrip('/')}", lineterm="")
        return FileChange(call_id=call_id, path=path, patch="\n".join(diff) + "\n", extra={"kind": "edit"})
    if name in EDIT_TOOLS:
        return FileChange(call_id=call_id, path=path, extra={"kind": "edit"})
    return None


def _attachment(b: JsonObject, **extra: Any) -> Attachment:
    src = b.get("source") if isinstance(b.get("source"), dict) else {}
    ex: JsonObject = {k: v for k, v in b.items() if k not in ("type", "source")}
    ex.update(extra)
    if b.get("type") != "image":
        ex["kind"] = b.get("type")
    stype = src.get("type")
    if stype == "base64":
        return Attachment(media_type=src.get("media_type"), data=src.get("data"), extra=ex or None)
    if stype == "url":
        return Attachment(media_type=src.get("media_type"), uri=src.get("url"), extra=ex or None)
    ex["source"] = src  # text/file sources: kept whole
    return Attachment(media_type=src.get("media_type"), extra=ex)


def _block(b: Any) -> list[Block]:
    """One Claude content block -> canonical blocks (tool_result handled by the caller)."""
    if not isinstance(b, dict):
        return [Unknown(source_type=type(b).__name__, raw=b)]
    t = b.get("type")
    rest = {k: v for k, v in b.items() if k != "type"}
    if t == "text":
        ex = {k: v for k, v in rest.items() if k != "text"}
        return [Text(text=str(b.get("text", "")), extra=ex or None)]
    if t == "thinking":
        # the signature must go back byte-identical, or a resumed session's API call fails
        ex = {k: v for k, v in rest.items() if k != "thinking"}
        return [Reasoning(text=b.get("thinking"), extra=ex or None)]
    if t == "redacted_thinking":
        return [Reasoning(redacted=True, extra=rest or None)]
    if t == "tool_use" and isinstance(b.get("id"), str) and isinstance(b.get("name"), str):
        ex = {k: v for k, v in rest.items() if k not in ("id", "name", "input")}
        return [ToolCall(call_id=b["id"], name=b["name"], input=b.get("input"), extra=ex or None)]
    if t in ("image", "document"):
        return [_attachment(b)]
    return [Unknown(source_type=str(t), raw=b)]


def _tool_result(b: JsonObject) -> list[Block]:
    """tool_result: content is a string, a list of blocks, or absent; images inside the
    list move to Attachment blocks (so ingest stores their bytes once) and leave a
    placeholder ``{"type": "image", "attachment": i}`` in the output."""
    call_id = str(b.get("tool_use_id", ""))
    content = b.get("content")
    extra = {k: v for k, v in b.items() if k not in ("type", "tool_use_id", "content", "is_error")}
    after: list[Block] = []
    if isinstance(content, list):
        out = []
        for item in content:
            if isinstance(item, dict) and item.get("type") in ("image", "document"):
                out.append({"type": item.get("type"), "attachment": len(after)})
                after.append(_attachment(item, callId=call_id))
            else:
                out.append(item)
        content = out
    is_error = b.get("is_error") if isinstance(b.get("is_error"), bool) else None
    return [ToolResult(call_id=call_id, output=content, is_error=is_error, extra=extra or None), *after]


_PERSISTED_RE = re.compile(r"Full output saved to: (\S+/tool-results/[^/\s]+)")


def _persisted_output(tur: Any, b: JsonObject) -> str | None:
    """``<sessionId>/tool-results/<file>`` when the output was too large for the transcript
    (2.1.x: ``toolUseResult.persistedOutputPath``, and the ``<persisted-output>`` preview
    text names the file); the file is a companion source of its own."""
    path = _str(tur.get("persistedOutputPath")) if isinstance(tur, dict) else None
    if path is None:
        text = b.get("content") if isinstance(b.get("content"), str) else None
        m = _PERSISTED_RE.search(text[:1024]) if text and text.startswith("<persisted-output>") else None
        path = m.group(1) if m else None
    if path is None:
        return None
    parts = Path(path).parts
    return "/".join(parts[-3:]) if len(parts) >= 3 and parts[-2] == "tool-results" else None
