"""Factory Droid session logs (droid 0.225.2): ``<uuid>.jsonl`` and ``<uuid>.settings.json``.

Lines: ``session_start`` (``id``, ``title``, ``cwd``, ``version`` of the log format, ``owner``,
``hostId``) -> the thread (id = the session id); ``message`` (``id``, ``parentId``,
``timestamp``, ``message: {role, content}``) -> one message under its own id, its content
blocks Anthropic-style: ``text``, ``thinking`` (``signature`` names the provider field it came
from), ``tool_use``, ``tool_result`` (a user message holding only results is a ``tool``
message), ``image``; the first user message, made only of ``<system-reminder>`` texts the
client adds (tools, skills, system info), is ``extra.injected``; ``agent_turn_outcome`` ->
``SKIPPED``. Droid's log has no usage: ``<uuid>.settings.json`` (a SNAPSHOT, rewritten after
each turn) holds the session's model and ``tokenUsage`` totals, one ``UsageRow`` keyed
``factory-droid:<session>`` (the latest version counts): ``inputTokens`` without cache reads
(0.225.2 against the mock: the prompt tokens less the cached ones), ``cacheReadTokens``,
``cacheCreationTokens``, ``outputTokens``, ``thinkingTokens`` (reasoning). Resumable,
deterministic, never raises on input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from ...model import Attachment, Block, JsonObject, Message, Provenance, Reasoning, Text, ToolCall, ToolResult, Unknown, Usage
from ..base import (
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    SNAPSHOT,
    UNKNOWN,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    loads_line,
    nonempty_str,
)

NAME = "factory-droid"


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _session_of(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1].split(".", 1)[0]


def blocks_of(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Text(content)]
    out: list[Block] = []
    for c in content if isinstance(content, list) else []:
        kind = c.get("type") if isinstance(c, dict) else None
        if kind == "text" and isinstance(c.get("text"), str):
            out.append(Text(c["text"]))
        elif kind == "thinking":
            extra = {k: v for k, v in c.items() if k not in ("type", "thinking")}
            out.append(Reasoning(text=nonempty_str(c.get("thinking")), extra=extra or None))
        elif kind == "tool_use":
            out.append(ToolCall(call_id=nonempty_str(c.get("id")) or "", name=nonempty_str(c.get("name")) or "",
                                input=c.get("input")))
        elif kind == "tool_result":
            out.append(ToolResult(call_id=nonempty_str(c.get("tool_use_id")) or "", output=c.get("content"),
                                  is_error=c.get("is_error") if isinstance(c.get("is_error"), bool) else None))
        elif kind == "image" and isinstance(c.get("source"), dict) and c["source"].get("type") == "base64":
            out.append(Attachment(media_type=nonempty_str(c["source"].get("media_type")), data=c["source"].get("data")))
        else:
            out.append(Unknown(source_type=str(kind or "content"), raw=c))
    return out


class DroidParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.session: str = s.get("session") or _session_of(source.path)
        self.users: int = s.get("users", 0)  # user messages seen (the first is the injected context)

    def state(self) -> JsonObject:
        return {"session": self.session, "users": self.users}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        try:
            d, warning = loads_line(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "not JSON", str(e))
            return
        if warning is not None:
            yield warning
        if not isinstance(d, dict):
            yield Report(INVALID, "not a JSON object", None)
            return
        if self.source.kind == SNAPSHOT:
            yield from self.settings(d)
            return
        handler = RECORDS.get(d.get("type"))  # type: ignore[arg-type]
        if handler is None:
            yield Report(UNKNOWN, str(d.get("type")), "record type not read; kept in the source layer")
            return
        yield from handler(self, d)

    def session_start(self, d: dict[str, Any]) -> Iterator[Row]:
        self.session = nonempty_str(d.get("id")) or self.session
        meta = {k: v for k, v in {"cwd": nonempty_str(d.get("cwd")), "logVersion": _int(d.get("version")),
                                  "owner": nonempty_str(d.get("owner"))}.items() if v is not None}
        yield ThreadFact(self.session, {k: v for k, v in {"title": nonempty_str(d.get("title")),
                                                          "metadata": meta or None}.items() if v is not None})

    def message(self, d: dict[str, Any]) -> Iterator[Row]:
        m = d.get("message") if isinstance(d.get("message"), dict) else {}
        mid = nonempty_str(d.get("id"))
        role = m.get("role")
        if mid is None or role not in ("user", "assistant"):
            yield Report(INVALID, "message without an id or a known role", None)
            return
        blocks = blocks_of(m.get("content"))
        extra: dict[str, Any] = {}
        if role == "user":
            self.users += 1
            texts = [b.text for b in blocks if isinstance(b, Text)]
            if texts and len(texts) == len(blocks) and all(t.lstrip().startswith("<system-reminder>") for t in texts):
                extra["injected"] = True  # tools, skills and system info the client adds
            if blocks and all(isinstance(b, ToolResult) for b in blocks):
                role = "tool"
        yield MessageRow(Message(id=mid, thread_id=self.session, role=role, ts=nonempty_str(d.get("timestamp")),
                                 content=tuple(blocks), parent_id=nonempty_str(d.get("parentId")),
                                 provenance=Provenance(NAME, session_id=self.session, source_id=mid), extra=extra or None))

    def skipped(self, d: dict[str, Any]) -> Iterator[Row]:
        yield Report(SKIPPED, str(d.get("type")), "the client's turn bookkeeping, not sent to the model")

    def settings(self, d: dict[str, Any]) -> Iterator[Row]:
        model = nonempty_str(d.get("model"))
        meta = {k: v for k, v in {"model": model, "autonomyMode": nonempty_str(d.get("autonomyMode")),
                                  "reasoningEffort": nonempty_str(d.get("reasoningEffort"))}.items() if v}
        yield ThreadFact(self.session, {"metadata": meta} if meta else {})
        t = d.get("tokenUsage") if isinstance(d.get("tokenUsage"), dict) else {}
        usage = Usage(input_tokens=_int(t.get("inputTokens")), output_tokens=_int(t.get("outputTokens")),
                      cache_read_tokens=_int(t.get("cacheReadTokens")), cache_write_tokens=_int(t.get("cacheCreationTokens")),
                      reasoning_tokens=_int(t.get("thinkingTokens")), extra={"vendor": t})
        if not any((usage.input_tokens, usage.output_tokens, usage.cache_read_tokens)):
            yield Report(METADATA, "settings", "no token usage recorded")
            return
        yield UsageRow(f"{NAME}:{self.session}", self.session, usage, None, model, None)


Handler = Callable[[DroidParser, dict[str, Any]], Iterator[Row]]
RECORDS: dict[str, Handler] = {
    "session_start": DroidParser.session_start,
    "message": DroidParser.message,
    "agent_turn_outcome": DroidParser.skipped,
}
