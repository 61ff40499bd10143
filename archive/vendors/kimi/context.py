"""Kimi CLI's ``context.jsonl``: the conversation as the model is sent it, the source of the
archive's messages.

Each line is a kosong ``Message`` (``model_dump_json(exclude_none=True)``: ``role``,
``content`` as a string or a list of parts ``text``/``think``/``image_url``/``audio_url``/
``video_url``, ``tool_calls`` of ``{type, id, function: {name, arguments}, extras}``,
``tool_call_id``, ``name``, ``partial``) or one of Kimi's own records, checked with kimi-cli
1.51.0 (``soul/context.py``):

* ``_system_prompt`` (the agent's system prompt, written first; a context without one gets
  it prepended, the file rewritten, when Kimi opens it): ``METADATA``; the work folder it
  names (``The current working directory is `...```) is the thread's ``cwd``;
* ``_checkpoint`` (``id``: a point ``/undo`` can go back to) and ``_usage`` (``token_count``:
  the size of the context, not a response's usage): ``SKIPPED``;
* a user message whose every part is wrapped in ``<system>...</system>`` was written by the
  harness (Kimi's reminders and ``CHECKPOINT n`` markers): ``extra["injected"]``; a
  subagent's "Your previous response was too brief..." (its runner asks once more when the
  answer is short) is injected conversation (``extra["conversation"]`` too).

Invariants: a message's id is ``stable_id("kimi", thread, ordinal, digest of its record)``
(ordinal: messages before it in the file), so a context Kimi rewrites with its system prompt
in front gives the same ids, and the lines of a rotated context (``context_<n>.jsonl``) keep
theirs. Context lines carry no time: messages have no ``ts`` (the wire's events do: the
thread's ``createdAt`` comes from ``wire.jsonl``). Usage is the wire's (``wire.py``): an
assistant message carries its step's link (``extra["responseLink"]``, ``common.StepLinks``), by
which the wire's usage of that step finds it. Never raises on input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from ...model import Attachment, Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown
from ..base import (
    EMIT_MARK, INVALID, METADATA, RESPONSE_LINK, SKIPPED, MessageRow, Report, Row, SourceInfo, ThreadFact, claim_emitted,
    decode_object, loads_line, stable_id,
)
from .common import NAME, StepLinks, thread_of

_CWD_RE = re.compile(r"The current working directory is `([^`\n]+)`")
# the prompt a subagent's runner sends when its answer was under 200 characters (kimi-cli
# 1.51.0 subagents/runner.py SUMMARY_CONTINUATION_PROMPT): the harness's, in the conversation
_CONTINUATION = "Your previous response was too brief. Please provide a more comprehensive summary"
_SYSTEM_RE = re.compile(r"^\s*<system>.*</system>\s*$", re.S)
# fields read into blocks; the rest stays in Message.extra
_READ = frozenset(("role", "content", "tool_calls", "tool_call_id", EMIT_MARK))


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw  # a model's broken arguments, kept as the string it sent


def _parts(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def content_blocks(content: Any) -> list[Block]:
    """A message's ``content`` (a string, or kosong's parts) as canonical blocks."""
    if content is None:
        return []
    if not isinstance(content, (str, list)):
        return [Unknown(source_type=type(content).__name__, raw=content)]
    out: list[Block] = []
    for part in _parts(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append(Text(part["text"]))
        elif kind == "think" and isinstance(part.get("think"), str):
            enc = part.get("encrypted")
            out.append(Reasoning(text=part["think"], extra={"encrypted": enc} if enc is not None else None))
        elif kind in ("image_url", "audio_url", "video_url") and isinstance(part.get(kind), dict):
            url, media_id = part[kind].get("url"), part[kind].get("id")
            extra: JsonObject = {"kind": kind}
            if media_id is not None:
                extra["id"] = media_id
            if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
                header, _, data = url.partition(",")
                out.append(Attachment(media_type=header[5:].split(";")[0] or None, data=data, extra=extra))
            else:
                out.append(Attachment(uri=url if isinstance(url, str) else None, extra=extra))
        else:
            out.append(Unknown(source_type=str(kind), raw=part))
    return out


def _injected(content: Any) -> bool:
    parts = _parts(content)
    return bool(parts) and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
                               and _SYSTEM_RE.match(p["text"]) for p in parts)


def tool_output(content: Any) -> Any:
    """A tool message's content as the result's output: the text when it is one string."""
    return content


def to_message(d: JsonObject, thread: str, mid: str, source_id: str | None, link: str | None = None) -> Message:
    role = d.get("role")
    blocks: list[Block] = []
    if role == "tool":
        blocks.append(ToolResult(call_id=str(d.get("tool_call_id") or ""), output=tool_output(d.get("content")),
                                 is_error=True if _is_error(d.get("content")) else None))
    else:
        blocks.extend(content_blocks(d.get("content")))
        for c in d.get("tool_calls") or []:
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict):
                blocks.append(Unknown(source_type="tool_call", raw=c))
                continue
            extra = {k: v for k, v in c.items() if k not in ("id", "function", "type")}
            blocks.append(ToolCall(call_id=str(c.get("id") or ""), name=str(fn.get("name") or ""),
                                   input=_arguments(fn.get("arguments")), extra=extra or None))
    extra: JsonObject = {k: v for k, v in d.items() if k not in _READ}
    if role == "user" and _injected(d.get("content")):
        extra["injected"] = True
    elif role == "user" and isinstance(d.get("content"), str) and d["content"].startswith(_CONTINUATION):
        extra.update(injected=True, conversation=True)
    if link is not None:
        extra[RESPONSE_LINK] = link  # the step's usage, in wire.jsonl, finds this message by it
    canonical = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}.get(str(role), "user")
    if canonical != role:
        extra["kimiRole"] = role
    return Message(id=mid, thread_id=thread, role=canonical, ts=None, content=tuple(blocks),
                   provenance=Provenance(provider=NAME, channel="session-file", session_id=thread.split("/")[0],
                                         source_id=source_id),
                   extra=extra or None)


def _is_error(content: Any) -> bool:
    # kimi-cli 1.51.0 (soul/message.py tool_result_to_message): a failed tool's message
    # opens with "<system>ERROR: ...</system>"
    first = _parts(content)[:1]
    return bool(first) and isinstance(first[0], dict) and str(first[0].get("text", "")).lstrip().startswith("<system>ERROR")


class ContextParser:
    """``context.jsonl`` (and its rotated ``context_<n>.jsonl``), read from its last offset."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        self.thread = thread_of(source.path, source.source_id)
        s = state or {}
        self.ordinal: int = s.get("ordinal", 0)
        self.held: JsonObject = s.get("held") or {}
        self.links = StepLinks(s.get("links"))

    def state(self) -> JsonObject:
        return {"ordinal": self.ordinal, "held": self.held, "links": self.links.state()}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        d = decode_object(line)
        if d is None:
            return iter(())
        if isinstance(d, Report):
            try:
                d, warn = loads_line(line)
            except orjson.JSONDecodeError:
                return iter([d])
            if not isinstance(d, dict):
                return iter([Report(INVALID, "not a JSON object")])
            return iter([*([warn] if warn else []), *claim_emitted(d, self._record(d, line), self.held)])
        return iter(list(claim_emitted(d, self._record(d, line), self.held)))

    def _record(self, d: JsonObject, line: bytes) -> Iterator[Row]:
        role = d.get("role")
        if role == "_system_prompt":
            content = d.get("content")
            m = _CWD_RE.search(content) if isinstance(content, str) else None
            if m:
                yield ThreadFact(self.thread, {"metadata": {"cwd": m.group(1)}})
            yield Report(METADATA, "_system_prompt", None)
            return
        if role == "_checkpoint":
            yield Report(SKIPPED, "_checkpoint", None)
            return
        if role == "_usage":
            yield Report(SKIPPED, "_usage (context size)", None)
            return
        if role not in ("user", "assistant", "tool", "system"):
            yield Report(INVALID, f"context record {role!r}", line[:300].decode("utf-8", "replace"))
            return
        body = {k: v for k, v in d.items() if k != EMIT_MARK}
        digest = stable_id(orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode("utf-8", "surrogatepass"), length=16)
        mid = stable_id(NAME, self.thread, self.ordinal, digest)
        self.ordinal += 1
        link = None
        if role == "user" and not _injected(d.get("content")):
            self.links.turn(d.get("content"))  # a prompt: the wire's TurnBegin
        elif role == "assistant":
            self.links.step()
            for c in d.get("tool_calls") or []:
                self.links.call(c.get("id") if isinstance(c, dict) else None)
            link = self.links.link()
        yield MessageRow(to_message(d, self.thread, mid, self.source.source_id, link))
