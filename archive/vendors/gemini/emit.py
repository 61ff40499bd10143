"""Canonical threads -> a Gemini CLI chat recording (JSON Lines, as 0.61.0 writes and resumes).

Layout: ``tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id8>.jsonl`` under ``~/.gemini``,
``<project>`` being the slug Gemini CLI gives a new project folder (its base name, lower
case, ``[^a-z0-9]`` as ``-``). ``projects.json`` and the ``.project_root`` marker are not
written: Gemini CLI claims the slug for the folder on first use (a folder already mapped
to another slug does not see the session; the emit notes it).

Lines: a header (with ``directories`` = the cwd), then one final upsert per message (no ``$set`` replays): ``user`` records
with Gemini parts, ``gemini`` records with ``content``, ``thoughts``, ``tokens``, ``model``
and ``toolCalls`` whose ``result`` holds the ``functionResponse`` (what the client turns
back into a model turn and a function-response turn when it resumes). Consecutive
assistant messages of one response become one record; tool results, wherever the source
kept them, go into the call they answer. Injected context and system messages are left out
(the client writes its own), every transformation is counted.

Every line carries the emit mark (``base.mark_record``; the client keeps it when it resumes
and appends): the header names the thread, a record the last message it was written from
(a response's messages share one record), the usage's response and, for the results its
calls hold, the message each came from.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import PurePath
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult
from ..base import CHILD_THREADS_NOT_WRITTEN, EmitError, EmitOptions, EmitResult, command, emitted_response, mark_record

DEFAULT_MODEL = "gemini-2.5-pro"


def slugify(text: str) -> str:
    """Gemini CLI's project slug (ProjectRegistry.slugify, 0.61.0)."""
    return re.sub(r"^-|-$", "", re.sub(r"-+", "-", re.sub(r"[^a-z0-9]", "-", text.lower()))) or "project"


def session_uuid(seed: str) -> str:
    return str(uuid.UUID(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:32], version=4))


def resume_hint(session_id: str, cwd: str | None) -> str:
    hint = command("gemini", "--resume", session_id)
    return f"cd {command(cwd)} && {hint}" if cwd else hint


def _file_stamp(ts: str | None) -> str:
    try:
        dt = datetime.fromisoformat((ts or "").replace("Z", "+00:00"))
    except ValueError:
        dt = datetime(1970, 1, 1, tzinfo=timezone.utc)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H-%M")


def _data_url(url: Any) -> tuple[str, str] | None:
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        head, data = url[5:].split(";base64,", 1)
        return head or "application/octet-stream", data
    return None


def result_content(b: ToolResult, m: Message) -> tuple[Any, list[JsonObject]]:
    """A result's output without its images, and the images as Gemini ``inlineData``
    parts: Claude Code's ``{"type": "image", "attachment": k}`` (the k-th Attachment block
    after the result), Codex's ``input_image`` data URLs, Anthropic base64 sources."""
    if not isinstance(b.output, list):
        return b.output, []
    blocks = list(m.content)
    at = next((i for i, x in enumerate(blocks) if x is b), len(blocks))
    following = [x for x in blocks[at + 1:] if isinstance(x, Attachment)]
    rest: list[Any] = []
    images: list[JsonObject] = []
    for item in b.output:
        if not isinstance(item, dict):
            rest.append(item)
            continue
        t = item.get("type")
        k = item.get("attachment")
        if t == "image" and isinstance(k, int) and k < len(following) and following[k].data:
            images.append({"inlineData": {"mimeType": following[k].media_type or "image/png", "data": following[k].data}})
        elif t == "image" and isinstance(item.get("source"), dict) and item["source"].get("data"):
            images.append({"inlineData": {"mimeType": item["source"].get("media_type") or "image/png", "data": item["source"]["data"]}})
        elif t == "input_image" and _data_url(item.get("image_url")):
            mime, data = _data_url(item["image_url"])  # type: ignore[misc]
            images.append({"inlineData": {"mimeType": mime, "data": data}})
        else:
            rest.append(item)
    if not images:
        return b.output, []
    return (rest if rest else ""), images


