"""Canonical threads -> a Cline CLI session folder, as Cline CLI 3.0.65 resumes it (``cline --id``).

``sessions/<id>/<id>.messages.json`` (the transcript, indented by two spaces as the client
writes it) and ``sessions/<id>/<id>.json`` (the manifest: cwd, provider, model, title).
The id is Cline's shape, ``<epoch ms>_<5 characters>``, derived from the thread. Every
message object carries the archive's mark (``base.mark_record``; Cline 3.0.65 keeps an
unknown field of a message when it rewrites the transcript on resume, ``test_clients``
checks it). The messages are read once, in order (``MessageStream``: a look-ahead for the
first timestamp and model), and the transcript is written as they come: its head, which
holds ``updated_at`` (the last timestamp), is prepended at the end. Dropped or changed,
counted in ``EmitResult.counts``:

* system messages and injected context (Cline writes its own system prompt);
* prompts are wrapped in ``<user_input mode="act">`` as the CLI sends them (a Cline
  prompt keeps its own mode);
* tool results become ``tool_result`` blocks of a ``user`` message, named by their call;
  output that is not text or Cline's own result list is serialised to JSON text;
* reasoning from another vendor becomes ``thinking`` without a signature, or is dropped
  with ``reasoning="drop"``;
* usage goes to ``metrics`` with the cache added back into ``inputTokens``;
* attachments and other blocks have no place: dropped.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult
from ..base import (
    CHILD_THREADS_NOT_WRITTEN, EmitOptions, EmitResult, MessageStream, command, emitted_response, mark_record,
)
from .parse import NAME

_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def _ms(ts: str | None, default: int) -> int:
    if not ts:
        return default
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return default


def session_id(thread: Thread, created_ms: int) -> str:
    h = int.from_bytes(hashlib.sha256(thread.id.encode("utf-8", "surrogatepass")).digest()[:8], "big")
    suffix = "".join(_B36[(h >> (6 * i)) % 36] for i in range(5))
    return f"{created_ms}_{suffix}"


def resume_hint(sid: str, cwd: str | None) -> str:
    return command("cd", cwd or ".") + " && " + command("cline", "--id", sid)


def _iso(ms: int) -> str:
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _dumps(doc: Any) -> bytes:
    # the client writes JSON.stringify(doc, null, 2) (orjson indents by two spaces too), and
    # ends both files with a newline (3.0.65's transcripts and manifests)
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)


# the transcript is one JSON document, streamed: its head (known at the end: ``updated_at``)
# is prepended, each message is written as it comes, indented as an element of ``messages``
# (a newline inside a JSON string is escaped, so re-indenting every line is safe)
_ITEM_INDENT = b"    "


def _item(rec: JsonObject, first: bool) -> bytes:
    return (b"\n" if first else b",\n") + _ITEM_INDENT + _dumps(rec).replace(b"\n", b"\n" + _ITEM_INDENT)


def _head_and_tail(doc: JsonObject, empty: bool) -> tuple[bytes, bytes]:
    """``doc`` (its last key ``messages``, an empty list) split around its list's items."""
    whole = _dumps(doc)
    end = b"[]\n}"
    assert whole.endswith(b'"messages": ' + end)
    return whole[: -len(end)] + b"[", (b"]\n}\n" if empty else b"\n  ]\n}\n")


