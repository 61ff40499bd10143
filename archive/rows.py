"""Canonical values <-> SQLite rows: blocks, messages and threads in both directions, and the
taming of values the database cannot hold (``tame_rows``). No state and no SQL writes:
``projection.py`` (the Projector, folding, lineage) and the loaders build on these.

Invariant: ``message_from_row(message_columns(m))`` with its blocks gives ``m`` back
(lossless round trip; attachment bytes move to ``blobs`` and come back as the same base64)."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import re
import sqlite3
from typing import Any

import orjson

from .model import (
    Attachment,
    Block,
    FileChange,
    JsonObject,
    Message,
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
from .vendors.base import (
    INVALID,
    MessageRow,
    Report,
    Row,
    UsageRow,
)


def one_line(text: str | None, width: int) -> str:
    """Whitespace folded to single spaces, cut to ``width`` with an ellipsis (listings)."""
    s = " ".join((text or "").split())
    return s if len(s) <= width else s[: width - 1] + "…"


def dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        # a value orjson cannot write (deeper than its 254 levels, an integer past 64 bits)
        # that reached here untamed (Engine._feed tames the rows of the lines that can
        # hold one): written exactly by the slow encoder rather than stopping the run
        return json_text(value)


# ---------------------------------------------------------------- values the database cannot hold
#
# A line can hold values that orjson reads but SQLite or orjson cannot write back: an
# integer past SQLite's signed 64 bits (a usage count of 2**63: OverflowError on insert),
# nesting deeper than orjson writes (254 levels: "Recursion limit reached"). One such line
# must cost at most its own projection, never the run. The line itself is kept byte for
# byte in the source layer; its rows are tamed: such an integer becomes its decimal text,
# a container deeper than TAME_DEPTH becomes its exact JSON text, and the line gets an
# ``invalid`` report naming each value.

TAME_DEPTH = 200  # well under orjson's 254, leaving room for the levels projection adds
SQL_INT_MIN, SQL_INT_MAX = -(1 << 63), (1 << 63) - 1
JSON_INT_MAX = (1 << 64) - 1  # orjson writes integers up to 64 bits unsigned
REASON_INT = "integer out of range"
REASON_DEEP = "nested too deep"
TAMED_REASONS = (REASON_INT, REASON_DEEP)
_REPORTED_PATHS = 5


class _Token(str):
    """Literal JSON punctuation on json_text's stack (not a value to encode)."""


def _scalar_text(v: Any) -> str:
    if type(v) is int:
        return str(v)  # any size: JSON numbers have no limit
    try:
        return orjson.dumps(v).decode()
    except (TypeError, orjson.JSONEncodeError):
        import json

        return json.dumps(v if isinstance(v, (str, float, bool)) or v is None else str(v))