def output_text(output: Any) -> tuple[str | None, bool]:
    """A tool output as text, and whether it had to be transformed; None: not text."""
    if isinstance(output, str):
        return output, False
    if isinstance(output, list):
        texts = [p.get("text") for p in output if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if texts:
            return "\n".join(texts), True
        return None, True
    if output is None:
        return "", True
    return orjson.dumps(output).decode(), True


def tokens_of(m: Message) -> JsonObject | None:
    """Neutral usage -> Gemini ``tokens`` (cached input counted inside ``input``)."""
    u = m.usage
    if u is None:
        return None
    cached = u.cache_read_tokens or 0
    inp = (u.input_tokens or 0) + cached + (u.cache_write_tokens or 0)
    thoughts = u.reasoning_tokens or 0
    out = max((u.output_tokens or 0) - thoughts, 0)
    return {"input": inp, "output": out, "cached": cached, "thoughts": thoughts, "tool": 0, "total": inp + out + thoughts}


class GeminiWriter:
    """Writes the records; ``result`` collects the counts."""

    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions) -> None:
        self.thread, self.messages, self.options = thread, messages, options
        self.result = EmitResult()
        self.records: list[JsonObject] = []  # not yet written (see flush)
        self.out: Any = None
        self.last: str | None = None  # the timestamp of the last record written
        self.current: JsonObject | None = None  # the open gemini record
        self.calls: dict[str, JsonObject] = {}  # call id -> its toolCalls entry
        self.call_records: dict[str, JsonObject] = {}  # call id -> the record holding its entry

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def close(self) -> None:
        self.current = None

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
            elif isinstance(b, Attachment):
                if b.data:
                    parts.append({"inlineData": {"mimeType": b.media_type or "application/octet-stream", "data": b.data}})
                elif b.uri:
                    parts.append({"fileData": {"mimeType": b.media_type or "application/octet-stream", "fileUri": b.uri}})
                else:
                    self.count("attachment: no data or uri, dropped")
            else:
                self.count(f"{type(b).__name__} in a user message: dropped")
        if parts:
            self.close()
            self.records.append({"id": m.id, "timestamp": m.ts or self.thread.created_at, "type": "user", "content": parts,
                                 "_m": m.id})

    def assistant(self, m: Message) -> None:
        rec = self.current
        if rec is None or (m.usage is not None and "tokens" in rec) or rec.get("_closed"):
            rec = {"id": m.id, "timestamp": m.ts or self.thread.created_at, "type": "gemini", "content": "", "thoughts": []}
            self.records.append(rec)
            self.current = rec
        # the emit mark (base.mark_record): the record's messages are one response; it is read
        # back as the last of them (a hand-off's history is its origin's up to that message)
        rec["_m"] = m.id
        if m.usage is not None:
            rec["_u"] = emitted_response(m)
        texts: list[str] = [] if not rec["content"] else [rec["content"]]
        for b in m.content:
            if isinstance(b, Text):
                texts.append(b.text)
            elif isinstance(b, Reasoning):
                if self.options.reasoning == "drop":
                    self.count("reasoning: dropped (--reasoning drop)")
                elif not b.text:
                    self.count("reasoning: redacted block dropped")
                else:
                    rec["thoughts"].append({"subject": (b.extra or {}).get("subject", ""), "description": b.text,
                                            "timestamp": (b.extra or {}).get("timestamp", m.ts or self.thread.created_at)})
            elif isinstance(b, ToolCall):
                entry: JsonObject = {"id": b.call_id, "name": b.name, "args": b.input if isinstance(b.input, dict) else {"input": b.input},
                                     "status": "success", "timestamp": m.ts or self.thread.created_at}
                if not isinstance(b.input, dict):
                    self.count("tool call: non-object input wrapped as {input: ...}")
                rec.setdefault("toolCalls", []).append(entry)
                self.calls[b.call_id] = entry
                self.call_records[b.call_id] = rec
            else:
                self.count(f"{type(b).__name__}: not representable in Gemini CLI, dropped")
        rec["content"] = "\n\n".join(t for t in texts if t)
        if len([t for t in texts if t]) > 1:
            self.count("text: blocks of one response joined")
        tokens = tokens_of(m)
        if tokens is not None:
            if (m.usage.cache_write_tokens or 0) > 0:  # type: ignore[union-attr]
                self.count("usage: cache-write bucket dropped (counted as input)")
            rec["tokens"] = tokens
        model = (m.extra or {}).get("model") or self.options.model
        if isinstance(model, str) and model:
            rec["model"] = model

    def tool_result(self, b: ToolResult, m: Message) -> None:
        entry = self.calls.get(b.call_id)
        if entry is not None and entry.get("_written"):
            self.count("tool result: its call was already written (answered, or waiting longer than HOLD records), dropped")
            return
        if entry is None:
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
        key = "error" if b.is_error else "output"
        entry["result"] = [{"functionResponse": {"id": b.call_id, "name": entry["name"], "response": {key: text}}}] + images
        if b.is_error:
            entry["status"] = "error"
        entry["timestamp"] = m.ts or entry["timestamp"]
        self.call_records[b.call_id].setdefault("_r", {})[b.call_id] = m.id
        if self.current is not None:
            self.current["_closed"] = True  # the next assistant message is the next response

    HOLD = 5000  # records kept waiting for a tool result before they are written without it

    def flush(self, end: bool = False) -> None:
        """Write the records that can no longer change: up to the open response or the first
        record whose tool calls still wait for a result (a result fills in its call's entry);
        past ``HOLD`` waiting records the oldest are written as they are."""
        n = 0
        for rec in self.records:
            if not end and len(self.records) - n <= self.HOLD and (
                    rec is self.current or any("result" not in e for e in rec.get("toolCalls", ()))):
                break
            n += 1
        for rec in self.records[:n]:
            rec.pop("_closed", None)
            mark = rec.pop("_m"), rec.pop("_u", None), rec.pop("_r", None)
            for entry in rec.get("toolCalls", ()):
                if self.calls.get(entry["id"]) is entry:
                    self.calls[entry["id"]] = {"_written": True}
                    self.call_records.pop(entry["id"], None)
            self.out.write(orjson.dumps(mark_record(rec, mark[0], None, mark[1], mark[2])) + b"\n")
            self.last = rec["timestamp"]
        del self.records[:n]

    def emit(self, cwd: str, session_id: str) -> EmitResult:
        start = self.thread.created_at
        name = f"session-{_file_stamp(start)}-{session_id[:8]}.jsonl"
        path = str(PurePath("tmp", slugify(PurePath(cwd).name), "chats", name))
        self.out = self.result.files.open(path)
        for m in self.messages:
            self.flush()
            if m.usage is not None and m.role == "system":
                self.count("usage: of background helper calls, dropped (no place for it in Gemini CLI)")
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
        last = self.last if self.last is not None else start
        # directories: the workspace folders, as Gemini CLI records them after `/directory
        # add` (a resume adds them to its workspace: the cwd is there already); the only
        # field of its own that names the project (its session text does, in the context
        # the emit leaves out), so an archive reading the emitted file knows the project
        header: JsonObject = {"sessionId": session_id, "projectHash": hashlib.sha256(cwd.encode()).hexdigest(),
                              "startTime": start, "lastUpdated": last, "kind": "main", "directories": [cwd]}
        if self.thread.title:
            header["summary"] = self.thread.title
        self.result.files.prepend(path, orjson.dumps(mark_record(header, None, self.thread.id)) + b"\n")
        self.result.thread_id = session_id
        self.result.resume_hint = resume_hint(session_id, cwd)
        self.result.notes.append(f"filed under tmp/{slugify(PurePath(cwd).name)}: Gemini CLI finds it there unless "
                                 f"~/.gemini/projects.json already maps {cwd} to another project folder")
        return self.result


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
                 options: EmitOptions = EmitOptions()) -> EmitResult:
    cwd = options.cwd or (thread.metadata or {}).get("cwd")
    if not isinstance(cwd, str) or not cwd:
        raise EmitError("a Gemini CLI session is filed under its project folder: give --cwd")
    session_id = options.session_id or session_uuid(f"gemini\x1f{thread.id}")
    writer = GeminiWriter(thread, messages, options)
    result = writer.emit(cwd, session_id)
    if children:
        result.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return result
