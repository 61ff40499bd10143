"""Canonical threads -> a pi session file (format version 3, as pi 0.73.1 reads it).

``sessions/--<cwd>--/<created>_<uuid>.jsonl``: a ``session`` header, a ``model_change``
when a model is known, then one linear chain of ``message`` entries (``user``,
``assistant``, ``toolResult``) with 8-hex ids derived from the thread id. Everything
dropped or changed is counted in ``EmitResult.counts`` under its reason:

* system messages (Codex developer text, injected context marked ``system``) have no
  place in a pi session (pi builds its own system prompt);
* tool results travel in ``toolResult`` entries after the call, named by the call's tool,
  images (Claude's, Codex's data URLs) as pi image parts; other output items are
  serialised to JSON text;
* reasoning keeps pi's own ``thinkingSignature``; reasoning from another vendor is written
  as thinking without one, which pi sends to a model as plain text (counted as such), or
  dropped with ``reasoning="drop"``;
* usage is written in pi's buckets, which are the neutral ones; pi's own ``cost`` comes
  back from ``usage.extra["vendor"]`` where the thread came from pi, else zeros.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult
from ..base import CHILD_THREADS_NOT_WRITTEN, EmitOptions, EmitResult, MessageStream, command, emitted_response, mark_record, output_image
from .parse import NAME, _parse_ts

SESSION_VERSION = 3
ZERO_COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


def _fmt_ts(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def pi_uuid(seed: str, when: datetime) -> str:
    """A UUIDv7 (pi's session ids are v7), deterministic from ``seed``."""
    ms = int(when.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()[:10], "big")
    value = (ms << 80) | (0x7 << 76) | (((rand >> 68) & 0xFFF) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def project_folder(cwd: str) -> str:
    """pi's folder name for a cwd (SessionManager 0.73.1)."""
    rest = cwd[1:] if cwd[:1] in ("/", "\\") else cwd
    return "--" + rest.replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def resume_hint(session_id: str, cwd: str | None) -> str:
    """pi finds a session id among the sessions of the folder it is started in."""
    return command("cd", cwd or ".") + " && " + command("pi", "--session", session_id)


def _content_output(output: Any, attachments: list[Attachment]) -> tuple[list[JsonObject], bool]:
    """A canonical tool output as pi content parts (text and image parts), and whether
    something had to be serialised to text."""
    if isinstance(output, str):
        return [{"type": "text", "text": output}], False
    if output is None:
        return [{"type": "text", "text": ""}], False
    if not isinstance(output, list):
        return [{"type": "text", "text": orjson.dumps(output).decode()}], True
    parts: list[JsonObject] = []
    changed = False
    for item in output:
        image = output_image(item, attachments)
        if image is not None:
            parts.append(image)
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append({"type": "text", "text": item["text"]})
        else:
            parts.append({"type": "text", "text": item if isinstance(item, str) else orjson.dumps(item).decode()})
            changed = True
    return parts, changed


def _model_of(m: Message) -> str | None:
    model = (m.extra or {}).get("model")
    return model if isinstance(model, str) else None


class _Emitter:
    """Writes one session; ``vendor`` is the provider whose own records (api, cost, details)
    are written back as they were (OpenClaw's emitter is a subclass)."""

    vendor = NAME

    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions) -> None:
        self.thread = thread
        self.messages = MessageStream(messages)
        self.options = options
        self.result = EmitResult()
        meta = thread.metadata or {}
        created = _parse_ts(thread.created_at) or self.messages.first(lambda m: _parse_ts(m.ts))
        self.created = created or datetime(1970, 1, 1, tzinfo=timezone.utc)
        self.clock = self.created
        self.id = options.session_id or pi_uuid(f"sesh-archive:{self.vendor}:{thread.id}", self.created)
        self.cwd = str(options.cwd or meta.get("cwd") or "/")
        model = options.model or meta.get("model") or self.messages.first(_model_of)
        self.model = model if isinstance(model, str) else None
        provider = options.model_provider or meta.get("modelProvider")
        self.provider = provider if isinstance(provider, str) else None
        self.parent: str | None = None
        self.n = 0
        self.tool_names: dict[str, str] = {}
        # the emit mark of the entries being written (base.mark_record): message, response
        self.current: tuple[str | None, str | None] = (None, None)

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def _write(self, line: bytes) -> None:
        self.out.write(line + b"\n")

    def _when(self, ts: str | None) -> datetime:
        when = _parse_ts(ts)
        self.clock = when if when is not None and when > self.clock else self.clock + timedelta(milliseconds=1)
        return self.clock

    def entry(self, kind: str, ts: str | None, **fields: Any) -> None:
        self.n += 1
        eid = hashlib.sha256(f"{self.id}:{self.n}".encode()).hexdigest()[:8]
        when = self._when(ts)
        record = {"type": kind, "id": eid, "parentId": self.parent, "timestamp": _fmt_ts(when), **fields}
        self._write(orjson.dumps(mark_record(record, self.current[0], response=self.current[1])))
        self.parent = eid

    def message(self, ts: str | None, message: JsonObject) -> None:
        when = self._when(ts)
        self.clock = when - timedelta(milliseconds=1)  # the entry stamps the same instant
        self.entry("message", ts, message={**message, "timestamp": int(when.timestamp() * 1000)})

    def emit(self) -> EmitResult:
        self.out = self.result.files.open(self.path())
        header: JsonObject = {"type": "session", "version": SESSION_VERSION, "id": self.id,
                              "timestamp": _fmt_ts(self.created), "cwd": self.cwd}
        self._write(orjson.dumps(mark_record(header, None, self.thread.id)))
        if self.thread.parent_thread_id:
            self.count("thread: parentThreadId not representable (emitted as a standalone session)")
        self.settings()
        for m in self.messages:
            self.current = (m.id, emitted_response(m))
            self.emit_message(m)
        self.current = (None, None)
        self.result.thread_id = self.id
        self.result.resume_hint = self.resume_hint()
        return self.result

    def resume_hint(self) -> str | None:
        return resume_hint(self.id, self.cwd)

    def settings(self) -> None:
        """The entries after the header that set up the session: the model."""
        if self.model:
            self.entry("model_change", None, provider=self.provider or "unknown", modelId=self.model)

    def path(self) -> str:
        stamp = _fmt_ts(self.created).replace(":", "-").replace(".", "-")
        return f"sessions/{project_folder(self.cwd)}/{stamp}_{self.id}.jsonl"

    def emit_message(self, m: Message) -> None:
        if m.role == "system":
            self.count("message: system message dropped (pi writes its own system prompt)")
            return
        results = [b for b in m.content if isinstance(b, ToolResult)]
        for r in results:
            self.tool_result(r, m)
        # images of a tool result (Claude) travel inside its toolResult entry
        result_ids = {r.call_id for r in results}
        rest = [b for b in m.content if not isinstance(b, ToolResult)
                and not (isinstance(b, Attachment) and (b.extra or {}).get("callId") in result_ids)]
        if not rest:
            return
        if m.role == "assistant":
            self.assistant(m, rest)
        elif m.role == "user":
            self.user(m, rest)
        else:
            self.count(f"message: {m.role} blocks without a tool result dropped", len(rest))

    def user(self, m: Message, blocks: list[Any]) -> None:
        content: list[JsonObject] = []
        for b in blocks:
            if isinstance(b, Text):
                content.append({"type": "text", "text": b.text})
            elif isinstance(b, Attachment) and b.data and (b.media_type or "").startswith("image/"):
                content.append({"type": "image", "data": b.data, "mimeType": b.media_type})
            else:
                self.count(f"user: {getattr(b, 'TYPE', type(b).__name__)} block not representable, dropped")
        if content:
            self.message(m.ts, {"role": "user", "content": content})

    def assistant(self, m: Message, blocks: list[Any]) -> None:
        x = m.extra or {}
        own = m.provenance is not None and m.provenance.provider == self.vendor
        content: list[JsonObject] = []
        for b in blocks:
            if isinstance(b, Text):
                content.append({"type": "text", "text": b.text})
            elif isinstance(b, Reasoning):
                self.reasoning(b, own, content)
            elif isinstance(b, ToolCall):
                self.tool_names[b.call_id] = b.name
                args = b.input if isinstance(b.input, dict) else ({} if b.input is None else {"input": b.input})
                if not isinstance(b.input, dict) and b.input is not None:
                    self.count("tool_call: non-object input wrapped as {\"input\": ...}")
                content.append({"type": "toolCall", "id": b.call_id, "name": b.name, "arguments": args})
            else:
                self.count(f"assistant: {getattr(b, 'TYPE', type(b).__name__)} block not representable, dropped")
        if not content and m.usage is None:
            return
        calls = any(c["type"] == "toolCall" for c in content)
        model = x.get("model") if isinstance(x.get("model"), str) else self.model
        msg: JsonObject = {
            "role": "assistant", "content": content,
            "api": x["api"] if own and isinstance(x.get("api"), str) else "sesh-archive",
            "provider": x["provider"] if own and isinstance(x.get("provider"), str) else (self.provider or "sesh-archive"),
            "model": model or "unknown",
            "usage": self.usage(m),
            "stopReason": x["stopReason"] if own and isinstance(x.get("stopReason"), str) else ("toolUse" if calls else "stop"),
        }
        if m.usage is None:
            self.count("usage: none on record, zeros written")
        if own and isinstance(x.get("responseId"), str):
            msg["responseId"] = x["responseId"]
        self.message(m.ts, msg)

    def reasoning(self, b: Reasoning, own: bool, content: list[JsonObject]) -> None:
        sig = (b.extra or {}).get("signature")
        if own and (b.text or sig):
            part: JsonObject = {"type": "thinking", "thinking": b.text or ""}
            if isinstance(sig, str):
                part["thinkingSignature"] = sig
            if b.redacted:
                part["redacted"] = True
            content.append(part)
        elif b.text and self.options.reasoning == "summary":
            content.append({"type": "thinking", "thinking": b.text})
            self.count("reasoning: written as thinking without a signature (pi sends it to the model as text)")
        else:
            self.count("reasoning: dropped (redacted, or reasoning=drop)")

    def usage(self, m: Message) -> JsonObject:
        u = m.usage
        vendor = (u.extra or {}).get("vendor") if u is not None else None
        inp, out = (u.input_tokens or 0, u.output_tokens or 0) if u else (0, 0)
        cr, cw = (u.cache_read_tokens or 0, u.cache_write_tokens or 0) if u else (0, 0)
        cost = vendor.get("cost") if isinstance(vendor, dict) and m.provenance and m.provenance.provider == self.vendor else None
        return {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw, "totalTokens": inp + out + cr + cw,
                "cost": cost if isinstance(cost, dict) else dict(ZERO_COST)}

    def tool_result(self, b: ToolResult, m: Message) -> None:
        attachments = [a for a in m.content if isinstance(a, Attachment) and (a.extra or {}).get("callId") == b.call_id]
        content, changed = _content_output(b.output, attachments)
        if changed:
            self.count("tool_result: output serialised to text")
        name = self.tool_names.get(b.call_id) or (b.extra or {}).get("toolName")
        if not isinstance(name, str):
            name = "unknown"
            self.count("tool_result: no tool call on record, toolName 'unknown'")
        msg: JsonObject = {"role": "toolResult", "toolCallId": b.call_id, "toolName": name, "content": content,
                           "isError": bool(b.is_error)}
        details = (b.extra or {}).get("details")
        if details is not None and m.provenance is not None and m.provenance.provider == self.vendor:
            msg["details"] = details
        self.message(m.ts, msg)


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[Any], options: EmitOptions) -> EmitResult:
    """A pi session file for ``thread``'s messages; see the module docstring."""
    emitter = _Emitter(thread, messages, options)
    if children:
        emitter.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return emitter.emit()
