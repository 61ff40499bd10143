"""Qwen Code chat recordings: ``~/.qwen/projects/<cwd, non-alphanumerics as ->/chats/<sessionId>.jsonl``.

Format (Qwen Code 0.24.4, a Gemini CLI fork): JSON Lines, append-only, one record per line,
in a Claude Code-like envelope (``uuid``, ``parentUuid``, ``sessionId``, ``timestamp``,
``type``, ``cwd``, ``version``, ``provenance``) around Gemini-style content
(``message: {role: user|model, parts: [...]}``, parts ``text`` / ``thought: true`` /
``functionCall`` / ``functionResponse`` / ``inlineData``). A resume appends to the same file.

* ``user`` records: the prompt (``provenance: real_user``) or other user input;
* ``assistant`` records: one model response, ``model``, ``usageMetadata``
  (``promptTokenCount``, ``candidatesTokenCount``, ``cachedContentTokenCount``,
  ``thoughtsTokenCount``, ``totalTokenCount``);
* ``tool_result`` records: the ``functionResponse`` parts plus ``toolCallResult``
  (``callId``, ``status``, ``resultDisplay``);
* ``system`` records, by ``subtype``: ``ui_telemetry`` (``systemPayload.uiEvent``:
  ``qwen-code.api_response`` for every API response, the session's own and those of
  background helpers such as the ``managed-auto-memory-extractor`` subagent;
  ``qwen-code.tool_call``; others), ``attribution_snapshot``, ``chat_compression``,
  ``slash_command`` and more: bookkeeping the model does not see again.

Invariants:

* **Ids.** Thread id = ``sessionId``; message id = the record's ``uuid`` (a record copied
  into another file, as a fork does, is the same message). ``turnId`` is the id of the
  latest real user prompt.
* **Usage: every API response once, helpers included; helper content kept out.** Each
  ``ui_telemetry`` ``api_response`` is one response: ``UsageRow`` keyed
  ``qwen:<thread>:<response_id>``. Those of background helpers (a ``subagent_name``, or a
  helper's ``prompt_id`` ``<session>#<helper>-<hex>#<n>``, 0.24.4) count as the session's
  usage, carried by a content-free ``system`` message (``extra["helper"]``, injected) so
  that emits hand it on, but their ``response_text`` is never stored as content. Any other
  ``prompt_id`` is the session's own: ``<session>########<n>`` (0.24.4), 13 hex digits
  (0.5.2; read as a helper's before revision 2, which counted each 0.5 response twice).
  The ``assistant`` record that follows a response carries the same figures: it repeats
  the key of the latest pending ``api_response`` with those figures (the session's first,
  a helper's only if none matches: a response is never counted twice, whatever its
  ``prompt_id`` says), so the response is counted once and attached to its message; an
  ``assistant`` record without a matching telemetry line (older releases) gets its own key
  ``qwen:<thread>:msg:<uuid>``.
* **Neutral buckets.** Qwen counts cached input inside ``promptTokenCount``:
  ``input_tokens = prompt - cached``, ``cache_read_tokens = cached``. Whether
  ``candidatesTokenCount`` includes the thoughts depends on the provider (OpenAI-compatible:
  yes; Gemini: no); ``totalTokenCount`` tells which, and ``output_tokens`` includes
  reasoning either way. Raw figures stay in ``usage.extra["vendor"]``.
* **Tool results** keep ``toolCallResult.status`` (``error`` sets ``is_error``) and
  ``resultDisplay`` in the block's extra; ``qwen-code.tool_call`` telemetry repeats them
  (``DUPLICATE``).
* cwd: the first record's ``cwd`` (a later one is ``metadata.lastCwd``); ``version`` and
  model in the thread metadata. Resumable, deterministic, never raises on input.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any


from ...model import Block, JsonObject, Message, Provenance, ToolResult, Unknown, Usage
from ..base import (
    decode_object,
    DUPLICATE,
    INVALID,
    SKIPPED,
    UNKNOWN,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    stable_id,
)
from ..base import claim_emitted
from ..base import nonempty_str as _str
from ..gemini.parts import fold_result_images, part_blocks

NAME = "qwen"
_HELPER_PROMPT = re.compile(r"^[^#]*#[^#]+#\d+$")  # <session>#<helper>-<hex>#<n> (0.24.4)
PENDING_CAP = 8  # api_responses awaiting the assistant record that repeats them
# system subtypes that are client bookkeeping (the model never sees them again)
BOOKKEEPING = {
    "attribution_snapshot", "slash_command", "chat_compression", "goal_turn_end", "branch_checkpoint",
    "custom_title", "notification", "at_command", "runtime_status",
}


def qwen_usage(meta: Any) -> Usage | None:
    """``usageMetadata`` or an ``api_response`` event in the neutral buckets."""
    if not isinstance(meta, dict):
        return None

    def n(*keys: str) -> int:
        for k in keys:
            v = meta.get(k)
            if isinstance(v, int) and not isinstance(v, bool):
                return v
        return 0

    prompt = n("promptTokenCount", "input_token_count")
    cached = n("cachedContentTokenCount", "cached_content_token_count")
    cand = n("candidatesTokenCount", "output_token_count")
    thoughts = n("thoughtsTokenCount", "thoughts_token_count")
    total = n("totalTokenCount", "total_token_count")
    # OpenAI-compatible providers count reasoning inside the completion: total = prompt + cand
    output = cand if total == prompt + cand and thoughts else cand + thoughts
    return Usage(input_tokens=max(prompt - cached, 0), output_tokens=output, cache_read_tokens=cached,
                 cache_write_tokens=0, reasoning_tokens=thoughts, extra={"vendor": meta})


def _figures(u: Usage) -> list[int | None]:
    return [u.input_tokens, u.output_tokens, u.cache_read_tokens, u.reasoning_tokens]


class QwenParser:
    """Feeds Qwen Code chat-recording lines; see the module docstring."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.emitted: JsonObject = s.get("emitted", {})  # base.claim_emitted's held message
        self.thread: str | None = s.get("thread")
        self.turn: str | None = s.get("turn")
        self.facts: JsonObject = s.get("facts", {})  # metadata emitted so far
        # [key, figures, helper] of the latest api_responses, for the assistant record that repeats one
        pending = s.get("pending") or []
        self.pending: list[list[Any]] = [[*pending, False]] if pending and isinstance(pending[0], str) else pending
        self.ts: str | None = None

    def state(self) -> JsonObject:
        return {"thread": self.thread, "turn": self.turn, "facts": self.facts, "pending": self.pending,
                "emitted": self.emitted}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        d = decode_object(line)
        if not isinstance(d, dict):
            return iter(() if d is None else [d])
        rows = list(claim_emitted(d, self._dispatch(d), self.emitted))
        return iter(rows or [Report(SKIPPED, "empty record")])

    def _dispatch(self, d: JsonObject) -> Iterator[Row]:
        kind = d.get("type")
        if not isinstance(d.get("uuid"), str) or not isinstance(kind, str):
            yield Report(INVALID, "record without uuid or type")
            return
        yield from self._envelope(d)
        self.ts = _str(d.get("timestamp"))
        handler = RECORD_HANDLERS.get(kind)
        if handler is None:
            yield Report(UNKNOWN, f"record type {kind}")
            if isinstance(d.get("message"), dict):
                yield MessageRow(self._msg(d, "system", [Unknown(source_type=kind, raw=d.get("message"))], turn=False))
            return
        yield from handler(self, d)

    # -- envelope and identity

    def _thread(self) -> str:
        if self.thread is None:
            self.thread = "qwen-" + stable_id(self.source.source_id, "thread")
        return self.thread

    def _envelope(self, d: JsonObject) -> Iterator[Row]:
        first = self.thread is None
        if first:
            self.thread = _str(d.get("sessionId")) or self._thread()
        meta: JsonObject = {}
        cwd = _str(d.get("cwd"))
        if cwd:
            if "cwd" not in self.facts:
                meta["cwd"] = cwd
            elif cwd != self.facts["cwd"] and cwd != self.facts.get("lastCwd"):
                meta["lastCwd"] = cwd
        for k in ("version", "gitBranch"):
            v = _str(d.get(k))
            if v and self.facts.get(k) != v:
                meta[k] = v
        model = _str(d.get("model"))
        if model and self.facts.get("model") != model:
            meta["model"] = model
        fields: JsonObject = {}
        if first and _str(d.get("timestamp")):
            fields["createdAt"] = d["timestamp"]
        if meta:
            self.facts.update(meta)
            fields["metadata"] = meta
        if fields:
            yield ThreadFact(self._thread(), fields)

    def _msg(self, d: JsonObject, role: str, blocks: list[Block], turn: bool = True, extra: JsonObject | None = None) -> Message:
        thread = self._thread()
        return Message(
            id=d["uuid"], thread_id=thread, role=role, ts=self.ts, content=tuple(blocks),
            turn_id=self.turn if turn else None,
            provenance=Provenance(provider=NAME, session_id=thread, source_id=d["uuid"]),
            extra=extra or None,
        )  # fmt: skip

    @staticmethod
    def _blocks(d: JsonObject) -> list[Block]:
        message = d.get("message")
        parts = message.get("parts") if isinstance(message, dict) else None
        out: list[Block] = []
        for p in parts if isinstance(parts, list) else []:
            out.extend(part_blocks(p)[0])
        return out

    # -- record types

    def _user(self, d: JsonObject) -> Iterator[Row]:
        blocks = self._blocks(d)
        extra: JsonObject = {}
        provenance = _str(d.get("provenance"))
        if provenance and provenance != "real_user":
            extra["qwenProvenance"] = provenance
        if _str(d.get("subtype")):
            extra["subtype"] = d["subtype"]
        if provenance in (None, "real_user") and not d.get("subtype"):
            self.turn = d["uuid"]
        yield MessageRow(self._msg(d, "user", blocks, extra=extra))

    def _assistant(self, d: JsonObject) -> Iterator[Row]:
        extra: JsonObject = {"model": d["model"]} if _str(d.get("model")) else {}
        yield MessageRow(self._msg(d, "assistant", self._blocks(d), extra=extra))
        usage = qwen_usage(d.get("usageMetadata"))
        if usage is None:
            return
        thread = self._thread()
        key = f"{NAME}:{thread}:msg:{d['uuid']}"
        figures = _figures(usage)
        same = [p for p in self.pending if p[1] == figures]
        match = next((p for p in reversed(same) if not p[2]), same[-1] if same else None)
        if match is not None:
            key = match[0]
            self.pending.remove(match)
        yield UsageRow(key, thread, usage, d["uuid"], _str(d.get("model")), self.ts)

    def _tool_result(self, d: JsonObject) -> Iterator[Row]:
        info = d.get("toolCallResult") if isinstance(d.get("toolCallResult"), dict) else {}
        status = info.get("status")
        blocks: list[Block] = []
        for b in fold_result_images(self._blocks(d)):
            if isinstance(b, ToolResult):
                extra = dict(b.extra or {})
                if status:
                    extra["status"] = status
                if info.get("resultDisplay") not in (None, ""):
                    extra["resultDisplay"] = info["resultDisplay"]
                b = ToolResult(call_id=b.call_id or _str(info.get("callId")) or "", output=b.output,
                               is_error=True if status == "error" or b.is_error else None, extra=extra or None)
            blocks.append(b)
        yield MessageRow(self._msg(d, "tool", blocks))

    def _system(self, d: JsonObject) -> Iterator[Row]:
        sub = d.get("subtype")
        if sub == "ui_telemetry":
            yield from self._telemetry(d)
        elif sub in BOOKKEEPING:
            yield Report(SKIPPED, f"system {sub}")
        else:
            yield Report(UNKNOWN, f"system {sub}")

    def _pend(self, key: str, usage: Usage, helper: bool) -> None:
        self.pending.append([key, _figures(usage), helper])
        del self.pending[:-PENDING_CAP]

    def _telemetry(self, d: JsonObject) -> Iterator[Row]:
        payload = d.get("systemPayload")
        ev = payload.get("uiEvent") if isinstance(payload, dict) else None
        if not isinstance(ev, dict):
            yield Report(INVALID, "ui_telemetry without uiEvent")
            return
        name = ev.get("event.name")
        if name == "qwen-code.api_response":
            usage = qwen_usage(ev)
            rid = _str(ev.get("response_id")) or stable_id(self.source.source_id, d["uuid"])
            thread = self._thread()
            key = f"{NAME}:{thread}:{rid}"
            prompt_id = ev.get("prompt_id")
            helper = _str(ev.get("subagent_name")) or (
                "helper" if isinstance(prompt_id, str) and _HELPER_PROMPT.match(prompt_id) else None)
            if usage is None:
                yield Report(INVALID, "api_response without usage")
                return
            model = _str(ev.get("model"))
            self._pend(key, usage, bool(helper))
            if helper:
                # the call becomes a content-free system message that carries its usage, so
                # that every emit (canonical, Qwen Code) can hand the usage on
                extra: JsonObject = {"injected": True, "helper": helper, "qwenEvent": name, "responseId": rid}
                if model:
                    extra["model"] = model
                if _str(prompt_id):
                    extra["promptId"] = prompt_id
                msg = self._msg(d, "system", [], turn=False, extra=extra)
                yield MessageRow(msg)
                yield Report(SKIPPED, "ui_telemetry api_response of a helper: usage counted, response text kept out", helper)
                yield UsageRow(key, thread, usage, msg.id, model, _str(ev.get("event.timestamp")) or self.ts)
                return
            yield Report(DUPLICATE, "ui_telemetry api_response (the assistant record repeats it)")
            yield UsageRow(key, thread, usage, None, model, _str(ev.get("event.timestamp")) or self.ts)
        elif name == "qwen-code.tool_call":
            yield Report(DUPLICATE, "ui_telemetry tool_call (the tool_result record holds it)")
        else:
            yield Report(SKIPPED, f"ui_telemetry {name}")


RECORD_HANDLERS: dict[str, Callable[[QwenParser, JsonObject], Iterator[Row]]] = {
    "user": QwenParser._user,
    "assistant": QwenParser._assistant,
    "tool_result": QwenParser._tool_result,
    "system": QwenParser._system,
}
