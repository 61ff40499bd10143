"""Mistral Vibe's unified session store (the default harness since 2.2x; checked with vibe
2.26.1 and 3.0.3, ``store_format`` ``mistral.vibe.unified-session-store/v1`` minor 8):
``<VIBE_HOME>/logs/session/unified/<session uuid>/`` holding

* ``journal/<first sequence, 16 digits>.jsonl``: the recovery journal, one hash-chained
  record a line (``sequence``, ``type``, ``payload``, ``previous_record_sha256``,
  ``record_sha256``), appended while the harness runs. On resume Vibe snapshots the
  session into a new generation and *deletes* the segments and generations the snapshot
  replaces (2.26.1: ``journal/0000000000000001.jsonl`` gone, ``...35.jsonl`` continued);
* ``generations/<sequence>/{manifest,checkpoint,projection-state,runtime-state}.json``:
  the snapshots (``runtime-state.json`` names the active model alias and the cwd);
* ``chunks/<sha256>.json``: content-addressed parts of those snapshots (the model's context
  messages, the public history entries, the tool catalogue);
* ``meta.json``: the session's metadata (cwd, times, title, parent), rewritten in place.

Invariants:

* **Thread** = the session folder's uuid (every record names it too); the journal
  segments, snapshots and ``meta.json`` of one session meet there.
* **Every segment and every generation is a source of its own**, so what Vibe deletes on
  resume stays in the archive; a segment is a LINES source read from its last offset (the
  resumed run appends to the segment the last snapshot names), the snapshot files are
  SNAPSHOT sources (each rewrite a generation). Messages are added once: the journal's
  records carry every message once, under ids from Vibe's ids.
* **Messages** come from the journal: a user prompt from its ``projection_delta``
  ``append_entry`` (id from the entry id, time ``createdAt``); a model response from its
  ``action_result`` ``completion_succeeded`` (reasoning, text and tool calls in order, one
  message per action id, usage keyed by it; time: the harness's clock at the last record
  before it); a tool result from its ``action_result`` ``tool_succeeded``/``tool_failed``.
  The rest of the journal repeats those (``command_reserved``, ``core_input`` replay inputs,
  the public ``projection_delta`` entries of responses and effects: ``duplicate``) or is
  bookkeeping (``action_intent`` request envelopes, hooks, receipts).
* **Snapshots are not projected** (``metadata``): they repeat what the journal held.
  Not done: a session whose first segments Vibe deleted before the archive first saw them
  keeps those turns only in the source layer (the snapshot chunks' bytes).
* **Usage.** ``input_tokens`` counts ``cached_input_tokens`` inside it (as OpenAI's
  ``prompt_tokens``): input = input - cached; the vendor's figures in ``usage.extra``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from ...model import Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown, Usage
from ..base import (DUPLICATE, INVALID, METADATA, PARSE_ERROR, SKIPPED, UNKNOWN, MessageRow, Report, Row, SourceInfo,
                    ThreadFact, UsageRow, claim_emitted, nonempty_str, stable_id)
from .common import NAME, snippet

UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
SNAPSHOT_FILES = ("manifest.json", "checkpoint.json", "projection-state.json", "runtime-state.json")


def session_of(path: str) -> str | None:
    """The session uuid of a file under ``unified/<uuid>/``."""
    return session_parts(path)[0]


@lru_cache(maxsize=1024)  # asked about each file four to six times in a run (discovery, identity, parsers)
def session_parts(path: str) -> tuple[str | None, tuple[str, ...]]:
    """The session uuid of a file under ``unified/<uuid>/`` (or None), and the path's parts."""
    parts = Path(path).parts
    if "unified" in parts:
        i = len(parts) - 1 - parts[::-1].index("unified")
        if i + 1 < len(parts) and UUID_RE.match(parts[i + 1]):
            return parts[i + 1], parts
    return None, parts


