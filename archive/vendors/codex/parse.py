"""OpenAI Codex CLI rollouts: default locations, detection, a resumable parser, and emit.

Generations read (field notes: ``formats/codex.md``):

* G0, TypeScript CLI: one pretty-printed ``{"session": {...}, "items": [...]}`` document
  per session (``rollout-*.json``), a SNAPSHOT source fed as one line at offset 0.
* G1, Rust bare JSONL: a bare SessionMeta first line (``id``, ``timestamp``, no ``type``),
  bare ResponseItems, ``{"record_type": "state"}`` bookkeeping lines. No line timestamps.
* G2, wrapped JSONL: ``{"timestamp", "type", "payload"}`` per line.
* G3 (0.14x+): G2 plus ``ordinal``, ``world_state``, ``token_usage_record``,
  ``inter_agent_communication*``, item ids, ``turn_id`` passthrough on items.

Invariants (each is tested):

* **Content comes from ``response_item`` only.** ``event_msg`` views that repeat it
  (``user_message``, ``agent_message``, ``agent_reasoning``, ``item_completed``,
  ``*_end`` events) never produce messages: they become ``Report(DUPLICATE)``.
  One response item is one message; its blocks keep the item's order.
* **Deduplication by content.** An ``event_msg`` ``user_message`` is a duplicate only
  when a user ``response_item`` with the same text is its twin. The twin comes before the
  event (0.3x-0.66) or after it (0.14x+ write the event first), so an event with no twin
  before it is *held* (the event line reports ``metadata``, the held prompt is in the
  parser state) until the prompt is settled: a matching user item arrives (the event was
  a duplicate; the item line reports it) or a line shows the prompt has no item (the
  model's first output item, a turn end or review-mode event, another prompt, a new
  ``session_meta``). Then the prompt is projected from that later line as a user message
  (a review subagent's prompt is known only from its event, 0.77). A file that ends while
  a prompt is held projects it when the file grows.
* **Injected context** (``<environment_context>``, ``<user_instructions>``, AGENTS.md,
  developer permission/skills text, G3 items whose provenance is ``harness``) is kept with
  ``extra["injected"] = True`` and never opens a turn. ``developer`` messages become
  role ``system`` with ``extra["codexRole"] = "developer"``.
* **Turns.** ``turnId`` is Codex's own turn id where the file has one (``task_started``,
  ``turn_context.turn_id``, the item's ``internal_chat_message_metadata_passthrough``);
  in older files each non-injected user message opens a turn whose id is that message's id.
* **Usage, never counted twice, in neutral buckets.** Codex's ``input_tokens`` include
  cached input; the stored ``inputTokens`` is the input *not* read from the cache
  (``input - cached - cache writes``), ``cacheReadTokens`` the cached part,
  ``outputTokens`` *includes* reasoning (``reasoningTokens`` is the reasoning part),
  ``cacheWriteTokens`` is G3's ``cache_write_input_tokens``; Codex's own figures stay in
  ``extra["vendor"]``. ``token_count`` events give
  deltas of the cumulative ``total_token_usage``; a line whose total did not advance
  (0.66 writes every total twice) or whose ``info`` is null is ``SKIPPED``; a total that
  goes down (reset) falls back to ``last_token_usage``. G3 ``token_usage_record`` lines
  give one response each. Both kinds carry the cumulative thread total, and the parser
  keeps the last counted total, so a response seen through both kinds counts once.
  A ``UsageRow`` key is ``codex:<thread>:<response id>`` for records and
  ``codex:<thread>:cum:<cumulative total tokens>`` for deltas: a replay of the same
  history produces the same keys. A count goes to an assistant item of its response:
  0.66+ write it after the items (the last one read), releases before 0.66
  (``cli_version``; recorded with 0.47, 0.57, 0.61, 0.64, 0.65) *before* them, so there it
  is held (parser state) and given to the next assistant item (the response's first), or
  to the last one read when a prompt or another count comes first.
* **Forks and subagents.** Thread id = the first ``session_meta`` id (G0: the
  document's session id). Parent ids come from ``forked_from_id``, ``parent_thread_id``
  and ``source.subagent.thread_spawn.parent_thread_id``. A later ``session_meta`` with a
  different id starts a *replay* of that thread's history: the lines that follow belong
  to that thread, with the ids the parent's own file gives them, so the history is
  stored once. Codex writes the replay as one burst when the fork is created, so the
  replay ends at the first line stamped more than ``REPLAY_BURST_MS`` after the replayed
  ``session_meta`` line (a heuristic; nested forks replayed inside a fork are attributed
  to the innermost replayed meta). The child's ``originMessageId`` is the last replayed
  message; its usage baseline continues from the parent's cumulative total.
* **Message ids** are ``stable_id(thread, key)``. The key is the vendor item id plus a
  hash of the item's content when the item has an id (G1/G3; the hash keeps recorded mock
  ids such as ``msg_1`` from colliding across sessions), otherwise the content hash plus
  the occurrence number of that hash within the thread. Both are the same in the
  parent's file and in a child's replay of it, so replayed items dedupe.
* Resumable (state is small JSON), deterministic, never raises on input; every non-blank
  line yields at least one row.

Emit (``CodexAdapter.emit``) builds a G2/G3-style rollout from canonical messages of any
vendor; see :func:`emit_rollout`.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    FileChange,
    JsonObject,
    Message,
    Provenance,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
    WebSearch,
)
from ..base import claim_emitted, loads_line
from ..base import nonempty_str as _str
from ..base import (
    DUPLICATE,
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    WARNING,
    UNKNOWN,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    stable_id,
)

from .values import (  # noqa: F401  re-exported
    _PATCH_FILE_RE,
    _TS_RE,
    INJECTED_PREFIXES,
    _content_blocks,
    _content_hash,
    _cum,
    _CUM_KEYS,
    _dumps,
    _image_block,
    _is_injected,
    _item_turn_id,
    MAX_USER_ITEMS,
    _maybe_json,
    _neutral,
    _output_meta,
    parse_patch,
    _parse_ts,
    _patch_from_call,
    _prompt_hash,
    _settles_held,
    _SETTLING_EVENTS,
    _snippet,
    _usage_from_vector,
    _usage_of,
    _valid_ts,
)


NAME = "codex"
REPLAY_BURST_MS = 1000


# event_msg types whose content lives in a response_item (or enriches one).
DUPLICATE_EVENTS = {
    "user_message",
    "agent_message",
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "item_completed",
    "exec_command_end",
    "patch_apply_end",
    "web_search_end",
    "mcp_tool_call_end",
    "view_image_tool_call",
    "image_generation_end",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
}
# event_msg types that are session bookkeeping: recorded, not content.
METADATA_EVENTS = {
    "task_complete",
    "turn_complete",
    "turn_aborted",
    "context_compacted",
    "entered_review_mode",
    "exited_review_mode",
    "undo_completed",
    "thread_rolled_back",
    "thread_settings_applied",
    "thread_goal_updated",
    "sub_agent_activity",
    "guardian_assessment",
    "collab_agent_spawn_end",
    "collab_agent_interaction_end",
    "collab_waiting_end",
    "collab_close_end",
    "error",
    "plan_update",
    "session_configured",
}

_ENV_CWD_RE = re.compile(r"<cwd>([^<]+)</cwd>")


# ---------------------------------------------------------------- parser


class CodexParser:
    """Feeds rollout lines; see the module docstring for what each line becomes."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.thread: str | None = s.get("thread")  # the file's own session id
        self.seg: str | None = s.get("seg")  # thread the current lines belong to
        self.replay_ts: str | None = s.get("replayTs")  # replayed meta's line time
        self.turn: dict[str, str] = s.get("turn", {})  # seg -> current turn id
        self.model: str | None = s.get("model")
        self.facts: JsonObject = s.get("facts", {})  # last metadata facts emitted
        self.seen: dict[str, dict[str, int]] = s.get("seen", {})  # seg -> hash -> count
        self.cum: dict[str, list[int]] = s.get("cum", {})  # seg -> cumulative usage
        self.last_msg: dict[str, str] = s.get("lastMsg", {})  # seg -> last message id
        self.last_assistant: dict[str, str] = s.get("lastAssistant", {})
        self.pending_images: list[str] = s.get("pendingImages", [])
        # seg -> hashes of recent user items no event has matched yet (item-first order)
        self.user_items: dict[str, list[str]] = s.get("userItems", {})
        self.emitted: JsonObject = s.get("emitted", {})  # base.claim_emitted's held message
        self.held: JsonObject | None = s.get("held")  # a user_message event without its item yet
        self.counts_first: bool = s.get("countsFirst", False)  # token_count before its items (< 0.66)
        self.held_usage: JsonObject | None = s.get("heldUsage")  # such a count, its item not read yet
        self.ts: str | None = None  # timestamp of the line being fed

    def state(self) -> JsonObject:
        return {
            "emitted": self.emitted,
            "thread": self.thread,
            "seg": self.seg,
            "replayTs": self.replay_ts,
            "turn": self.turn,
            "model": self.model,
            "facts": self.facts,
            "seen": self.seen,
            "cum": self.cum,
            "lastMsg": self.last_msg,
            "lastAssistant": self.last_assistant,
            "pendingImages": self.pending_images,
            "userItems": self.user_items,
            "held": self.held,
            "countsFirst": self.counts_first,
            "heldUsage": self.held_usage,
        }

    # -- identity

    def _seg(self) -> str:
        if self.seg is None:
            # No session_meta before content (a torn or trimmed file): a stable stand-in.
            self.seg = self.thread = "codex-" + stable_id(self.source.source_id, "thread")
        return self.seg

    def _message_id(self, payload: JsonObject) -> str:
        seg = self._seg()
        h = _content_hash(payload)
        vid = _str(payload.get("id"))
        if vid:
            return stable_id(NAME, seg, "id", vid, h)
        counts = self.seen.setdefault(seg, {})
        n = counts.get(h, 0)
        counts[h] = n + 1
        return stable_id(NAME, seg, "h", h, n)

    # -- feeding

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d, warning = loads_line(line)  # a lone surrogate escape: U+FFFD and a warning
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        if not isinstance(d, dict):
            return iter([Report(PARSE_ERROR, "not a JSON object")])
        # a raise here is a parser bug: ingest records it as adapter_error, never as bad input
        return iter(([warning] if warning else []) + list(self._dispatch(d)))

    def _dispatch(self, d: JsonObject) -> Iterator[Row]:
        if isinstance(d.get("session"), dict) and isinstance(d.get("items"), list):
            yield from self._g0_document(d)
            return
        kind = d.get("type")
        if self.held is not None and _settles_held(d):
            yield from self.project_held()
        if "payload" in d and isinstance(kind, str) and "timestamp" in d:
            self.ts = _valid_ts(d.get("timestamp"))
            yield from self._end_replay_if_due(d.get("timestamp"))
            handler = ENVELOPE_HANDLERS.get(kind)
            if handler is None:
                yield Report(UNKNOWN, f"line type {kind}", _snippet(d))
                return
            payload = d["payload"]
            if not isinstance(payload, dict):
                yield Report(INVALID, f"{kind}: payload is not an object")
                return
            yield from claim_emitted(d, handler(self, payload), self.emitted)
            return
        self.ts = None
        if "record_type" in d:
            # G1 (Jul-Sep 2025): {"record_type":"state"} bookkeeping between items
            yield Report(SKIPPED, f"record_type {d.get('record_type')}")
        elif kind is None and "id" in d and "timestamp" in d:
            yield from _session_meta(self, d)
        elif isinstance(kind, str):
            yield from _response_item(self, d)
        else:
            yield Report(UNKNOWN, "line without type", _snippet(d))

    def _g0_document(self, d: JsonObject) -> Iterator[Row]:
        # TypeScript CLI (Apr-May 2025): the whole session, rewritten on every save.
        session = d["session"]
        yield from _session_meta(self, session)
        for item in d["items"]:
            if isinstance(item, dict):
                yield from _response_item(self, item)
            else:
                yield Report(INVALID, "G0 item is not an object")

    def _end_replay_if_due(self, ts: Any) -> Iterator[Row]:
        if self.replay_ts is None or self.thread is None:
            return
        start, now = _parse_ts(self.replay_ts), _parse_ts(_valid_ts(ts))
        if start is None or now is None or now - start <= timedelta(milliseconds=REPLAY_BURST_MS):
            return
        parent = self.seg or ""
        self.replay_ts = None
        self.seg = self.thread
        # the fork continues from the parent's cumulative usage (Codex seeds it on fork)
        if parent in self.cum:
            self.cum[self.thread] = list(self.cum[parent])
        origin = self.last_msg.get(parent)
        if origin:
            yield ThreadFact(self.thread, {"originMessageId": origin})

    # -- building rows

    def message(
        self,
        payload: JsonObject,
        role: str,
        blocks: list[Block],
        extra: JsonObject | None = None,
        opens_turn: bool = False,
    ) -> Iterator[Row]:
        seg = self._seg()
        mid = self._message_id(payload)
        item_turn = _item_turn_id(payload)
        if item_turn:
            self.turn[seg] = item_turn
        elif opens_turn:
            self.turn[seg] = mid
        x: JsonObject = {"codexType": payload.get("type")}
        if role == "assistant" and self.model:
            x["model"] = self.model
        x.update(extra or {})
        self.last_msg[seg] = mid
        if role == "assistant":
            self.last_assistant[seg] = mid
        elif opens_turn:
            yield from self.release_usage()  # a count whose response wrote no item
        yield MessageRow(
            Message(
                id=mid,
                thread_id=seg,
                role=role,
                ts=self.ts,
                content=tuple(blocks),
                turn_id=self.turn.get(seg),
                provenance=Provenance(provider=NAME, session_id=seg, source_id=_str(payload.get("id"))),
                extra=x,
            )
        )
        if role == "assistant":
            yield from self.release_usage()

    def project_held(self) -> Iterator[Row]:
        """The held user_message event had no response_item twin: it is the only copy of a
        prompt the model read, so it becomes the user message (see the module docstring)."""
        held, self.held = self.held, None
        assert held is not None
        seg, ts = self.seg, self.ts
        self.seg, self.ts = held["seg"], held.get("ts")
        extra: JsonObject = {"fromEvent": "user_message"}
        if held.get("localImages"):
            extra["localImages"] = held["localImages"]
        payload = {"type": "user_message", "message": held["text"]}
        yield from self.message(payload, "user", [Text(held["text"])], extra, opens_turn=True)
        yield Report(WARNING, "user_message", "projected from its event: no response_item holds this prompt")
        self.seg, self.ts = seg, ts

    def usage(self, key: str, usage: Usage) -> Row:
        seg = self._seg()
        return UsageRow(
            key=f"{NAME}:{seg}:{key}",
            thread_id=seg,
            usage=usage,
            message_id=self.last_assistant.get(seg),
            model=self.model,
            ts=self.ts,
        )

    def hold_usage(self, row: UsageRow) -> Iterator[Row]:
        """A count written before its response's items (< 0.66): kept until the next
        assistant item (a count already held goes to the last one)."""
        yield from self.release_usage()
        self.held_usage = {"key": row.key, "thread": row.thread_id, "usage": row.usage.to_dict(),
                           "model": row.model, "ts": row.ts}
        yield Report(METADATA, "token_count", "held for the response's items, written after it (before 0.66)")

    def release_usage(self) -> Iterator[Row]:
        h, self.held_usage = self.held_usage, None
        if h is not None:
            yield UsageRow(key=h["key"], thread_id=h["thread"], usage=Usage.from_dict(h["usage"]),
                           message_id=self.last_assistant.get(h["thread"]), model=h["model"], ts=h["ts"])


