"""Canonical threads -> a Kimi CLI session: ``sessions/<md5 of the work folder>/<uuid>/``
holding ``context.jsonl`` and ``wire.jsonl``, and ``kimi.json`` naming the work folder (Kimi
finds a session only through its folder's entry there; without it, 1.51.0's ``--session``
makes a new session of that id and truncates the context). Installed, ``kimi.json`` is merged
into the user's own (``merge_index``: the folder's entry added or its ``last_session_id``
set), never replaced. Resumed with ``kimi -w <cwd> --session <uuid>`` (checked with kimi-cli
1.51.0, tests/test_clients_kimi.py).

``context.jsonl``: a ``_checkpoint`` before each prompt (as Kimi writes them), then each
canonical message as a kosong ``Message`` line, marked (``base.mark_record``). No
``_system_prompt``: Kimi prepends its own when it opens the session (the file is rewritten
once; the marked lines stay as written). ``wire.jsonl``: the metadata line, a ``TurnBegin``
per prompt and, for each response with usage, a ``StatusUpdate`` carrying it (marked with the
archived response key, so the usage is counted once). Counted as dropped or changed:

* system messages (Kimi writes its own system prompt) and the context a client injects for
  itself (a harness's reminders); conversation the harness wrote stays, as user messages;
* reasoning from another vendor is written as ``think`` parts (no ``encrypted`` signature),
  or dropped with ``reasoning="drop"``;
* a tool result becomes a ``tool`` message after its call (text; other outputs as JSON); a
  call without an archived result gets a placeholder result (the API needs one);
* images with their bytes become ``image_url`` data URLs; other attachments are dropped;
* child threads are not written (``CHILD_THREADS_NOT_WRITTEN``).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult
from ..base import (
    CHILD_THREADS_NOT_WRITTEN, EmitOptions, EmitResult, MessageStream, command, emitted_response, mark_record,
)
from .common import NAME, UUID_RE

INDEX = "kimi.json"
# kimi.json sits beside sessions/ (the adapter's root): ".." keeps it there under -o DIR and --install
INDEX_REL = f"sessions/../{INDEX}"
PROTOCOL = "1.10"  # kimi-cli 1.51.0 wire/protocol.py
NO_RESULT = "<system>ERROR: no result was archived for this call.</system>"


def kimi_uuid(seed: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sesh-archive:{NAME}:{seed}"))


def workdir_hash(cwd: str) -> str:
    """The folder name of a local work folder's sessions (kimi-cli 1.51.0 ``WorkDirMeta.sessions_dir``)."""
    return hashlib.md5(cwd.encode("utf-8")).hexdigest()


def resume_hint(session_id: str, cwd: str | None) -> str:
    return command("cd", cwd or ".") + " && " + command("kimi", "--session", session_id)


def merge_index(rel: str, existing: bytes, emitted: bytes) -> bytes | None:
    """``kimi.json`` installed over the user's own: theirs with the emitted work folder's
    entry added (or its ``last_session_id`` set); None (refuse) for any other file, or a
    ``kimi.json`` that is not Kimi's."""
    if rel.rsplit("/", 1)[-1] != INDEX:
        return None
    try:
        mine, theirs = json.loads(emitted), json.loads(existing)
    except ValueError:
        return None
    dirs = theirs.get("work_dirs") if isinstance(theirs, dict) else None
    if not isinstance(dirs, list):
        return None
    for entry in mine["work_dirs"]:
        same = [d for d in dirs if isinstance(d, dict) and d.get("path") == entry["path"]
                and d.get("kaos", "local") == entry["kaos"]]
        if same:
            same[0]["last_session_id"] = entry["last_session_id"]
        else:
            dirs.append(entry)
    return json.dumps(theirs, indent=2, ensure_ascii=False).encode()


def _output_text(output: Any) -> tuple[Any, bool]:
    """A result's output as kosong content: a string, text parts as they are, else JSON text."""
    if isinstance(output, str):
        return output, False
    if output is None:
        return "", False
    if isinstance(output, list) and all(isinstance(i, dict) and i.get("type") == "text" and isinstance(i.get("text"), str)
                                        for i in output):
        return [{"type": "text", "text": i["text"]} for i in output], False
    return orjson.dumps(output).decode(), True


