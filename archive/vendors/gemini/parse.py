"""Gemini CLI chat recordings: ``~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl``.

Format (Gemini CLI 0.61.0, ``ChatRecordingService``): JSON Lines, append-only, but a log of
*operations* that the client replays into one conversation when it resumes:

* a **header** ``{sessionId, projectHash, startTime, lastUpdated, kind}`` (``kind`` main
  or subagent; optional ``directories``, ``summary``); a resume appends a new header;
* **message upserts** ``{id, timestamp, type, content, ...}``: the same ``id`` is written
  again when the message changes (a ``gemini`` message gains ``toolCalls`` with their
  ``result`` and ``status``); ``type`` ``user`` (``content``: Gemini parts) or ``gemini``
  (``content``: a string, ``thoughts[]`` of ``{subject, description, timestamp}``, one
  per streamed chunk: a chunk without a subject continues the thought before it and is
  joined to it (``extra["chunks"]`` counts them),
  ``tokens`` ``{input, output, cached, thoughts, tool, total}``, ``model``); ``info``,
  ``error`` and ``warning`` are UI notices the model never sees;
* ``{"$set": {...}}`` **patches** of the session's metadata (``lastUpdated``, ``summary``,
  ``sessionId``, ``memoryScratchpad``); ``$set.messages`` replaces the whole history with
  a snapshot (written when a session starts and again on every resume);
* ``{"$rewindTo": id}``: the history from that message on is dropped (``/rewind``).

The older layout (before JSON Lines) is one JSON document per session,
``chats/session-*.json``: the header fields plus ``messages[]``; it is read as a SNAPSHOT
source (the whole document is one "line" at offset 0), through the same upsert code
(public examples show the same fields, ``content`` sometimes a plain string; Qwen Code
0.1.x writes them too, assistant type ``qwen``). The ``logs.json`` prompt log and the
``/chat save`` checkpoints beside the chats are JSON documents this parser hands to
``saved.py``.

Invariants:

* **Replay, never double count.** The client replays the upserts in order, the last
  version of a message id wins; so does the archive. The parser keeps, in its state, a
  short digest of the version it last emitted for each vendor message and of each tool
  result. A rewrite or a snapshot that repeats them is a ``DUPLICATE`` report; a rewrite
  that changes the message (it gains its ``toolCalls``, a streamed body is completed) is a
  ``MessageRow(revises=True)``: the canonical row is updated in place, keeping its place
  in the thread, so incremental ingest equals whole ingest and nothing is stored twice.
  A ``$set.messages`` snapshot only adds messages the log lacks: its copies of known ones
  are reduced (parts only, no model or tokens) and never revise them.
* **Ids.** Thread id = ``sessionId``. The canonical message of vendor message ``id`` is
  ``stable_id(thread, id, "head")``: thoughts, text, then its tool calls; a tool result
  ``stable_id(thread, "result", call id)``, a message of its own (the model reads it as
  the next turn).
* **One result per call.** A result appears inside ``toolCalls[].result`` (the
  ``functionResponse`` parts, with ``status``) and again as a ``user`` message with the
  same ``functionResponse``: the first one seen is stored, the second is a ``DUPLICATE``.
* **Usage in neutral buckets.** Gemini counts cached input inside ``input``:
  ``input_tokens = input - cached + tool``, ``cache_read_tokens = cached``,
  ``output_tokens = output + thoughts``, ``reasoning_tokens = thoughts``; the raw
  ``tokens`` stay in ``usage.extra["vendor"]``. One ``UsageRow`` per vendor message, key
  ``gemini:<thread>:<id>``: every rewrite repeats the key, the latest wins.
* **Model.** Every response's ``UsageRow`` names a model: its record's ``model``, else that
  of the response before it (a record without one: ``recordMessage`` called without a
  model, a resume snapshot's reduced copy); the thread's ``metadata.model`` is the latest
  response's (revision 2: before it, no Gemini thread had a model, public 0.x sessions
  with usage included).
* **Injected context.** The ``<session_context>`` user message the client prepends is
  kept with ``extra["injected"]``; the cwd comes from the header's ``directories`` or,
  failing that, from that message's "Workspace Directories" (the project mapping in
  ``projects.json`` is not read: rows depend only on the file's bytes).
* Resumable (small JSON state), deterministic, never raises on input.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from ...model import (
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
    DUPLICATE,
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    UNKNOWN,
    WARNING,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    claim_emitted,
    stable_id,
)
from ..base import nonempty_str as _str
from .parts import fold_result_images, part_blocks
from .saved import saved_document_rows

NAME = "gemini"
CONTEXT_TAG = "<session_context>"
NOTICE_TYPES = ("info", "error", "warning")
_WORKSPACE = re.compile(r"\*\*Workspace Directories:\*\*\n\s*- ([^\n]+)")


def _digest(*parts: object) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]


# ---------------------------------------------------------------- usage and context


def gemini_usage(tokens: Any) -> Usage | None:
    """Gemini CLI ``tokens`` (or the API's ``usageMetadata``) in the neutral buckets."""
    if not isinstance(tokens, dict):
        return None

    def n(*keys: str) -> int:
        for k in keys:
            v = tokens.get(k)
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        return 0

    inp, cached = n("input", "promptTokenCount"), n("cached", "cachedContentTokenCount")
    out, thoughts = n("output", "candidatesTokenCount"), n("thoughts", "thoughtsTokenCount")
    tool = n("tool", "toolUsePromptTokenCount")
    total = n("total", "totalTokenCount")
    # Gemini counts thoughts apart from the candidates (total = input + output + thoughts);
    # a proxy with OpenAI's convention counts them inside (total = input + output)
    output = out if thoughts and total == inp + out + tool else out + thoughts
    return Usage(input_tokens=max(inp - cached, 0) + tool, output_tokens=output, cache_read_tokens=cached,
                 cache_write_tokens=0, reasoning_tokens=thoughts, extra={"vendor": tokens})


def context_cwd(text: str) -> str | None:
    m = _WORKSPACE.search(text)
    return m.group(1).strip() if m else None


# ---------------------------------------------------------------- the parser


class GeminiParser:
    """Feeds chat-recording lines (or one legacy JSON document); see the module docstring.
    Qwen Code 0.1.x writes the same documents (its assistant type is ``qwen``): its adapter
    reads them with this parser under its own ``name`` and ``assistant_types``."""

    name = NAME
    assistant_types: tuple[str, ...] = ("gemini",)

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.thread: str | None = s.get("thread")
        self.turn: str | None = s.get("turn")
        self.cwd: str | None = s.get("cwd")
        self.done: set[str] = set(s.get("done", []))  # digests of what was emitted
        self.bodies: dict[str, str] = dict(s.get("bodies", {}))  # vendor id -> digest of its last version
        self.emitted: JsonObject = s.get("emitted", {})  # base.claim_emitted's held message
        self.model: str | None = s.get("model")  # the latest response's model
        self.ts: str | None = None
        self.in_snapshot = False

    def state(self) -> JsonObject:
        return {"thread": self.thread, "turn": self.turn, "cwd": self.cwd, "done": sorted(self.done),
                "bodies": self.bodies, "emitted": self.emitted, "model": self.model}

    def _thread(self) -> str:
        if self.thread is None:  # content before any header: a stable stand-in
            self.thread = f"{self.name}-" + stable_id(self.source.source_id, "thread")
        return self.thread

    def _once(self, *key: object) -> bool:
        """True the first time ``key`` is seen (then remembered)."""
        d = _digest(*key)
        if d in self.done:
            return False
        self.done.add(d)
        return True

    def _seen(self, *key: object) -> bool:
        return _digest(*key) in self.done

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        saved = saved_document_rows(self.name, self.source, d)
        if saved is not None:  # a /chat save checkpoint or the prompt log (logs.json)
            return iter(saved)
        if not isinstance(d, dict):
            return iter([Report(PARSE_ERROR, "not a JSON object")])
        rows = list(claim_emitted(d, self._dispatch(d), self.emitted))
        return iter(rows or [Report(SKIPPED, "empty record")])

    def _dispatch(self, d: JsonObject) -> Iterator[Row]:
        if isinstance(d.get("$rewindTo"), str):
            yield from self._rewind(d)
        elif isinstance(d.get("id"), str):
            yield from self._message(d)
        elif isinstance(d.get("$set"), dict):
            yield from self._set(d["$set"])
        elif isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str):
            yield from self._header(d)
        else:
            yield Report(UNKNOWN, "record", orjson.dumps(d)[:200].decode("utf-8", "replace"))

    # -- records

    def _header(self, d: JsonObject) -> Iterator[Row]:
        first = self.thread is None
        if first:
            self.thread = d["sessionId"]
        elif d["sessionId"] != self.thread:
            yield Report(WARNING, "header of another session", d["sessionId"])
        meta: JsonObject = {"projectHash": d["projectHash"]}
        for k in ("kind",):
            if _str(d.get(k)):
                meta[k] = d[k]
        dirs = d.get("directories")
        if isinstance(dirs, list) and dirs and _str(dirs[0]) and self.cwd is None:
            self.cwd = dirs[0]
            meta["cwd"] = dirs[0]
        if isinstance(dirs, list):
            meta["directories"] = dirs
        fields: JsonObject = {"metadata": meta}
        if first and _str(d.get("startTime")):
            fields["createdAt"] = d["startTime"]
        if _str(d.get("summary")):
            fields["title"] = d["summary"]
        yield ThreadFact(self._thread(), fields)
        if not first:
            yield Report(METADATA, "header (resume)", d.get("startTime"))
        if isinstance(d.get("messages"), list):  # the legacy single-document layout
            yield from self._snapshot(d["messages"])

    def _set(self, patch: JsonObject) -> Iterator[Row]:
        rows: list[Row] = []
        if isinstance(patch.get("messages"), list):
            rows.extend(self._snapshot(patch["messages"]))
        meta: JsonObject = {}
        fields: JsonObject = {}
        for k, v in patch.items():
            if k == "messages":
                continue
            if k == "summary" and _str(v):
                fields["title"] = v
            elif k == "lastUpdated":
                continue  # bookkeeping after every write; the messages carry their times
            elif k == "sessionId":
                if v != self._thread():
                    rows.append(Report(WARNING, "$set sessionId of another session", str(v)))
            else:
                meta[k] = v
        if meta or fields:
            if meta:
                fields["metadata"] = meta
            rows.append(ThreadFact(self._thread(), fields))
        if not rows:
            rows.append(Report(SKIPPED if set(patch) == {"lastUpdated"} else METADATA,
                               "$set " + ",".join(sorted(patch)) if patch else "$set"))
        elif all(isinstance(r, ThreadFact) for r in rows):
            rows.append(Report(METADATA, "$set " + ",".join(sorted(patch))))
        yield from rows

    def _rewind(self, d: JsonObject) -> Iterator[Row]:
        # the messages stay stored (the archive is lossless); the rewind is on record
        yield ThreadFact(self._thread(), {"metadata": {"rewoundTo": d["$rewindTo"]}})
        yield Report(METADATA, "$rewindTo", d["$rewindTo"])

    def _snapshot(self, messages: list[Any]) -> Iterator[Row]:
        new = False
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("id"), str):
                yield Report(INVALID, "snapshot entry without id")
                continue
            self.in_snapshot = True
            try:
                found = list(self._message(m))
            finally:
                self.in_snapshot = False
            for row in found:
                new = new or not (isinstance(row, Report) and row.kind == DUPLICATE)
                if not (isinstance(row, Report) and row.kind == DUPLICATE):
                    yield row
        if not new:
            yield Report(DUPLICATE, "$set messages snapshot", f"{len(messages)} messages already stored")

    def _message(self, d: JsonObject) -> Iterator[Row]:
        kind = d.get("type")
        handler = MESSAGE_HANDLERS.get(kind) if isinstance(kind, str) else None
        if kind in self.assistant_types:
            handler = GeminiParser._gemini
        self.ts = _str(d.get("timestamp"))
        if handler is None:
            yield from self._emit_new(d, "system", [Unknown(source_type=f"message {kind}", raw=d)], {})
            yield Report(UNKNOWN, f"message type {kind}")
            return
        yield from handler(self, d)

    def _msg(self, vid: str, slot: str, role: str, blocks: list[Block], extra: JsonObject, turn: bool = True) -> Message:
        thread = self._thread()
        mid = stable_id(self.name, thread, vid, slot)
        return Message(
            id=mid, thread_id=thread, role=role, ts=self.ts, content=tuple(blocks),
            turn_id=self.turn if turn else None,
            provenance=Provenance(provider=self.name, session_id=thread, source_id=vid),
            extra=extra or None,
        )  # fmt: skip

    def _emit_new(self, d: JsonObject, role: str, blocks: list[Block], extra: JsonObject) -> Iterator[Row]:
        vid = d["id"]
        body = _digest(role, [b.to_dict() for b in blocks], extra)
        first = self._once(vid, "head")
        # a resume snapshot repeats the history in a reduced form (parts, no model or
        # tokens): it adds the messages the log lacks, it does not revise the ones it has
        if first or (self.bodies.get(vid) != body and not self.in_snapshot):
            self.bodies[vid] = body
            yield MessageRow(self._msg(vid, "head", role, blocks, extra), revises=not first)
        else:
            yield Report(DUPLICATE, f"{d.get('type')} message {vid}")

    # -- message types

    def _user(self, d: JsonObject) -> Iterator[Row]:
        content = d.get("content")
        parts = [{"text": content}] if isinstance(content, str) else content if isinstance(content, list) else []
        blocks: list[Block] = []
        dup_results: list[str] = []
        for p in parts:
            b, dups = part_blocks(p, lambda cid: self._seen("result", cid))
            blocks.extend(b)
            dup_results.extend(dups)
        texts = [b.text for b in blocks if isinstance(b, Text)]
        injected = bool(texts) and all(t.lstrip().startswith(CONTEXT_TAG) for t in texts)
        extra: JsonObject = {k: d[k] for k in ("displayContent",) if k in d}
        rows: list[Row] = []
        if injected:
            extra["injected"] = True
            cwd = context_cwd(texts[0])
            if cwd and self.cwd is None:
                self.cwd = cwd
                rows.append(ThreadFact(self._thread(), {"metadata": {"cwd": cwd}}))
        results = [b for b in blocks if isinstance(b, ToolResult)]
        if results and len(results) == len(blocks):  # a tool-result message
            for r in results:
                self.done.add(_digest("result", r.call_id))
            rows.extend(self._emit_new(d, "tool", blocks, extra))
        elif blocks or not dup_results:
            if not injected and not results and not self._seen(d["id"], "head"):
                self.turn = stable_id(self.name, self._thread(), d["id"], "head")
            for r in results:
                self.done.add(_digest("result", r.call_id))
            rows.extend(self._emit_new(d, "user", blocks, extra))
        for cid in dup_results:
            rows.append(Report(DUPLICATE, "functionResponse also in toolCalls", cid))
        yield from rows

    def _gemini(self, d: JsonObject) -> Iterator[Row]:
        vid = d["id"]
        thread = self._thread()
        blocks: list[Block] = []
        for t in d.get("thoughts") or []:
            if not isinstance(t, dict):
                blocks.append(Unknown(source_type="thought", raw=t))
                continue
            text = t.get("description") if isinstance(t.get("description"), str) else None
            prev = blocks[-1] if blocks and isinstance(blocks[-1], Reasoning) else None
            if prev is not None and not t.get("subject") and text is not None and prev.text is not None:
                # a streamed chunk without a subject continues the thought before it
                n = (prev.extra or {}).get("chunks", 1) + 1
                blocks[-1] = Reasoning(text=prev.text + text, extra={**(prev.extra or {}), "chunks": n})
                continue
            extra = {k: v for k, v in t.items() if k not in ("description",) and v not in ("", None)}
            blocks.append(Reasoning(text=text, extra=extra or None))
        content = d.get("content")
        if isinstance(content, str):
            if content:
                blocks.append(Text(text=content))
        elif isinstance(content, list):
            for p in content:
                blocks.extend(part_blocks(p)[0])
        extra: JsonObject = {"model": d["model"]} if _str(d.get("model")) else {}
        rows: list[Row] = []
        if extra and extra["model"] != self.model:  # the thread's model: its latest response's
            self.model = extra["model"]
            rows.append(ThreadFact(thread, {"metadata": {"model": self.model}}))
        # a response whose record names no model (a copy reduced by a resume snapshot, a
        # recordMessage called without one) was made by the model of the response before it
        model = _str(d.get("model")) or self.model
        calls = [c for c in d.get("toolCalls") or [] if isinstance(c, dict)]
        blocks.extend(self._call_block(c) for c in calls)
        head_new = not self._seen(vid, "head")
        if head_new and not blocks:
            rows.append(Report(SKIPPED, "empty gemini message (its content comes in a rewrite)", vid))
        elif blocks:
            rows.extend(self._emit_new(d, "assistant", blocks, extra))
        for c in calls:
            rows.extend(self._call_result(vid, c))
        usage = gemini_usage(d.get("tokens"))
        # a response's usage once, again only when its figures change or its message appears
        if usage is not None and (self._once(vid, "tokens", d.get("tokens"), model)
                                  or (head_new and self._seen(vid, "head"))):
            head = stable_id(self.name, thread, vid, "head") if self._seen(vid, "head") else None
            rows.append(UsageRow(f"{self.name}:{thread}:{vid}", thread, usage, head, model, self.ts))
        if not rows:
            rows.append(Report(DUPLICATE, f"gemini message {vid}"))
        yield from rows

    @staticmethod
    def _call_block(c: JsonObject) -> ToolCall:
        extra = {k: c[k] for k in ("displayName", "description", "renderOutputAsMarkdown") if k in c}
        return ToolCall(call_id=_str(c.get("id")) or "", name=_str(c.get("name")) or "", input=c.get("args"),
                        extra=extra or None)

    def _call_result(self, vid: str, c: JsonObject) -> Iterator[Row]:
        cid = _str(c.get("id")) or ""
        result = c.get("result")
        status = c.get("status")
        if result is None or status in ("scheduled", "validating", "executing", "awaiting_approval"):
            return
        if not self._once("result", cid):
            return
        blocks: list[Block] = []
        if isinstance(result, str):  # older releases kept the output text itself
            blocks.append(ToolResult(call_id=cid, output=result, extra={"name": c["name"]} if _str(c.get("name")) else None))
        else:
            for p in result if isinstance(result, list) else [result]:
                blocks.extend(part_blocks(p)[0])
            blocks = fold_result_images(blocks)
        is_error = status in ("error", "cancelled") or None
        out: list[Block] = []
        for b in blocks:
            if isinstance(b, ToolResult):
                extra = dict(b.extra or {})
                if status:
                    extra["status"] = status
                if c.get("resultDisplay") not in (None, ""):
                    extra["resultDisplay"] = c["resultDisplay"]
                out.append(ToolResult(call_id=cid or b.call_id, output=b.output,
                                      is_error=True if is_error or b.is_error else None, extra=extra or None))
            else:
                out.append(b)
        ts, self.ts = self.ts, _str(c.get("timestamp")) or self.ts
        thread = self._thread()
        yield MessageRow(Message(
            id=stable_id(self.name, thread, "result", cid), thread_id=thread, role="tool", ts=self.ts, content=tuple(out),
            turn_id=self.turn, provenance=Provenance(provider=self.name, session_id=thread, source_id=vid),
        ))  # fmt: skip
        self.ts = ts

    def _notice(self, d: JsonObject) -> Iterator[Row]:
        content = d.get("content")
        text = content if isinstance(content, str) else "".join(
            p.get("text", "") for p in content or [] if isinstance(p, dict) and isinstance(p.get("text"), str))
        yield from self._emit_new(d, "system", [Text(text=text)], {"geminiType": d.get("type"), "injected": True})


MESSAGE_HANDLERS: dict[str, Callable[[GeminiParser, JsonObject], Iterator[Row]]] = {
    "user": GeminiParser._user,
    **{t: GeminiParser._notice for t in NOTICE_TYPES},
}