def json_text(value: Any) -> str:
    """Exact JSON text of any JSON value, iteratively (any depth, integers of any size)."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        v = stack.pop()
        if type(v) is _Token:
            out.append(v)
        elif isinstance(v, dict):
            if not v:
                out.append("{}")
                continue
            stack.append(_Token("}"))
            items = list(v.items())
            for i in range(len(items) - 1, -1, -1):
                k, x = items[i]
                stack.append(x)
                stack.append(_Token(("{" if i == 0 else ",") + _scalar_text(str(k)) + ":"))
        elif isinstance(v, (list, tuple)):
            if not v:
                out.append("[]")
                continue
            stack.append(_Token("]"))
            for i in range(len(v) - 1, -1, -1):
                stack.append(v[i])
                stack.append(_Token("[" if i == 0 else ","))
        else:
            out.append(_scalar_text(v))
    return "".join(out)


class _Tamer:
    def __init__(self) -> None:
        self.problems: dict[str, list[str]] = {REASON_INT: [], REASON_DEEP: []}

    def note(self, reason: str, path: str) -> None:
        self.problems[reason].append(path if len(path) <= 120 else f"{path[:50]}…{path[-60:]}")

    def value(self, v: Any, depth: int, path: str, int_max: int) -> Any:
        """``v`` tamed; the same object when nothing in it needed taming."""
        t = type(v)
        if t is int:
            if SQL_INT_MIN <= v <= int_max:
                return v
            self.note(REASON_INT, f"{path} = {v}")
            return str(v)
        if t is dict or t is list or t is tuple:
            if depth >= TAME_DEPTH:
                self.note(REASON_DEEP, path)
                return json_text(v)
            changed = False
            if t is dict:
                d = {}
                for k, x in v.items():
                    y = self.value(x, depth + 1, f"{path}.{k}", JSON_INT_MAX)
                    changed |= y is not x
                    d[k] = y
                return d if changed else v
            items = []
            for i, x in enumerate(v):
                y = self.value(x, depth + 1, f"{path}[{i}]", JSON_INT_MAX)
                changed |= y is not x
                items.append(y)
            return t(items) if changed else v
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return self.record(v, depth, path)
        return v

    def record(self, v: Any, depth: int, path: str) -> Any:
        """A row or model value: its scalar fields are SQLite columns (64-bit signed); its
        dicts and lists are JSON text. Dataclass levels do not count towards the depth."""
        changes = {}
        for f in dataclasses.fields(v):
            x = getattr(v, f.name)
            if type(x) is tuple and f.name == "content":  # a message's blocks: not JSON itself
                blocks = [self.value(b, depth, f"{path}.content[{i}]", SQL_INT_MAX) for i, b in enumerate(x)]
                y: Any = tuple(blocks) if any(b is not a for b, a in zip(blocks, x)) else x
            else:
                y = self.value(x, depth, f"{path}.{f.name}", SQL_INT_MAX)
            if y is not x:
                changes[f.name] = y
        return dataclasses.replace(v, **changes) if changes else v


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_BRACKETS_OR_QUOTES = bytes(b for b in range(256) if b not in b'[]{}"')


# longer lines are measured as bytes: decoding them again costs their size many times over in memory
_DECODED_UP_TO = 1 << 20


def may_nest_deep(line: bytes) -> bool:
    """Whether ``line`` may nest ``TAME_DEPTH`` levels. Many brackets are needed, but a whole
    JSON document read as one line (Cline's ``messages.json``) has thousands at a depth of
    ten, and a line holding a long tool output hundreds inside its strings.

    A line of up to ``_DECODED_UP_TO`` bytes is decoded (orjson) and its containers walked
    (``_nests``): a long text is one string, so this costs about its decoding. A line that
    does not decode counts as deep. A longer one is measured as bytes, at C speed and within
    its size: for a JSON object or array, its brackets outside strings are kept (escaped
    backslashes and quotes dropped, so every quote left opens or closes a string) and the
    innermost pairs removed, one or two levels a pass: a line that empties in fewer than
    ``TAME_DEPTH / 2`` passes is shallower than ``TAME_DEPTH``. Any other line with that many
    brackets (not JSON: its quotes need not delimit strings), or brackets that do not pair,
    count as deep. (The bytes took 0.4 ms for a 111 KB session line with 201 brackets, most
    in a tool output: its escapes cost two passes of ``replace``.)"""
    if line.count(b"{") + line.count(b"[") < TAME_DEPTH:
        return False
    if len(line) <= _DECODED_UP_TO:
        try:
            return _nests(orjson.loads(line), TAME_DEPTH)
        except orjson.JSONDecodeError:
            return True
    if line[:64].lstrip()[:1] + line[-64:].rstrip()[-1:] not in (b"{}", b"[]"):
        return True
    s = line.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_BRACKETS_OR_QUOTES)
    if s.count(b'"') % 2:
        return True
    s = b"".join(s.split(b'"')[::2]).translate(None, _NOT_BRACKETS)
    for _ in range((TAME_DEPTH - 1) // 2):
        if not s:
            return False
        t = s.replace(b"[]", b"").replace(b"{}", b"")
        if t == s:
            return True
        s = t
    return bool(s)


def _nests(value: Any, limit: int) -> bool:
    """Whether a decoded JSON value holds containers ``limit`` deep (itself the first;
    ``limit`` 2 or more)."""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        children = v.values() if type(v) is dict else v if type(v) is list else ()
        for c in children:
            if type(c) is dict or type(c) is list:
                if depth + 1 >= limit:
                    return True
                stack.append((c, depth + 1))
    return False


def needs_taming(line: bytes, rows: list[Row]) -> bool:
    """Cheap test (C-speed bytes operations, a few attribute reads) whether ``tame_rows`` may
    find anything: deep nesting needs that depth of brackets in the line (``may_nest_deep``);
    integers that SQLite cannot hold (orjson reads up to 2**64-1) matter in the usage and
    message columns, which are checked directly."""
    if may_nest_deep(line):
        return True
    for r in rows:
        if type(r) is UsageRow:
            u = r.usage
            for x in (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens):
                if type(x) is int and not SQL_INT_MIN <= x <= SQL_INT_MAX:
                    return True
        elif type(r) is MessageRow:
            m = r.message
            for x in (m.id, m.thread_id, m.role, m.ts, m.turn_id, m.parent_id, m.run_id):
                if type(x) is not str and x is not None:
                    return True
            u = m.usage
            if u is not None:
                for x in (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens):
                    if type(x) is int and not SQL_INT_MIN <= x <= JSON_INT_MAX:
                        return True
    return False


def tame_rows(rows: list[Row]) -> list[Row]:
    """``rows`` with every value the database cannot hold tamed, plus one ``invalid``
    report per kind of problem found (naming the first few values)."""
    tamer = _Tamer()
    out: list[Row] = [r if isinstance(r, Report) else tamer.record(r, 0, type(r).__name__) for r in rows]
    for reason, paths in tamer.problems.items():
        if paths:
            shown = "; ".join(paths[:_REPORTED_PATHS]) + (f"; and {len(paths) - _REPORTED_PATHS} more" if len(paths) > _REPORTED_PATHS else "")
            how = "kept as text" if reason == REASON_INT else f"kept as JSON text below {TAME_DEPTH} levels"
            out.append(Report(INVALID, reason, f"{how}: {shown}"))
    return out


def loads(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def render_text(value: Any) -> str | None:
    """Searchable text of a JSON value: its string leaves, one per line."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return "\n".join(out) if out else None


# ---------------------------------------------------------------- blocks

_BLOCK_COL_NAMES = (
    "message_id", "position", "type", "text", "call_id", "tool_name", "input", "output",
    "is_error", "path", "patch", "media_type", "uri", "blob_sha256", "redacted", "extra",
)  # fmt: skip
_BLOCK_COLS = ", ".join(_BLOCK_COL_NAMES)


# The seed fields each block type keeps in typed columns; every other key of the block's
# dict (vendor extras, or a field of another type) goes to ``extra`` unchanged.
_OWN_FIELDS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text"}),
    "reasoning": frozenset({"type", "text", "redacted"}),
    "tool_call": frozenset({"type", "callId", "name", "input"}),
    "tool_result": frozenset({"type", "callId", "output", "isError"}),
    "file_change": frozenset({"type", "callId", "path", "patch"}),
    "web_search": frozenset({"type", "callId", "query"}),
    "attachment": frozenset({"type", "mediaType", "uri", "data"}),
    "unknown": frozenset({"type"}),
}


