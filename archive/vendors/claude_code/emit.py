"""Canonical threads -> a Claude Code 2.1.x session file (the cross-vendor path).

Same-vendor re-emit restores stored lines (``archive.emit``); this module builds a session
from canonical messages with deterministic uuids derived from the thread id, and counts
every dropped or transformed field in ``EmitResult.counts``. Every tool_use gets exactly
one tool_result before the next response (a missing one is synthesized, a stray one
becomes text); only reasoning with a Claude ``signature`` becomes a thinking block. The
project folder is the slug of the ``cwd`` option if given, else of the thread's cwd.
"""

from __future__ import annotations

import re
import uuid as uuidlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    FileChange,
    JsonObject,
    Message,
    Reasoning,
    Text,
    Thread,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
    WebSearch,
)
from ..base import nonempty_str as _str
from ..base import (
    EmitOptions,
    command,
    EmitError,
    EmitResult,
    MessageStream,
    emitted_response,
    mark_record,
    stable_id,
)
from .parse import EDIT_TOOLS, NAME, SPAWN_TOOLS

# ---------------------------------------------------------------- emit (canonical -> Claude Code)


EMIT_VERSION = "2.1.197"  # the envelope written follows this recorded version
TOOLU_RE = re.compile(r"^toolu_[A-Za-z0-9_-]+$")
TOOL_NAME_RE = re.compile(r"[^A-Za-z0-9_-]")
SAFE_AGENT_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def cwd_slug(cwd: str) -> str:
    """Claude's project folder name: every character outside [A-Za-z0-9] becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def _emit_uuid(*parts: object) -> str:
    return str(uuidlib.UUID(hex=stable_id("claude-code-emit", *parts)[:32], version=4))


def _image_from_url(url: Any) -> JsonObject | None:
    """A Codex ``image_url`` as a Claude image block: a base64 data: URL becomes a base64
    source, an http(s) URL a url source; anything else None."""
    if not isinstance(url, str):
        return None
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        if ";base64" not in header or not data:
            return None
        return {"type": "image", "source": {"type": "base64", "media_type": header[5:].split(";")[0] or "image/png", "data": data}}
    if url.startswith(("https://", "http://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    return None


class _SessionEmitter:
    """Shared state of one emit: ids, the call-id map, the counts."""

    def __init__(self, thread: Thread, children: Sequence[tuple[Thread, list[Message]]], options: EmitOptions) -> None:
        meta = thread.metadata or {}
        # an explicit cwd wins: the session is being placed in a (maybe different) checkout
        cwd = _str(options.cwd) or _str(meta.get("cwd"))
        if not cwd:
            raise EmitError(f"thread {thread.id}: no cwd given and none in its metadata")
        self.cwd = cwd
        self.version = options.client_version or EMIT_VERSION
        self.branch = str(meta.get("gitBranch") or options.git_branch or "")
        self.model = _str(meta.get("model")) or _str(options.model)
        self.session_id = options.session_id or _emit_uuid("session", thread.id)
        self.result = EmitResult(thread_id=self.session_id)
        self.result.resume_hint = resume_hint(self.session_id, cwd)
        self.call_ids: dict[str, str] = {}
        self.agent_ids: dict[str, str] = {}
        self.spawns: dict[tuple[str, str], str] = {}  # (thread id, source call id) -> agent id
        for child, _ in children:
            aid = child.agent_id if child.agent_id and SAFE_AGENT_ID.match(child.agent_id) else None
            self.agent_ids[child.id] = aid or "a" + stable_id("agent", child.id)[:16]

    def call_id(self, cid: str) -> str:
        if cid not in self.call_ids:
            if TOOLU_RE.match(cid):
                self.call_ids[cid] = cid
            else:
                self.call_ids[cid] = "toolu_" + stable_id("call", cid)[:24]
                self.result.count("tool_call: id rewritten to toolu_ form")
        return self.call_ids[cid]


class _ThreadWriter:
    """Lines of one Claude Code file (the trunk or one subagent), in canonical order, written
    to ``out`` as soon as nothing can change them: a response's lines wait until its run ends
    (its usage is the run's total), the rest of the file is never held."""

    def __init__(self, em: _SessionEmitter, thread: Thread, messages: Iterable[Message], agent_id: str | None,
                 out: Any) -> None:  # fmt: skip
        self.em = em
        self.thread = thread
        self.messages = MessageStream.of(messages).through(model_order)
        self.agent_id = agent_id
        self.out = out
        self.lines: list[JsonObject] = []  # not yet written
        # the canonical message each held line is written from (None: added by the emitter),
        # written into the line as its emit mark (base.mark_record)
        self.origins: list[str | None] = []
        self.current: str | None = None  # the message being written
        self.written = 0  # lines written to out
        # the archived response a run's lines carry the usage of, for
        # the emit mark: a run's message.id -> response key; a canonical message id -> its key
        self.run_keys: dict[str, str | None] = {}
        self.response_keys: dict[str, str | None] = {}
        self.n = 0  # lines added
        self.only_system = True  # every line so far is a system line (or there is none)
        self.last_uuid: str | None = None
        self.last_ts = thread.created_at or None
        self.in_run = False
        self.runs = 0
        self.msg_id = ""
        self.run_source: str | None = None  # the source message.id of the current run
        self.pending: dict[str, str] = {}  # new call id -> uuid of its assistant line
        self.answered: set[str] = set()
        # Claude repeats a response's usage on each of its lines and ingest keeps the last:
        # the usage dicts of each response's lines, filled with the run's total in write()
        self.run_usage: dict[str, tuple[list[JsonObject], dict[str, Usage]]] = {}
        self.names: dict[str, str] = {}  # source call id -> tool name
        for m in self.messages.scan():
            for b in m.content:
                if isinstance(b, ToolCall):
                    self.names[b.call_id] = b.name

    # -- envelope

    def _add(self, record: JsonObject, ts: str | None, filler: bool = False) -> str:
        uid = _emit_uuid(self.thread.id, self.n)
        env: JsonObject = {"parentUuid": self.last_uuid, "isSidechain": self.agent_id is not None}
        if self.agent_id is not None:
            env["agentId"] = self.agent_id
        env.update(record)
        env["uuid"] = uid
        env["timestamp"] = ts or self.last_ts or "1970-01-01T00:00:00.000Z"
        if not (ts or self.last_ts):
            self.em.result.count("timestamp: missing, epoch written")
        env.update(
            {
                "userType": "external",
                "entrypoint": "cli",
                "cwd": self.em.cwd,
                "sessionId": self.em.session_id,
                "version": self.em.version,
                "gitBranch": self.em.branch,
            }
        )
        self.lines.append(env)
        self.origins.append(None if filler else self.current)
        self.n += 1
        self.only_system = self.only_system and env["type"] == "system"
        self.last_uuid = uid
        self.last_ts = env["timestamp"]
        return uid

    def _user(self, content: Any, ts: str | None, filler: bool = False, **fields: Any) -> str:
        self._close_run()
        return self._add({"type": "user", "message": {"role": "user", "content": content}, **fields}, ts, filler)

    def _assistant(self, block: JsonObject, m: Message) -> None:
        if self.only_system:
            # the API wants a conversation to open with a user message
            self._user("[conversation imported by sesh-archive]", m.ts, isMeta=True, filler=True)
            self.em.result.count("message: user line inserted before a leading assistant message (the API wants a user turn first)")
        src = (m.provenance.extra or {}).get("messageId") if m.provenance else None
        if self.in_run and src and self.run_source and src != self.run_source:
            self.in_run = False  # two API responses back to back
        if not self.in_run and src and src == self.run_source:
            # Claude Code writes parallel tool results while the response that asked for
            # them is still streaming (2.1.39): the same response continues after them.
            self.in_run = True
        if not self.in_run:
            self._answer_pending(m.ts)
            self._settle()  # the runs before this one are complete
            self.in_run = True
            self.runs += 1
            self.run_source = src
            self.msg_id = "msg_emit" + stable_id("msg", self.thread.id, self.runs)[:24]
        usage: JsonObject = {}
        lines_usage, responses = self.run_usage.setdefault(self.msg_id, ([], {}))
        lines_usage.append(usage)
        if m.usage is not None:
            responses[m.id] = m.usage  # once per message, however many lines it becomes
            self.response_keys[m.id] = emitted_response(m)
        message = {
            "id": self.msg_id,
            "type": "message",
            "role": "assistant",
            "model": _str((m.extra or {}).get("model")) or self.em.model or "unknown",
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        uid = self._add({"message": message, "requestId": "req_emit" + self.msg_id[8:], "type": "assistant"}, m.ts)
        if block.get("type") == "tool_use":
            self.pending[block["id"]] = uid

    def _close_run(self) -> None:
        self.in_run = False

    def _answer_pending(self, ts: str | None) -> None:
        """Every tool_use needs a tool_result before the next assistant message."""
        for cid, auid in list(self.pending.items()):
            self._close_run()
            self._add(
                {
                    "type": "user",
                    "message": {"role": "user", "content": [{"tool_use_id": cid, "type": "tool_result", "content": "[no result recorded]", "is_error": True}]},
                    "sourceToolAssistantUUID": auid,
                },
                ts,
                filler=True,
            )
            self.answered.add(cid)
            self.em.result.count("tool_result: synthesized for a call without result")
        self.pending.clear()

    # -- blocks

    def _text_or_drop(self, b: Block, role: str) -> JsonObject | None:
        """Blocks that Claude has no shape for in this position, as text (or dropped)."""
        count = self.em.result.count
        if isinstance(b, Text):
            if not b.text:
                count("text: empty block dropped")
                return None
            return {"type": "text", "text": b.text}
        if isinstance(b, Reasoning):
            sig = (b.extra or {}).get("signature")
            if role == "assistant" and isinstance(sig, str) and sig and isinstance(b.text, str) and not b.redacted:
                return {"type": "thinking", "thinking": b.text, "signature": sig}
            if b.text and not b.redacted:
                count("reasoning: unsigned, written as [reasoning] text")
                return {"type": "text", "text": "[reasoning] " + b.text}
            count("reasoning: redacted or encrypted, dropped")
            return None
        if isinstance(b, FileChange):
            name = self.names.get(b.call_id or "")
            if name in EDIT_TOOLS:
                count("file_change: carried by its Edit/Write tool call")
                return None
            count("file_change: no Claude edit call, written as text")
            return {"type": "text", "text": f"[file change] {b.path or ''}\n{b.patch or ''}".rstrip("\n")}
        if isinstance(b, WebSearch):
            if b.call_id and b.call_id in self.names:
                count("web_search: carried by its tool call")
                return None
            count("web_search: written as text")
            return {"type": "text", "text": f"[web search] {b.query}"}
        if isinstance(b, Attachment):
            kind = (b.extra or {}).get("kind") or ("document" if b.media_type == "application/pdf" else "image")
            if role == "user" and b.data:
                return {"type": kind, "source": {"type": "base64", "media_type": b.media_type, "data": b.data}}
            if role == "user" and b.uri and (b.uri.startswith("https://") or b.uri.startswith("http://")):
                return {"type": kind, "source": {"type": "url", "url": b.uri}}
            count(f"attachment: not embeddable in a {role} line, written as text")
            return {"type": "text", "text": f"[attachment {b.media_type or ''} {b.uri or ''}]".replace("  ", " ")}
        if isinstance(b, Unknown):
            count(f"unknown block dropped: {b.source_type}")
            return None
        count(f"block dropped: {type(b).__name__}")
        return None

    def _tool_use(self, b: ToolCall) -> JsonObject:
        name = TOOL_NAME_RE.sub("_", b.name)[:64] or "tool"
        if name != b.name:
            self.em.result.count("tool_call: name rewritten to Claude's charset")
        inp = b.input
        if not isinstance(inp, dict):
            inp = {"input": inp}
            self.em.result.count("tool_call: non-object input wrapped as {input: ...}")
        out: JsonObject = {"type": "tool_use", "id": self.em.call_id(b.call_id), "name": name, "input": inp}
        if isinstance((b.extra or {}).get("caller"), dict):
            out["caller"] = b.extra["caller"]  # type: ignore[index]
        return out

    def _result_content(self, b: ToolResult, attachments: list[Attachment]) -> Any:
        out = b.output
        if out is None or isinstance(out, str):
            return out if out is not None else ""
        if isinstance(out, list):
            items = []
            for item in out:
                if isinstance(item, dict) and isinstance(item.get("attachment"), int):
                    i = item["attachment"]
                    att = attachments[i] if i < len(attachments) else None
                    conv = self._text_or_drop(att, "user") if att is not None else None
                    if conv is not None:
                        items.append(conv)
                    else:
                        self.em.result.count("tool_result: image without data dropped")
                elif isinstance(item, dict) and item.get("type") in ("text", "image", "document", "tool_reference", "search_result"):
                    items.append(item)
                elif isinstance(item, dict) and item.get("type") == "input_image":
                    # a Codex function output image (view_image): base64 data URL -> image block
                    image = _image_from_url(item.get("image_url"))
                    if image is not None:
                        items.append(image)
                        self.em.result.count("tool_result: input_image written as an image block")
                    else:
                        items.append({"type": "text", "text": "[image]"})
                        self.em.result.count("tool_result: input_image without data or URL written as text")
                elif isinstance(item, dict) and item.get("type") in ("input_text", "output_text") and isinstance(item.get("text"), str):
                    items.append({"type": "text", "text": item["text"]})
                else:
                    items.append({"type": "text", "text": item if isinstance(item, str) else orjson.dumps(item).decode()})
                    self.em.result.count("tool_result: list item serialised to text")
            return items
        self.em.result.count("tool_result: output serialised to text")
        return orjson.dumps(out).decode()

    def _tool_result(self, b: ToolResult, m: Message, attachments: list[Attachment], first: bool) -> None:
        cid = self.em.call_ids.get(b.call_id)
        if cid is None or cid not in self.pending:
            why = "answered twice or late" if cid in self.answered else "without a call"
            self.em.result.count(f"tool_result: {why}, written as text")
            text = self._result_content(b, attachments)
            text = text if isinstance(text, str) else orjson.dumps(text).decode()
            self._user(f"[tool result {b.call_id}] {text}", m.ts)
            return
        block: JsonObject = {"tool_use_id": cid, "type": "tool_result", "content": self._result_content(b, attachments)}
        if b.is_error:
            block["is_error"] = True
        fields: JsonObject = {}
        tur = (m.extra or {}).get("toolUseResult")
        provider = m.provenance.provider if m.provenance else None
        if first and tur is not None and provider == NAME:
            fields["toolUseResult"] = tur
        agent = self.em.spawns.get((self.thread.id, b.call_id))
        if agent is not None:
            base = dict(fields.get("toolUseResult") or {}) if isinstance(fields.get("toolUseResult"), dict) else {}
            base["agentId"] = agent
            fields["toolUseResult"] = base
        fields["sourceToolAssistantUUID"] = self.pending.pop(cid)
        self.answered.add(cid)
        self._user([block], m.ts, **fields)

    # -- messages

    def write(self) -> None:
        for m in self.messages:
            self.current = m.id
            self._message(m)
        self.current = None
        self._answer_pending(self.last_ts)
        self._settle()

    def _settle(self) -> None:
        """Fill in the usage of the runs so far and write every line held."""
        for run_id, (lines_usage, by_message) in self.run_usage.items():
            responses = list(by_message.values())
            # neutral buckets are Claude's own convention: input_tokens leave the cache out
            total = {
                "input_tokens": sum(u.input_tokens or 0 for u in responses),
                "cache_creation_input_tokens": sum(u.cache_write_tokens or 0 for u in responses),
                "cache_read_input_tokens": sum(u.cache_read_tokens or 0 for u in responses),
                "output_tokens": sum(u.output_tokens or 0 for u in responses),
            }
            for usage in lines_usage:
                usage.update(total)
            # responses joined into one: their sum under the first one's key (the archived
            # thread's own rows outrank it where both are archived)
            self.run_keys[run_id] = self.response_keys.get(next(iter(by_message))) if by_message else None
            if len(responses) > 1:
                self.em.result.count("usage: responses written as one Claude response (summed)", len(responses) - 1)
        self.run_usage.clear()
        for line, origin in zip(self.lines, self.origins):
            first = self.thread.id if self.written == 0 else None
            run = line["message"].get("id") if line.get("type") == "assistant" else None
            key = self.run_keys.get(run) if isinstance(run, str) else None
            self.out.write(orjson.dumps(mark_record(line, origin, first, key)) + b"\n")
            self.written += 1
        self.lines.clear()
        self.origins.clear()
        self.run_keys.clear()
        self.response_keys.clear()

    def _message(self, m: Message) -> None:
        role = m.role
        extra = m.extra or {}
        attachments_by_call: dict[str, list[Attachment]] = {}
        for b in m.content:
            if isinstance(b, Attachment) and isinstance((b.extra or {}).get("callId"), str):
                attachments_by_call.setdefault(b.extra["callId"], []).append(b)  # type: ignore[index]
        if role == "system":
            texts = [b.text for b in m.content if isinstance(b, Text)]
            dropped = len(m.content) - len(texts)
            if dropped:
                self.em.result.count("system message: non-text blocks dropped", dropped)
            self._close_run()
            self._add({"type": "system", "subtype": "informational", "content": "\n".join(texts), "isMeta": False, "level": "info"}, m.ts)
            self.em.result.count("system message: written as system/informational")
            return
        if role not in ("user", "assistant", "tool"):
            self.em.result.count(f"message: role {role!r} written as user")
        user_blocks: list[JsonObject] = []
        first_result = True

        def flush_user() -> None:
            if user_blocks:
                content: Any = user_blocks[0]["text"] if len(user_blocks) == 1 and user_blocks[0]["type"] == "text" else list(user_blocks)
                fields: JsonObject = {}
                if extra.get("isMeta") or extra.get("injected"):
                    fields["isMeta"] = True
                if extra.get("isCompactSummary"):
                    fields.update({"isCompactSummary": True, "isVisibleInTranscriptOnly": True})
                self._user(content, m.ts, **fields)
                user_blocks.clear()

        for b in m.content:
            if isinstance(b, ToolCall):
                flush_user()
                if role != "assistant":
                    self.em.result.count("tool_call: outside an assistant message, moved to one")
                self._assistant(self._tool_use(b), m)
            elif isinstance(b, ToolResult):
                flush_user()
                if role == "assistant":
                    self.em.result.count("tool_result: inside an assistant message, moved to a user line")
                self._tool_result(b, m, attachments_by_call.get(b.call_id, []), first_result)
                first_result = False
            elif isinstance(b, Attachment) and isinstance((b.extra or {}).get("callId"), str) and b.extra["callId"] in self.names:  # type: ignore[index]
                continue  # written inside its tool_result
            elif role == "assistant":
                conv = self._text_or_drop(b, "assistant")
                if conv is not None:
                    self._assistant(conv, m)
            else:
                conv = self._text_or_drop(b, "user")
                if conv is not None:
                    user_blocks.append(conv)
        flush_user()


def resume_hint(session_id: str, cwd: str | None) -> str:
    """Claude Code finds a session through the project folder it is started in."""
    return command("cd", cwd or ".") + " && " + command("claude", "--resume", session_id)


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, Iterable[Message]]], options: EmitOptions) -> EmitResult:
    """Build ``projects/<slug>/<session>.jsonl`` and its subagent files from canonical
    messages of any vendor."""
    em = _SessionEmitter(thread, children, options)
    by_thread = {t.id: MessageStream.of(ms) for t, ms in [(thread, messages), *children]}
    meta_files: dict[str, JsonObject] = {}
    parents = {c.id: c.parent_thread_id if c.parent_thread_id in by_thread else thread.id for c, _ in children}
    # the spawning messages, each parent's read once for all its children (not once a child)
    origins: dict[tuple[str, str], Message] = {}
    for parent in dict.fromkeys(parents.values()):
        wanted = {c.origin_message_id for c, _ in children if parents[c.id] == parent and c.origin_message_id}
        for m in by_thread[parent].scan() if wanted else ():
            if m.id in wanted:
                wanted.discard(m.id)
                origins[(parent, m.id)] = m
                if not wanted:
                    break
    for child, _ in children:
        aid = em.agent_ids[child.id]
        meta: JsonObject = {"agentType": str((child.metadata or {}).get("agentType") or "general-purpose"), "description": child.title or ""}
        parent = parents[child.id]
        origin = origins.get((parent, child.origin_message_id or ""))
        calls = [b for b in (origin.content if origin else ()) if isinstance(b, ToolCall)]
        call = next((c for c in calls if c.name in SPAWN_TOOLS), calls[0] if calls else None)
        if call is not None:
            em.spawns[(parent, call.call_id)] = aid
            meta["toolUseId"] = em.call_id(call.call_id)
        else:
            em.result.count("child thread: spawning tool call not found")
        meta_files[aid] = meta
    base = f"projects/{cwd_slug(em.cwd)}"
    out = em.result.files.open(f"{base}/{em.session_id}.jsonl")
    _ThreadWriter(em, thread, by_thread[thread.id], None, out).write()
    if thread.title:
        out.write(orjson.dumps({"type": "custom-title", "customTitle": thread.title, "sessionId": em.session_id}) + b"\n")
    for child, _ in children:
        aid = em.agent_ids[child.id]
        sub = f"{base}/{em.session_id}/subagents/agent-{aid}"
        _ThreadWriter(em, child, by_thread[child.id], aid, em.result.files.open(f"{sub}.jsonl")).write()
        em.result.files[f"{sub}.meta.json"] = orjson.dumps(meta_files[aid])
    return em.result


