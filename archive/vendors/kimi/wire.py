"""Kimi CLI's ``wire.jsonl``: the event log of the UI protocol, the source of usage and time.

A first line ``{"type": "metadata", "protocol_version": "1.10"}`` (kimi-cli 1.51.0; ``1.1``
and later in older sessions), then ``{"timestamp": <epoch seconds>, "message": {"type",
"payload"}}`` per event (``wire/types.py``): ``TurnBegin``/``SteerInput`` (the user's input),
``StepBegin``, ``ContentPart``, ``ToolCall``, ``ToolCallPart``, ``ToolResult``,
``StatusUpdate``, ``TurnEnd``, ``SubagentEvent`` (a subagent's event, wrapped), approvals,
hooks, MCP and compaction events.

Invariants:

* **Usage** comes from ``StatusUpdate.token_usage``, already in the neutral buckets
  (``input_other``, ``input_cache_read``, ``input_cache_creation``, ``output``): one response
  per ``message_id`` (the provider's response id), keyed ``<thread>:<message_id>`` (several
  updates of one response: the latest wins); the raw figures in ``usage.extra["vendor"]``.
  A subagent's updates, which its own ``wire.jsonl`` and the parent's ``SubagentEvent``
  both hold, are keyed by the subagent's thread: counted once. The context's messages carry
  no response id: the usage names its step's link (``usage.extra["responseLink"]``,
  ``common.StepLinks``, followed per thread from ``TurnBegin``, ``StepBegin`` and
  ``ToolCall``), and the projection gives it the assistant message carrying the same link.
* **Content** events repeat what ``context.jsonl`` holds (the prompt, the streamed parts, tool
  calls and results): ``DUPLICATE``, kept byte-exact in the source layer; client events
  (steps, approvals, hooks, MCP, status without usage): ``SKIPPED``.
* **Thread facts**: the first event's time is ``createdAt``; the first prompt's text (50
  characters) the ``title`` of a session (a subagent's is its ``meta.json`` description); the protocol version ``metadata.wireProtocol`` (and, as no Kimi
  file names the client's release, ``metadata.version`` = ``wire <protocol>``); a
  ``SubagentEvent`` names its subagent's thread (``<session>/<agent id>``), its parent and
  its type. Never raises on input.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...model import JsonObject, Usage
from ..base import (
    DUPLICATE, INVALID, RESPONSE_LINK, SKIPPED, UNKNOWN, Report, Row, SourceInfo, ThreadFact, UsageRow, decode_object,
    claim_emitted, epoch_iso, nonempty_str, side_report,
)
from .common import StepLinks, child_thread, session_parts, thread_of

CONTENT = frozenset(("TurnBegin", "SteerInput", "ContentPart", "ToolCall", "ToolCallPart", "ToolResult"))
CLIENT = frozenset((
    "StepBegin", "StepInterrupted", "StepRetry", "TurnEnd", "CompactionBegin", "CompactionEnd", "HookTriggered",
    "HookResolved", "MCPLoadingBegin", "MCPLoadingEnd", "MCPServerSnapshot", "MCPStatusSnapshot", "Notification",
    "PlanDisplay", "BtwBegin", "BtwEnd", "ApprovalResponse", "ApprovalRequest", "QuestionRequest",
    "QuestionResponse", "ToolCallRequest", "HookRequest", "HookResponse", "StatusUpdate",
))


def _int(v: Any) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def wire_usage(tu: JsonObject, link: str | None = None) -> Usage:
    extra: JsonObject = {"vendor": tu}
    if link is not None:
        extra[RESPONSE_LINK] = link
    return Usage(input_tokens=_int(tu.get("input_other")), cache_read_tokens=_int(tu.get("input_cache_read")),
                 cache_write_tokens=_int(tu.get("input_cache_creation")), output_tokens=_int(tu.get("output")),
                 extra=extra)


def _text(user_input: Any) -> str | None:
    if isinstance(user_input, str):
        return user_input
    if isinstance(user_input, list):
        return " ".join(p["text"] for p in user_input if isinstance(p, dict) and isinstance(p.get("text"), str))
    return None


class WireParser:
    """``wire.jsonl`` of a session or a subagent, read from its last offset."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        self.thread = thread_of(source.path, source.source_id)
        found = session_parts(source.path)
        self.session = found[0] if found else self.thread
        s = state or {}
        self.started: bool = s.get("started", False)
        self.titled: bool = s.get("titled", False)
        self.children: list[str] = s.get("children", [])
        # each thread's step links (its own, and its subagents' through SubagentEvent)
        self.links: dict[str, StepLinks] = {t: StepLinks(v) for t, v in (s.get("links") or {}).items()}

    def state(self) -> JsonObject:
        return {"started": self.started, "titled": self.titled, "children": self.children,
                "links": {t: v.state() for t, v in self.links.items()}}

    def _links(self, thread: str) -> StepLinks:
        found = self.links.get(thread)
        if found is None:
            found = self.links[thread] = StepLinks()
        return found

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        d = decode_object(line)
        if d is None:
            return iter(())
        if isinstance(d, Report):
            return iter([d])
        return iter(list(claim_emitted(d, self._record(d, line))))

    def _record(self, d: JsonObject, line: bytes) -> Iterator[Row]:
        if d.get("type") == "metadata":
            version = nonempty_str(d.get("protocol_version"))
            if version:
                # no Kimi file names the client's release: drift is reported per wire protocol
                yield ThreadFact(self.thread, {"metadata": {"wireProtocol": version, "version": f"wire {version}"}})
            # a file of events beside the context, never of messages (not a source to warn about)
            yield side_report("wire log", self.thread, protocol=version)
            return
        msg = d.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            yield Report(INVALID, "not a wire record", line[:300].decode("utf-8", "replace"))
            return
        ts = epoch_iso(d.get("timestamp"), scale=1)
        if ts is not None and not self.started:
            self.started = True
            yield ThreadFact(self.thread, {"createdAt": ts})
        yield from self._event(self.thread, msg, ts, top=True)

    def _event(self, thread: str, msg: JsonObject, ts: str | None, top: bool) -> Iterator[Row]:
        kind = msg["type"]
        payload = msg.get("payload") if isinstance(msg.get("payload"), dict) else {}
        if kind == "TurnBegin":
            self._links(thread).turn(payload.get("user_input"))
        elif kind == "StepBegin":
            self._links(thread).step()
        elif kind == "ToolCall":
            self._links(thread).call(payload.get("id"))
        if kind == "StatusUpdate":
            tu, rid = payload.get("token_usage"), nonempty_str(payload.get("message_id"))
            if isinstance(tu, dict):
                key = f"{thread}:{rid}" if rid else f"{thread}:{ts}"
                yield UsageRow(key, thread, wire_usage(tu, self._links(thread).link()), None, None, ts)
                return
            yield Report(SKIPPED, "StatusUpdate without token usage", None)
            return
        # a subagent's title is its description (meta.json, side.py), not its prompt
        if kind == "TurnBegin" and top and not self.titled and thread == self.session:
            text = _text(payload.get("user_input"))
            if text:
                self.titled = True
                yield ThreadFact(thread, {"title": text if len(text) <= 50 else text[:49] + "…"})
        if kind == "SubagentEvent":
            inner = payload.get("event")
            agent = nonempty_str(payload.get("agent_id"))
            child = child_thread(self.session, agent) if agent else thread
            if agent and child not in self.children:
                self.children.append(child)
                meta: JsonObject = {"agentId": agent}
                if nonempty_str(payload.get("subagent_type")):
                    meta["subagentType"] = payload["subagent_type"]
                if nonempty_str(payload.get("parent_tool_call_id")):
                    meta["parentToolCallId"] = payload["parent_tool_call_id"]
                yield ThreadFact(child, {"parentThreadId": thread, "agentId": agent, "metadata": meta})
            if isinstance(inner, dict) and isinstance(inner.get("type"), str):
                rows = list(self._event(child, inner, ts, top=False))
                yield from rows
                if any(isinstance(r, UsageRow) for r in rows):
                    return
            yield Report(DUPLICATE, "SubagentEvent (the subagent's own files hold it)", None)
            return
        if kind in CONTENT:
            yield Report(DUPLICATE, f"{kind} (context.jsonl holds it)", None)
        elif kind in CLIENT:
            yield Report(SKIPPED, kind, None)
        else:
            yield Report(UNKNOWN, kind, None)