def block_row(message_id: str, position: int, block: Block, blob_sha: str | None) -> dict[str, Any]:
    """The ``blocks`` row of a block, by column name (``block_tuple`` in column order)."""
    return dict(zip(_BLOCK_COL_NAMES, block_tuple(message_id, position, block, blob_sha)))


def block_tuple(message_id: str, position: int, block: Block, blob_sha: str | None) -> tuple[Any, ...]:
    """The ``blocks`` row of a block in ``_BLOCK_COL_NAMES`` order: ``_block_row_general``'s
    values, built directly (no ``to_dict`` and no row dict per block at ingest) for a block
    of a known type whose ``extra`` names none of its seed fields (nearly every block: such
    an ``extra`` is the row's ``extra`` after the type's other fields); the rest go the
    general way."""
    t = type(block)
    ex_in = block.extra
    if t not in _FAST_TYPES or (ex_in and (t is Unknown or not _SEED_NAMES[t].isdisjoint(ex_in))):
        r = _block_row_general(message_id, position, block, blob_sha)
        return tuple(r[c] for c in _BLOCK_COL_NAMES)
    extra = dumps(ex_in) if ex_in else None
    if t is Text:
        return (message_id, position, "text", block.text, None, None, None, None, None, None, None, None, None, blob_sha, None, extra)  # type: ignore[union-attr]  # fmt: skip
    if t is ToolResult:
        out = block.output  # type: ignore[union-attr]
        err = block.is_error  # type: ignore[union-attr]
        if isinstance(out, str):
            text, output = out, None
        else:
            text, output = render_text(out), dumps(out)
        return (message_id, position, "tool_result", text, block.call_id, None, None, output,  # type: ignore[union-attr]
                None if err is None else int(err), None, None, None, None, blob_sha, None, extra)  # fmt: skip
    if t is ToolCall:
        name, inp = block.name, block.input  # type: ignore[union-attr]
        text = "\n".join(x for x in (name, render_text(inp)) if x)
        return (message_id, position, "tool_call", text, block.call_id, name, dumps(inp), None,  # type: ignore[union-attr]
                None, None, None, None, None, blob_sha, None, extra)  # fmt: skip
    if t is Reasoning:
        red = block.redacted  # type: ignore[union-attr]
        return (message_id, position, "reasoning", block.text, None, None, None, None, None, None, None, None, None,  # type: ignore[union-attr]
                blob_sha, None if red is None else int(red), extra)  # fmt: skip
    if t is FileChange:
        path = block.path  # type: ignore[union-attr]
        return (message_id, position, "file_change", path, block.call_id, None, None, None, None, path,  # type: ignore[union-attr]
                block.patch, None, None, blob_sha, None, extra)  # type: ignore[union-attr]  # fmt: skip
    if t is WebSearch:
        res = block.results  # type: ignore[union-attr]
        if res is not None:  # not a column: first in extra, as in to_dict
            extra = dumps({"results": res, **ex_in} if ex_in else {"results": res})
        return (message_id, position, "web_search", block.query, block.call_id, None, None, None, None, None, None,  # type: ignore[union-attr]
                None, None, blob_sha, None, extra)  # fmt: skip
    if t is Attachment:
        uri, data = block.uri, block.data  # type: ignore[union-attr]
        if data is not None and blob_sha is None:  # not canonical base64: kept as written, after extra
            extra = dumps({**ex_in, "data": data} if ex_in else {"data": data})
        return (message_id, position, "attachment", uri, None, None, None, None, None, None, None,
                block.media_type, uri, blob_sha, None, extra)  # type: ignore[union-attr]  # fmt: skip
    # Unknown (without extra): extra holds sourceType (when set) and raw (always)
    st = block.source_type  # type: ignore[union-attr]
    ex = {"raw": block.raw} if st is None else {"sourceType": st, "raw": block.raw}  # type: ignore[union-attr]
    return (message_id, position, "unknown", st, None, None, None, None, None, None, None, None, None, blob_sha, None, dumps(ex))