def ms_ts(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 10**14:
        dt = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def neutral_usage(u: JsonObject) -> Usage:
    inp, cached = _int(u.get("input_tokens")), _int(u.get("cached_input_tokens")) or 0
    return Usage(input_tokens=None if inp is None else max(inp - cached, 0), output_tokens=_int(u.get("output_tokens")),
                 cache_read_tokens=cached, reasoning_tokens=_int(u.get("reasoning_tokens")), extra={"vendor": u})


def _text_of(content: Any) -> str | None:
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
        return "\n".join(texts) if len(texts) == len(content) else None
    return content if isinstance(content, str) else None


def _content_blocks(content: Any) -> list[Block]:
    out: list[Block] = []
    for c in content if isinstance(content, list) else [content]:
        if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str):
            out.append(Text(c["text"]))
        elif c is not None:
            out.append(Unknown(source_type=str(c.get("type") if isinstance(c, dict) else type(c).__name__), raw=c))
    return out


def _parts(parts: Any) -> list[Block]:
    """A completion's ``parts`` (reasoning, text, tool_call) as blocks, in order."""
    out: list[Block] = []
    for p in parts if isinstance(parts, list) else []:
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text" and isinstance(p.get("text"), str):
            out.append(Text(p["text"]))
        elif kind == "reasoning":
            text = _text_of(p.get("content"))
            extra = {k: v for k, v in p.items() if k not in ("type", "content", "_meta") and v is not None}
            out.append(Reasoning(text=text, extra=extra or None) if text is not None
                       else Unknown(source_type="reasoning", raw=p))
        elif kind == "tool_call" and isinstance(p.get("name"), str):
            raw = p.get("arguments_json")
            try:
                args = orjson.loads(raw) if isinstance(raw, str) else p.get("arguments")
            except orjson.JSONDecodeError:
                args = raw
            extra = {k: v for k, v in p.items() if k not in ("type", "id", "name", "arguments_json", "_meta") and v is not None}
            out.append(ToolCall(call_id=str(p.get("id") or ""), name=p["name"], input=args, extra=extra or None))
        else:
            out.append(Unknown(source_type=str(kind), raw=p))
    return out


def _session_named(d: Any) -> str | None:
    """The session uuid a journal record names (a command's ``params.sessionId``, an entry's
    ``sessionId``), if any."""
    payload = d.get("payload") if isinstance(d, dict) else None
    if not isinstance(payload, dict):
        return None
    params = payload.get("params") if isinstance(payload.get("params"), dict) else {}
    for value in [params.get("sessionId")] + [op.get("entry", {}).get("sessionId") for op in payload.get("delta") or []
                                              if isinstance(op, dict) and isinstance(op.get("entry"), dict)]:
        if isinstance(value, str) and UUID_RE.match(value):
            return value
    return None


