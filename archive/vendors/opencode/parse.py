"""OpenCode sessions, read from its SQLite database (``~/.local/share/opencode/opencode.db``).

The source (checked with OpenCode 1.18.33): the ``session``, ``message`` and ``part`` tables
hold the current state and are updated in place; the ``event`` table is append-only and
records every change as a whole new version of the row (``aggregate_id`` = the session,
``seq`` from 0 per session, ``type`` such as ``message.part.updated.1``, ``data`` the JSON
the client wrote). The archive reads the event rows (``__init__.OpenCodeAdapter.documents``)
and stores each as one JSON line of a per-session document::

    {"aggregate":"ses_...","seq":12,"id":"evt_...","type":"message.part.updated.1","data":<the data column>}

``data`` is the column's exact bytes when they are one line of JSON (always, in 1.18.33),
otherwise the column as a JSON string under ``dataText``. The lines are ordered by ``seq``,
so a later read only appends: offsets are stable and a rerun is incremental.

Event types (the suffix ``.1`` is the event's schema version):

* ``session.created`` / ``session.updated`` (``info``: ``id``, ``title``, ``directory``,
  ``parentID`` for a subagent's session, ``version``, ``time``, token and cost totals):
  a ``ThreadFact`` each time (the latest version wins in the fold); the totals are not
  usage (the step-finish parts are), they stay in the source layer.
* ``message.updated`` (``info``: ``role``, ``modelID``/``providerID`` or ``model``,
  ``agent``, ``parentID``, ``path.cwd``, ``time``, ``tokens``, ``cost``, ``error``): the
  message's role and model are remembered for its parts; a ``METADATA`` report (its tokens
  repeat the step-finish part's). An ``error`` (an aborted or failed response) is a
  ``WARNING`` report with the error.
* ``message.part.updated`` (``part``: ``id``, ``messageID``, ``type``): one canonical
  message per part, id = the part id, ``turn_id`` = the OpenCode message id, role from the
  message. A part is written many times while it streams (``text`` from ``""``, ``tool``
  through ``pending`` and ``running``): every version is a ``MessageRow`` that ``revises``
  any earlier one, so a part changed after it was archived (OpenCode clearing an old tool
  output on compaction) updates the canonical row in place, nothing is counted twice, and
  the message keeps the place of the part's first version (OpenCode's part order: a text
  still streaming when the next tool part starts stays before it). A version not finished
  (text or reasoning without ``time.end``, a tool ``pending`` or ``running``) has
  ``extra.unfinished`` on its block (a tool's ``extra.status`` too; a call has no result
  until ``completed`` or ``error``): a session that ended there (the client killed
  mid-call) keeps it as it was (issue 33: such a call was dropped; before revision 2, an
  unfinished version was a ``SKIPPED`` report);

  - ``text`` -> ``Text`` (``synthetic`` text the client adds is ``extra.injected``);
    ``reasoning`` -> ``Reasoning`` (``metadata``, such as signatures, in ``extra``);
  - ``tool`` -> an assistant ``ToolCall`` (``callID``, ``tool``, ``state.input``) and, once
    ``completed`` or ``error``, a ``tool`` message with the ``ToolResult`` (``state.output`` or ``state.error``;
    ``title``, ``metadata`` such as the exit code in ``extra``), ids ``<part>`` and
    ``<part>:result``;
  - ``step-finish`` -> the ``UsageRow`` of one model response, key ``opencode:<part id>``,
    carried by the last canonical message of its OpenCode message. OpenCode's ``input``
    excludes cache reads and writes and its ``output`` excludes ``reasoning`` (``total`` is
    their sum): ``input_tokens = input``, ``cache_read_tokens = cache.read``,
    ``cache_write_tokens = cache.write``, ``output_tokens = output + reasoning``; the raw
    tokens and ``cost`` in ``usage.extra["vendor"]``;
  - ``step-start``, ``snapshot``, ``patch`` (file snapshots of the working tree) are
    ``SKIPPED``; ``file`` -> ``Attachment``; other types (``agent``, ``subtask``,
    ``compaction``, ``retry``) an ``Unknown`` block and an ``UNKNOWN`` report.
* ``message.removed`` / ``message.part.removed`` / ``session.deleted``: OpenCode dropped
  it; the archive keeps what it had (a ``WARNING`` report says so).

An ``opencode export`` document (what ``opencode import`` reads, and what ``emit --to
opencode`` writes: ``opencode-import/<session>.json``) is read as a SNAPSHOT source, its
session, messages and parts through the same handlers as the events that wrote them.

A part ``emit`` wrote carries the emit mark in ``metadata.seshArchive`` (``marked_part``;
digest over the part's sorted keys, since OpenCode's rows hand them back in another order):
its rows are read as the archived message (``base.claim_emitted``), and the step-finish the
mark names (``s``) as the archived response (``u``), or as usage the emitter made up.

Threads: thread id = the session id; a session whose ``parentID`` names another is its
subagent (``parentThreadId``). Bounded state: the role and model of the last
``KNOWN_CAP`` messages and the last canonical message of each; a part of a message
forgotten since (an update long after it was written) takes its role from its type and
gets a ``WARNING``. Resumable, deterministic, never raises on input.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    JsonObject,
    Message,
    Provenance,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
)
from ..base import (
    EMIT_MARK,
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    SNAPSHOT,
    UNKNOWN,
    WARNING,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    claim_emitted,
    intact_mark,
    loads_line,
)

NAME = "opencode"
KNOWN_CAP = 48
UNFINISHED = {"unfinished": True}  # the extra of a block from a part version not finished


def iso_ms(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        dt = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def event_type(t: str) -> str:
    """``message.part.updated.1`` -> ``message.part.updated``."""
    head, _, tail = t.rpartition(".")
    return head if head and tail.isdigit() else t


def opencode_usage(tokens: dict[str, Any], cost: Any) -> Usage:
    cache = _dict(tokens.get("cache"))
    out, reasoning = _int(tokens.get("output")), _int(tokens.get("reasoning"))
    return Usage(
        input_tokens=_int(tokens.get("input")),
        output_tokens=(out or 0) + (reasoning or 0) if out is not None or reasoning is not None else None,
        cache_read_tokens=_int(cache.get("read")),
        cache_write_tokens=_int(cache.get("write")),
        reasoning_tokens=reasoning,
        extra={"vendor": {"tokens": tokens, "cost": cost}},
    )


def digest_form(part: dict[str, Any]) -> dict[str, Any]:
    """A part as the emit mark's digest reads it: keys sorted at every level (OpenCode keeps
    an imported part's ids in columns and the rest as data, so read back from its rows the
    keys come in another order)."""
    return orjson.loads(orjson.dumps(part, option=orjson.OPT_SORT_KEYS))  # type: ignore[no-any-return]


def marked_part(part: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A part without the emit mark ``emit --to opencode`` puts in its ``metadata`` (the one
    field of a text or tool part that ``opencode import`` keeps as it is given), and the
    record ``claim_emitted`` reads (the part's digest form, the mark beside it); None when
    the part has no mark."""
    meta = part.get("metadata")
    if not isinstance(meta, dict) or EMIT_MARK not in meta:
        return part, None
    clean = dict(part)
    rest = {k: v for k, v in meta.items() if k != EMIT_MARK}
    if rest:
        clean["metadata"] = rest
    else:
        del clean["metadata"]
    return clean, {**digest_form(clean), EMIT_MARK: meta[EMIT_MARK]}


class OpenCodeParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None, name: str = NAME) -> None:
        self.source = source
        # the provider the rows name (provenance, usage keys): "opencode", or a fork that
        # keeps OpenCode's store under its own name (Kilo: ``archive/vendors/kilo``)
        self.name = name
        s = state or {}
        # message id -> [role, model, provider, agent, created ms, last canonical message id]
        self.msgs: dict[str, list[Any]] = {k: list(v) for k, v in (s.get("msgs") or {}).items()}
        self.row_session: str | None = s.get("session")  # the session of a document of rows
        self.emitted: JsonObject = s.get("emitted", {})  # base.claim_emitted's held message
        # step-finish part id -> [archived response key or None, message id], from the emit
        # marks of the parts before it (a step-finish keeps no field of ours)
        self.steps: dict[str, list[Any]] = {k: list(v) for k, v in (s.get("steps") or {}).items()}

    def state(self) -> JsonObject:
        out: JsonObject = {"msgs": self.msgs}
        if self.row_session:
            out["session"] = self.row_session
        if self.emitted:
            out["emitted"] = self.emitted
        if self.steps:
            out["steps"] = self.steps
        return out

    def _remember(self, mid: str, info: list[Any]) -> None:
        self.msgs.pop(mid, None)
        self.msgs[mid] = info
        while len(self.msgs) > KNOWN_CAP:
            self.msgs.pop(next(iter(self.msgs)))

    # ------------------------------------------------------------------ lines
    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        try:
            d, warning = loads_line(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "not JSON", str(e))
            return
        if warning is not None:
            yield warning
        if self.source.kind == SNAPSHOT:
            yield from self.export(d)
            return
        if isinstance(d, dict) and isinstance(d.get("table"), str):
            yield from self.row(d)
            return
        if not isinstance(d, dict) or not isinstance(d.get("type"), str):
            yield Report(INVALID, "not an event line", None)
            return
        data = d.get("data")
        if data is None and isinstance(d.get("dataText"), str):
            try:
                data = orjson.loads(d["dataText"])
            except orjson.JSONDecodeError as e:
                yield Report(PARSE_ERROR, "event data not JSON", str(e))
                return
        if not isinstance(data, dict):
            yield Report(INVALID, "event data not an object", d["type"])
            return
        session = _str(data.get("sessionID")) or _str(d.get("aggregate")) or self.source.source_id
        handler = HANDLERS.get(event_type(d["type"]))
        if handler is None:
            yield Report(UNKNOWN, d["type"], "event type not read; kept in the source layer")
            return
        yield from handler(self, session, data)

    def row(self, d: dict[str, Any]) -> Iterator[Row]:
        """A line of a session read from its rows: the session row's columns, or a message
        or part row whose ``data`` lacks the ids its columns hold."""
        table = d["table"]
        data = d.get("data")
        if data is None and isinstance(d.get("dataText"), str):
            try:
                data = orjson.loads(d["dataText"])
            except orjson.JSONDecodeError as e:
                yield Report(PARSE_ERROR, "row data not JSON", str(e))
                return
        if table == "session":
            r = _dict(d.get("row"))
            self.row_session = _str(r.get("id")) or self.source.source_id
            info = {"id": r.get("id"), "title": r.get("title"), "directory": r.get("directory"),
                    "parentID": r.get("parent_id"), "version": r.get("version"), "slug": r.get("slug"),
                    "projectID": r.get("project_id"), "workspaceID": r.get("workspace_id"),
                    "time": {"created": r.get("time_created"), "archived": r.get("time_archived")}}
            yield from self.session(self.row_session, {"info": info})
            return
        session = self.row_session or self.source.source_id
        if not isinstance(data, dict):
            yield Report(INVALID, f"{table} row data not an object", None)
        elif table == "message":
            yield from self.message(session, {"info": {**data, "id": d.get("id"), "sessionID": d.get("session_id")}})
        elif table == "part":
            yield from self.part(session, {"part": {**data, "id": d.get("id"), "messageID": d.get("message_id"),
                                                    "sessionID": session}})
        else:
            yield Report(UNKNOWN, f"table {table}", "row not read; kept in the source layer")

    def export(self, d: Any) -> Iterator[Row]:
        """An ``opencode export`` / ``opencode import`` document, read as the events that
        would have written it: the session, then each message and its parts."""
        info = _dict(d.get("info")) if isinstance(d, dict) else {}
        messages = d.get("messages") if isinstance(d, dict) else None
        session = _str(info.get("id"))
        if session is None or not isinstance(messages, list):
            yield Report(INVALID, "not an OpenCode export", "no info.id or messages")
            return
        yield from self.session(session, {"info": info})
        for m in messages:
            if not isinstance(m, dict):
                yield Report(INVALID, "export message not an object", None)
                continue
            yield from self.message(session, {"info": m.get("info")})
            for part in m.get("parts") if isinstance(m.get("parts"), list) else []:
                yield from self.part(session, {"part": part})

    # ------------------------------------------------------------------ sessions
    def session(self, session: str, data: dict[str, Any]) -> Iterator[Row]:
        info = _dict(data.get("info"))
        time = _dict(info.get("time"))
        meta = {k: v for k, v in {
            "cwd": _str(info.get("directory")), "version": _str(info.get("version")), "slug": _str(info.get("slug")),
            "projectID": _str(info.get("projectID")), "workspaceID": _str(info.get("workspaceID")),
        }.items() if v is not None}  # fmt: skip
        fields: dict[str, Any] = {"createdAt": iso_ms(time.get("created")), "title": _str(info.get("title")),
                                  "parentThreadId": _str(info.get("parentID")), "metadata": meta or None}
        if time.get("archived") is not None:
            meta["archivedAt"] = iso_ms(time.get("archived"))
        yield ThreadFact(_str(info.get("id")) or session, {k: v for k, v in fields.items() if v is not None})

    def session_deleted(self, session: str, data: dict[str, Any]) -> Iterator[Row]:
        yield Report(WARNING, "session.deleted", "OpenCode deleted the session; the archive keeps it")

    # ------------------------------------------------------------------ messages
    def message(self, session: str, data: dict[str, Any]) -> Iterator[Row]:
        info = _dict(data.get("info"))
        mid = _str(info.get("id"))
        if mid is None:
            yield Report(INVALID, "message.updated without an id", None)
            return
        model = _dict(info.get("model"))
        known = self.msgs.get(mid)
        self._remember(mid, [
            _str(info.get("role")) or "assistant",
            _str(info.get("modelID")) or _str(model.get("modelID")),
            _str(info.get("providerID")) or _str(model.get("providerID")),
            _str(info.get("agent")) or _str(info.get("mode")),
            _dict(info.get("time")).get("created"),
            known[5] if known else None,
        ])
        yield Report(METADATA, "message.updated", "role and model for its parts; tokens repeat its step-finish part")
        if info.get("error") is not None:
            yield Report(WARNING, "message error", orjson.dumps(info["error"]).decode()[:2000])
        if info.get("role") == "assistant" and _str(info.get("modelID")):
            meta = {"model": info["modelID"]}
            if _str(info.get("providerID")):
                meta["modelProvider"] = info["providerID"]
            yield ThreadFact(session, {"metadata": meta})

    def message_removed(self, session: str, data: dict[str, Any]) -> Iterator[Row]:
        yield Report(WARNING, "removed", "OpenCode removed a message or part; the archive keeps it")

    # ------------------------------------------------------------------ parts
    def part(self, session: str, data: dict[str, Any]) -> Iterator[Row]:
        part = _dict(data.get("part"))
        pid, mid, kind = _str(part.get("id")), _str(part.get("messageID")), _str(part.get("type"))
        if pid is None or mid is None or kind is None:
            yield Report(INVALID, "part without id, messageID or type", None)
            return
        part, record = marked_part(part)
        handler = PARTS.get(kind)
        if handler is None:
            rows: Iterator[Row] = self._unknown_part(session, part, pid, mid, kind)
        else:
            rows = handler(self, session, part, pid, mid)
        if record is None:
            yield from rows
            return
        mark = intact_mark(record)
        if mark is not None and _str(mark.get("s")):
            self.steps.pop(mark["s"], None)
            self.steps[mark["s"]] = [_str(mark.get("u")), _str(mark.get("c")) or _str(mark.get("m"))]
            while len(self.steps) > KNOWN_CAP:
                self.steps.pop(next(iter(self.steps)))
        yield from claim_emitted(record, rows, self.emitted)

    def _msg(self, session: str, part: dict[str, Any], pid: str, mid: str, role: str | None, blocks: list[Block],
             extra: dict[str, Any] | None = None, suffix: str = "") -> Iterator[Row]:
        info = self.msgs.get(mid)
        if info is None:
            yield Report(WARNING, "part of a forgotten message", f"{mid}: role taken from the part's type")
            info = [role or "assistant", None, None, None, None, None]
            self._remember(mid, info)
        cid = pid + suffix
        time = _dict(part.get("time"))
        ts = iso_ms(time.get("start")) or iso_ms(info[4])
        x = {k: v for k, v in (extra or {}).items() if v is not None}
        if info[1]:
            x["model"] = info[1]
        if info[3]:
            x["agent"] = info[3]
        msg = Message(id=cid, thread_id=session, role=role or info[0], ts=ts, content=tuple(blocks), turn_id=mid,
                      provenance=Provenance(self.name, session_id=session, source_id=pid), extra=x or None)
        if msg.role != "tool" and (info[5] is None or cid >= info[5]):
            # the carrier of the step's usage: its last assistant message in OpenCode's part
            # order (ids sort by creation), not the last one updated (parallel tool calls
            # finish in any order: public v1.16.0 session, issue 33)
            info[5] = cid
        yield MessageRow(msg, revises=True)

    def text(self, session: str, part: dict[str, Any], pid: str, mid: str) -> Iterator[Row]:
        info = self.msgs.get(mid)
        user = info is not None and info[0] == "user"
        unfinished = UNFINISHED if not user and _dict(part.get("time")).get("end") is None else None
        extra = {"injected": True if part.get("synthetic") else None, "ignored": True if part.get("ignored") else None,
                 "metadata": part.get("metadata")}
        text = part.get("text") if isinstance(part.get("text"), str) else ""
        yield from self._msg(session, part, pid, mid, None, [Text(text, extra=unfinished)], extra)

    def reasoning(self, session: str, part: dict[str, Any], pid: str, mid: str) -> Iterator[Row]:
        text = part.get("text") if isinstance(part.get("text"), str) else ""
        extra = {"metadata": part["metadata"]} if part.get("metadata") else {}
        if _dict(part.get("time")).get("end") is None:
            extra.update(UNFINISHED)
        yield from self._msg(session, part, pid, mid, "assistant", [Reasoning(text=text, extra=extra or None)])

    def tool(self, session: str, part: dict[str, Any], pid: str, mid: str) -> Iterator[Row]:
        state = _dict(part.get("state"))
        status = state.get("status")
        call_id = _str(part.get("callID")) or pid
        name = _str(part.get("tool")) or ""
        call_extra = {k: v for k, v in {"title": state.get("title"), "metadata": part.get("metadata")}.items() if v is not None}
        if status not in ("completed", "error"):
            # a call in any state is the model's: one still pending or running when the
            # session ended (the client killed mid-call) stays, unfinished; a later version
            # of the part revises it
            call_extra.update({"status": status, **UNFINISHED} if isinstance(status, str) else UNFINISHED)
            yield from self._msg(session, part, pid, mid, "assistant",
                                 [ToolCall(call_id=call_id, name=name, input=state.get("input"), extra=call_extra)])
            return
        yield from self._msg(session, part, pid, mid, "assistant",
                             [ToolCall(call_id=call_id, name=name, input=state.get("input"), extra=call_extra or None)])
        error = status == "error"
        res_extra = {k: v for k, v in {"metadata": state.get("metadata"), "time": state.get("time"),
                                        "attachments": state.get("attachments")}.items() if v is not None}
        output = state.get("error") if error else state.get("output")
        yield from self._msg(session, {"time": {"start": _dict(state.get("time")).get("end")}}, pid, mid, "tool",
                             [ToolResult(call_id=call_id, output=output, is_error=error, extra=res_extra or None)],
                             suffix=":result")

    def step_finish(self, session: str, part: dict[str, Any], pid: str, mid: str) -> Iterator[Row]:
        tokens = _dict(part.get("tokens"))
        info = self.msgs.get(mid)
        carrier = info[5] if info else None
        model = info[1] if info else None
        ts = iso_ms(_dict(part.get("time")).get("end")) or (iso_ms(info[4]) if info else None)
        step = self.steps.get(pid)
        if step is not None:  # a step-finish emit wrote: the archived response's usage, or none
            if step[0] is None:
                yield Report(SKIPPED, "emitted usage", "usage the emitter wrote where the archived thread has no response")
            else:
                yield UsageRow(step[0], session, opencode_usage(tokens, part.get("cost")), step[1], model, ts)
            return
        yield UsageRow(f"{self.name}:{pid}", session, opencode_usage(tokens, part.get("cost")), carrier, model, ts)
        if carrier is None:
            yield Report(WARNING, "step-finish before any part", "usage kept without a message")

    def skipped(self, session: str, part: dict[str, Any], pid: str, mid: str) -> Iterator[Row]:
        yield Report(SKIPPED, str(part.get("type")), "working-tree snapshot bookkeeping, not sent to the model")

    def file(self, session: str, part: dict[str, Any], pid: str, mid: str) -> Iterator[Row]:
        url = part.get("url") if isinstance(part.get("url"), str) else None
        data = None
        if url and url.startswith("data:") and ";base64," in url:
            data = url.split(";base64,", 1)[1]
            try:
                base64.b64decode(data, validate=True)
            except ValueError:
                data = None
        extra = {k: v for k, v in {"filename": part.get("filename"), "source": part.get("source")}.items() if v is not None}
        yield from self._msg(session, part, pid, mid, None, [Attachment(
            media_type=_str(part.get("mime")), uri=None if data else url, data=data, extra=extra or None)])

    def _unknown_part(self, session: str, part: dict[str, Any], pid: str, mid: str, kind: str) -> Iterator[Row]:
        yield Report(UNKNOWN, f"part {kind}", "kept as an unknown block")
        yield from self._msg(session, part, pid, mid, None, [Unknown(source_type=kind, raw=part)])


Handler = Callable[[OpenCodeParser, str, dict[str, Any]], Iterator[Row]]
HANDLERS: dict[str, Handler] = {
    "session.created": OpenCodeParser.session,
    "session.updated": OpenCodeParser.session,
    "session.deleted": OpenCodeParser.session_deleted,
    "message.updated": OpenCodeParser.message,
    "message.removed": OpenCodeParser.message_removed,
    "message.part.updated": OpenCodeParser.part,
    "message.part.removed": OpenCodeParser.message_removed,
}
PartHandler = Callable[[OpenCodeParser, str, dict[str, Any], str, str], Iterator[Row]]
PARTS: dict[str, PartHandler] = {
    "text": OpenCodeParser.text,
    "reasoning": OpenCodeParser.reasoning,
    "tool": OpenCodeParser.tool,
    "step-finish": OpenCodeParser.step_finish,
    "step-start": OpenCodeParser.skipped,
    "snapshot": OpenCodeParser.skipped,
    "patch": OpenCodeParser.skipped,
    "file": OpenCodeParser.file,
}
