"""Mistral Vibe's message shape, shared by both generations: an ``LLMMessage`` dumped by
pydantic (``model_dump(exclude_none=True)``; OpenAI chat style with Vibe's own fields),
which 2.x appends to ``messages.jsonl`` and 3.x keeps in its content chunks.

Fields (vibe 2.26.1 and 3.0.3 ``vibe/core/types.py``): ``role`` (user, assistant, tool,
system), ``content`` (a string or a list of parts), ``reasoning_content``,
``reasoning_message_id``, ``tool_calls`` (``{id, index, function: {name, arguments},
type}``), ``tool_call_id`` and ``name`` on a tool result, ``tool_result`` (the tool's
structured output), ``message_id`` (a uuid4 on every message but tool results),
``injected`` (written by the harness), ``images``, ``context_boundary`` ("compaction").

Invariants: a message's id is Vibe's ``message_id`` (a uuid, the same in every file and
generation that holds the message, so it is stored once); a tool result, which has none, is
``stable_id("vibe", thread, tool_call_id)``. Never raises on input.
"""

from __future__ import annotations

from typing import Any

import orjson

from ...model import Attachment, Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown
from ..base import nonempty_str, stable_id

NAME = "vibe"

# fields of an LLMMessage read into blocks; the rest stays in Message.extra
_READ = frozenset(("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "message_id", "images",
                   "name", "injected"))


def snippet(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)[:2000].decode("utf-8", "replace")


def _content(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Text(content)] if content else []
    if not isinstance(content, list):
        return [] if content is None else [Unknown(source_type=type(content).__name__, raw=content)]
    out: list[Block] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            out.append(Text(part["text"]))
        elif kind == "image_url" and isinstance(part.get("image_url"), dict):
            url = part["image_url"].get("url")
            if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
                header, _, data = url.partition(",")
                out.append(Attachment(media_type=header[5:].split(";")[0] or None, data=data))
            else:
                out.append(Attachment(uri=url if isinstance(url, str) else None))
        else:
            out.append(Unknown(source_type=str(kind), raw=part))
    return out


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw  # a model's broken arguments, kept as the string it sent


def tool_result_error(d: JsonObject) -> bool | None:
    """Vibe wraps a failed tool's text in ``<tool_error>`` (2.x and 3.x ``ToolError``)."""
    content = d.get("content")
    return True if isinstance(content, str) and content.lstrip().startswith("<tool_error>") else None


def message_id(thread: str, d: JsonObject) -> str | None:
    mid = nonempty_str(d.get("message_id"))
    if mid:
        return mid
    call = nonempty_str(d.get("tool_call_id"))
    return stable_id(NAME, thread, "tool", call) if call else None


def to_message(d: JsonObject, thread: str, mid: str, ts: str | None, source_id: str | None,
               channel: str = "session-file") -> Message:
    """One Vibe message as a canonical message (``mid`` from ``message_id``)."""
    role = d.get("role")
    blocks: list[Block] = []
    if role == "tool":
        extra = {"name": d["name"]} if isinstance(d.get("name"), str) else None
        blocks.append(ToolResult(call_id=str(d.get("tool_call_id") or ""), output=d.get("content"),
                                 is_error=tool_result_error(d), extra=extra))
    else:
        reasoning = d.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            rid = d.get("reasoning_message_id")
            blocks.append(Reasoning(text=reasoning, extra={"reasoningMessageId": rid} if isinstance(rid, str) else None))
        elif reasoning not in (None, ""):
            blocks.append(Unknown(source_type="reasoning_content", raw=reasoning))
        blocks.extend(_content(d.get("content")))
        for im in d.get("images") or []:
            blocks.append(Attachment(media_type=nonempty_str(im.get("mime_type")) if isinstance(im, dict) else None,
                                     extra={"vibe": im}))
        for c in d.get("tool_calls") or []:
            fn = c.get("function") if isinstance(c, dict) else None
            if not isinstance(fn, dict):
                blocks.append(Unknown(source_type="tool_call", raw=c))
                continue
            extra = {k: v for k, v in c.items() if k not in ("id", "function", "type", "index")}
            blocks.append(ToolCall(call_id=str(c.get("id") or ""), name=str(fn.get("name") or ""),
                                   input=_arguments(fn.get("arguments")), extra=extra or None))
    extra: JsonObject = {k: v for k, v in d.items() if k not in _READ}
    if d.get("injected") is True:
        extra["injected"] = True
    canonical_role = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}.get(str(role), "user")
    return Message(id=mid, thread_id=thread, role=canonical_role, ts=ts, content=tuple(blocks),
                   provenance=Provenance(provider=NAME, channel=channel, session_id=thread, source_id=source_id),
                   extra=extra or None)