def _is_context_attachment(m: Message) -> bool:
    x = m.extra or {}
    return m.role == "user" and bool(x.get("injected")) and isinstance(x.get("attachment"), str)


def model_order(messages: Iterable[Message]) -> Iterator[Message]:
    """Messages in the order the model read them. Claude Code (2.1.332) writes the context
    attachments of a prompt (environment, date, listings: system-reminder texts) after the
    prompt's lines (a typed prompt, or a slash command's tag line and its expanded isMeta
    prompt) but sends them before the prompt; written after it, Claude joins them to the
    prompt on resume and adds a newline at the seam of the prompt's text. So a run of such
    attachments right after a prompt goes before the prompt's first line. Streams: only a
    prompt's lines and its attachments are held."""

    def prompt_line(m: Message) -> bool:
        return (m.role == "user" and not _is_context_attachment(m)
                and not any(isinstance(b, ToolResult) for b in m.content))

    prompt: list[Message] = []  # a typed prompt and its other lines (an expanded slash command)
    attached: list[Message] = []  # the context attachments written after them
    for m in messages:
        if attached:
            if _is_context_attachment(m):
                attached.append(m)
                continue
            yield from attached
            yield from prompt
            prompt, attached = [], []
        elif prompt:
            if prompt_line(m):
                prompt.append(m)
                continue
            if _is_context_attachment(m):
                attached.append(m)
                continue
            yield from prompt
            prompt = []
        if prompt_line(m) and not (m.extra or {}).get("injected"):
            prompt = [m]
            continue
        yield m
    yield from attached
    yield from prompt