# ---------------------------------------------------------------- envelope handlers


def _session_meta(p: CodexParser, m: JsonObject) -> Iterator[Row]:
    sid = _str(m.get("id")) or _str(m.get("session_id"))
    if sid is None:
        yield Report(INVALID, "session_meta without id")
        return
    fields: JsonObject = {}
    if _valid_ts(m.get("timestamp")):
        fields["createdAt"] = m["timestamp"]
    meta: JsonObject = {"provider": NAME}
    for src, dst in (("cwd", "cwd"), ("originator", "originator"), ("cli_version", "version"), ("model_provider", "modelProvider")):
        if _str(m.get(src)):
            meta[dst] = m[src]
    source = m.get("source")
    if source is not None:
        meta["source"] = source
    git = m.get("git")
    if isinstance(git, dict):
        for src, dst in (("branch", "gitBranch"), ("commit_hash", "gitCommit"), ("repository_url", "gitRepository")):
            if _str(git.get(src)):
                meta[dst] = git[src]
    base = m.get("base_instructions")
    if isinstance(base, dict) and isinstance(base.get("provenance"), dict) and _str(base["provenance"].get("model")):
        meta["model"] = base["provenance"]["model"]
    parent = _str(m.get("forked_from_id")) or _str(m.get("parent_thread_id"))
    if isinstance(source, dict):
        sub = source.get("subagent")
        if sub is not None:
            meta["subagent"] = True
        if isinstance(sub, dict) and isinstance(sub.get("thread_spawn"), dict):
            parent = parent or _str(sub["thread_spawn"].get("parent_thread_id"))
            if _str(sub["thread_spawn"].get("agent_nickname")):
                fields["agentId"] = sub["thread_spawn"]["agent_nickname"]
    if parent and parent != sid:
        fields["parentThreadId"] = parent
        if _str(m.get("forked_from_id")):
            meta["forkedFrom"] = m["forked_from_id"]
            # 0.171 does not copy the parent's history: it names where the fork leaves the
            # parent's rollout (history_base.end_byte_offset, exclusive); ingest finds the
            # fork point there once the parent is archived
            base = m.get("history_base")
            end = base.get("end_byte_offset") if isinstance(base, dict) else None
            if isinstance(end, int) and not isinstance(end, bool):
                meta["forkedFromOffset"] = end
    fields["metadata"] = meta
    if _str(m.get("cwd")):
        p.facts[f"{sid}:cwd"] = m["cwd"]

    stand_in = p.thread is not None and p.thread == "codex-" + stable_id(p.source.source_id, "thread")
    if p.thread is None or (stand_in and p.seg == p.thread and p.thread not in p.last_msg):
        # the first meta (or the first after lines that named no thread and projected no
        # message, such as a leading turn_context): this file's own thread. A stand-in id
        # depends on the source's identity, so it must not hold messages that have a name
        p.thread = p.seg = sid
        p.counts_first = _version(meta.get("version")) < (0, 66)
        if meta.get("model"):
            p.model = str(meta["model"])
        yield ThreadFact(sid, fields)
        return
    if sid == p.seg:
        yield Report(METADATA, "session_meta", "repeated meta of the current thread")
        return
    # A forked/spawned file replays its parent's history after the parent's meta.
    p.seg = sid
    p.replay_ts = p.ts
    yield ThreadFact(sid, fields)


