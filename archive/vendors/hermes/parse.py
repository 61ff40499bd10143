"""Hermes Agent sessions: rows of its SQLite store (``~/.hermes/state.db``), its JSONL
transcripts (``sessions/<id>.jsonl``) and JSON snapshots (``sessions/session_<id>.json``).

The store (checked with hermes-agent 0.19.0, schema version 22; WAL mode): ``sessions`` (one
row per session, updated in place: title, token totals, ``ended_at``), ``messages`` (one row
per OpenAI-style message, ``id`` an AUTOINCREMENT that only grows, ``tool_calls`` as JSON,
``tool_name``, ``reasoning``, ``reasoning_content``, ``reasoning_details``; ``active`` and
``compacted`` updated in place by rewind and compaction), ``session_model_usage`` (token
totals per session, model and task, updated in place). Hermes records no usage per response:
only these totals. The adapter (``__init__``) reads each session as two documents of JSON
lines:

* ``<db>#<session>.jsonl``: a head line ``{"table":"sessions","id":...,"started_at":...,
  "schema":...}`` (what never changes, but for the store's schema version), then every message row in ``id`` order as
  ``{"table":"messages","row":{<every column>}}``. New messages only append; a rewind or a
  compaction rewrites a row, and the document becomes a new generation (older ones kept).
* ``<db>#<session>.session.jsonl``: ``{"table":"sessions","row":{...},"usage_rows":N,
  "schema":S,"carrier":<message id>}`` (the whole session row, a ``side_report`` of the
  thread; ``carrier`` the message its totals are carried by) and ``{"table":"session_model_usage","row":{...}}`` per
  usage row: rewritten whenever Hermes updates the session, each version a generation.

Rows -> canonical model. Thread id = the session id; ``parent_session_id`` is the parent
thread. Each message row is one message, id ``<session>:<position>:<digest>`` (its place
among the session's messages and a digest of its role, content and call id: the same message
in state.db, a transcript and a snapshot is one message): ``reasoning``/``reasoning_content`` -> ``Reasoning``,
``content`` (a string, or a JSON list of OpenAI content parts) -> ``Text``/``Attachment``,
``tool_calls`` -> ``ToolCall`` blocks (``function.arguments`` parsed when JSON), a ``tool``
row -> ``ToolResult`` (``tool_call_id``, ``tool_name`` in extra). An inactive row (rewound,
or compacted into a summary) keeps its message with ``extra.active = false`` (and
``compacted``). Usage: each ``session_model_usage`` row is a ``UsageRow`` keyed
``hermes:<session>:<model>:<provider>:<task>`` (the latest version wins); a session without
such rows (before schema 20) gets its ``sessions`` totals, keyed ``hermes:<session>``. The
totals are carried by the session's last answer Hermes wrote (the session document's
``carrier``, its message id; an export's last unmarked answer), since the canonical model
keeps usage on a message: a thread emitted as canonical JSONL and read back keeps them
(tests/test_contract.py), under the same key. Hermes
counts ``input_tokens`` apart from cache reads and writes (``agent/usage_pricing.py``
``CanonicalUsage``) and ``output_tokens`` with reasoning included, as the neutral buckets
do; the raw row is kept in ``usage.extra["vendor"]``.

The JSONL transcripts (gateway sessions, and every session before state.db took over) and the
JSON snapshots (``sessions.write_json_snapshots``) hold the same OpenAI-style message dicts,
each with an ISO ``timestamp``; the JSONL's first line is ``{"role":"session_meta",...}``
(tools, model, platform). Hermes 0.13.0 wrote a snapshot of every CLI session (and kept
no ``session_model_usage``: the ``sessions`` totals are the usage then); 0.19.0 only when
configured.

``emit --to hermes`` writes the export document ``SessionDB.import_sessions`` reads
(``emit.py``); the archive reads it back (``export``). A message emit wrote carries the emit
mark in ``platform_message_id`` (the one message column Hermes keeps as it is given and
never sends to the model) and the session mark in ``model_config``; the mark's digest covers
the message's conversation fields (``digest_form``). Resumable, deterministic, never raises
on input; state: the session id, the latest model, and the held emitted message.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import Attachment, Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown, Usage
from ..base import (
    EMIT_MARK,
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    SNAPSHOT,
    UNKNOWN,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    claim_emitted,
    loads_line,
    nonempty_str,
    side_report,
    stable_id,
)

NAME = "hermes"
# the fields of a message the emit mark's digest covers: what the conversation holds, not
# the row's bookkeeping (ids, timestamps, flags the store adds)
TOTALS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
DIGEST_FIELDS = ("role", "content", "tool_call_id", "tool_calls", "tool_name", "reasoning", "reasoning_content")


def iso_s(value: Any) -> str | None:
    """Seconds since the epoch (Hermes's REAL columns) -> ISO 8601 UTC with milliseconds."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        dt = datetime.fromtimestamp(value, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def iso_text(value: Any) -> str | None:
    """An ISO timestamp as the JSONL transcripts write it (local time without a zone:
    taken as it is, since the machine's zone is not recorded)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return iso_s(value)
    return value if isinstance(value, str) and value else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _json(v: Any) -> Any:
    """A JSON column as its value (Hermes stores lists and dicts as JSON text)."""
    if isinstance(v, str) and v[:1] in ("[", "{"):
        try:
            return orjson.loads(v)
        except orjson.JSONDecodeError:
            return v
    return v


def digest_form(msg: dict[str, Any]) -> dict[str, Any]:
    """A message as the emit mark's digest reads it: the conversation fields only, JSON
    columns decoded, keys sorted (the store hands the row back with columns of its own)."""
    out = {}
    for k in DIGEST_FIELDS:
        v = _json(msg.get(k))
        if v is not None and v != "":
            out[k] = v
    return orjson.loads(orjson.dumps(out, option=orjson.OPT_SORT_KEYS))  # type: ignore[no-any-return]


def message_mark(msg: dict[str, Any]) -> dict[str, Any] | None:
    """The record ``claim_emitted`` reads for a message emit wrote (its digest form with the
    mark from ``platform_message_id``), or None for one without a mark."""
    raw = msg.get("platform_message_id") or msg.get("message_id")
    if not isinstance(raw, str) or EMIT_MARK not in raw:
        return None
    try:
        d = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(d, dict) or not isinstance(d.get(EMIT_MARK), dict):
        return None
    return {**digest_form(msg), EMIT_MARK: d[EMIT_MARK]}


def message_id(sid: str, n: int, m: dict[str, Any]) -> str:
    """``<session>:<position>:<digest of role, content, call id>``: the same message read
    from state.db, a JSONL transcript or a snapshot of the session gets the same id (stored
    once); two different messages at one position (a snapshot that left one out) do not."""
    content = m.get("content")
    text = content if isinstance(content, str) else orjson.dumps(_json(content)).decode()
    return f"{sid}:{n}:{stable_id(m.get('role'), text, m.get('tool_call_id'), length=8)}"


def hermes_usage(row: dict[str, Any]) -> Usage:
    """A ``sessions`` or ``session_model_usage`` row's totals in the neutral buckets."""
    vendor = {k: row.get(k) for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                                     "reasoning_tokens", "api_call_count", "estimated_cost_usd", "actual_cost_usd",
                                     "cost_status", "cost_source", "billing_provider", "task") if row.get(k) is not None}
    return Usage(input_tokens=_int(row.get("input_tokens")), output_tokens=_int(row.get("output_tokens")),
                 cache_read_tokens=_int(row.get("cache_read_tokens")), cache_write_tokens=_int(row.get("cache_write_tokens")),
                 reasoning_tokens=_int(row.get("reasoning_tokens")), extra={"vendor": vendor})


