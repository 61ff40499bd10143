"""Cline CLI sessions: ``~/.cline/data/sessions/<id>/`` (Cline CLI 3.0.65, ``@cline/core`` 0.0.86).

Files of one session folder, each a JSON document the client rewrites whole on every save
(SNAPSHOT sources: each changed version is a generation, older ones kept):

* ``<id>.messages.json``: ``{version, updated_at, agent: "lead", sessionId, origin: {source,
  mode, sessionId, version}, messages: [...], system_prompt}``. A message is ``{id, role:
  user|assistant, content: [blocks], ts (epoch ms), modelInfo: {id, provider}, metrics:
  {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, cost?}}``; blocks ``text``,
  ``thinking`` (``thinking``, ``signature``?), ``tool_use`` (``id``, ``name``, ``input``),
  ``tool_result`` (``tool_use_id``, ``name``, ``content``, ``is_error``?) inside a ``user``
  message, ``image``. A save rewrites the file with the earlier messages an unchanged prefix
  (a resume by ``cline --id`` appends to the same file).
* ``<agent id>.messages.json`` (and ``<agent>__<team task>.messages.json``): a subagent's
  transcript, in the root session's folder, ``agent: "subagent"``, ``sessionId``
  ``<root>__<agent>`` and ``origin.parentThreadId``: a child thread.
* ``<id>.json``: the manifest (``cwd``, ``provider``, ``model``, ``status``, ``started_at``,
  ``ended_at``, ``prompt``, ``metadata.title`` and total ``metadata.usage``): thread facts
  only (its usage totals repeat the per-message ``metrics``, which are the ones counted).
* ``<id>.compaction.json``: the compaction state; not seen in a recording (3.0.65 never
  compacted the short test sessions): kept in the source layer, reported as metadata.

Invariants:

* **Generations add new messages once.** Thread id = ``sessionId``; a message's id is
  ``stable_id("cline", thread, message id)``, so every generation repeats the same ids and the
  store keeps one message with its occurrences; usage is keyed ``cline:<thread>:<message id>``
  (the latest generation's figures win, counted once).
* **User prompts.** The CLI wraps what the person typed in ``<user_input mode="act">...
  </user_input>`` (3.0.65); the text is unwrapped and the mode kept in ``extra["mode"]``.
  A ``user`` message that only carries tool results is a ``tool`` message.
* **Usage in neutral buckets.** ``inputTokens`` counts cached input (3.0.65 against an
  OpenAI-compatible server: ``prompt_tokens`` including ``cached_tokens``):
  ``input_tokens = inputTokens - cacheReadTokens - cacheWriteTokens``; the raw ``metrics``
  stay in ``usage.extra["vendor"]``.
* **cwd.** From the manifest, else from the ``Working Directory:`` line of the system prompt
  the client records in the transcript (the system prompt itself is request envelope:
  metadata, kept in the source layer).
* Deterministic, never raises on input; the parser holds no state between documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown, Usage
from ..base import (
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    UNKNOWN,
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

NAME = "cline"
_USER_INPUT = re.compile(r'\A<user_input mode="([^"]*)">(.*)</user_input>\Z', re.S)
_WORKDIR = re.compile(r"Working Directory: ([^\n]+)")


def ms_to_iso(ms: Any) -> str | None:
    if not isinstance(ms, (int, float)) or isinstance(ms, bool):
        return None
    try:
        dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(ms) % 1000:03d}Z"


def cline_usage(metrics: Any) -> Usage | None:
    """Cline ``metrics`` in the neutral buckets (see the module docstring)."""
    if not isinstance(metrics, dict):
        return None

    def n(key: str) -> int:
        v = metrics.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else 0

    inp, read, write, out = n("inputTokens"), n("cacheReadTokens"), n("cacheWriteTokens"), n("outputTokens")
    return Usage(input_tokens=max(inp - read - write, 0), output_tokens=out, cache_read_tokens=read,
                 cache_write_tokens=write, extra={"vendor": metrics})


def unwrap_prompt(text: str) -> tuple[str, str | None]:
    m = _USER_INPUT.match(text)
    return (m.group(2), m.group(1)) if m else (text, None)


class ClineParser:
    """Feeds one Cline JSON document (a transcript, a manifest or a compaction file)."""

    name = NAME

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        self.emitted: JsonObject = dict((state or {}).get("emitted", {}))  # base.claim_emitted's held message

    def state(self) -> JsonObject:
        return {"emitted": self.emitted}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        if not isinstance(d, dict):
            return iter([Report(PARSE_ERROR, "not a JSON object")])
        kind = document_kind(d, self.source.path)
        handler = DOCUMENT_HANDLERS.get(kind)
        if handler is None:
            return iter([Report(UNKNOWN, "document", orjson.dumps(d)[:200].decode("utf-8", "replace"))])
        rows = list(handler(self, d))
        return iter(rows or [Report(SKIPPED, "empty document")])

    # -- documents

    def _transcript(self, d: JsonObject) -> Iterator[Row]:
        thread = _str(d.get("sessionId")) or f"{NAME}-" + stable_id(self.source.source_id, "thread")
        origin = d.get("origin") if isinstance(d.get("origin"), dict) else {}
        meta: JsonObject = {}
        if _str(origin.get("version")):
            meta["version"] = origin["version"]
        for k in ("agent", "taskType"):
            if _str(d.get(k)):
                meta[k] = d[k]
        for k in ("source", "mode"):
            if _str(origin.get(k)):
                meta[k] = origin[k]
        system = d.get("system_prompt")
        if isinstance(system, str):
            found = _WORKDIR.search(system)
            if found:
                meta["cwd"] = found.group(1).strip()
        fields: JsonObject = {"metadata": meta}
        if _str(origin.get("parentThreadId")) and origin["parentThreadId"] != thread:
            fields["parentThreadId"] = origin["parentThreadId"]
        if _str(origin.get("subagent")):
            fields["agentId"] = origin["subagent"]
        messages = d.get("messages")
        if not isinstance(messages, list):
            yield Report(INVALID, "transcript without messages")
            return
        # no createdAt here: the manifest's started_at is the session's start; without a
        # manifest the thread starts at its first message (the projection's fallback)
        yield ThreadFact(thread, fields)
        if isinstance(system, str):
            yield Report(METADATA, "system_prompt", f"{len(system)} characters (request envelope)")
        names: dict[str, str] = {}
        model: str | None = None
        for m in messages:
            if not isinstance(m, dict) or not _str(m.get("id")):
                yield Report(INVALID, "message without id")
                continue
            rows = list(self._message(thread, m, names))
            yield from claim_emitted(m, rows, self.emitted)
            info = m.get("modelInfo")
            if isinstance(info, dict) and _str(info.get("id")):
                model = info["id"]
        if model:
            yield ThreadFact(thread, {"metadata": {"model": model}})

    def _message(self, thread: str, m: JsonObject, names: dict[str, str]) -> Iterator[Row]:
        vid, role = m["id"], m.get("role")
        ts = ms_to_iso(m.get("ts"))
        content = m.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content if isinstance(content, list) else []
        blocks: list[Block] = []
        extra: JsonObject = {}
        rows: list[Row] = []
        for p in parts:
            kind = p.get("type") if isinstance(p, dict) else None
            handler = BLOCK_HANDLERS.get(kind) if isinstance(kind, str) else None
            if handler is None:
                blocks.append(Unknown(source_type=f"block {kind}", raw=p))
                rows.append(Report(UNKNOWN, f"block type {kind}"))
                continue
            b = handler(p, names)
            if role == "user" and isinstance(b, Text):
                text, mode = unwrap_prompt(b.text)
                if mode is not None:
                    b, extra["mode"] = Text(text=text), mode
            blocks.append(b)
        if role not in ("user", "assistant"):
            rows.append(Report(UNKNOWN, f"message role {role}"))
        canonical = role if role in ("user", "assistant") else "system"
        if canonical == "user" and blocks and all(isinstance(b, ToolResult) for b in blocks):
            canonical = "tool"
        info = m.get("modelInfo") if isinstance(m.get("modelInfo"), dict) else {}
        if _str(info.get("id")):
            extra["model"] = info["id"]
        if _str(info.get("provider")):
            extra["modelProvider"] = info["provider"]
        mid = stable_id(NAME, thread, vid)
        msg = Message(id=mid, thread_id=thread, role=canonical, ts=ts, content=tuple(blocks),
                      provenance=Provenance(provider=NAME, session_id=thread, source_id=vid), extra=extra or None)
        rows.insert(0, MessageRow(msg))
        usage = cline_usage(m.get("metrics"))
        if usage is not None and role == "assistant":
            rows.append(UsageRow(f"{NAME}:{thread}:{vid}", thread, usage, mid, _str(info.get("id")), ts))
        yield from rows

    def _manifest(self, d: JsonObject) -> Iterator[Row]:
        thread = d["session_id"]
        meta: JsonObject = {}
        for src, dst in (("cwd", "cwd"), ("workspace_root", "workspaceRoot"), ("provider", "modelProvider"),
                         ("model", "model"), ("status", "status"), ("source", "source"), ("ended_at", "endedAt")):
            if _str(d.get(src)):
                meta[dst] = d[src]
        md = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
        origin = md.get("sessionHistoryOrigin") if isinstance(md.get("sessionHistoryOrigin"), dict) else {}
        if _str(origin.get("version")):
            meta["version"] = origin["version"]
        fields: JsonObject = {"metadata": meta}
        if _str(md.get("title")):
            fields["title"] = md["title"]
        if _str(d.get("started_at")):
            fields["createdAt"] = d["started_at"]
        if _str(d.get("parent_session_id")):
            fields["parentThreadId"] = d["parent_session_id"]
        yield ThreadFact(thread, fields)
        yield Report(METADATA, "session manifest", "usage totals repeat the messages' metrics")

    def _compaction(self, d: JsonObject) -> Iterator[Row]:
        thread = compaction_session(self.source.path)
        if thread:
            yield ThreadFact(thread, {"metadata": {"compactionKeys": sorted(d)}})
        yield Report(METADATA, "compaction state", ",".join(sorted(d))[:200])


# ---------------------------------------------------------------- blocks


def _text(p: JsonObject, names: dict[str, str]) -> Block:
    return Text(text=p["text"]) if isinstance(p.get("text"), str) else Unknown(source_type="block text", raw=p)


def _thinking(p: JsonObject, names: dict[str, str]) -> Block:
    extra = {k: v for k, v in p.items() if k not in ("type", "thinking")}
    text = p.get("thinking") if isinstance(p.get("thinking"), str) else None
    return Reasoning(text=text, redacted=True if p.get("redacted") else None, extra=extra or None)


def _redacted(p: JsonObject, names: dict[str, str]) -> Block:
    extra = {k: v for k, v in p.items() if k != "type"}
    return Reasoning(text=None, redacted=True, extra={"cline": "redacted_thinking", **extra})


def _tool_use(p: JsonObject, names: dict[str, str]) -> Block:
    cid, name = _str(p.get("id")) or "", _str(p.get("name")) or ""
    names[cid] = name
    extra = {k: v for k, v in p.items() if k not in ("type", "id", "name", "input")}
    return ToolCall(call_id=cid, name=name, input=p.get("input"), extra=extra or None)


def _tool_result(p: JsonObject, names: dict[str, str]) -> Block:
    extra = {k: v for k, v in p.items() if k not in ("type", "tool_use_id", "content", "is_error")}
    return ToolResult(call_id=_str(p.get("tool_use_id")) or "", output=p.get("content"),
                      is_error=True if p.get("is_error") else None, extra=extra or None)


BLOCK_HANDLERS: dict[str, Callable[[JsonObject, dict[str, str]], Block]] = {
    "text": _text,
    "thinking": _thinking,
    "redacted_thinking": _redacted,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
}


# ---------------------------------------------------------------- documents


def compaction_session(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    return name[: -len(".compaction.json")] if name.endswith(".compaction.json") else None


def document_kind(d: JsonObject, path: str) -> str:
    if isinstance(d.get("messages"), list) and ("sessionId" in d or "agent" in d):
        return "transcript"
    if _str(d.get("session_id")) and ("started_at" in d or "messages_path" in d):
        return "manifest"
    if compaction_session(path):
        return "compaction"
    return "unknown"


DOCUMENT_HANDLERS: dict[str, Callable[[ClineParser, JsonObject], Iterator[Row]]] = {
    "transcript": ClineParser._transcript,
    "manifest": ClineParser._manifest,
    "compaction": ClineParser._compaction,
}