def _response_item(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    kind = payload.get("type")
    handler = ITEM_HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is None:
        yield Report(UNKNOWN, f"response_item {kind}")
        yield from p.message(payload, "system", [Unknown(source_type=str(kind), raw=payload)])
        return
    yield from handler(p, payload)


def _compacted(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    history = payload.get("replacement_history")
    n = len(history) if isinstance(history, list) else 0
    # The replacement history repeats items already read from earlier lines (or a
    # summary of them); it stays in the source layer.
    yield Report(METADATA, "compacted", f"replacement_history: {n} items")
    text = payload.get("message")
    if isinstance(text, str) and text:
        yield from p.message(payload, "system", [Text(text)], {"injected": True, "compacted": True})


def _turn_context(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    seg = p._seg()
    if _str(payload.get("turn_id")):
        p.turn[seg] = payload["turn_id"]
    changed: JsonObject = {}
    for key in ("model", "cwd"):
        value = payload.get(key)
        if key == "cwd" and p.facts.get(f"{seg}:cwd") is not None:
            # the project is where the session started; a later one is kept apart
            if value == p.facts.get(f"{seg}:lastCwd", p.facts[f"{seg}:cwd"]):
                continue
            key = "lastCwd"
        if _str(value) and p.facts.get(f"{seg}:{key}") != value:
            p.facts[f"{seg}:{key}"] = value
            changed[key] = value
    if _str(payload.get("model")):
        p.model = payload["model"]
    if changed:
        yield ThreadFact(seg, {"metadata": changed})
    else:
        yield Report(METADATA, "turn_context")


def _event_msg(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    kind = payload.get("type")
    handler = EVENT_HANDLERS.get(kind) if isinstance(kind, str) else None
    if handler is not None:
        yield from handler(p, payload)
    elif kind in DUPLICATE_EVENTS:
        sub = payload.get("item", {}).get("type") if isinstance(payload.get("item"), dict) else None
        if kind == "item_completed" and sub == "Plan":
            yield Report(METADATA, "item_completed:Plan")
        else:
            yield Report(DUPLICATE, f"{kind}:{sub}" if sub else str(kind))
    elif kind in METADATA_EVENTS:
        yield Report(METADATA, str(kind))
    else:
        yield Report(UNKNOWN, f"event_msg {kind}", _snippet(payload))


def _metadata_line(name: str) -> Callable[[CodexParser, JsonObject], Iterator[Row]]:
    def handle(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
        yield Report(METADATA, name)

    return handle


def _inter_agent(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    yield from p.message(
        payload, "user", [Unknown(source_type="inter_agent_communication", raw=payload)], {"interAgent": True}
    )


def _token_usage_record(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    seg = p._seg()
    total = _cum(payload.get("thread_token_usage"))
    if total is not None and total == p.cum.get(seg):
        yield Report(DUPLICATE, "token_usage_record", "already counted from token_count")
        return
    usage = _usage_of(payload.get("usage"))
    if usage is None:
        yield Report(INVALID, "token_usage_record without usage")
        return
    prev, own = p.cum.get(seg), _cum(payload.get("usage"))
    if prev is not None and own is not None and len(prev) == len(own):
        # the running total after this response: the thread's total Codex restored from the
        # file's last token_count (0.171.0 resuming a session it did not write, such as an
        # emitted one, counts thread_token_usage from zero but token_count from that total)
        p.cum[seg] = [a + b for a, b in zip(prev, own)]
    elif total is not None:
        p.cum[seg] = total
    # without a response id or a running total, the record's own time tells responses apart
    # ("cum:0" for all of them kept only the last one)
    key = _str(payload.get("response_id")) or (f"cum:{sum(total)}" if total is not None else f"at:{p.ts}")
    yield p.usage(key, usage)


ENVELOPE_HANDLERS: dict[str, Callable[[CodexParser, JsonObject], Iterator[Row]]] = {
    "session_meta": _session_meta,
    "response_item": _response_item,
    "compacted": _compacted,
    "turn_context": _turn_context,
    "event_msg": _event_msg,
    "world_state": _metadata_line("world_state"),
    "inter_agent_communication_metadata": _metadata_line("inter_agent_communication_metadata"),
    "inter_agent_communication": _inter_agent,
    "token_usage_record": _token_usage_record,
}


# ---------------------------------------------------------------- response items


def _message_item(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    vrole = payload.get("role")
    blocks = _content_blocks(payload.get("content"))
    texts = [b.text for b in blocks if isinstance(b, Text)]
    extra: JsonObject = {}
    if _str(payload.get("phase")):
        extra["phase"] = payload["phase"]
    if vrole == "assistant":
        yield from p.message(payload, "assistant", blocks, extra)
        return
    role = "user" if vrole == "user" else "system"
    if role == "system":
        extra["codexRole"] = vrole
    injected = _is_injected(str(vrole), payload, texts)
    if injected:
        extra["injected"] = True
        m = _ENV_CWD_RE.search(texts[0]) if texts else None
        seg = p._seg()
        # G1 metas have no cwd (Jul-Sep 2025): the environment context names it
        if m and p.facts.get(f"{seg}:cwd") is None:
            p.facts[f"{seg}:cwd"] = m.group(1)
            yield ThreadFact(seg, {"metadata": {"cwd": m.group(1)}})
    elif role == "user" and p.pending_images:
        extra["localImages"] = p.pending_images
        p.pending_images = []
    twin: list[Row] = []
    if role == "user" and not injected:
        h = _prompt_hash("\n".join(texts))
        held = p.held
        if held is not None and held["seg"] == p._seg() and held["hash"] == h:
            p.held = None
            twin.append(Report(DUPLICATE, "user_message", "the held user_message event before this item repeats it"))
        else:
            if held is not None:
                yield from p.project_held()  # another prompt: the held one had no item
            recent = p.user_items.setdefault(p._seg(), [])
            recent.append(h)
            del recent[:-MAX_USER_ITEMS]
    yield from p.message(payload, role, blocks, extra, opens_turn=role == "user" and not injected)
    yield from twin


def _reasoning_item(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    blocks: list[Block] = []
    enc = payload.get("encrypted_content")
    summary = payload.get("summary") if isinstance(payload.get("summary"), list) else []
    for part in summary:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            blocks.append(Reasoning(text=part["text"]))
    content = payload.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                blocks.append(Reasoning(text=part["text"], extra={"codexContent": part.get("type")}))
    if not blocks:
        blocks.append(Reasoning(redacted=True) if enc else Reasoning(text=""))
    if isinstance(enc, str):
        # kept verbatim: Codex re-sends this ciphertext to the API on resume
        first = blocks[0]
        assert isinstance(first, Reasoning)
        blocks[0] = Reasoning(text=first.text, redacted=first.redacted, extra={**(first.extra or {}), "encryptedContent": enc})
    yield from p.message(payload, "assistant", blocks)


def _tool_call(p: CodexParser, payload: JsonObject, name: str, call_id: str, raw_input: Any) -> Iterator[Row]:
    args = _maybe_json(raw_input)
    extra: JsonObject = {}
    if _str(payload.get("namespace")):
        extra["namespace"] = payload["namespace"]
    if isinstance(raw_input, str) and args is raw_input and payload.get("type") == "function_call":
        extra["argumentsNotJson"] = True
    blocks: list[Block] = [ToolCall(call_id=call_id, name=name, input=args, extra=extra or None)]
    blocks += _file_changes(call_id, name, payload, args)
    yield from p.message(payload, "assistant", blocks)


def _file_changes(call_id: str, name: str, payload: JsonObject, call_input: Any) -> list[Block]:
    """One FileChange per file an apply_patch call touches (whichever shape carried it)."""
    patch = _patch_from_call(name, payload, call_input)
    out: list[Block] = []
    for op, path, section, move in parse_patch(patch) if patch else ():
        fx: JsonObject = {"op": op}
        if move:
            fx["movePath"] = move
        out.append(FileChange(call_id=call_id, path=path, patch=section, extra=fx))
    return out


def _function_call(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    yield from _tool_call(p, payload, str(payload.get("name", "")), str(payload.get("call_id", "")), payload.get("arguments"))


def _custom_tool_call(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    # freeform tools (apply_patch, gpt-5 family, 0.4x+): input is raw text, never parsed
    name, call_id = str(payload.get("name", "")), str(payload.get("call_id", ""))
    extra: JsonObject = {"namespace": payload["namespace"]} if _str(payload.get("namespace")) else {}
    raw = payload.get("input")
    blocks: list[Block] = [ToolCall(call_id=call_id, name=name, input=raw, extra=extra or None)]
    blocks += _file_changes(call_id, name, payload, raw)
    yield from p.message(payload, "assistant", blocks)


def _local_shell_call(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    call_id = _str(payload.get("call_id")) or _str(payload.get("id")) or ""
    yield from _tool_call(p, payload, "local_shell", call_id, payload.get("action"))


def _tool_search_call(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    yield from _tool_call(p, payload, "tool_search", str(payload.get("call_id", "")), payload.get("arguments"))


def _tool_output(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    if payload.get("type") == "tool_search_output":
        output: Any = payload.get("tools")
        extra: JsonObject = {}
    else:
        output, extra = _output_meta(payload.get("output"))
    code = extra.get("exitCode")
    block = ToolResult(
        call_id=str(payload.get("call_id", "")),
        output=output,
        is_error=(code != 0) if isinstance(code, int) else None,
        extra=extra or None,
    )
    yield from p.message(payload, "tool", [block])


def _web_search_call(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
    query = action.get("query") or action.get("url") or action.get("pattern")
    if not query and isinstance(action.get("queries"), list):
        query = " | ".join(str(q) for q in action["queries"])
    extra = {"action": action} if action else None
    block = WebSearch(call_id=_str(payload.get("call_id")) or _str(payload.get("id")), query=str(query or ""), extra=extra)
    yield from p.message(payload, "assistant", [block])


def _image_generation_call(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    result = payload.get("result")
    extra = {"revisedPrompt": payload["revised_prompt"]} if _str(payload.get("revised_prompt")) else None
    try:
        base64.b64decode(str(result), validate=True)
        block: Block = Attachment(media_type="image/png", data=str(result), extra=extra)
    except (ValueError, TypeError):
        block = Unknown(source_type="image_generation_call", raw=payload)
    yield from p.message(payload, "assistant", [block])


def _agent_message_item(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    # G3 inter-agent message (0.14x): from another agent of the same session tree
    blocks = _content_blocks(payload.get("content"))
    extra = {"interAgent": True, "author": payload.get("author"), "recipient": payload.get("recipient")}
    yield from p.message(payload, "user", blocks, extra)


def _ghost_snapshot(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    # undo checkpoints written by the harness (0.4x-0.6x): not conversation content
    commit = payload.get("ghost_commit")
    yield Report(METADATA, "ghost_snapshot", commit.get("id") if isinstance(commit, dict) else None)


def _opaque_item(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    # server-side compaction: an opaque ciphertext that resume sends back as is
    kind = str(payload.get("type"))
    yield from p.message(payload, "system", [Unknown(source_type=kind, raw=payload)], {"injected": True})


ITEM_HANDLERS: dict[str, Callable[[CodexParser, JsonObject], Iterator[Row]]] = {
    "message": _message_item,
    "reasoning": _reasoning_item,
    "function_call": _function_call,
    "custom_tool_call": _custom_tool_call,
    "local_shell_call": _local_shell_call,
    "tool_search_call": _tool_search_call,
    "function_call_output": _tool_output,
    "custom_tool_call_output": _tool_output,
    "tool_search_output": _tool_output,
    "web_search_call": _web_search_call,
    "image_generation_call": _image_generation_call,
    "agent_message": _agent_message_item,
    "ghost_snapshot": _ghost_snapshot,
    "compaction": _opaque_item,
    "compaction_summary": _opaque_item,
    "context_compaction": _opaque_item,
}


# ---------------------------------------------------------------- events


def _task_started(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    if _str(payload.get("turn_id")):
        p.turn[p._seg()] = payload["turn_id"]
    yield Report(METADATA, str(payload.get("type")))


def _user_message_event(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    images = payload.get("local_images")
    if isinstance(images, list) and images:
        # G3 writes the event before the item: attach the paths to the coming message
        p.pending_images = [str(i) for i in images]
    detail = orjson.dumps({"local_images": images}).decode() if images else None
    text = payload.get("message") if isinstance(payload.get("message"), str) else ""
    seg = p._seg()
    h = _prompt_hash(text)
    recent = p.user_items.get(seg, [])
    if h in recent:
        recent.remove(h)  # its twin item came first
        yield Report(DUPLICATE, "user_message", detail)
        return
    if not text.strip():
        yield Report(METADATA, "user_message", "no text" + (f"; {detail}" if detail else ""))
        return
    if p.held is not None:
        yield from p.project_held()
    p.held = {"seg": seg, "hash": h, "text": text, "ts": p.ts,
              "localImages": [str(i) for i in images] if isinstance(images, list) and images else None}
    yield Report(METADATA, "user_message", "held until its response_item (else projected from a later line)")


def _token_count(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    info = payload.get("info")
    if not isinstance(info, dict):
        yield Report(SKIPPED, "token_count", "info is null (rate limits only)")
        return
    seg = p._seg()
    total = _cum(info.get("total_token_usage"))
    if total is None:
        last = _usage_of(info.get("last_token_usage"))
        if last is None:
            yield Report(SKIPPED, "token_count", "no usage")
            return
        yield p.usage(f"last:{p.last_assistant.get(seg)}", last)
        return
    prev = p.cum.get(seg)
    if prev == total:
        yield Report(SKIPPED, "token_count", "total already counted (repeated line or token_usage_record)")
        return
    with_cw = "cache_write_input_tokens" in (info.get("total_token_usage") or {})
    if prev is None or all(t >= q for t, q in zip(total, prev)):
        delta = [t - q for t, q in zip(total, prev or [0] * len(total))]
        usage = _usage_from_vector(delta, with_cw)
    else:
        # total went down: Codex reset its counter (compaction, resume); trust "last"
        usage = _usage_of(info.get("last_token_usage")) or _usage_from_vector(total, with_cw)
    p.cum[seg] = total
    tt = info["total_token_usage"].get("total_tokens")
    row = p.usage(f"cum:{tt if isinstance(tt, int) else total[0] + total[2]}", usage)
    yield from (p.hold_usage(row) if p.counts_first else (row,))


def _version(v: Any) -> tuple[int, ...]:
    """(0, 47, 0) from "0.47.0"; no or an unreadable version sorts as the newest."""
    try:
        return tuple(int(x) for x in str(v).split("-")[0].split("."))
    except ValueError:
        return (10**9,)


def _thread_name(p: CodexParser, payload: JsonObject) -> Iterator[Row]:
    name = _str(payload.get("thread_name"))
    if name and not name.startswith("[trimmed"):
        yield ThreadFact(p._seg(), {"title": name})
    else:
        yield Report(METADATA, "thread_name_updated")


EVENT_HANDLERS: dict[str, Callable[[CodexParser, JsonObject], Iterator[Row]]] = {
    "task_started": _task_started,
    "turn_started": _task_started,
    "user_message": _user_message_event,
    "token_count": _token_count,
    "thread_name_updated": _thread_name,
}