_FAST_TYPES = frozenset({Text, Reasoning, ToolCall, ToolResult, FileChange, WebSearch, Attachment, Unknown})
# the keys of a block's dict that are not ``extra``'s: an ``extra`` naming one of them
# (never written by an adapter) takes the general way
_SEED_NAMES = {t: frozenset({"type"} | {j for j, _a in t.FIELDS}) for t in _FAST_TYPES}


def _block_row_general(message_id: str, position: int, block: Block, blob_sha: str | None) -> dict[str, Any]:
    """The row of any block, from its ``to_dict``: the reference ``block_tuple`` must equal."""
    d = block.to_dict()
    t = d["type"]
    own = _OWN_FIELDS[t]
    row: dict[str, Any] = dict.fromkeys(_BLOCK_COL_NAMES)
    row.update(message_id=message_id, position=position, type=t, blob_sha256=blob_sha)
    if "callId" in own:
        row["call_id"] = d.get("callId")
    extra = {k: v for k, v in d.items() if k not in own}
    if isinstance(block, (Text, Reasoning)):
        row["text"] = block.text
        if isinstance(block, Reasoning) and block.redacted is not None:
            row["redacted"] = int(block.redacted)
    elif isinstance(block, ToolCall):
        row["tool_name"] = block.name
        row["input"] = dumps(block.input)
        row["text"] = "\n".join(x for x in (block.name, render_text(block.input)) if x)
    elif isinstance(block, ToolResult):
        if isinstance(block.output, str):
            row["text"] = block.output
        else:
            row["output"] = dumps(block.output)
            row["text"] = render_text(block.output)
        if block.is_error is not None:
            row["is_error"] = int(block.is_error)
    elif isinstance(block, FileChange):
        row.update(path=block.path, patch=block.patch, text=block.path)
    elif isinstance(block, WebSearch):
        row["text"] = block.query
    elif isinstance(block, Attachment):
        row.update(media_type=block.media_type, uri=block.uri, text=block.uri)
        if block.data is not None and blob_sha is None:
            extra["data"] = block.data  # not canonical base64: kept as written
    elif isinstance(block, Unknown):
        row["text"] = block.source_type  # extra holds sourceType and raw
    row["extra"] = dumps(extra) if extra else None
    return row


def block_from_row(row: sqlite3.Row | dict[str, Any], blob_data: bytes | None) -> Block:
    t = row["type"]
    d: JsonObject = {"type": t}
    if t in ("text", "reasoning"):
        if row["text"] is not None:
            d["text"] = row["text"]
        if t == "reasoning" and row["redacted"] is not None:
            d["redacted"] = bool(row["redacted"])
    elif t == "tool_call":
        d.update(callId=row["call_id"], name=row["tool_name"], input=loads(row["input"]))
    elif t == "tool_result":
        d["callId"] = row["call_id"]
        d["output"] = row["text"] if row["output"] is None else loads(row["output"])
        if row["is_error"] is not None:
            d["isError"] = bool(row["is_error"])
    elif t in ("file_change", "web_search", "attachment"):
        cols = {
            "file_change": (("call_id", "callId"), ("path", "path"), ("patch", "patch")),
            "web_search": (("call_id", "callId"), ("text", "query")),
            "attachment": (("media_type", "mediaType"), ("uri", "uri")),
        }[t]
        for col, name in cols:
            if row[col] is not None:
                d[name] = row[col]
        if t == "attachment" and blob_data is not None:
            d["data"] = base64.b64encode(blob_data).decode("ascii")
    d.update(loads(row["extra"]) or {})
    return block_from_dict(d)


_SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def _blob_named(block: Block) -> str | None:
    """The blob an attachment without bytes names by ``extra.blobSha256``: bytes a vendor
    stores once on a line of their own (Copilot's ``session.binary_asset``), which may be
    read before or after the attachment's line. Reading the block gives it the bytes."""
    if not isinstance(block, Attachment) or block.data is not None or not block.extra:
        return None
    sha = block.extra.get("blobSha256")
    return sha if isinstance(sha, str) and _SHA256_HEX.fullmatch(sha) else None


def _blob_of(block: Block) -> tuple[bytes, str | None] | None:
    if not isinstance(block, Attachment) or block.data is None:
        return None
    try:
        raw = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode("ascii") != block.data:
        return None  # unusual encoding: keep the text so the round trip stays exact
    return raw, block.media_type


# ---------------------------------------------------------------- messages


# A large vendor field that repeats the message's own line (Adapter.line_backed_extra) is
# stored in messages.extra as {LINE_REF: key}; load_messages reads the value back from the
# stored line, so readers of the projection get the message as parsed.
LINE_REF = "$line"
LINE_REF_MIN = 2048

_MESSAGE_COL_NAMES = (
    "id", "thread_id", "role", "ts", "turn_id", "parent_id", "run_id", "model", "injected", "provenance", "usage",
    "extra",
)  # fmt: skip


def message_columns(msg: Message, line_backed: tuple[str, ...] = ()) -> dict[str, Any]:
    return dict(zip(_MESSAGE_COL_NAMES, message_values(msg, line_backed)))


def message_values(msg: Message, line_backed: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """``message_columns``' values in ``_MESSAGE_COL_NAMES`` order (no dict per message)."""
    extra = msg.extra
    if msg.raw is not None or line_backed:  # a copy only when it changes
        extra = dict(extra or {})
        if msg.raw is not None:
            extra["raw"] = msg.raw
        for k in line_backed:
            v = extra.get(k)
            if isinstance(v, (dict, list, str)) and len(v) and len(dumps(v)) >= LINE_REF_MIN:
                extra[k] = {LINE_REF: k}
    if extra:
        model = extra.get("model")
        model = model if isinstance(model, str) else None
        injected = 1 if extra.get("injected") else 0
    else:
        model, injected = None, 0
    prov, usage = msg.provenance, msg.usage
    return (
        msg.id, msg.thread_id, msg.role, msg.ts, msg.turn_id, msg.parent_id, msg.run_id, model, injected,
        dumps(prov.to_dict()) if prov else None, dumps(usage.to_dict()) if usage else None,
        dumps(extra) if extra else None,
    )  # fmt: skip


def message_from_row(row: sqlite3.Row, blocks: list[Block], response: Usage | None = None) -> Message:
    """A stored message; its usage is the response it carries (``response``, from the usage
    table), else what the message itself carried when it was appended."""
    extra = loads(row["extra"]) or {}
    raw = extra.pop("raw", None)
    prov = loads(row["provenance"])
    usage = loads(row["usage"]) if response is None else None
    return Message(
        id=row["id"],
        thread_id=row["thread_id"],
        role=row["role"],
        ts=row["ts"],
        content=tuple(blocks),
        turn_id=row["turn_id"],
        parent_id=row["parent_id"],
        run_id=row["run_id"],
        usage=response or (Usage.from_dict(usage) if usage is not None else None),
        provenance=Provenance.from_dict(prov) if prov is not None else None,
        raw=raw,
        extra=extra or None,
    )


def thread_from_row(row: sqlite3.Row) -> Thread:
    extra = loads(row["extra"]) or {}
    return Thread(
        id=row["id"],
        created_at=row["created_at"] or "",
        agent_id=row["agent_id"],
        parent_thread_id=row["parent_thread_id"],
        origin_message_id=row["origin_message_id"],
        title=row["title"],
        metadata=loads(row["metadata"]),
        extra=extra or None,
    )
