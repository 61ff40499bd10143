"""Canonical threads -> a clm session log (``<id>.jsonl`` and ``<id>.blobs/``), clm-session(5) v1."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import (
    Attachment,
    FileChange,
    JsonObject,
    Message,
    Reasoning,
    Text,
    Thread,
    ToolCall,
    ToolResult,
    Unknown,
    WebSearch,
)
from ..base import (
    CHILD_THREADS_NOT_WRITTEN,
    EmitOptions,
    command,
    EmitResult,
    mark_record,
    stable_id,
)
from .parse import BLOB_RE, CONTENT_CAP, FORMAT_VERSION, ID_RE, MEDIA_EXT, NAME, ROLES, UNKNOWN_KEY_PREFIX, fnv1a64

# ---------------------------------------------------------------- emit


def _dumps(obj: JsonObject) -> bytes:
    # cJSON_PrintUnformatted: no spaces, non-ASCII raw, control characters as \\u00xx
    return orjson.dumps(obj)


def _created_seconds(created_at: str | None) -> int | None:
    if not created_at:
        return None
    try:
        dt = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp())


def clm_id(thread: Thread) -> str:
    """The thread id of a clm thread if clm accepts it, else ``YYYYMMDD-HHMMSS-xxxxxxxx``
    from createdAt (UTC, to stay deterministic) and a hash of the thread id: a session handed
    off from another vendor is a thread of its own (ingested again, it continues the thread
    it came from instead of folding a clm file into a Claude Code thread of the same id)."""
    if ID_RE.match(thread.id) and (thread.metadata or {}).get("provider") == NAME:
        return thread.id
    secs = _created_seconds(thread.created_at) or 0
    stamp = datetime.fromtimestamp(secs, tz=timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{stable_id(NAME, thread.id, length=8)}"


def _tool_output_text(output: Any, result: EmitResult) -> str | None:
    if output is None:
        return None
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(p, dict) for p in output):
        texts = [p["text"] for p in output if p.get("type") == "text" and isinstance(p.get("text"), str)]
        if len(texts) != len(output):
            result.count("tool_result: non-text output part dropped (clm keeps a tool's text only)")
        return "\n".join(texts)
    result.count("tool_result: output serialised as JSON text (clm keeps a tool's text only)")
    return orjson.dumps(output).decode()


class _Emitter:
    def __init__(self, cid: str, blobs: Mapping[str, bytes], result: EmitResult) -> None:
        self.cid = cid
        self.blobs = blobs
        self.result = result
        self.out: Any = None  # the log, written line by line
        self.call_names: dict[str, str] = {}
        self.answered: set[str] = set()
        self.last_prompt: str | None = None
        self.current: str | None = None  # the message being written (its lines' emit mark)
        self.thread_id: str | None = None  # the thread emitted, named in the first line's mark
        # a clm thread written again keeps its id, and its messages their ids (clm's are
        # derived from the thread and the content): its lines are written as clm writes them
        self.marks = True

    def _write(self, line: bytes) -> None:
        self.out.write(line + b"\n")

    def _record(self, obj: JsonObject) -> None:
        """One line, with the emit mark (clm appends on resume; a compaction rewrites the
        log from its history, without the marks)."""
        if not self.marks:
            self._write(_dumps(obj))
            return
        first, self.thread_id = self.thread_id, None
        self._write(_dumps(mark_record(obj, self.current, first)))

    def message(self, m: Message) -> None:
        r = self.result
        if m.ts is not None:
            r.count("timestamp: not written (clm logs no time per message)")
        if m.usage is not None:
            r.count("usage: not representable, dropped")
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[ToolResult] = []
        atts: list[JsonObject] = []
        extras: dict[str, Any] = {}
        for b in m.content:
            if isinstance(b, Text):
                texts.append(b.text)
            elif isinstance(b, ToolCall):
                calls.append(b)
            elif isinstance(b, ToolResult):
                results.append(b)
            elif isinstance(b, Attachment):
                att = self.attachment(b)
                if att is not None:
                    atts.append(att)
            elif isinstance(b, Unknown) and b.source_type.startswith(UNKNOWN_KEY_PREFIX):
                extras[b.source_type[len(UNKNOWN_KEY_PREFIX):]] = b.raw
            elif isinstance(b, Reasoning):
                r.count("reasoning: dropped (clm logs no reasoning)")
            elif isinstance(b, FileChange):
                r.count("file_change: dropped (clm logs none; its tool call is kept)")
            elif isinstance(b, WebSearch):
                r.count("web_search: dropped (clm logs none)")
            else:
                r.count(f"{b.TYPE}: dropped (not representable in clm)")
        if len(texts) > 1:
            r.count("text: blocks joined into one (a clm message holds one text)", len(texts) - 1)
        text = "\n\n".join(texts) if texts else None
        if m.role == "system":
            self.prompt(text, calls, results, atts, extras)
            return
        for res in results:
            self.tool(res)
        if m.role == "tool":
            if text is not None or calls:
                r.count("tool message: content outside a tool_result dropped (clm's tool record holds the result only)")
            if atts:  # a tool's images (Copilot's): after the results, as Claude Code's come
                self._record({"role": "user", "type": "msg", "attachments": atts})
            return
        if text is None and not calls and not atts and not extras:
            if not results:
                r.count("message: empty, not written")
            return
        if calls and m.role != "assistant":
            r.count(f"tool_call: on a {m.role} message (clm expects them on assistant messages)")
        obj: JsonObject = {"role": m.role if m.role in ROLES else "user"}
        if text is not None:
            self.check_cap(text)
            obj["content"] = text
        for key in ("tool_call_id", "tool_name"):
            if key in extras:
                obj[key] = extras.pop(key)
        if calls:
            obj["tool_calls"] = [self.call(c) for c in calls]
        elif "tool_calls" in extras:
            obj["tool_calls"] = extras.pop("tool_calls")
        obj["type"] = "msg"
        if atts:
            obj["attachments"] = atts
        elif "attachments" in extras:
            obj["attachments"] = extras.pop("attachments")
        for key, val in extras.items():
            obj.setdefault(key, val)
        self._record(obj)

    def prompt(self, text: str | None, calls: list[ToolCall], results: list[ToolResult], atts: list[JsonObject], extras: dict[str, Any]) -> None:
        if calls or results or atts or extras:
            self.result.count("system message: non-text parts dropped (a clm prompt record holds text)")
        if text is None:
            self.result.count("message: empty, not written")
            return
        # clm writes a prompt record only when it differs from the last one
        if text == self.last_prompt:
            self.result.count("system message: repeated prompt not written again (clm writes a prompt when it changes)")
            return
        self.last_prompt = text
        note = "system messages became prompt records: clm keeps them for reference and rebuilds the prompt from its config on resume"
        if note not in self.result.notes:
            self.result.notes.append(note)
        data = text.encode("utf-8", "surrogatepass")
        self._record({"type": "prompt", "hash": fnv1a64(data), "content": text})

    def call(self, c: ToolCall) -> JsonObject:
        self.call_names[c.call_id] = c.name
        extra = c.extra or {}
        args = extra.get("args")
        if not isinstance(args, str):
            value = c.input
            if not isinstance(value, dict):
                self.result.count("tool_call: non-object input wrapped as {input: ...}")
                value = {} if value is None else {"input": value}
            args = orjson.dumps(value).decode()
        return {"id": c.call_id, "name": c.name, "args": args}

    def tool(self, res: ToolResult) -> None:
        extra = res.extra or {}
        if res.call_id not in self.call_names:
            self.result.count("tool_result: no matching tool call (written all the same)")
        self.answered.add(res.call_id)
        if res.is_error:
            self.result.count("tool_result: isError flag not representable")
        obj: JsonObject = {"role": "tool"}
        text = extra["clmContent"] if "clmContent" in extra else _tool_output_text(res.output, self.result)
        if text is not None:
            if isinstance(text, str):
                self.check_cap(text)
            obj["content"] = text
        obj["tool_call_id"] = res.call_id
        name = extra.get("toolName") or self.call_names.get(res.call_id)
        if isinstance(name, str):
            obj["tool_name"] = name
        else:
            self.result.count("tool_result: no tool name (clm's tool record names the tool)")
        obj["type"] = "msg"
        self._record(obj)

    def attachment(self, a: Attachment) -> JsonObject | None:
        extra = a.extra or {}
        media = a.media_type or "application/octet-stream"
        data: bytes | None = None
        if a.data is not None:
            try:
                data = base64.b64decode(a.data, validate=True)
            except (binascii.Error, ValueError):
                self.result.count("attachment: invalid base64, dropped")
                return None
        sha = hashlib.sha256(data).hexdigest() if data is not None else extra.get("sha256")
        if not isinstance(sha, str) or not BLOB_RE.match(f"{sha}.bin"):
            self.result.count("attachment: no data or sha256, dropped")
            return None
        if data is None:
            data = self.blobs.get(sha)
        if data is not None:
            self.result.files[f"{self.cid}.blobs/{sha}.{MEDIA_EXT.get(media, 'bin')}"] = data
        else:
            self.result.count("attachment: bytes not in the archive (clm notes a missing image)")
        if not media.startswith("image/"):
            self.result.count("attachment: not an image (clm shows images only)")
        size = len(data) if data is not None else extra.get("bytes")
        out: JsonObject = {"type": extra.get("clmType", "image"), "media_type": media, "sha256": sha}
        if size is not None:
            out["bytes"] = size
        for key, val in extra.items():
            if key not in ("sha256", "bytes", "clmType"):
                out.setdefault(key, val)
        return out

    def check_cap(self, text: str) -> None:
        if len(text.encode("utf-8", "surrogatepass")) > CONTENT_CAP:
            self.result.count(f"content: over {CONTENT_CAP} bytes (clm cuts it on load)")


def _meta_line(thread: Thread, cid: str, result: EmitResult) -> JsonObject:
    md = thread.metadata or {}
    created = _created_seconds(thread.created_at)
    if created is None:
        result.count("thread: createdAt not ISO 8601 (created written as 0)")
        created = 0
    meta: JsonObject = {"type": "meta", "v": FORMAT_VERSION, "id": cid, "created": created}
    if isinstance(md.get("model"), str):
        meta["model"] = md["model"]
    if isinstance(md.get("modelProvider"), str):
        meta["provider"] = md["modelProvider"]
    if isinstance(md.get("agent"), str):
        meta["agent"] = md["agent"]
    extra = md.get("clmMetaExtra")
    if isinstance(extra, dict):
        for key, val in extra.items():
            meta.setdefault(key, val)
    return meta


def resume_hint(session_id: str) -> str:
    return command("clm", "--resume", session_id)


def emit_log(thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, list[Message]]],
             options: EmitOptions) -> EmitResult:
    """``<id>.jsonl`` (and ``<id>.blobs/`` images). ``options.blobs`` (sha256 -> bytes)
    supplies image bytes for attachments whose data lives in the archive's blob table."""
    cid = clm_id(thread)
    result = EmitResult(thread_id=cid)
    if cid != thread.id:
        why = "is not a valid clm session id" if not ID_RE.match(thread.id) else "is another vendor's thread"
        result.notes.append(f"thread id {thread.id!r} {why}; wrote {cid}")
    if children:
        result.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    emitter = _Emitter(cid, options.blobs, result)
    emitter.out = result.files.open(f"{cid}.jsonl")
    emitter.thread_id = thread.id
    emitter.marks = cid != thread.id
    emitter._record(_meta_line(thread, cid, result))
    for m in messages:
        emitter.current = m.id
        emitter.message(m)
    emitter.current = None
    unanswered = [c for c in emitter.call_names if c not in emitter.answered]
    if unanswered:
        result.count("tool_call: no result (clm resumes with the call unanswered)", len(unanswered))
    result.resume_hint = (
        f"copy {cid}.jsonl (and {cid}.blobs/ if present) into $XDG_STATE_HOME/clm "
        f"(default ~/.local/state/clm), then run: {resume_hint(cid)}  "
        "(interactive UI only; the system prompt, model and provider come from the current config)"
    )
    return result
