"""Crush sessions, read from the SQLite database it keeps in each project
(``<project>/.crush/crush.db``).

The source (Crush's schema: ``internal/db/migrations/*.sql``, parts from
``internal/message/{message,content}.go`` of charmbracelet/crush): ``sessions`` (id,
``parent_session_id``, title, ``message_count``, ``prompt_tokens``, ``completion_tokens``,
cost, times in Unix seconds; later releases add columns), ``messages`` (id, ``session_id``,
role, ``parts``, model, provider, times) and ``files`` (each version of a file Crush wrote:
path, content, version). ``parts`` is a JSON array of ``{"type": T, "data": {...}}`` with T
one of ``text``, ``reasoning``, ``tool_call``, ``tool_result``, ``finish``, ``image_url``,
``binary``; newer releases store it zstd-compressed (a zstd frame instead of ``[``).

The archive reads the rows (``__init__.CrushAdapter.documents``), one document per session,
one JSON line per row (``{"crush": "session"|"message"|"file", "row": {...}}``, the parts
under ``parts`` as stored, or ``partsZstd`` in base64 when compressed). Rows are updated in
place (a message while it streams, the session's counters after every message), so each
change rewrites the document: a new generation, older ones kept (``docs/adding-a-vendor.md``
"A database as a source").

Projection:

* ``session`` -> ``ThreadFact``: title, createdAt, ``parentThreadId`` (a sub-agent's session
  names its parent: a child thread), metadata cwd (``workspace_cwd`` where the row has it,
  else the folder holding ``.crush/``), and one ``UsageRow`` (key ``crush:<session id>``):
  Crush keeps no usage per message, only the session's ``prompt_tokens``,
  ``completion_tokens`` and summed ``cost``, kept raw in ``usage.extra["vendor"]``; every
  assistant message repeats the row under the same key, so the last one carries it (with its
  model).
* ``message`` -> one canonical message (id = Crush's uuid), blocks in part order: text,
  reasoning (signature in extra), tool_call (input parsed when it is JSON), tool_result
  (in ``tool`` messages), image_url and binary as attachments (the bytes as a blob);
  ``finish`` is metadata of the message (reason, time). An unknown part type is an
  ``Unknown`` block and a report.
* ``file`` -> ``metadata`` report: Crush's own history of the files it wrote, kept whole in
  the source layer, not conversation.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ...model import Attachment, Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown, Usage
from ..base import (
    INVALID,
    METADATA,
    PARSE_ERROR,
    UNKNOWN,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    loads_line,
)

NAME = "crush"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ROLES = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}


def iso(value: Any) -> str | None:
    """Crush's times: Unix seconds (milliseconds in a few columns of later releases)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    seconds = value / 1000 if value > 1e11 else value
    try:
        dt = datetime.fromtimestamp(seconds, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def project_dir(document_path: str) -> str | None:
    """``/p/.crush/crush.db#<session>.jsonl`` -> ``/p``."""
    db = Path(document_path.rpartition("#")[0] or document_path)
    return str(db.parent.parent) if db.parent.name == ".crush" else None


def decode_parts(d: dict[str, Any]) -> tuple[Any, Report | None]:
    """The parts of a message line: stored JSON, or a zstd frame (base64) decompressed."""
    if "parts" in d:
        return d["parts"], None
    if isinstance(d.get("partsZstd"), str):
        import zstandard

        try:
            raw = zstandard.ZstdDecompressor().decompress(base64.b64decode(d["partsZstd"]), max_output_size=1 << 28)
            return orjson.loads(raw), None
        except (zstandard.ZstdError, ValueError) as e:
            return None, Report(PARSE_ERROR, "message parts: zstd frame not read", str(e))
    if isinstance(d.get("partsText"), str):
        try:
            return orjson.loads(d["partsText"]), None
        except orjson.JSONDecodeError as e:
            return None, Report(PARSE_ERROR, "message parts not JSON", str(e))
    return None, Report(INVALID, "message without parts", None)


class CrushParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.session: str | None = s.get("session")
        self.model: str | None = s.get("model")
        # the session row's usage figures: each assistant message repeats them under the same
        # key (the latest line wins), so the session's usage is carried by its last answer
        # and names the model that gave it
        self.usage: JsonObject | None = s.get("usage")

    def state(self) -> JsonObject:
        out: JsonObject = {}
        if self.session:
            out["session"] = self.session
        if self.model:
            out["model"] = self.model
        if self.usage:
            out["usage"] = self.usage
        return out

    def _usage_row(self, session: str, message_id: str | None, model: str | None) -> UsageRow | None:
        u = self.usage
        if not u:
            return None
        usage = Usage(input_tokens=u["prompt_tokens"], output_tokens=u["completion_tokens"],
                      extra={"vendor": dict(u), "scope": "session"})
        return UsageRow(f"{NAME}:{session}", session, usage, message_id, model, u.get("ts"))

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        try:
            d, warning = loads_line(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "not JSON", str(e))
            return
        if warning is not None:
            yield warning
        if not isinstance(d, dict) or not isinstance(d.get("row"), dict):
            yield Report(INVALID, "not a Crush row line", None)
            return
        handler = HANDLERS.get(d.get("crush"))  # type: ignore[arg-type]
        if handler is None:
            yield Report(UNKNOWN, f"table {d.get('crush')}", "row not read; kept in the source layer")
            return
        yield from handler(self, d)

    def session_row(self, d: dict[str, Any]) -> Iterator[Row]:
        r = d["row"]
        sid = _str(r.get("id")) or self.source.source_id
        self.session = sid
        meta: JsonObject = {"provider": NAME}
        cwd = _str(r.get("workspace_cwd")) or project_dir(self.source.path)
        if cwd:
            meta["cwd"] = cwd
        for key in ("message_count", "summary_message_id"):
            if r.get(key) is not None:
                meta[key] = r[key]
        fields: JsonObject = {"metadata": meta}
        if _str(r.get("title")):
            fields["title"] = r["title"]
        if iso(r.get("created_at")):
            fields["createdAt"] = iso(r.get("created_at"))
        if _str(r.get("parent_session_id")):
            fields["parentThreadId"] = r["parent_session_id"]
        yield ThreadFact(sid, fields)
        prompt, completion = _int(r.get("prompt_tokens")), _int(r.get("completion_tokens"))
        cost = r.get("cost")
        self.usage = None
        if prompt or completion or cost:
            self.usage = {"prompt_tokens": prompt, "completion_tokens": completion, "cost": cost,
                          "ts": iso(r.get("updated_at"))}
            row = self._usage_row(sid, None, None)
            if row is not None:
                yield row

    def message_row(self, d: dict[str, Any]) -> Iterator[Row]:
        r = d["row"]
        mid = _str(r.get("id"))
        session = _str(r.get("session_id")) or self.session or self.source.source_id
        if mid is None:
            yield Report(INVALID, "message row without id", None)
            return
        parts, problem = decode_parts(d)
        if problem is not None:
            yield problem
        if not isinstance(parts, list):
            parts = []
        role = ROLES.get(str(r.get("role")), "user")
        blocks: list[Block] = []
        extra: JsonObject = {}
        for p in parts:
            if not isinstance(p, dict):
                blocks.append(Unknown(source_type="part", raw=p))
                yield Report(UNKNOWN, "part not an object", None)
                continue
            handler = PARTS.get(p.get("type"))  # type: ignore[arg-type]
            data = p.get("data") if isinstance(p.get("data"), dict) else {}
            if handler is None:
                blocks.append(Unknown(source_type=str(p.get("type")), raw=p))
                yield Report(UNKNOWN, f"part {p.get('type')}", "kept as an unknown block")
                continue
            yield from handler(self, data, blocks, extra)
        if r.get("role") not in ROLES:
            extra["role"] = r.get("role")
        model = _str(r.get("model"))
        if model:
            extra["model"] = model
            if role == "assistant":
                self.model = model
        if _str(r.get("provider")):
            extra["modelProvider"] = r["provider"]
        if r.get("is_summary_message"):
            extra["summary"] = True  # Crush's compaction: the summary that replaces the history
        yield MessageRow(Message(id=mid, thread_id=session, role=role, ts=iso(r.get("created_at")), content=tuple(blocks),
                                 provenance=Provenance(NAME, session_id=session, source_id=mid), extra=extra or None))
        if role == "assistant":
            row = self._usage_row(session, mid, model or self.model)
            if row is not None:
                yield row

    def file_row(self, d: dict[str, Any]) -> Iterator[Row]:
        r = d["row"]
        yield Report(METADATA, "file version", f"{r.get('path')} v{r.get('version')} (Crush's history of the files it wrote)")

    # ------------------------------------------------------------------ parts
    def text(self, data: dict[str, Any], blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        blocks.append(Text(text=str(data.get("text") or ""), extra={"hidden": True} if data.get("hidden") else None))
        return iter(())

    def reasoning(self, data: dict[str, Any], blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        x = {k: data[k] for k in ("signature", "thought_signature", "responses_data") if data.get(k)}
        blocks.append(Reasoning(text=str(data.get("thinking") or ""), extra=x or None))
        return iter(())

    def tool_call(self, data: dict[str, Any], blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        raw = data.get("input")
        value: Any = raw
        if isinstance(raw, str) and raw.strip():
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                value = raw
        x: JsonObject = {}
        if data.get("finished") is False:
            x["unfinished"] = True
        if data.get("provider_executed"):
            x["providerExecuted"] = True
        blocks.append(ToolCall(call_id=str(data.get("id") or ""), name=str(data.get("name") or ""), input=value,
                               extra=x or None))
        return iter(())

    def tool_result(self, data: dict[str, Any], blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        x = {k: data[k] for k in ("name", "metadata", "mime_type") if data.get(k)}
        blocks.append(ToolResult(call_id=str(data.get("tool_call_id") or ""), output=data.get("content"),
                                 is_error=bool(data.get("is_error")), extra=x or None))
        if _str(data.get("data")):  # an image a tool returned (base64)
            blocks.append(Attachment(media_type=_str(data.get("mime_type")) or "application/octet-stream",
                                     data=data["data"], extra={"callId": data.get("tool_call_id")}))
        return iter(())

    def finish(self, data: dict[str, Any], blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        extra["finish"] = {k: v for k, v in data.items() if v not in (None, "")}
        return iter(())

    def image_url(self, data: dict[str, Any], blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        blocks.append(Attachment(uri=_str(data.get("url")), extra={"detail": data["detail"]} if data.get("detail") else None))
        return iter(())

    def binary(self, data: dict[str, Any], blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        # Go's encoding/json: the struct has no tags (Path, MIMEType, Data), []byte in base64
        mime = _str(data.get("MIMEType")) or "application/octet-stream"
        encoded = data.get("Data") if isinstance(data.get("Data"), str) else ""
        blocks.append(Attachment(media_type=mime, data=encoded or None,
                                 extra={"path": data["Path"]} if _str(data.get("Path")) else None))
        return iter(())


Handler = Callable[[CrushParser, dict[str, Any]], Iterator[Row]]
HANDLERS: dict[str, Handler] = {
    "session": CrushParser.session_row,
    "message": CrushParser.message_row,
    "file": CrushParser.file_row,
}
PartHandler = Callable[[CrushParser, dict[str, Any], list[Block], JsonObject], Iterator[Row]]
PARTS: dict[str, PartHandler] = {
    "text": CrushParser.text,
    "reasoning": CrushParser.reasoning,
    "tool_call": CrushParser.tool_call,
    "tool_result": CrushParser.tool_result,
    "finish": CrushParser.finish,
    "image_url": CrushParser.image_url,
    "binary": CrushParser.binary,
}