class _Emitter:
    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions) -> None:
        self.thread, self.options = thread, options
        self.messages = MessageStream(messages)
        self.result = EmitResult()
        self.names: dict[str, str] = {}
        self.model = options.model or (thread.metadata or {}).get("model") or self.messages.first(
            lambda m: m.extra["model"] if m.extra and isinstance(m.extra.get("model"), str) else None) or "unknown"
        self.provider = options.model_provider or (thread.metadata or {}).get("modelProvider") or "openai-compatible"
        self.created = _ms(thread.created_at, 0) or _ms(self.messages.first(lambda m: m.ts or None), 0)
        self.sid = options.session_id or session_id(thread, self.created)
        self.written = 0  # messages written to the transcript
        self.out: Any = None
        self.prompt: str | None = None  # the first user text, for the manifest
        self.last_ts = self.created

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def emit(self) -> EmitResult:
        folder = f"sessions/{self.sid}"
        path = f"{folder}/{self.sid}.messages.json"
        self.out = self.result.files.open(path)
        for m in self.messages:
            self.message(m)
        cwd = self.options.cwd or (self.thread.metadata or {}).get("cwd") or "."
        version = self.options.client_version or "3.0.65"
        transcript = {"version": 1, "updated_at": _iso(self.last_ts), "agent": "lead", "sessionId": self.sid,
                      "origin": {"source": "cli", "mode": "user", "sessionId": self.sid, "version": version},
                      "messages": []}
        head, tail = _head_and_tail(transcript, not self.written)
        self.out.write(tail)
        self.result.files.prepend(path, head)
        prompt = self.prompt or ""
        manifest = {"version": 1, "session_id": self.sid, "source": "cli", "pid": 0, "started_at": _iso(self.created),
                    "ended_at": _iso(self.last_ts), "exit_code": 0, "status": "completed", "interactive": False,
                    "provider": self.provider, "model": self.model, "cwd": cwd, "workspace_root": cwd,
                    "enable_tools": True, "enable_spawn": True, "enable_teams": False, "prompt": prompt,
                    "metadata": {"sessionHistoryOrigin": {"mode": "user", "version": version},
                                 "title": self.thread.title or prompt[:80]}}
        self.result.files[f"{folder}/{self.sid}.json"] = _dumps(manifest) + b"\n"
        self.result.resume_hint = resume_hint(self.sid, cwd)
        self.result.thread_id = self.sid
        return self.result

    def _record(self, m: Message | None, role: str, content: list[JsonObject], ts: str | None,
                **fields: Any) -> JsonObject:
        ms = _ms(ts, self.last_ts)
        self.last_ts = max(self.last_ts, ms)
        seed = f"{self.thread.id}:{m.id if m else self.written}:{role}"
        rid = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()
        rec: JsonObject = {"id": f"{rid[:8]}-{rid[8:12]}-{rid[12:16]}-{rid[16:20]}-{rid[20:32]}" if role == "user"
                           else "msg_" + rid[:8], "role": role, "content": content, "ts": ms, **fields}
        first = not self.written
        rec = mark_record(rec, m.id if m else None, self.thread.id if first else None,
                          emitted_response(m) if m is not None and "metrics" in fields else None)
        self.out.write(_item(rec, first))
        self.written += 1
        return rec

    def message(self, m: Message) -> None:
        extra = m.extra or {}
        if self.prompt is None and m.role == "user":  # the manifest's prompt: the first user text
            self.prompt = next((b.text for b in m.content if isinstance(b, Text)), None)
        if m.role == "system" or (extra.get("injected") and not extra.get("conversation")):
            self.count("system or injected context: not written (Cline writes its own)")
            return
        if m.role == "user":
            self.user(m)
        elif m.role == "assistant":
            self.assistant(m)
        elif m.role == "tool":
            self.results(m)
        else:
            self.count(f"role {m.role}: not representable, dropped")

    def user(self, m: Message) -> None:
        texts = [b.text for b in m.content if isinstance(b, Text)]
        results = [b for b in m.content if isinstance(b, ToolResult)]
        other = len(m.content) - len(texts) - len(results)
        if other:
            self.count("user blocks other than text: dropped", other)
        if results:
            self.results(m)
        if texts:
            mode = (m.extra or {}).get("mode") or "act"
            text = "\n\n".join(texts)
            self._record(m, "user", [{"type": "text", "text": f'<user_input mode="{mode}">{text}</user_input>'}], m.ts)

    def assistant(self, m: Message) -> None:
        content: list[JsonObject] = []
        for b in m.content:
            if isinstance(b, Text):
                content.append({"type": "text", "text": b.text})
            elif isinstance(b, Reasoning):
                own = (m.provenance is not None and m.provenance.provider == NAME)
                if b.text is None or (self.options.reasoning == "drop" and not own):
                    self.count("reasoning: dropped")
                    continue
                block: JsonObject = {"type": "thinking", "thinking": b.text}
                sig = (b.extra or {}).get("signature") if own else None
                if isinstance(sig, str):
                    block["signature"] = sig
                elif not own:
                    self.count("reasoning: written without its signature")
                content.append(block)
            elif isinstance(b, ToolCall):
                self.names[b.call_id] = b.name
                content.append({"type": "tool_use", "id": b.call_id, "name": b.name,
                                "input": b.input if isinstance(b.input, dict) else {"input": b.input}})
            else:
                self.count(f"assistant {type(b).__name__} block: dropped")
        if not content:
            self.count("empty assistant message: not written")
            return
        fields: JsonObject = {"modelInfo": {"id": (m.extra or {}).get("model") or self.model,
                                            "provider": (m.extra or {}).get("modelProvider") or self.provider}}
        if m.usage is not None:
            u = m.usage
            vendor = (u.extra or {}).get("vendor") if m.provenance is not None and m.provenance.provider == NAME else None
            metrics = {"inputTokens": (u.input_tokens or 0) + (u.cache_read_tokens or 0) + (u.cache_write_tokens or 0),
                       "outputTokens": u.output_tokens or 0, "cacheReadTokens": u.cache_read_tokens or 0,
                       "cacheWriteTokens": u.cache_write_tokens or 0}
            if isinstance(vendor, dict) and "cost" in vendor:
                metrics["cost"] = vendor["cost"]
            fields["metrics"] = metrics
        self._record(m, "assistant", content, m.ts, **fields)

    def results(self, m: Message) -> None:
        content: list[JsonObject] = []
        for b in m.content:
            if not isinstance(b, ToolResult):
                if not isinstance(b, Text):
                    self.count(f"tool message {type(b).__name__} block: dropped")
                continue
            out = b.output
            if not isinstance(out, (str, list)):
                out = orjson.dumps(out).decode()
                self.count("tool output: serialised to JSON text")
            block: JsonObject = {"type": "tool_result", "tool_use_id": b.call_id,
                                 "name": self.names.get(b.call_id) or (b.extra or {}).get("name") or "tool",
                                 "content": out}
            if b.is_error:
                block["is_error"] = True
            content.append(block)
        if content:
            self._record(m, "user", content, m.ts)


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[Any], options: EmitOptions) -> EmitResult:
    """A Cline session folder for ``thread``'s messages; see the module docstring."""
    emitter = _Emitter(thread, messages, options)
    if children:
        emitter.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return emitter.emit()
