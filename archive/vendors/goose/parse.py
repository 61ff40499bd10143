"""Goose (block/goose) sessions, read from its schema (not installable here; no recording):
``sessions.db`` (``crates/goose/src/session/session_manager.rs`` and ``migrations.rs``, schema
v13) and the older one-file-per-session ``*.jsonl`` (``session/legacy.rs``).

* A database session becomes one document (``__init__.documents``): its ``sessions`` row
  as ``{"table":"session","row":{...}}``, then each ``messages`` row by ``id`` as
  ``{"table":"message","row":{...}}``. Goose updates the session row in place (name,
  tokens, ``updated_at``) and rewrites a conversation on compaction
  (``replace_conversation``): such a change rewrites the document, a new generation.
* A legacy file: a first line of session metadata (``working_dir``, ``description``, token
  totals), then one message per line (``role``, ``created`` in seconds, ``content``).
* Content items (``conversation/message.rs``, tagged ``type``): ``text``, ``thinking``
  (with ``signature``), ``redactedThinking``, ``toolRequest`` (``toolCall`` as
  ``{"status":"success","value":{"name","arguments"}}``, older ``{"Ok":{...}}`` or the call
  itself), ``toolResponse`` (``toolResult`` likewise: ``content`` items and ``isError``),
  ``image``; anything else is an ``Unknown`` block with its JSON.
* Ids: the thread is the session id; a message is its ``message_id`` (schema v7 on), else
  ``<session>_<row id>`` (a legacy line: ``stable_id(source, offset)``). Times: the
  message's ``created_timestamp`` (seconds) as UTC. ``metadata_json`` (``userVisible``,
  ``agentVisible``, ``inference`` provider and model) goes to ``Message.extra``.
* Usage: Goose keeps token totals per session (``accumulated_input_tokens``,
  ``accumulated_output_tokens``, ``accumulated_cost``) and rarely per message: one usage row
  per session, keyed ``goose:<session>``, on its last assistant message (each assistant
  line yields it again; the latest wins), with Goose's figures in ``extra.vendor`` (its
  input counts cached input too: no split is invented). A ``sub_agent`` session names no
  parent in schema v13; ``parent_session_id`` is read where a row has it.

Never raises on input; every line yields at least one row.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import Attachment, Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown, Usage
from ..base import INVALID, METADATA, PARSE_ERROR, MessageRow, Report, Row, SourceInfo, ThreadFact, UsageRow, nonempty_str, stable_id

NAME = "goose"


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
    return value


def _iso_seconds(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 10**11:
        return datetime.fromtimestamp(value, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return None


def _iso_sql(value: Any) -> str | None:
    """``2026-03-01 09:00:00`` (SQLite CURRENT_TIMESTAMP, UTC) or an RFC 3339 time."""
    if not isinstance(value, str) or len(value) < 19:
        return None
    return value[:10] + "T" + value[11:19] + "Z"


def _result(value: Any) -> Any:
    """The value of Goose's ``Result`` serialisations: ``{"status":"success","value":x}``,
    ``{"Ok":x}``, or x itself; an error as ``{"error": ...}``."""
    if isinstance(value, dict):
        if "status" in value and "value" in value:
            return value["value"] if value.get("status") == "success" else {"error": value["value"]}
        if "status" in value and "error" in value:
            return {"error": value["error"]}
        if len(value) == 1 and ("Ok" in value or "Err" in value):
            return value["Ok"] if "Ok" in value else {"error": value["Err"]}
    return value


def _texts(content: Any) -> Any:
    if isinstance(content, list) and all(isinstance(c, dict) and c.get("type") == "text" for c in content):
        return "\n".join(str(c.get("text", "")) for c in content)
    return content


def blocks_of(content: Any) -> list[Block]:
    out: list[Block] = []
    for item in content if isinstance(content, list) else [content]:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text" and isinstance(item.get("text"), str):
            out.append(Text(item["text"]))
        elif kind == "thinking":
            extra = {"signature": item["signature"]} if item.get("signature") else None
            out.append(Reasoning(item.get("thinking") if isinstance(item.get("thinking"), str) else None, extra=extra))
        elif kind == "redactedThinking":
            out.append(Reasoning(None, redacted=True, extra={"data": item.get("data")}))
        elif kind == "toolRequest":
            call = _result(item.get("toolCall"))
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                out.append(ToolCall(str(item.get("id", "")), call["name"], call.get("arguments")))
            else:
                out.append(ToolCall(str(item.get("id", "")), "", call, extra={"invalid": True}))
        elif kind == "toolResponse":
            res = _result(item.get("toolResult"))
            error = isinstance(res, dict) and "error" in res and len(res) == 1
            output = res.get("content") if isinstance(res, dict) and "content" in res else res
            is_error = bool(res.get("isError")) if isinstance(res, dict) and "isError" in res else error
            out.append(ToolResult(str(item.get("id", "")), _texts(output), is_error=is_error))
        elif kind == "image" and isinstance(item.get("data"), str):
            out.append(Attachment(media_type=item.get("mimeType"), data=item["data"]))
        else:
            out.append(Unknown(source_type=str(kind or type(item).__name__), raw=item))
    return out


class GooseParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        s = state or {}
        self.source = source
        self.session: str | None = s.get("session")
        self.model: str | None = s.get("model")
        self.usage: JsonObject | None = s.get("usage")  # the session's token totals

    def state(self) -> JsonObject:
        return {"session": self.session, "model": self.model, "usage": self.usage}

    def feed(self, offset: int, line: bytes) -> list[Row]:
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return [Report(PARSE_ERROR, "json", str(e))]
        if not isinstance(record, dict):
            return [Report(INVALID, "not an object", type(record).__name__)]
        table, row = record.get("table"), record.get("row")
        if table == "session" and isinstance(row, dict):
            return self._session(row)
        if table == "message" and isinstance(row, dict):
            content = _loads(row.get("content_json"))
            meta = _loads(row.get("metadata_json"))
            mid = nonempty_str(row.get("message_id")) or f"{row.get('session_id')}_{row.get('id')}"
            return self._message(offset, mid, row.get("role"), content, _iso_seconds(row.get("created_timestamp")),
                                 meta, row.get("tokens"))  # fmt: skip
        if "role" in record and "content" in record:  # a legacy line
            mid = nonempty_str(record.get("id")) or stable_id(NAME, self.source.source_id, offset)
            return self._message(offset, mid, record.get("role"), record.get("content"), _iso_seconds(record.get("created")),
                                 record.get("metadata"), None)  # fmt: skip
        if "working_dir" in record:  # a legacy file's first line
            sid = self.source.path.rsplit("/", 1)[-1].removesuffix(".jsonl")
            return self._session({**record, "id": record.get("id") or sid, "name": record.get("description")})
        return [Report(METADATA, "unknown record", orjson.dumps(record)[:200].decode("utf-8", "replace"))]

    def _session(self, row: JsonObject) -> list[Row]:
        sid = nonempty_str(row.get("id"))
        if sid is None:
            return [Report(INVALID, "session without id", None)]
        self.session = sid
        config = _loads(row.get("model_config_json"))
        model = config.get("model_name") if isinstance(config, dict) else None
        self.model = model if isinstance(model, str) else self.model
        meta: JsonObject = {k: row[k] for k in ("session_type", "provider_name", "goose_mode", "schedule_id", "project_id")
                            if row.get(k) is not None}  # fmt: skip
        if row.get("working_dir"):
            meta["cwd"] = row["working_dir"]
        if self.model:
            meta["model"] = self.model
        fields: JsonObject = {"metadata": meta}
        if nonempty_str(row.get("name")):
            fields["title"] = row["name"]
        if _iso_sql(row.get("created_at")):
            fields["createdAt"] = _iso_sql(row.get("created_at"))
        if nonempty_str(row.get("parent_session_id")):
            fields["parentThreadId"] = row["parent_session_id"]
        rows: list[Row] = [ThreadFact(sid, fields)]
        inp, out = row.get("accumulated_input_tokens"), row.get("accumulated_output_tokens")
        if isinstance(inp, int) or isinstance(out, int):
            vendor = {k: row.get(k) for k in ("accumulated_input_tokens", "accumulated_output_tokens",
                                              "accumulated_total_tokens", "accumulated_cost") if row.get(k) is not None}  # fmt: skip
            self.usage = {"in": inp if isinstance(inp, int) else None, "out": out if isinstance(out, int) else None,
                          "vendor": vendor, "ts": _iso_sql(row.get("updated_at"))}  # fmt: skip
            rows.append(self._usage(None))
        return rows

    def _usage(self, message_id: str | None) -> UsageRow:
        """The session's totals, on its last assistant message (each one yields it again
        under the same key: the latest wins), so a copy of the messages carries them."""
        u = self.usage or {}
        usage = Usage(input_tokens=u.get("in"), output_tokens=u.get("out"), extra={"vendor": u.get("vendor"), "scope": "session"})
        assert self.session is not None
        return UsageRow(f"goose:{self.session}", self.session, usage, message_id, self.model, u.get("ts"))

    def _message(self, offset: int, mid: str, role: Any, content: Any, ts: str | None, meta: Any, tokens: Any) -> list[Row]:
        if self.session is None:
            return [Report(INVALID, "message before its session", None)]
        if role not in ("user", "assistant"):
            return [Report(INVALID, "role", str(role))]
        extra: JsonObject = {}
        if isinstance(meta, dict) and meta:
            extra["goose"] = meta
        if isinstance(tokens, int):
            extra["tokens"] = tokens
        msg = Message(id=mid, thread_id=self.session, role=role, ts=ts, content=tuple(blocks_of(content)),
                      provenance=Provenance(NAME, session_id=self.session, source_id=mid), extra=extra or None)  # fmt: skip
        rows: list[Row] = [MessageRow(msg)]
        if role == "assistant" and self.usage:
            rows.append(self._usage(mid))
        return rows
