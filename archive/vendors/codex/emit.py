"""Canonical threads -> a Codex rollout (G2 lines, as 0.171.0 reads them); see ``emit_rollout``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
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
    WebSearch,
)
from ..base import (
    CHILD_THREADS_NOT_WRITTEN,
    MessageStream,
    EmitOptions,
    command,
    image_url,
    EmitResult,
    emitted_response,
    mark_record,
)
from .parse import _PATCH_FILE_RE, _parse_ts

# ---------------------------------------------------------------- emit

EMIT_CLI_VERSION = "0.171.0"


def _fmt_ts(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def codex_uuid(seed: str, when: datetime) -> str:
    """A UUIDv7-shaped id: Codex's form (``019b…``), deterministic from ``seed``."""
    ms = int(when.timestamp() * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()[:10], "big")
    value = (ms << 80) | (0x7 << 76) | (((rand >> 68) & 0xFFF) << 64) | (0b10 << 62) | (rand & ((1 << 62) - 1))
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _unified_to_apply_patch(path: str, patch: str) -> str | None:
    """A FileChange patch as apply_patch text: taken as is when it already is one, or a
    unified diff turned into an ``*** Update File`` section."""
    if "*** Begin Patch" in patch:
        return patch
    if _PATCH_FILE_RE.match(patch.splitlines()[0] if patch else ""):
        return f"*** Begin Patch\n{patch}\n*** End Patch"
    hunks: list[str] = []
    for line in patch.splitlines():
        if line.startswith(("---", "+++", "diff ", "index ")):
            continue
        if line.startswith("@@"):
            hunks.append("@@")
        elif hunks and line[:1] in (" ", "+", "-"):
            hunks.append(line)
        elif hunks and line == "":
            hunks.append(" ")
    if not hunks:
        return None
    return "*** Begin Patch\n*** Update File: " + path + "\n" + "\n".join(hunks) + "\n*** End Patch"


def _output_text(output: Any) -> tuple[str, bool]:
    """A tool output as the string Codex stores, and whether it had to be transformed."""
    if isinstance(output, str):
        return output, False
    if isinstance(output, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in output):
        return "\n".join(p["text"] for p in output), True
    return orjson.dumps(output).decode(), True


def _has_image(output: Any) -> bool:
    """Whether a tool output list holds an image: Codex ``input_image`` items, Claude
    ``image`` blocks, or the ``{"type": "image", "attachment": k}`` placeholders the Claude
    parser leaves for images it moved to Attachment blocks."""
    return isinstance(output, list) and any(
        isinstance(i, dict) and (i.get("type") in ("input_image", "image") or isinstance(i.get("attachment"), int))
        for i in output
    )


