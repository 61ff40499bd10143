"""Canonical threads -> a Qwen Code chat recording (as 0.24.4 writes and resumes it).

Layout: ``projects/<cwd, non-alphanumerics as ->/chats/<sessionId>.jsonl`` under
``~/.qwen``. One record per line, chained by ``parentUuid``: ``user`` (``provenance``
real_user), ``assistant`` (``model``, Gemini parts: thoughts, text, ``functionCall``;
``usageMetadata`` in Qwen's OpenAI-compatible convention: ``promptTokenCount`` includes
the cached input, ``candidatesTokenCount`` the reasoning) and ``tool_result`` records (one
per result: a ``functionResponse`` part and ``toolCallResult``). Consecutive assistant
messages of one response become one record. Injected context and system messages are left
out (the client writes its own); no telemetry records are written. Every transformation is
counted.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult
from ..base import CHILD_THREADS_NOT_WRITTEN, EmitError, EmitOptions, EmitResult, command, emitted_response, mark_record
from ..gemini.emit import output_text, result_content

EMIT_VERSION = "0.24.4"
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def project_slug(cwd: str) -> str:
    """Qwen Code's project folder name for a cwd (``sanitizeCwd``, 0.24.4)."""
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def as_uuid(seed: str) -> str:
    if _UUID.match(seed):
        return seed
    return str(uuid.UUID(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:32], version=4))


def resume_hint(session_id: str, cwd: str | None) -> str:
    hint = command("qwen", "--resume", session_id)
    return f"cd {command(cwd)} && {hint}" if cwd else hint


def usage_metadata(m: Message) -> JsonObject | None:
    u = m.usage
    if u is None:
        return None
    cached = u.cache_read_tokens or 0
    prompt = (u.input_tokens or 0) + cached + (u.cache_write_tokens or 0)
    cand = u.output_tokens or 0
    return {"promptTokenCount": prompt, "candidatesTokenCount": cand, "thoughtsTokenCount": u.reasoning_tokens or 0,
            "totalTokenCount": prompt + cand, "cachedContentTokenCount": cached}


