"""A canonical thread -> an Aider chat history (``.aider.chat.history.md``) that
``aider --restore-chat-history`` resumes (checked with aider-chat 0.86.2: its
``utils.split_chat_history_markdown`` reads ``#### `` lines as the user's, ``> `` lines as
tool output it leaves out of the model's context, other lines as the model's, and passes
over lines starting ``# ``).

Invariants: one run heading (the thread's createdAt, as Aider writes it: no zone); before
each message a ``# seshArchive {json}`` mark (``parse.py``: ``m`` the archived message or
null for a line emit adds, ``t`` the thread on the first one, ``u`` the archived response
key of a reply's usage (its ``Tokens:`` line follows), ``n``/``h`` the length and
digest of the text as the parser reads it back); tool calls, whose Aider has no form, are
written into the reply as text and their results as ``> `` lines (counted); a reply's usage
as Aider's ``Tokens:`` line with exact figures (sent = input + cache reads + cache writes).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from ...model import FileChange, Message, Reasoning, Text, ToolCall, ToolResult, Thread
from ..base import EmitOptions, EmitResult, command, emitted_response, stable_id
from .parse import HEADING, HISTORY_NAME, MARK, THINK_TAG, _line_kind


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in value]
        if all(isinstance(p, str) for p in parts):
            return "\n".join(parts)  # type: ignore[arg-type]
    return orjson.dumps(value).decode()


def _heading_time(created: str | None) -> str:
    t = (created or "")[:19]
    return t.replace("T", " ") if len(t) == 19 else "1970-01-01 00:00:00"


class _Writer:
    def __init__(self, thread: Thread, result: EmitResult) -> None:
        self.f = result.files.open(HISTORY_NAME)  # spooled: a long thread is not held in memory
        self.out = self  # ``out.append(text)`` writes through
        self.thread = thread
        self.result = result
        self.first = True

    def append(self, text: str) -> None:
        self.f.write(text.encode())

    def _mark(self, role: str, text: str, message_id: str | None, response: str | None = None) -> None:
        mark: dict[str, Any] = {"m": message_id}
        if self.first:
            mark["t"] = self.thread.id
            self.first = False
        if response is not None:
            mark["u"] = response
        mark["n"], mark["h"] = len(text), stable_id(role, text, length=16)
        self.out.append(MARK + orjson.dumps(mark).decode() + "\n")

    def user(self, text: str, message_id: str | None) -> None:
        lines = [line.rstrip() for line in (text.splitlines() or ["<blank>"])]
        while len(lines) > 1 and not lines[-1]:
            lines.pop()
        self._mark("user", "\n".join(lines), message_id)
        self.out.append("\n" + "  \n".join("#### " + line for line in lines) + "  \n")

    def status(self, text: str, message_id: str | None) -> None:
        lines = [line.strip() for line in text.splitlines() if line.strip()] or ["(empty)"]
        self._mark("tool", "\n".join(lines), message_id)
        self.out.append("".join(f"> {line}  \n" for line in lines))

    def reply(self, text: str, message_id: str | None, response: str | None = None) -> None:
        lines = text.strip("\n").split("\n")
        fixed = []
        for line in lines:
            if _line_kind(line)[0] != "assistant" or line.startswith((HEADING, MARK)):
                self.result.count("reply line Aider reads as input, status or a run heading: indented by a space")
                line = " " + line
            elif line.startswith("# "):
                self.result.count("reply line starting '# ': kept, Aider's restore leaves it out of the model's context")
            fixed.append(line if line.strip() else "")
        body = "\n".join(fixed).strip()
        if not body:
            return
        self._mark("assistant", body, message_id, response)
        self.out.append("\n" + body + "\n\n")


def emit_history(thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, Iterable[Message]]],
                 options: EmitOptions) -> EmitResult:  # fmt: skip
    result = EmitResult()
    w = _Writer(thread, result)
    w.out.append(f"\n{HEADING}{_heading_time(thread.created_at)}\n\n")
    if thread.created_at and not thread.created_at[:19].count(":") == 2:
        result.count("createdAt: not a time, 1970-01-01 written")
    for msg in messages:
        if (msg.extra or {}).get("injected") and not (msg.extra or {}).get("conversation"):
            result.count("injected context: dropped (Aider writes its own)")
            continue
        _message(w, msg, result)
    if children:
        result.count("child thread: dropped (Aider has no subagents)", len(children))
    cwd = options.cwd or (thread.metadata or {}).get("cwd")
    result.resume_hint = resume_hint(thread.id, cwd)
    result.thread_id = thread.id
    return result


def _message(w: _Writer, msg: Message, result: EmitResult) -> None:
    if msg.role == "user":
        texts, results = [], []
        for b in msg.content:
            if isinstance(b, Text):
                texts.append(b.text)
            elif isinstance(b, ToolResult):
                results.append(b)
            else:
                result.count(f"{type(b).__name__} in a user message: dropped")
        if texts:
            w.user("\n".join(texts), msg.id if not results else None)
        for r in results:
            result.count("tool_result: written as Aider status lines")
            w.status(_text(r.output), msg.id if not texts and len(results) == 1 else None)
        return
    if msg.role == "tool" or msg.role == "system":
        parts = []
        for b in msg.content:
            if isinstance(b, Text):
                parts.append(b.text)
            elif isinstance(b, ToolResult):
                result.count("tool_result: written as Aider status lines")
                parts.append(_text(b.output))
            elif not isinstance(b, FileChange):  # an ``Applied edit to`` line says it already
                result.count(f"{type(b).__name__} in a {msg.role} message: dropped")
        if msg.role == "system":
            result.count("system message: written as Aider status lines")
        if parts:
            w.status("\n".join(parts), msg.id)
        return
    parts = []
    for b in msg.content:
        if isinstance(b, Text):
            parts.append(b.text)
        elif isinstance(b, Reasoning):
            if b.text:
                parts.append(f"<{THINK_TAG}>\n{b.text}\n</{THINK_TAG}>")
            else:
                result.count("reasoning without text: dropped")
        elif isinstance(b, ToolCall):
            result.count("tool_call: written into the reply as text (Aider offers the model no tools)")
            parts.append(f"```\n{b.name} {orjson.dumps(b.input).decode()}\n```")
        else:
            result.count(f"{type(b).__name__} in a reply: dropped")
    u = msg.usage
    own = msg.provenance is not None and msg.provenance.provider == "aider"  # its Tokens line follows as status
    if parts:
        w.reply("\n\n".join(parts), msg.id, emitted_response(msg) if not own else None)
    if u is not None and parts and not own:
        inp, out = u.input_tokens or 0, u.output_tokens or 0
        hit, write = u.cache_read_tokens or 0, u.cache_write_tokens or 0
        line = f"Tokens: {inp + hit + write} sent"
        line += f", {write} cache write" if write else ""
        line += f", {hit} cache hit" if hit else ""
        line += f", {out} received."
        w.status(line, None)


def resume_hint(session_id: str, cwd: str | None) -> str:
    hint = command("aider", "--restore-chat-history")
    return f"cd {command(cwd)} && {hint}" if cwd else hint
