"""Canonical thread -> the export document Hermes Agent imports into ``state.db`` (0.19.0).

The document is what ``SessionDB.export_session`` gives and ``SessionDB.import_sessions``
reads (the dashboard's ``POST /api/sessions/import``, ``hermes_cli/web_server.py``): the
session's columns (``id``, ``source``, ``model``, ``model_config``, ``cwd``, ``title``,
``started_at``, token totals, ``api_call_count``) and ``messages``, OpenAI-style dicts as
the ``messages`` table holds them (``role``, ``content``, ``tool_calls`` with JSON
``function.arguments``, ``tool_call_id``, ``tool_name``, ``reasoning_content``,
``finish_reason``, ``timestamp`` in seconds). Hermes 0.19.0 has no command that imports a
file, and an adapter never writes SQLite: the resume hint imports the file with Hermes's
own ``import_sessions`` (run by the Python Hermes is installed in), then resumes it with
``hermes --resume``.

Mapping: one Hermes message per canonical message; ``Text`` -> ``content`` (several joined
by blank lines), ``Reasoning`` -> ``reasoning_content`` (``--reasoning drop`` drops it),
``ToolCall`` -> ``tool_calls``, each ``ToolResult`` -> a ``tool`` message (output as text),
images -> OpenAI ``image_url`` content parts; injected context and system messages are left
out (Hermes writes its own). Hermes keeps no usage per response, only session totals: the
responses' usage is summed into them (counted). Child threads are not written (counted).

Streamed: each message is written to the document as it is read (the messages read once,
from any iterable); the head, whose totals and model are known only at the end, is put
before them last (``EmittedFiles.prepend``), so a long thread is never held whole.

Marks: each message carries the emit mark (``base.mark_record`` over ``parse.digest_form``)
in ``platform_message_id``, which ``import_sessions`` keeps and Hermes never sends to the
model; the session's ``model_config`` carries ``{"seshArchive": {"t": thread, "s": totals}}``
so the totals emit wrote are not counted again when the session is read back after Hermes
resumed it (its own new responses add ``session_model_usage`` rows and to the totals).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult
from ..base import (
    CHILD_THREADS_NOT_WRITTEN,
    EMIT_MARK,
    EmitOptions,
    EmitResult,
    command,
    image_url,
    mark_record,
)
from .parse import NAME, TOTALS, digest_form

FOLDER = "hermes-import"
EXPORT_KEY = "hermesExport"  # names the document as an export emit wrote (detect)
# the import with Hermes's own code, in the Python that runs ``hermes`` (its shebang)
IMPORT = ("import json, sys; from hermes_state import SessionDB; "
          "r = SessionDB().import_sessions([json.load(open(sys.argv[1]))]); print(r); sys.exit(0 if r.get('ok') else 1)")


def resume_hint(session_id: str, cwd: str | None, file: str | None = None) -> str:
    file = file or f"~/.hermes/{FOLDER}/{session_id}.json"
    python = '"$(head -n 1 "$(command -v hermes)" | cut -c3-)"'
    imp = f"{python} -c {command(IMPORT)} {command(file) if not file.startswith('~/') else file}"
    hint = f"{imp} && {command('hermes', '--resume', session_id)}"
    return f"cd {command(cwd)} && {hint}" if cwd else hint


def _seconds(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def session_id_for(thread: Thread) -> str:
    """A Hermes-style id (``YYYYMMDD_HHMMSS_xxxxxx``) for a thread from another vendor; a
    Hermes thread keeps its own."""
    if (thread.metadata or {}).get("provider") == NAME or thread.id[:8].isdigit() and thread.id[8:9] == "_":
        return thread.id
    t = _seconds(thread.created_at) or 0.0
    stamp = datetime.fromtimestamp(t, tz=timezone.utc).strftime("%Y%m%d_%H%M%S")
    return f"{stamp}_{hashlib.sha256(thread.id.encode('utf-8', 'surrogatepass')).hexdigest()[:6]}"


def _text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in output):
        return "\n".join(p["text"] for p in output)
    return orjson.dumps(output).decode()


class HermesWriter:
    def __init__(self, thread: Thread, options: EmitOptions, session_id: str) -> None:
        self.thread, self.options, self.session_id = thread, options, session_id
        self.result = EmitResult()
        self.rel = f"{FOLDER}/{session_id}.json"
        # the document is written as messages arrive; its head (totals, model: known only at
        # the end) is put before them when the last one is written
        self.out = self.result.files.open(self.rel)
        self.written = 0
        self.totals = dict.fromkeys(TOTALS, 0)
        self.responses = 0
        self.model: str | None = None
        self.first = True

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def add(self, msg: JsonObject, m: Message | None) -> None:
        mark = mark_record(digest_form(msg), m.id if m else None, self.thread.id if self.first else None)[EMIT_MARK]
        self.first = False
        msg["platform_message_id"] = orjson.dumps({EMIT_MARK: mark}).decode()
        data = orjson.dumps(msg, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
        self.out.write((b",\n    " if self.written else b"\n    ") + data)
        self.written += 1

    def usage(self, m: Message) -> None:
        u = m.usage
        if u is None:
            return
        self.responses += 1
        for k in TOTALS:
            self.totals[k] += getattr(u, k) or 0
        self.count("usage: per-response figures summed into the session's totals (Hermes keeps no usage per "
                   "response), dropped per response")

    def message(self, m: Message) -> None:
        extra = m.extra or {}
        if m.role == "system" or (extra.get("injected") and not extra.get("conversation")):
            self.count("system or injected context: left out (the client writes its own)")
            return
        texts: list[str] = []
        images: list[JsonObject] = []
        reasoning: list[str] = []
        calls: list[JsonObject] = []
        for b in m.content:
            if isinstance(b, Text):
                texts.append(b.text)
            elif isinstance(b, Reasoning):
                if self.options.reasoning == "drop":
                    self.count("reasoning: dropped (--reasoning drop)")
                elif not b.text:
                    self.count("reasoning: redacted block dropped")
                else:
                    reasoning.append(b.text)
            elif isinstance(b, ToolCall):
                args = b.input if isinstance(b.input, str) else orjson.dumps(b.input).decode()
                calls.append({"id": b.call_id, "type": "function", "function": {"name": b.name, "arguments": args}})
            elif isinstance(b, ToolResult):
                out = _text_of(b.output)
                if not isinstance(b.output, str):
                    self.count("tool result: output turned into text")
                self.add({"role": "tool", "content": out, "tool_call_id": b.call_id,
                          "tool_name": (b.extra or {}).get("tool") or self._names.get(b.call_id),
                          "timestamp": _seconds(m.ts)}, m)
            elif isinstance(b, Attachment) and image_url(b.media_type, b.data, b.uri):
                images.append({"type": "image_url", "image_url": {"url": image_url(b.media_type, b.data, b.uri)}})
            else:
                self.count(f"{type(b).__name__}: not representable in Hermes, dropped")
        for c in calls:
            self._names[c["id"]] = c["function"]["name"]
        if not (texts or images or reasoning or calls):
            self.usage(m)
            return
        role = "assistant" if m.role == "assistant" else "user"
        if m.role == "tool":
            self.count("tool message without a result: written as a user message")
        content: Any = "\n\n".join(texts)
        if images:
            content = ([{"type": "text", "text": content}] if content else []) + images
        msg: JsonObject = {"role": role, "content": content, "timestamp": _seconds(m.ts)}
        if role == "assistant":
            if reasoning:
                msg["reasoning_content"] = "\n\n".join(reasoning)
            if calls:
                msg["tool_calls"] = calls
            msg["finish_reason"] = "tool_calls" if calls else "stop"
            model = extra.get("model")
            if isinstance(model, str) and model:
                self.model = model
        self.add(msg, m)
        self.usage(m)

    def emit(self, messages: Iterable[Message]) -> EmitResult:
        self._names: dict[str, str] = {}
        for m in messages:
            self.message(m)
        meta = self.thread.metadata or {}
        model = meta.get("model") if isinstance(meta.get("model"), str) else None
        model = model or self.model or self.options.model
        config = {"max_iterations": 90, "reasoning_config": None, "max_tokens": None,
                  EMIT_MARK: {"t": self.thread.id, "s": [self.totals[k] for k in TOTALS]}}
        doc: JsonObject = {
            EXPORT_KEY: 1, "id": self.session_id, "source": "cli", "model": model,
            "model_config": orjson.dumps(config).decode(), "cwd": self.options.cwd or meta.get("cwd"),
            "git_branch": self.options.git_branch or meta.get("gitBranch"), "title": self.thread.title,
            "started_at": _seconds(self.thread.created_at), "system_prompt": self.options.base_instructions,
            **self.totals, "api_call_count": self.responses,
        }  # fmt: skip
        # the head object without its closing "\n}", then the messages already written
        head = orjson.dumps(doc, option=orjson.OPT_INDENT_2)[:-2]
        self.result.files.prepend(self.rel, head + b',\n  "messages": [')
        self.out.write(b"\n  ]\n}\n" if self.written else b"]\n}\n")
        self.result.thread_id = self.session_id
        cwd = doc["cwd"] if isinstance(doc["cwd"], str) else None
        self.result.resume_hint = resume_hint(self.session_id, cwd)
        return self.result


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
                 options: EmitOptions = EmitOptions()) -> EmitResult:
    session_id = options.session_id or session_id_for(thread)
    result = HermesWriter(thread, options, session_id).emit(messages)
    if children:
        result.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return result