class _Emitter:
    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions) -> None:
        self.thread = thread
        self.messages = MessageStream(messages)
        self.options = options
        self.result = EmitResult()
        meta = thread.metadata or {}
        created = _parse_ts(thread.created_at) or self.messages.first(lambda m: _parse_ts(m.ts))
        self.created = created or datetime(1970, 1, 1, tzinfo=timezone.utc)
        self.id = codex_uuid(f"sesh-archive:codex:{thread.id}", self.created)
        self.clock = self.created
        self.cwd = str(options.cwd or meta.get("cwd") or "/")
        self.model = str(options.model or meta.get("model") or "gpt-5.1-codex")
        self.call_kinds: dict[str, str] = {}  # call_id -> "function" | "custom"
        self.open_calls: list[str] = []
        self.turns = 0
        self.cum = [0, 0, 0, 0, 0]  # input (cache included), cached, cache writes, output, reasoning
        self.current: str | None = None  # the canonical message being written (its lines' emit mark)

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def _write(self, line: bytes) -> None:
        self.out.write(line + b"\n")

    def line(self, kind: str, payload: JsonObject, ts: str | None = None, response: str | None = None) -> None:
        when = _parse_ts(ts)
        # line times must not go backwards: resume sorts nothing, but readers assume it
        self.clock = when if when is not None and when > self.clock else self.clock + timedelta(milliseconds=1)
        record = {"timestamp": _fmt_ts(self.clock), "type": kind, "payload": payload}
        self._write(orjson.dumps(mark_record(record, self.current, response=response)))

    def session_meta(self) -> None:
        meta = self.thread.metadata or {}
        payload: JsonObject = {
            "id": self.id,
            "timestamp": _fmt_ts(self.created),
            "cwd": self.cwd,
            "originator": "codex_cli_rs",
            "cli_version": self.options.client_version or EMIT_CLI_VERSION,
            "source": "cli",
            "model_provider": self.options.model_provider or "openai",
        }
        if self.options.base_instructions:
            payload["base_instructions"] = {"text": self.options.base_instructions}
        git = {k: meta[src] for src, k in (("gitBranch", "branch"), ("gitCommit", "commit_hash"), ("gitRepository", "repository_url")) if isinstance(meta.get(src), str)}
        if git:
            payload["git"] = git
        self.clock = self.created
        record = {"timestamp": _fmt_ts(self.created), "type": "session_meta", "payload": payload}
        self._write(orjson.dumps(mark_record(record, None, self.thread.id)))
        if self.thread.parent_thread_id:
            self.count("thread: parentThreadId not representable (emitted as a standalone session)")

    def close_calls(self, ts: str | None) -> None:
        # Codex needs every call_id answered exactly once; it writes "aborted" itself when a
        # turn is interrupted, so do the same for calls whose result the source lacks.
        current, self.current = self.current, None  # added lines: no message of the thread
        for call_id in self.open_calls:
            kind = "custom_tool_call_output" if self.call_kinds.get(call_id) == "custom" else "function_call_output"
            self.line("response_item", {"type": kind, "call_id": call_id, "output": "aborted"}, ts)
            self.count("tool_call: no result, 'aborted' output added")
        self.open_calls = []
        self.current = current

    def start_turn(self, m: Message) -> None:
        self.close_calls(m.ts)
        self.turns += 1
        turn_id = codex_uuid(f"{self.id}:turn:{self.turns}", self.clock)
        self.line("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": None}, m.ts)
        self.line(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": self.cwd,
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "read-only"},
                "model": self.model,
                "summary": "auto",
            },
            m.ts,
        )

    def emit(self) -> EmitResult:
        self.out = self.result.files.open(self.path())
        self.session_meta()
        for m in self.messages:
            self.current = m.id
            self.emit_message(m)
        self.current = None
        self.close_calls(None)
        self.result.thread_id = self.id
        self.result.resume_hint = resume_hint(self.id)
        self.result.notes.append(
            "Codex 0.9x+ finds sessions through ~/.codex/state_5.sqlite; if `codex resume` does not "
            "list this file, run `codex doctor` or resume by id from its folder."
        )
        if not self.options.base_instructions:
            self.result.notes.append("no base_instructions written: Codex uses its default instructions")
        return self.result

    def path(self) -> str:
        c = self.created.astimezone(timezone.utc)
        return f"sessions/{c:%Y/%m/%d}/rollout-{c:%Y-%m-%dT%H-%M-%S}-{self.id}.jsonl"

    def emit_message(self, m: Message) -> None:
        x = m.extra or {}
        injected = bool(x.get("injected"))
        texts = [b.text for b in m.content if isinstance(b, Text)]
        if m.role == "user" and not injected and texts and not any(isinstance(b, ToolResult) for b in m.content):
            self.start_turn(m)
        changes: dict[str, list[FileChange]] = {}
        for b in m.content:
            if isinstance(b, FileChange):
                changes.setdefault(b.call_id or "", []).append(b)
        parts: list[JsonObject] = []
        # images of a tool result (Claude) travel inside its function_call_output
        result_ids = {b.call_id for b in m.content if isinstance(b, ToolResult)}
        role = {"user": "user", "assistant": "assistant", "system": "developer"}.get(m.role, m.role)
        if m.role == "system" and x.get("codexRole") != "developer":
            self.count("message: system role written as developer")

        def flush() -> None:
            if not parts:
                return
            if role not in ("user", "assistant", "developer"):
                self.count(f"message: {m.role} text without a tool result dropped", len(parts))
            else:
                self.line("response_item", {"type": "message", "role": role, "content": list(parts)}, m.ts)
                text = "\n".join(p["text"] for p in parts if "text" in p)
                images = [p["image_url"] for p in parts if p.get("type") == "input_image"]
                if role == "user" and not injected:
                    self.line("event_msg", {"type": "user_message", "message": text, "images": images, "local_images": [], "text_elements": []}, m.ts)
                elif role == "assistant" and text:
                    self.line("event_msg", {"type": "agent_message", "message": text}, m.ts)
            parts.clear()

        reasoning: list[Reasoning] = []
        for b in m.content:
            if not isinstance(b, Reasoning) and reasoning:
                self.reasoning(reasoning, m)
                reasoning = []
            if isinstance(b, Text):
                parts.append({"type": "output_text" if role == "assistant" else "input_text", "text": b.text})
            elif isinstance(b, Attachment) and (b.extra or {}).get("callId") in result_ids:
                continue  # written by tool_result
            elif isinstance(b, Attachment):
                self.attachment(b, role, parts)
            elif isinstance(b, Reasoning):
                flush()
                reasoning.append(b)
            else:
                flush()
                self.block(b, m, changes)
        if reasoning:
            self.reasoning(reasoning, m)
        flush()
        if m.usage is not None and m.role == "assistant":
            self.token_count(m)

    def attachment(self, b: Attachment, role: str, parts: list[JsonObject]) -> None:
        media = b.media_type or "image/png"
        if role == "assistant":
            self.count("attachment: assistant images are not representable")
        elif not media.startswith("image/"):
            self.count("attachment: not an image")
        elif b.data:
            parts.append({"type": "input_image", "image_url": f"data:{media};base64,{b.data}"})
        elif b.uri:
            parts.append({"type": "input_image", "image_url": b.uri})
        else:
            self.count("attachment: no data or uri")

    def block(self, b: Block, m: Message, changes: dict[str, list[FileChange]]) -> None:
        """Any block but text, attachments and reasoning (emit_message writes those)."""
        if isinstance(b, ToolCall):
            self.tool_call(b, m, changes.pop(b.call_id, []))
        elif isinstance(b, ToolResult):
            self.tool_result(b, m)
        elif isinstance(b, FileChange):
            key = b.call_id or ""
            if key in changes:  # its tool call was not in this message (counted once per call id)
                if key in self.call_kinds:
                    # Claude keeps the change beside the result; the Edit/Write call that made
                    # it was written with an earlier message
                    self.count("file_change: carried by its tool call", len(changes.pop(key)))
                else:
                    self.count("file_change: no tool call to carry it", len(changes.pop(key)))
        elif isinstance(b, WebSearch) and b.call_id and b.call_id in self.call_kinds:
            # a client-side search (Claude's WebSearch tool): its function call and output
            # are written; a web_search_call as well would show the model every search twice
            self.count("web_search: carried by its tool call")
        elif isinstance(b, WebSearch):
            action = {"type": "search", "query": b.query}
            self.line("response_item", {"type": "web_search_call", "status": "completed", "action": action}, m.ts)
            if b.results is not None:
                self.count("web_search: results not representable")
        else:
            self.count(f"block: {getattr(b, 'TYPE', type(b).__name__)} not representable")

    def reasoning(self, blocks: list[Reasoning], m: Message) -> None:
        # consecutive reasoning blocks of one message are one Codex item (its summary parts)
        enc = next((b.extra["encryptedContent"] for b in blocks if b.extra and isinstance(b.extra.get("encryptedContent"), str)), None)
        summary = [{"type": "summary_text", "text": b.text} for b in blocks if b.text and not (b.extra or {}).get("codexContent")]
        content = [{"type": b.extra["codexContent"], "text": b.text} for b in blocks if b.text and (b.extra or {}).get("codexContent")]
        payload: JsonObject = {"type": "reasoning", "summary": summary, "content": content or None, "encrypted_content": enc}
        blank = sum(1 for b in blocks if not b.text)
        if blank and enc is None:
            self.count("reasoning: redacted block without Codex ciphertext dropped", blank)
        if enc is not None:
            self.line("response_item", payload, m.ts)
        elif (summary or content) and self.options.reasoning == "summary":
            # Fabricated ciphertext is rejected by the API: summary text only.
            self.line("response_item", payload, m.ts)
            self.count("reasoning: written as summary only (no Codex encrypted content)")
        else:
            self.count("reasoning: dropped (redacted or summaries disabled)")

    def tool_call(self, b: ToolCall, m: Message, fcs: list[FileChange]) -> None:
        if b.name == "apply_patch" and isinstance(b.input, str):
            self.custom_call(b.call_id, "apply_patch", b.input, m)
            return
        if fcs:
            sections = [_unified_to_apply_patch(fc.path or "", fc.patch or "") for fc in fcs]
            if all(sections) and all(fc.path for fc in fcs):
                body = "\n".join(
                    s.replace("*** Begin Patch\n", "").replace("\n*** End Patch", "") for s in sections if s
                )
                self.custom_call(b.call_id, "apply_patch", f"*** Begin Patch\n{body}\n*** End Patch", m)
                self.count(f"tool_call: {b.name} with file changes written as apply_patch")
                return
            self.count("file_change: no patch text, kept as the original tool call", len(fcs))
        if (m.extra or {}).get("codexType") == "custom_tool_call":
            # a Codex freeform tool: its input is raw text, not JSON arguments
            text = b.input if isinstance(b.input, str) else orjson.dumps(b.input).decode()
            self.custom_call(b.call_id, b.name, text, m)
            return
        if isinstance(b.input, str):
            arguments = b.input
        else:
            arguments = orjson.dumps(b.input if b.input is not None else {}).decode()
        payload: JsonObject = {"type": "function_call", "name": b.name, "arguments": arguments, "call_id": b.call_id}
        self.call_kinds[b.call_id] = "function"
        self.open_calls.append(b.call_id)
        self.line("response_item", payload, m.ts)

    def custom_call(self, call_id: str, name: str, text: str, m: Message) -> None:
        self.call_kinds[call_id] = "custom"
        self.open_calls.append(call_id)
        self.line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": name, "input": text}, m.ts)

    def tool_result(self, b: ToolResult, m: Message) -> None:
        if b.call_id not in self.open_calls:
            self.count("tool_result: no matching tool call, dropped")
            n = sum(1 for a in m.content if isinstance(a, Attachment) and (a.extra or {}).get("callId") == b.call_id)
            if n:
                self.count("attachment: its tool result was dropped", n)
            return
        self.open_calls.remove(b.call_id)
        kind = "custom_tool_call_output" if self.call_kinds.get(b.call_id) == "custom" else "function_call_output"
        output: str | list[JsonObject]
        if _has_image(b.output):
            attachments = [a for a in m.content if isinstance(a, Attachment) and (a.extra or {}).get("callId") == b.call_id]
            items = self.output_items(b.output, attachments, as_text=kind != "function_call_output")
            if kind == "function_call_output":
                output = items  # Codex's own shape for view_image: a list of input_text/input_image
            else:
                output = "\n".join(i["text"] if i["type"] == "input_text" else "[image]" for i in items)
                self.count("tool_result: images in a custom tool output written as [image] text")
        else:
            output, changed = _output_text(b.output)
            if changed:
                self.count("tool_result: output serialised to a string")
        if b.is_error and not (b.extra or {}).get("exitCode"):
            self.count("tool_result: isError flag not representable")
        self.line("response_item", {"type": kind, "call_id": b.call_id, "output": output}, m.ts)

    def output_items(self, output: list[Any], attachments: list[Attachment], as_text: bool = False) -> list[JsonObject]:
        """A tool output list holding images as Codex function output items: ``input_text``
        and ``input_image`` (base64 as a data: URL), as Codex writes for ``view_image``."""
        items: list[JsonObject] = []
        for item in output:
            t = item.get("type") if isinstance(item, dict) else None
            url: str | None = None
            if isinstance(item, dict) and isinstance(item.get("attachment"), int):
                k = item["attachment"]
                att = attachments[k] if 0 <= k < len(attachments) else None
                if att is None:
                    self.count("tool_result: image placeholder without its attachment dropped")
                    continue
                if not (att.media_type or "image/").startswith("image/") or (att.extra or {}).get("kind") not in (None, "image"):
                    items.append({"type": "input_text", "text": f"[attachment {att.media_type or ''}]".replace(" ]", "]")})
                    self.count("tool_result: non-image attachment written as text")
                    continue
                url = image_url(att.media_type, att.data, att.uri)
            elif t == "input_image" and isinstance(item.get("image_url"), str):
                items.append(dict(item))
                continue
            elif t == "image":
                src = item.get("source") if isinstance(item.get("source"), dict) else {}
                url = image_url(src.get("media_type"), src.get("data") if src.get("type") == "base64" else None, src.get("url"))
            elif t in ("text", "input_text", "output_text") and isinstance(item.get("text"), str):
                items.append({"type": "input_text", "text": item["text"]})
                continue
            else:
                items.append({"type": "input_text", "text": item if isinstance(item, str) else orjson.dumps(item).decode()})
                self.count("tool_result: list item serialised to text")
                continue
            if url is None:
                self.count("tool_result: image without data or URL dropped")
                continue
            items.append({"type": "input_image", "image_url": url})
            if not as_text:
                self.count("tool_result: image written as an input_image")
        return items

    def token_count(self, m: Message) -> None:
        u = m.usage
        assert u is not None
        # Codex counts cached input (and cache writes) inside input_tokens; the neutral buckets do not
        cached, written = u.cache_read_tokens or 0, u.cache_write_tokens or 0
        last = [(u.input_tokens or 0) + cached + written, cached, written, u.output_tokens or 0, u.reasoning_tokens or 0]
        self.cum = [a + b for a, b in zip(self.cum, last)]

        def usage(v: list[int]) -> JsonObject:
            # the fields and order 0.171.0 writes
            return {"input_tokens": v[0], "cached_input_tokens": v[1], "cache_write_input_tokens": v[2],
                    "output_tokens": v[3], "reasoning_output_tokens": v[4], "total_tokens": v[0] + v[3]}

        info = {"total_token_usage": usage(self.cum), "last_token_usage": usage(last), "model_context_window": None}
        self.line("event_msg", {"type": "token_count", "info": info, "rate_limits": None}, m.ts, emitted_response(m))
        self.count("usage: token_count written from message usage")