class JournalParser:
    """One journal segment; see the module docstring for what each record becomes."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.emitted: JsonObject = s.get("emitted", {})
        # a segment outside its session folder (given by hand): the session its first record names
        self.thread = session_of(source.path) or s.get("thread") or "vibe-" + stable_id(source.source_id, "session")
        self.ts: str | None = s.get("ts")  # the harness's clock at the last record that gave it
        self.started: bool = s.get("started", False)
        self.previous: str | None = s.get("previous")  # the last message, for parent ids
        self.facts: JsonObject = s.get("facts", {})

    def state(self) -> JsonObject:
        return {"emitted": self.emitted, "ts": self.ts, "started": self.started, "previous": self.previous,
                "facts": self.facts, "thread": self.thread}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        if not isinstance(d, dict):
            return iter([Report(PARSE_ERROR, "not a JSON object")])
        return iter(list(claim_emitted(d, self._dispatch(d), self.emitted)))

    def _dispatch(self, d: JsonObject) -> Iterator[Row]:
        if not self.started:
            self.started = True
            named = _session_named(d)
            if session_of(self.source.path) is None and named is not None:
                self.thread = named
            meta = {"sessionId": self.thread, "layout": "unified"} if UUID_RE.match(self.thread) else {"layout": "unified"}
            yield ThreadFact(self.thread, {"metadata": meta})
        kind = d.get("type")
        payload = d.get("payload")
        if not isinstance(payload, dict):
            yield Report(INVALID, f"journal record {kind} without payload", snippet(d))
            return
        handler = HANDLERS.get(kind)  # type: ignore[arg-type]
        if handler is None:
            yield Report(UNKNOWN, f"journal record {kind}", snippet(d))
            return
        yield from handler(self, payload)

    def _message(self, mid: str, role: str, blocks: list[Block], ts: str | None, source_id: str | None,
                 extra: JsonObject | None = None) -> Message:
        msg = Message(id=mid, thread_id=self.thread, role=role, ts=ts, content=tuple(blocks), parent_id=self.previous,
                      provenance=Provenance(provider=NAME, session_id=self.thread, source_id=source_id),
                      extra=extra or None)
        self.previous = mid
        return msg

    # -- record types

    def _command(self, p: JsonObject) -> Iterator[Row]:
        if p.get("method") == "turn/start":
            yield Report(DUPLICATE, "command_reserved turn/start", "the prompt; its projection_delta entry is projected")
        else:
            yield Report(SKIPPED, f"command_reserved {p.get('method')}", None)

    def _core_input(self, p: JsonObject) -> Iterator[Row]:
        inp = p.get("input") if isinstance(p.get("input"), dict) else {}
        det = inp.get("determinism") if isinstance(inp.get("determinism"), dict) else {}
        self.ts = ms_ts(det.get("time_unix_ms")) or self.ts
        yield Report(DUPLICATE, "core_input", "the harness's replay input: repeats a prompt or an action result")

    def _projection(self, p: JsonObject) -> Iterator[Row]:
        rows: list[Row] = []
        for op in p.get("delta") if isinstance(p.get("delta"), list) else []:
            if not isinstance(op, dict):
                continue
            entry = op.get("entry")
            if op.get("op") == "set_envelope" and isinstance(op.get("state"), dict):
                rows.extend(self._envelope(op["state"]))
            elif isinstance(entry, dict):
                self.ts = ms_ts(entry.get("updatedAt")) or self.ts
                if entry.get("type") == "message" and entry.get("role") == "user" and op.get("op") == "append_entry":
                    rows.append(MessageRow(self._user(entry)))
        if not any(isinstance(r, MessageRow) for r in rows):
            rows.append(Report(DUPLICATE, "projection_delta", "the public view of entries the action results hold"))
        yield from rows

    def _user(self, entry: JsonObject) -> Message:
        eid = str(entry.get("id"))
        extra = {k: entry[k] for k in ("source", "turnId") if k in entry}
        if entry.get("source") not in (None, "turn_start"):
            extra["injected"] = True
        return self._message(stable_id(NAME, self.thread, eid), "user", _content_blocks(entry.get("content")),
                             ms_ts(entry.get("createdAt")), eid, extra)

    def _envelope(self, state: JsonObject) -> Iterator[Row]:
        session = state.get("session") if isinstance(state.get("session"), dict) else {}
        fields: JsonObject = {}
        meta: JsonObject = {}
        if ms_ts(session.get("createdAt")):
            fields["createdAt"] = ms_ts(session.get("createdAt"))
        if nonempty_str(session.get("title")):
            fields["title"] = session["title"]
        for key, name in (("parentSessionId", "parentSessionId"), ("rootSessionId", "rootSessionId")):
            if nonempty_str(session.get(key)):
                meta[name] = session[key]
        if meta:
            fields["metadata"] = meta
        if fields and fields != self.facts:
            self.facts = fields
            yield ThreadFact(self.thread, fields)

    def _intent(self, p: JsonObject) -> Iterator[Row]:
        yield Report(METADATA, f"action_intent {p.get('kind')}", "the request envelope (model input, tool call)")

    def _result(self, p: JsonObject) -> Iterator[Row]:
        outer = p.get("result") if isinstance(p.get("result"), dict) else {}
        kind = outer.get("type")
        res = outer.get("result") if isinstance(outer.get("result"), dict) else {}
        aid = nonempty_str(p.get("action_id")) or nonempty_str(outer.get("action_id"))
        if aid is None:
            yield Report(INVALID, f"action_result {kind} without action id", snippet(p))
            return
        mid = stable_id(NAME, self.thread, "action", aid)
        if kind == "completion_succeeded":
            extra = {"finishReason": res["finish_reason"]} if isinstance(res.get("finish_reason"), str) else None
            msg = self._message(mid, "assistant", _parts(res.get("parts")), self.ts, aid, extra)
            yield MessageRow(msg)
            if isinstance(res.get("usage"), dict):
                yield UsageRow(f"{NAME}:{self.thread}:{aid}", self.thread, neutral_usage(res["usage"]), mid, None, self.ts)
        elif kind in ("tool_succeeded", "tool_failed"):
            output = res.get("structured_content")
            if output is None:
                output = _text_of(res.get("content"))
                output = res.get("content") if output is None else output
            extra = {k: v for k, v in res.items() if k not in ("structured_content", "content") and v is not None}
            block = ToolResult(call_id=str(outer.get("call_id") or ""), output=output,
                               is_error=True if kind == "tool_failed" or res.get("type") not in (None, "success") else None,
                               extra=extra or None)
            yield MessageRow(self._message(mid, "tool", [block], self.ts, aid))
        elif kind == "hook_completed":
            yield Report(SKIPPED, "action_result hook_completed", "a hook's outcome (the tool result is projected)")
        else:
            yield Report(UNKNOWN, f"action_result {kind}", snippet(p))

    def _receipt(self, p: JsonObject) -> Iterator[Row]:
        yield Report(SKIPPED, "receipt", "a command's acknowledgement")


HANDLERS = {
    "command_reserved": JournalParser._command,
    "core_input": JournalParser._core_input,
    "projection_delta": JournalParser._projection,
    "action_intent": JournalParser._intent,
    "action_result": JournalParser._result,
    "receipt_succeeded": JournalParser._receipt,
    "receipt_failed": JournalParser._receipt,
}


class SnapshotParser:
    """``meta.json``, ``generations/*/*.json`` and ``chunks/*.json`` of a unified session:
    a SNAPSHOT document fed whole."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        session, parts = session_parts(source.path)
        self.thread = session or "vibe-" + stable_id(source.source_id, "session")
        self.name = parts[-1] if parts else ""
        self.in_chunks = len(parts) > 1 and parts[-2] == "chunks"

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        return iter(list(self._rows(d)))

    def _rows(self, d: Any) -> Iterator[Row]:
        if self.name == "meta.json" and isinstance(d, dict):
            yield from meta_facts(self.thread, d, "unified")
        elif self.name == "runtime-state.json" and isinstance(d, dict):
            sm = d.get("session_metadata") if isinstance(d.get("session_metadata"), dict) else {}
            meta = {k: v for k, v in (("model", nonempty_str(sm.get("active_model"))), ("cwd", nonempty_str(sm.get("cwd"))),
                                      ("agent", nonempty_str(sm.get("agent_name")))) if v is not None}
            yield ThreadFact(self.thread, {"metadata": meta})
        else:
            yield Report(METADATA, f"snapshot {'chunk' if self.in_chunks else self.name}",
                         "a snapshot of state the journal holds (kept in the source layer)")


def meta_facts(thread: str, d: JsonObject, layout: str) -> Iterator[Row]:
    env = d.get("environment") if isinstance(d.get("environment"), dict) else {}
    meta: JsonObject = {k: v for k, v in (
        ("sessionId", nonempty_str(d.get("session_id"))), ("cwd", nonempty_str(env.get("working_directory"))),
        ("originDirectory", nonempty_str(d.get("origin_directory"))),
        ("gitBranch", nonempty_str(d.get("git_branch"))), ("gitCommit", nonempty_str(d.get("git_commit"))),
        ("endTime", nonempty_str(d.get("end_time"))), ("parentSessionId", nonempty_str(d.get("parent_session_id"))),
        ("layout", layout),
    ) if v is not None}
    fields: JsonObject = {"metadata": meta}
    if nonempty_str(d.get("start_time")):
        fields["createdAt"] = d["start_time"]
    if nonempty_str(d.get("title")):
        fields["title"] = d["title"]
    yield ThreadFact(thread, fields)