def content_blocks(content: Any) -> list[Block]:
    """``content``: a string, or OpenAI content parts (``text``, ``image_url``)."""
    content = _json(content)
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [Text(content)]
    if not isinstance(content, list):
        return [Unknown(source_type="content", raw=content)]
    out: list[Block] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("text", "input_text") and isinstance(part.get("text"), str):
            out.append(Text(part["text"]))
        elif kind in ("image_url", "input_image"):
            url = part.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
                head, _, data = url.partition(",")
                try:
                    base64.b64decode(data, validate=True)
                    out.append(Attachment(media_type=head[5:].split(";")[0] or None, data=data))
                    continue
                except ValueError:
                    pass
            out.append(Attachment(uri=url if isinstance(url, str) else None))
        else:
            out.append(Unknown(source_type=str(kind or "part"), raw=part))
    return out


class HermesParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.session: str | None = s.get("session")
        self.model: str | None = s.get("model")
        self.emitted: JsonObject = s.get("emitted", {})
        self.emitted_from: str | None = s.get("from")  # the session mark's thread (an emitted session)
        self.emitted_totals: list[int] = s.get("totals") or []  # the totals emit wrote into it
        self.n: int = s.get("n", 0)  # messages of the session seen so far (their position)
        # the message that carries the session's totals (module docstring, "Usage")
        self.carrier: str | None = s.get("carrier")

    def state(self) -> JsonObject:
        out: JsonObject = {}
        for k, v in (("session", self.session), ("model", self.model), ("emitted", self.emitted),
                     ("from", self.emitted_from), ("totals", self.emitted_totals), ("n", self.n),
                     ("carrier", self.carrier)):
            if v:
                out[k] = v
        return out

    def _sid(self) -> str:
        if self.session is None and "#" not in self.source.path and self.source.path.endswith(".jsonl"):
            # a transcript, ``sessions/<session id>.jsonl``: its lines never name the session
            self.session = self.source.path.replace("\\", "/").rsplit("/", 1)[-1][: -len(".jsonl")] or None
        return self.session or self.source.source_id

    def _next_id(self, m: dict[str, Any], sid: str | None = None) -> str:
        n, self.n = self.n, self.n + 1
        return message_id(sid or self._sid(), n, m)

    # ------------------------------------------------------------------ lines
    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        try:
            d, warning = loads_line(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "not JSON", str(e))
            return
        if warning is not None:
            yield warning
        if not isinstance(d, dict):
            yield Report(INVALID, "not a JSON object", None)
            return
        if self.source.kind == SNAPSHOT:
            yield from self.document(d)
            return
        table = d.get("table")
        if isinstance(table, str):
            handler = TABLES.get(table)
            if handler is None:
                yield Report(UNKNOWN, f"table {table}", "row not read; kept in the source layer")
                return
            yield from handler(self, d)
            return
        if d.get("role") == "session_meta":
            yield from self.session_meta(d)
            return
        if isinstance(d.get("role"), str):
            yield from self.message(d, self._next_id(d), iso_text(d.get("timestamp")))
            return
        yield Report(INVALID, "not a Hermes row or message", None)

    # ------------------------------------------------------------------ sessions
    def head(self, d: dict[str, Any]) -> Iterator[Row]:
        """The first line of a message document, or the whole session row."""
        row = d.get("row")
        if not isinstance(row, dict):
            sid = nonempty_str(d.get("id"))
            if sid is None:
                yield Report(INVALID, "session head without an id", None)
                return
            self.session = sid
            fields: dict[str, Any] = {"createdAt": iso_s(d.get("started_at"))} if iso_s(d.get("started_at")) else {}
            if _int(d.get("schema")):
                fields["metadata"] = {"version": f"state.db schema {d['schema']}"}
            yield ThreadFact(sid, fields)
            return
        yield from self.session_row(row)

    def session_row(self, row: dict[str, Any]) -> Iterator[Row]:
        sid = nonempty_str(row.get("id"))
        if sid is None:
            yield Report(INVALID, "session row without an id", None)
            return
        self.session = sid
        config = _json(row.get("model_config"))
        mark = config.get(EMIT_MARK) if isinstance(config, dict) else None
        if isinstance(mark, dict) and nonempty_str(mark.get("t")):
            self.emitted_from = mark["t"]
            base = mark.get("s")
            self.emitted_totals = [v if _int(v) else 0 for v in base] if isinstance(base, list) else []
        meta = {k: v for k, v in {
            "cwd": nonempty_str(row.get("cwd")), "model": nonempty_str(row.get("model")),
            "source": nonempty_str(row.get("source")), "gitBranch": nonempty_str(row.get("git_branch")),
            "gitRepoRoot": nonempty_str(row.get("git_repo_root")), "modelProvider": nonempty_str(row.get("billing_provider")),
            "endReason": nonempty_str(row.get("end_reason")), "endedAt": iso_s(row.get("ended_at")),
            "profile": nonempty_str(row.get("profile_name")),
            "archived": True if row.get("archived") else None,
        }.items() if v is not None}  # fmt: skip
        if self.emitted_from and self.emitted_from != sid:
            meta["emittedFrom"] = self.emitted_from
        if meta.get("model"):
            self.model = meta["model"]
        fields: dict[str, Any] = {"createdAt": iso_s(row.get("started_at")), "title": nonempty_str(row.get("title")),
                                  "metadata": meta or None}
        parent = nonempty_str(row.get("parent_session_id"))
        if parent:
            fields["parentThreadId"] = parent
        yield ThreadFact(sid, {k: v for k, v in fields.items() if v is not None})
        if self.source.kind != SNAPSHOT:
            # the session's row (title, totals, end, system prompt): its bookkeeping beside its
            # messages, a side record of the thread (not a source that lost its messages)
            yield side_report("session row", sid, title=nonempty_str(row.get("title")),
                              endedAt=iso_s(row.get("ended_at")), systemPrompt=bool(row.get("system_prompt")))

    def sessions(self, d: dict[str, Any]) -> Iterator[Row]:
        if isinstance(d.get("row"), dict):
            self.carrier = nonempty_str(d.get("carrier"))
        yield from self.head(d)
        row = d.get("row")
        if isinstance(row, dict) and nonempty_str(row.get("id")) and _int(d.get("schema")):
            # no client version is recorded: the store's schema version stands for it
            yield ThreadFact(row["id"], {"metadata": {"version": f"state.db schema {d['schema']}"}})
        if isinstance(row, dict) and nonempty_str(row.get("id")) and d.get("usage_rows") == 0:
            yield from self._totals(row, f"{NAME}:{row['id']}")

    def model_usage(self, d: dict[str, Any]) -> Iterator[Row]:
        row = d.get("row")
        if not isinstance(row, dict):
            yield Report(INVALID, "usage row not an object", None)
            return
        key = ":".join(str(row.get(k) or "") for k in ("model", "billing_provider", "task"))
        yield from self._totals(row, f"{NAME}:{self._sid()}:{key}", nonempty_str(row.get("model")))

    def _totals(self, row: dict[str, Any], key: str, model: str | None = None) -> Iterator[Row]:
        if self.emitted_from:
            # a session emit wrote: its totals hold the sum of the archived thread's
            # responses (counted there) plus what Hermes added since it resumed it
            base = dict(zip(TOTALS, self.emitted_totals))
            row = {**row, **{k: (_int(row.get(k)) or 0) - base.get(k, 0) for k in TOTALS}}
            if not any(row[k] > 0 for k in TOTALS):
                yield Report(SKIPPED, "emitted usage", "session totals the emitter wrote (the archived thread keeps its responses)")
                return
        usage = hermes_usage(row)
        if not any((usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)):
            yield Report(METADATA, "usage totals", "no tokens recorded")
            return
        yield UsageRow(key, self._sid(), usage, self.carrier, model or self.model,
                       iso_s(row.get("last_seen") or row.get("ended_at")))

    # ------------------------------------------------------------------ messages
    def message_row(self, d: dict[str, Any]) -> Iterator[Row]:
        row = d.get("row")
        if not isinstance(row, dict):
            yield Report(INVALID, "message row not an object", None)
            return
        sid = nonempty_str(row.get("session_id")) or self._sid()
        self.session = self.session or sid
        extra: dict[str, Any] = {}
        if row.get("active") == 0:
            extra["active"] = False
        if row.get("compacted"):
            extra["compacted"] = True
        yield from self.message(row, self._next_id(row, sid), iso_s(row.get("timestamp")), extra, sid)

    def message(self, m: dict[str, Any], mid: str, ts: str | None, extra: dict[str, Any] | None = None,
                sid: str | None = None) -> Iterator[Row]:
        record = message_mark(m)
        rows = self._message(m, mid, ts, extra or {}, sid or self._sid())
        if record is None:
            if m.get("role") == "assistant":
                self.carrier = mid  # a document's totals follow its messages: its last answer carries them
            yield from rows
        else:
            yield from claim_emitted(record, rows, self.emitted)

    def _message(self, m: dict[str, Any], mid: str, ts: str | None, extra: dict[str, Any], sid: str) -> Iterator[Row]:
        role = m.get("role")
        if role not in ("user", "assistant", "system", "tool"):
            yield Report(UNKNOWN, f"role {role}", "kept as an unknown block")
            yield MessageRow(Message(id=mid, thread_id=sid, role="assistant", ts=ts,
                                     content=(Unknown(source_type=str(role), raw=m),),
                                     provenance=Provenance(NAME, session_id=sid, source_id=mid)))
            return
        blocks: list[Block] = []
        for key in ("reasoning_content", "reasoning"):
            text = m.get(key)
            if isinstance(text, str) and text and not any(isinstance(b, Reasoning) and b.text == text for b in blocks):
                blocks.append(Reasoning(text=text, extra={"field": key}))
        details = _json(m.get("reasoning_details"))
        if details and not blocks:
            blocks.append(Reasoning(text=None, extra={"details": details}))
        elif details:
            extra["reasoningDetails"] = details
        if role == "tool":
            call_id = nonempty_str(m.get("tool_call_id")) or mid
            content = _json(m.get("content"))
            rx = {"tool": m["tool_name"]} if nonempty_str(m.get("tool_name")) else None
            blocks.append(ToolResult(call_id=call_id, output=content, is_error=_is_error(content), extra=rx))
        else:
            blocks.extend(content_blocks(m.get("content")))
        for call in _json(m.get("tool_calls")) or []:
            if not isinstance(call, dict):
                blocks.append(Unknown(source_type="tool_call", raw=call))
                continue
            fn = call.get("function") if isinstance(call.get("function"), dict) else {}
            args = fn.get("arguments")
            parsed = _json(args) if isinstance(args, str) and args.strip()[:1] in ("{", "[") else args
            cx = {k: v for k, v in call.items() if k not in ("id", "type", "function")}
            blocks.append(ToolCall(call_id=nonempty_str(call.get("id")) or "", name=nonempty_str(fn.get("name")) or "",
                                   input=parsed, extra=cx or None))
        for k in ("finish_reason", "effect_disposition", "token_count"):
            if m.get(k) is not None:
                extra[_camel(k)] = m[k]
        if role == "assistant" and self.model:
            extra["model"] = self.model
        if m.get("observed"):
            extra["observed"] = True
        yield MessageRow(Message(id=mid, thread_id=sid, role=role, ts=ts, content=tuple(blocks),
                                 provenance=Provenance(NAME, session_id=sid, source_id=mid), extra=extra or None))

    # ------------------------------------------------------------------ transcripts and snapshots
    def session_meta(self, d: dict[str, Any]) -> Iterator[Row]:
        sid = self._sid()
        meta = {k: v for k, v in {"model": nonempty_str(d.get("model")), "source": nonempty_str(d.get("platform"))}.items() if v}
        if meta.get("model"):
            self.model = meta["model"]
        fields: dict[str, Any] = {"metadata": meta} if meta else {}
        if iso_text(d.get("timestamp")):
            fields["createdAt"] = iso_text(d.get("timestamp"))
        yield ThreadFact(sid, fields)
        yield Report(METADATA, "session_meta", "tools and model of the session; kept in the source layer")

    def document(self, d: dict[str, Any]) -> Iterator[Row]:
        """A whole document: a ``session_<id>.json`` snapshot or an export emit wrote."""
        messages = d.get("messages")
        if not isinstance(messages, list):
            yield Report(INVALID, "not a Hermes session document", "no messages")
            return
        if "session_start" in d or "session_id" in d:  # a snapshot (run_agent._save_session_log)
            self.session = nonempty_str(d.get("session_id")) or self.source.source_id
            if nonempty_str(d.get("model")):
                self.model = d["model"]
            meta = {k: v for k, v in {"model": self.model, "source": nonempty_str(d.get("platform"))}.items() if v}
            yield ThreadFact(self.session, {"createdAt": iso_text(d.get("session_start")), "metadata": meta or None})
            for m in messages:
                if isinstance(m, dict):
                    yield from self.message(m, self._next_id(m), iso_text(m.get("timestamp")))
                else:
                    yield Report(INVALID, "message not an object", None)
            return
        yield from self.session_row(d)
        for m in messages:
            if isinstance(m, dict):
                yield from self.message(m, self._next_id(m), iso_s(m.get("timestamp")))
            else:
                yield Report(INVALID, "message not an object", None)
        if any(_int(d.get(k)) for k in ("input_tokens", "output_tokens")):
            yield from self._totals(d, f"{NAME}:{self._sid()}")


def _camel(k: str) -> str:
    head, *rest = k.split("_")
    return head + "".join(w.title() for w in rest)


def _is_error(content: Any) -> bool | None:
    """Hermes tool results are JSON text; the terminal tool's carries ``exit_code`` and
    ``error`` (0.19.0)."""
    if isinstance(content, dict):
        code = content.get("exit_code")
        if isinstance(code, int) and not isinstance(code, bool):
            return code != 0
        if content.get("error"):
            return True
    return None


Handler = Callable[[HermesParser, dict[str, Any]], Iterator[Row]]
TABLES: dict[str, Handler] = {
    "sessions": HermesParser.sessions,
    "messages": HermesParser.message_row,
    "session_model_usage": HermesParser.model_usage,
}