class _Emitter:
    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions) -> None:
        self.thread, self.options = thread, options
        self.messages = MessageStream(messages)
        self.result = EmitResult()
        meta = thread.metadata or {}
        # Kimi's own session keeps its uuid; another vendor's thread gets one of its own (a
        # Claude Code session id is a uuid too: the hand-off must not take its thread's id)
        own = thread.id if UUID_RE.match(thread.id) and meta.get("provider") == NAME else None
        self.session = options.session_id or own or kimi_uuid(thread.id)
        self.cwd = str(options.cwd or meta.get("cwd") or "/")
        self.checkpoint = 0
        self.first = True
        self.open_calls: list[str] = []
        self.time = self._start()

    def _start(self) -> float:
        for ts in (self.thread.created_at, self.messages.first(lambda m: m.ts)):
            if isinstance(ts, str):
                try:
                    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
                except ValueError:
                    continue
        return 0.0

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def _when(self, m: Message | None) -> float:
        if m is not None and isinstance(m.ts, str):
            try:
                self.time = max(self.time, datetime.fromisoformat(m.ts.replace("Z", "+00:00")).timestamp())
            except ValueError:
                pass
        return self.time

    def _context(self, record: JsonObject, m: Message | None) -> None:
        marked = mark_record(record, m.id if m else None, self.thread.id if self.first and m else None)
        self.first = self.first and m is None
        self.ctx.write(orjson.dumps(marked) + b"\n")

    def _kimi_record(self, record: JsonObject) -> None:
        # Kimi's own records, as it writes them (json.dumps: a space after each separator)
        self.ctx.write(json.dumps(record).encode() + b"\n")

    def _wire(self, message: JsonObject, m: Message | None = None, response: str | None = None) -> None:
        record: JsonObject = {"timestamp": self._when(m), "message": message}
        if response is not None:
            record = mark_record(record, m.id if m else None, None, response)
        self.wire.write(json.dumps(record, ensure_ascii=False).encode() + b"\n")

    def run(self, children: Sequence[Any]) -> EmitResult:
        folder = f"sessions/{workdir_hash(self.cwd)}/{self.session}"
        self.ctx = self.result.files.open(f"{folder}/context.jsonl")
        self.wire = self.result.files.open(f"{folder}/wire.jsonl")
        self.wire.write(json.dumps({"type": "metadata", "protocol_version": PROTOCOL}).encode() + b"\n")
        for m in self.messages:
            self._message(m)
        self._close_calls()
        if children:
            self.count(CHILD_THREADS_NOT_WRITTEN, len(children))
        index = {"work_dirs": [{"path": self.cwd, "kaos": "local", "last_session_id": self.session}]}
        self.result.files[INDEX_REL] = json.dumps(index, indent=2).encode()
        self.result.thread_id = self.session
        self.result.resume_hint = resume_hint(self.session, self.cwd)
        return self.result

    def _close_calls(self) -> None:
        for call in self.open_calls:
            self.count("tool calls without an archived result: a placeholder result written")
            self._context({"role": "tool", "content": NO_RESULT, "tool_call_id": call}, None)
        self.open_calls = []

    def _message(self, m: Message) -> None:
        if m.role == "system":
            self.count("system messages: not written (Kimi writes its own system prompt)")
            return
        extra = m.extra or {}
        if m.role == "user" and extra.get("injected") is True and extra.get("conversation") is not True \
                and (m.provenance is None or m.provenance.provider != NAME):
            self.count("injected context: not written (Kimi writes its own)")
            return
        results = [b for b in m.content if isinstance(b, ToolResult)]
        if results:
            for b in results:
                if b.call_id not in self.open_calls:
                    self.count("tool results without their call: dropped")
                    continue
                self.open_calls.remove(b.call_id)
                content, changed = _output_text(b.output)
                if changed:
                    self.count("tool output: not text, written as JSON text")
                self._context({"role": "tool", "content": content, "tool_call_id": b.call_id}, m)
            if m.role == "tool" or all(isinstance(b, ToolResult) for b in m.content):
                self._usage(m)
                return
        parts: list[JsonObject] = []
        calls: list[JsonObject] = []
        for b in m.content:
            if isinstance(b, Text):
                parts.append({"type": "text", "text": b.text})
            elif isinstance(b, Reasoning):
                if b.text and self.options.reasoning != "drop":
                    enc = (b.extra or {}).get("encrypted") if m.provenance and m.provenance.provider == NAME else None
                    parts.append({"type": "think", "think": b.text, "encrypted": enc})
                    if not (m.provenance and m.provenance.provider == NAME):
                        self.count("reasoning: written as think text (no signature)")
                else:
                    self.count("reasoning: dropped")
            elif isinstance(b, ToolCall):
                args = b.input if isinstance(b.input, str) else orjson.dumps(b.input).decode()
                call: JsonObject = {"type": "function", "id": b.call_id, "function": {"name": b.name, "arguments": args}}
                calls.append(call)
            elif isinstance(b, ToolResult):
                continue
            elif isinstance(b, Attachment) and b.data and (b.media_type or "").startswith("image/"):
                parts.append({"type": "image_url", "image_url": {"url": f"data:{b.media_type};base64,{b.data}"}})
            else:
                self.count(f"{type(b).__name__} blocks: dropped")
        if m.role != "assistant":
            if not parts:
                return
            self._close_calls()
            self._kimi_record({"role": "_checkpoint", "id": self.checkpoint})
            self.checkpoint += 1
            text = " ".join(p["text"] for p in parts if p["type"] == "text")
            self._wire({"type": "TurnBegin", "payload": {"user_input": text}}, m)
            record: JsonObject = {"role": "user", "content": _content(parts)}
            self._context(record, m)
            return
        if parts or calls:
            # calls stay open across the assistant messages of one response (a vendor that
            # writes parallel calls one message each); a prompt closes them
            record = {"role": "assistant", "content": _content(parts)}
            if calls:
                record["tool_calls"] = calls
                self.open_calls += [c["id"] for c in calls]
            self._context(record, m)
        self._usage(m)

    def _usage(self, m: Message) -> None:
        # the response's usage on the wire, even when nothing of the message could be written
        response = emitted_response(m)
        if m.usage is not None and response is not None:
            u = m.usage
            usage = {"input_other": u.input_tokens or 0, "output": u.output_tokens or 0,
                     "input_cache_read": u.cache_read_tokens or 0, "input_cache_creation": u.cache_write_tokens or 0}
            self._wire({"type": "StatusUpdate", "payload": {"token_usage": usage, "message_id": kimi_uuid(m.id)}}, m,
                       response)


def _content(parts: list[JsonObject]) -> Any:
    # kosong writes a message holding one text part as the bare string
    return parts[0]["text"] if len(parts) == 1 and parts[0]["type"] == "text" else parts


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[Any] = (),
                 options: EmitOptions = EmitOptions()) -> EmitResult:
    return _Emitter(thread, messages, options).run(children)
