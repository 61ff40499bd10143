"""Canonical threads -> a Mistral Vibe session in the legacy layout
(``logs/session/session_<YYYYMMDD_HHMMSS>_<id8>/messages.jsonl`` + ``meta.json``), the one
format both generations resume: vibe 2.26.1 continues it in place (appending after
``meta.json``'s ``total_messages``), vibe 3.0.3 imports it into its unified store on
``--resume <id>`` (``app_server/_legacy_import.py``) and keeps the messages' ``message_id``.

Each canonical message becomes one ``LLMMessage`` line, marked (``base.mark_record``);
dropped or changed fields are counted in ``EmitResult.counts``:

* system messages have no place (Vibe writes its own system prompt, never to the log);
* reasoning from another vendor is written as ``reasoning_content`` (plain text the
  OpenAI-compatible providers take), or dropped with ``reasoning="drop"``;
* tool results become ``tool`` messages after their call (text; other outputs as JSON);
  images and attachments are dropped (a legacy log references image files by path);
* usage has no per-message place and ``meta.json`` ``stats`` is written as zeros: a resumed
  run adds its own tokens there, which then are the hand-off's own (the archived
  responses stay counted once, in their threads).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult, Unknown
from ..base import CHILD_THREADS_NOT_WRITTEN, EmitOptions, EmitResult, MessageStream, command, emitted_response, mark_record
from .common import NAME


def _parse_ts(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def vibe_uuid(seed: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sesh-archive:{NAME}:{seed}"))


def resume_hint(session_id: str, cwd: str | None) -> str:
    # Vibe 3.0.3 resolves an explicit id in any folder; it runs in the folder it is started in
    return command("cd", cwd or ".") + " && " + command("vibe", "--resume", session_id)


def fingerprint(record: JsonObject) -> str:
    """Vibe 2.26.1's ``SessionLogger._message_fingerprint``: sha256 of the message's pydantic
    dump as ``json.dumps(..., sort_keys=True)`` writes it. ``meta.json`` names the last
    message's; a resume whose last message matches it appends after the emitted lines
    instead of rewriting the file (which would drop the emit marks). Every line is written
    as that dump (``injected`` and ``reasoning_message_id`` included), so the two agree."""
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode("utf-8")).hexdigest()


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _output_text(output: Any) -> tuple[str, bool]:
    if isinstance(output, str):
        return output, False
    if output is None:
        return "", False
    if isinstance(output, list) and all(isinstance(i, dict) and isinstance(i.get("text"), str) for i in output):
        return "\n".join(i["text"] for i in output), len(output) > 1
    return orjson.dumps(output).decode(), True


class _Emitter:
    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions) -> None:
        self.thread, self.options = thread, options
        self.messages = MessageStream(messages)
        self.result = EmitResult()
        meta = thread.metadata or {}
        own = meta.get("sessionId") if isinstance(meta.get("sessionId"), str) else None
        self.session = options.session_id or (own if own and _is_uuid(own) else vibe_uuid(thread.id))
        created = _parse_ts(thread.created_at) or self.messages.first(lambda m: _parse_ts(m.ts))
        self.created = created or datetime(1970, 1, 1, tzinfo=timezone.utc)
        self.end = self.created
        self.cwd = str(options.cwd or meta.get("cwd") or "/")
        # a model another vendor named is one Vibe has no provider for (it would fall back to its
        # default, Mistral's hosted model): only Vibe's own alias, or the one given/configured
        own = meta.get("model") if meta.get("layout") in ("legacy", "unified") else None
        model = options.model or own
        self.model = model if isinstance(model, str) else None
        self.responses = 0
        self.lines = 0
        self.fingerprint: str | None = None
        self.first_user: str | None = None

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def _line(self, record: JsonObject, m: Message | None, first: bool, response: str | None = None) -> None:
        self.fingerprint = fingerprint(record)
        marked = mark_record(record, m.id if m else None, self.thread.id if first else None, response)
        self.out.write(orjson.dumps(marked) + b"\n")
        self.lines += 1

    def _message_id(self, m: Message) -> str:
        # Vibe's own messages keep their uuid: a resumed 3.x import keeps it, so they stay one message
        return m.id if m.provenance and m.provenance.provider == NAME and _is_uuid(m.id) else vibe_uuid(m.id)

    def _usage(self, m: Message) -> str | None:
        if m.usage is None:
            return None
        self.responses += 1
        return emitted_response(m)

    def run(self, children: Sequence[Any]) -> EmitResult:
        when = self.created.strftime("%Y%m%d_%H%M%S")
        folder = f"session/session_{when}_{self.session[:8]}"
        self.out = self.result.files.open(f"{folder}/messages.jsonl")
        first = True
        for m in self.messages:
            ts = _parse_ts(m.ts)
            if ts is not None and ts > self.end:
                self.end = ts
            wrote = self._message(m, first)
            first = first and not wrote
        if children:
            self.count(CHILD_THREADS_NOT_WRITTEN, len(children))
        self.result.files[f"{folder}/meta.json"] = self._meta()
        # the archive knows a legacy session by the short id its folder ends with (legacy.py)
        self.result.thread_id = self.session[:8]
        self.result.resume_hint = resume_hint(self.session, self.cwd)
        return self.result

    def _message(self, m: Message, first: bool) -> bool:
        if m.role == "system":
            self.count("system messages: not written (Vibe writes its own system prompt)")
            return False
        if m.role == "tool" or (m.role == "user" and m.content and all(isinstance(b, ToolResult) for b in m.content)):
            for b in m.content:
                if isinstance(b, ToolResult):
                    text, changed = _output_text(b.output)
                    if changed:
                        self.count("tool output: not text, written as JSON text")
                    if b.is_error and not text.lstrip().startswith("<tool_error>"):
                        text = f"<tool_error>{text}</tool_error>"
                    rec: JsonObject = {"role": "tool", "content": text, "injected": False}
                    name = (b.extra or {}).get("name")
                    if isinstance(name, str):
                        rec["name"] = name
                    rec["tool_call_id"] = b.call_id
                    self._line(rec, m, first)
                    first = False
                else:
                    self.count(f"{type(b).__name__} in a tool message: dropped")
            return not first
        texts: list[str] = []
        reasoning: list[str] = []
        calls: list[JsonObject] = []
        for b in m.content:
            if isinstance(b, Text):
                texts.append(b.text)
            elif isinstance(b, Reasoning):
                if b.text and self.options.reasoning != "drop":
                    reasoning.append(b.text)
                    if not (m.provenance and m.provenance.provider == NAME):
                        self.count("reasoning: written as reasoning_content text")
                else:
                    self.count("reasoning: dropped")
            elif isinstance(b, ToolCall):
                args = b.input if isinstance(b.input, str) else orjson.dumps(b.input).decode()
                calls.append({"id": b.call_id, "index": len(calls), "function": {"name": b.name, "arguments": args},
                              "type": "function"})
            elif isinstance(b, ToolResult):
                self.count("tool results inside a non-tool message: dropped")
            elif isinstance(b, Attachment):
                self.count("attachments: dropped (a legacy log names image files by path)")
            elif isinstance(b, Unknown):
                self.count("unknown blocks: dropped")
            else:
                self.count(f"{type(b).__name__} blocks: dropped")
        role = "assistant" if m.role == "assistant" else "user"
        if role == "user" and not texts:
            return False
        rec = {"role": role, "content": "\n".join(texts), "injected": bool(m.extra and m.extra.get("injected") is True)}
        if reasoning:
            rec["reasoning_content"] = "\n".join(reasoning)
            rec["reasoning_message_id"] = vibe_uuid(f"{m.id}:reasoning")
        if calls:
            rec["tool_calls"] = calls
        rec["message_id"] = self._message_id(m)
        if role == "user" and self.first_user is None:
            self.first_user = rec["content"]
        self._line(rec, m, first, self._usage(m) if role == "assistant" else None)
        return True

    def _meta(self) -> bytes:
        title = self.thread.title or (self.first_user or "Untitled session")[:50]
        # zeros: the archived responses are counted by their own threads; Vibe adds a resumed
        # run's tokens to these, which the archive then reads as the hand-off's own
        stats = {"steps": 0, "session_prompt_tokens": 0, "session_completion_tokens": 0, "session_cached_tokens": 0}
        if self.responses:
            self.count("usage: dropped (a legacy log has no per-response place; meta.json stats written as zeros)", self.responses)
        meta = {
            "session_id": self.session, "start_time": self.created.isoformat(), "end_time": self.end.isoformat(),
            "git_commit": None, "git_branch": (self.thread.metadata or {}).get("gitBranch") or self.options.git_branch,
            "environment": {"working_directory": self.cwd}, "username": "sesh-archive", "title": title,
            "title_source": "auto", "stats": stats, "total_messages": self.lines,
            "last_message_fingerprint": self.fingerprint, "tools_available": [],
            "config": {"active_model": self.model} if self.model else {},
            "agent_profile": {"name": "default", "overrides": {}}, "system_prompt": None,
        }
        return orjson.dumps(meta, option=orjson.OPT_INDENT_2)


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[Any] = (),
                 options: EmitOptions = EmitOptions()) -> EmitResult:
    return _Emitter(thread, messages, options).run(children)