class QwenWriter:
    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions, cwd: str, session_id: str) -> None:
        self.thread, self.messages, self.options = thread, messages, options
        self.cwd, self.session_id = cwd, session_id
        self.result = EmitResult()
        self.records: list[JsonObject] = []  # not yet written: the open record and what follows it
        self.out: Any = None
        self.parent: str | None = None
        self.open: JsonObject | None = None  # the assistant record being filled
        self.names: dict[str, str] = {}  # call id -> tool name
        # record uuid -> (the last message it holds, the response whose usage it carries):
        # the emit mark of its line (base.mark_record)
        self.marks: dict[str, tuple[str, str | None]] = {}
        self.first = True

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def record(self, m: Message, kind: str, provenance: str, role: str, parts: list[JsonObject], seed: str) -> JsonObject:
        rec: JsonObject = {
            "uuid": as_uuid(seed), "parentUuid": self.parent, "sessionId": self.session_id,
            "timestamp": m.ts or self.thread.created_at, "type": kind, "provenance": provenance, "cwd": self.cwd,
            "version": self.options.client_version or EMIT_VERSION, "message": {"role": role, "parts": parts},
        }  # fmt: skip
        self.parent = rec["uuid"]
        self.records.append(rec)
        self.marks[rec["uuid"]] = (m.id, emitted_response(m))
        return rec

    def user(self, m: Message) -> None:
        parts: list[JsonObject] = []
        in_result = False  # attachments right after a tool result are its images (result_content)
        for b in m.content:
            if isinstance(b, Attachment) and in_result:
                continue
            in_result = isinstance(b, ToolResult)
            if isinstance(b, Text):
                parts.append({"text": b.text})
            elif isinstance(b, ToolResult):
                self.tool_result(b, m)
            elif isinstance(b, Attachment) and b.data:
                parts.append({"inlineData": {"mimeType": b.media_type or "application/octet-stream", "data": b.data}})
            else:
                self.count(f"{type(b).__name__} in a user message: dropped")
        if parts:
            self.open = None
            self.record(m, "user", "real_user", "user", parts, m.id)

    def assistant(self, m: Message) -> None:
        rec = self.open
        if rec is None or (m.usage is not None and "usageMetadata" in rec):
            rec = self.record(m, "assistant", "assistant_output", "model", [], m.id)
            self.open = rec
        parts = rec["message"]["parts"]
        self.marks[rec["uuid"]] = (m.id, emitted_response(m) or self.marks[rec["uuid"]][1])
        for b in m.content:
            if isinstance(b, Text):
                parts.append({"text": b.text})
            elif isinstance(b, Reasoning):
                if self.options.reasoning == "drop":
                    self.count("reasoning: dropped (--reasoning drop)")
                elif not b.text:
                    self.count("reasoning: redacted block dropped")
                else:
                    parts.append({"text": b.text, "thought": True})
            elif isinstance(b, ToolCall):
                args = b.input if isinstance(b.input, dict) else {"input": b.input}
                if not isinstance(b.input, dict):
                    self.count("tool call: non-object input wrapped as {input: ...}")
                parts.append({"functionCall": {"id": b.call_id, "name": b.name, "args": args}})
                self.names[b.call_id] = b.name
            else:
                self.count(f"{type(b).__name__}: not representable in Qwen Code, dropped")
        model = (m.extra or {}).get("model") or self.options.model
        if isinstance(model, str) and model:
            rec["model"] = model
        meta = usage_metadata(m)
        if meta is not None:
            if (m.usage.cache_write_tokens or 0) > 0:  # type: ignore[union-attr]
                self.count("usage: cache-write bucket dropped (counted as input)")
            rec["usageMetadata"] = meta

    def tool_result(self, b: ToolResult, m: Message) -> None:
        name = self.names.get(b.call_id)
        if name is None:
            self.count("tool result without its call: dropped")
            return
        output, images = result_content(b, m)
        text, changed = output_text(output)
        if changed and output != "":
            self.count("tool result: output turned into text")
        if text is None:
            text = ""
            self.count("tool result: non-text output dropped")
        if images:
            self.count("tool result: images as inlineData parts after the functionResponse", len(images))
        response = {"error": text} if b.is_error else {"output": text}
        self.open = None
        rec = self.record(m, "tool_result", "tool_result", "user",
                          [{"functionResponse": {"id": b.call_id, "name": name, "response": response}}] + images,
                          f"{m.id}\x1f{b.call_id}")
        rec["toolCallResult"] = {"callId": b.call_id, "status": "error" if b.is_error else "success"}

    def helper_call(self, m: Message) -> None:
        """A background helper's API response (its usage only), as the telemetry record
        Qwen Code writes for it."""
        meta = usage_metadata(m) or {}
        extra = m.extra or {}
        event = {
            "event.name": "qwen-code.api_response", "event.timestamp": m.ts or self.thread.created_at,
            "response_id": extra.get("responseId") or m.id, "model": extra.get("model") or self.options.model or "",
            "status_code": 200, "input_token_count": meta["promptTokenCount"],
            "output_token_count": meta["candidatesTokenCount"], "cached_content_token_count": meta["cachedContentTokenCount"],
            "thoughts_token_count": meta["thoughtsTokenCount"], "total_token_count": meta["totalTokenCount"],
            "prompt_id": extra.get("promptId") or f"{self.session_id}#{extra['helper']}#0", "subagent_name": extra["helper"],
        }  # fmt: skip
        rec: JsonObject = {
            "uuid": as_uuid(m.id), "parentUuid": self.parent, "sessionId": self.session_id,
            "timestamp": m.ts or self.thread.created_at, "type": "system", "provenance": "system", "cwd": self.cwd,
            "version": self.options.client_version or EMIT_VERSION, "subtype": "ui_telemetry",
            "systemPayload": {"uiEvent": event},
        }  # fmt: skip
        self.parent = rec["uuid"]
        self.records.append(rec)
        self.marks[rec["uuid"]] = (m.id, emitted_response(m))
        self.count("helper call: usage written as ui_telemetry api_response")

    def flush(self, end: bool = False) -> None:
        """Write the records before the open one (only the open record still changes)."""
        n = len(self.records)
        if not end and self.open is not None:
            n = next((i for i, r in enumerate(self.records) if r is self.open), n)
        done = self.records[:n]
        for r in done:
            if r["type"] == "assistant" and not r["message"]["parts"]:
                # only reasoning that was dropped: keep the record (its usage), with no parts
                self.count("assistant response without representable content: written empty")
            mid, response = self.marks.pop(r["uuid"], (None, None))
            self.out.write(orjson.dumps(mark_record(r, mid, self.thread.id if self.first else None, response)) + b"\n")
            self.first = False
        del self.records[: len(done)]

    def emit(self) -> EmitResult:
        path = str(PurePath("projects", project_slug(self.cwd), "chats", f"{self.session_id}.jsonl"))
        self.out = self.result.files.open(path)
        for m in self.messages:
            self.flush()
            if (m.extra or {}).get("helper") and m.usage is not None:
                self.helper_call(m)
                continue
            if m.role == "system" or ((m.extra or {}).get("injected") and not (m.extra or {}).get("conversation")):
                self.count("system or injected context: left out (the client writes its own)")
                continue
            if m.role == "assistant":
                self.assistant(m)
            elif m.role == "tool":
                result_ids = {b.call_id for b in m.content if isinstance(b, ToolResult)}
                for b in m.content:
                    if isinstance(b, ToolResult):
                        self.tool_result(b, m)
                    elif isinstance(b, Attachment) and b.data and (b.extra or {}).get("callId") in result_ids:
                        continue  # an image of a tool result (Copilot's): written with it
                    else:
                        self.count(f"{type(b).__name__} in a tool message: dropped")
            else:
                self.user(m)
        self.flush(end=True)
        self.result.thread_id = self.session_id
        self.result.resume_hint = resume_hint(self.session_id, self.cwd)
        return self.result


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
                 options: EmitOptions = EmitOptions()) -> EmitResult:
    cwd = options.cwd or (thread.metadata or {}).get("cwd")
    if not isinstance(cwd, str) or not cwd:
        raise EmitError("a Qwen Code session is filed under its project folder: give --cwd")
    session_id = options.session_id or as_uuid(f"qwen\x1f{thread.id}")
    result = QwenWriter(thread, messages, options, cwd, session_id).emit()
    if children:
        result.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return result