def resume_hint(session_id: str) -> str:
    return command("codex", "resume", session_id)


def emit_rollout(thread: Thread, messages: Iterable[Message], children: Sequence[Any], options: EmitOptions) -> EmitResult:
    """A Codex rollout (G2 lines, as 0.171.0 reads them) for ``thread``'s messages.

    The file is ``sessions/YYYY/MM/DD/rollout-<created, UTC>-<id>.jsonl`` with a fresh
    UUIDv7-shaped id derived from the thread id (repeatable). Lines: ``session_meta``;
    per user turn ``task_started`` + ``turn_context`` + the user ``message`` item + the
    ``user_message`` event the session picker reads; assistant ``message`` items with an
    ``agent_message`` event; ``function_call``/``custom_tool_call`` paired with their
    outputs by ``call_id``; reasoning only with Codex ciphertext or as summary text;
    file changes as an ``apply_patch`` custom tool call. Everything dropped or changed
    is counted in ``EmitResult.counts`` under its reason.
    """
    emitter = _Emitter(thread, messages, options)
    if children:
        emitter.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return emitter.emit()


def configured(codex_home: Path) -> dict[str, str]:
    """The provider and model a Codex home's ``config.toml`` selects (a ``profile`` named at
    the top level overrides the top-level keys); nothing when there is no readable config."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        doc = tomllib.loads((codex_home / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    profile = doc.get("profile")
    chosen = doc.get("profiles", {}).get(profile, {}) if isinstance(profile, str) else {}
    out = {}
    for key in ("model_provider", "model"):
        value = chosen.get(key) if isinstance(chosen, dict) and key in chosen else doc.get(key)
        if isinstance(value, str) and value:
            out[key] = value
    return out
