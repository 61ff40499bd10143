"""Claude Code session files (``~/.claude/projects/<slug>/*.jsonl``): locations, parser, emit.

Field notes: ``formats/claude-code.md`` of the shared docs. Invariants of this module:

* **One row set per line, resumable.** Every non-blank line yields a message, a thread
  fact or a ``Report``. The parser state is small and JSON-serialisable: the current
  turn per thread, last emitted metadata per thread, open tool calls (pruned when their
  result arrives, capped), open inline sidechain runs (capped) and a compressed Bloom
  filter of the uuids seen (for dangling-parent warnings without keeping every uuid).
* **Ids come from Claude.** Message id = the line's ``uuid`` (a line copied into another
  file by resume/fork is the same message). Main thread id = ``sessionId``; a subagent
  file's thread is ``f"{sessionId}/agent-{agentId}"``; a 1.0.x inline sidechain run is
  ``f"{sessionId}/sidechain-{uuid of its first line}"``.
* **One message per line.** Claude writes one API response as several lines (one per
  content block) sharing ``message.id``; each line is its own message, and each yields a
  ``UsageRow`` keyed ``claude-code:<message.id>`` so ingest keeps one (the latest) per
  response. Claude's ``input_tokens`` EXCLUDE cache reads and cache writes: the prompt
  size is ``inputTokens + cacheReadTokens + cacheWriteTokens``. ``output_tokens`` in
  2.1.x is a mid-stream snapshot (Claude Code never writes the final delta).
* **Never raises on input.** Torn, glued, NUL-filled or undecodable lines become
  ``PARSE_ERROR`` (a glued record after a torn stub is still parsed); dangling parents and
  cycles keep the message and add a ``WARNING``.
* **Emit is the cross-vendor path** (same-vendor re-emit restores stored lines): it builds
  a 2.1.x session from canonical messages with deterministic uuids derived from the
  thread id, and counts every dropped or transformed field in ``EmitResult.counts``.
  Every tool_use gets exactly one tool_result before the next response (a missing one is
  synthesized, a stray one becomes text); only reasoning with a Claude ``signature``
  becomes a thinking block. The project folder is the slug of ``cwd=`` if given, else of
  the thread's metadata cwd.
* **What the model read is a message** (issue 18; docs/adding-a-vendor.md). An
  ``attachment`` line (≥2.1.101) is a user message marked ``injected`` when the model read
  it: 2.1.332 records the text it sent as ``rendered`` (system-reminders: environment,
  model, date, listings, token budget; ``renderedBesideToolResult`` when it went inside a
  tool result); older lines carry a ``queued_command`` prompt (a background agent's
  ``<task-notification>``, ``commandMode`` "task-notification", or a prompt typed while
  the agent was busy) or ``hook_additional_context``. ``prompt_snapshot`` and
  ``session_context`` (no ``rendered``) stay skipped. 2.1.332 also writes
  ``api-request`` (params) and ``api-request-shape`` (system prompt and tools, ~75 KB once
  per shape): metadata; ``api-request-blob`` (a copy of one request message): duplicate;
  ``atis-latch`` and ``tools-used``: skipped. The Agent tool runs in the background by
  default in 2.1.332 ("Async agent launched successfully"); the result reaches the parent
  as a ``queued_command`` attachment when the parent is busy, else as a ``<task-notification>``
  user line.
* **agent_progress** (2.1.9-~2.1.100) copies a subagent line (``data.message``, same
  ``uuid``) into the trunk: it is projected into the child thread under that uuid, so it
  is the same message as the subagent file's line when that file is archived (one message,
  two occurrences) and the only copy when it is gone.
* **A 1.0.x resume is a continuation** (issue 33): its new file repeats the resumed turns
  under new uuids, so 1.0.x main-thread lines take ids the copy shares (``resume.py``).
* **Agent meta.json** names neither session nor agent: both come from the file's last
  path components (the same components that identify a snapshot source).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ...model import (
    Block,
    JsonObject,
    Message,
    Provenance,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
    WebSearch,
)
from ..base import claim_emitted, emitted_id
from ..base import nonempty_str as _str
from .side import checkpoint_rows
from ..base import (
    BlobRow,
    COMPANION,
    DUPLICATE,
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    UNKNOWN,
    WARNING,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    stable_id,
)
from .resume import ResumeIds

from .blocks import (  # noqa: F401  re-exported
    BLOOM_BYTES,
    EDIT_TOOLS,
    _as_text,
    _attachment,
    _block,
    _Bloom,
    _file_change,
    _hash,
    _loads,
    _patch_for_create,
    _patch_from_hunks,
    _persisted_output,
    _PERSISTED_RE,
    _tool_result,
)


NAME = "claude-code"
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
AGENT_FILE_RE = re.compile(r"^agent-(.+)\.jsonl$")
AGENT_META_RE = re.compile(r"^agent-(.+)\.meta\.json$")
AGENT_ID_IN_TEXT = re.compile(r"agentId: ([A-Za-z0-9_-]+)")

METADATA_KEYS = ("cwd", "gitBranch", "version", "entrypoint", "permissionMode")
SPAWN_TOOLS = {"Task", "Agent"}  # Task was renamed Agent around 2.1.6x
TITLE_RANK = {"summary": 1, "ai-title": 2, "custom-title": 3}
# Text a user line carries that the harness wrote, not the person (ccl messages.md §1.2).
# harness-written messages that carry a result the model acts on (a background agent's
# report), not context a client would write again: ``extra["conversation"]``
CONVERSATION_PREFIXES = ("<task-notification>",)
INJECTED_PREFIXES = (
    "Caveat: The messages below were generated by the user while running local commands",
    "<local-command-caveat>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "[Request interrupted by user",
    "<task-notification>",
    "<system-reminder>",
    "This session is being continued from a previous conversation",
)
SKIPPED_TYPES = (
    "queue-operation",
    "attachment",
    "last-prompt",
    "mode",
    "agent-name",
    "pr-link",
    "tag",
    "agent-setting",
    "worktree-state",
    "cost-state",
    "saved_hook_context",
    "turn_end",
)
# Records ≥2.1.3xx writes about each API request (seen first in 2.1.332). None of them is
# conversation: the model reads the request's messages, which the user/assistant/attachment
# lines of the same file hold; these are the client's own bookkeeping of them.
REQUEST_RECORDS: dict[str, tuple[str, str]] = {
    # {id, querySource, shapeHash, params{model, betas, max_tokens, thinking, ...}, thread}
    "api-request": (METADATA, "request parameters (model, betas, max_tokens, thinking)"),
    # {shapeHash, shape{system, tools, ...}}: the system prompt and tool schemas, written
    # once per shape; the request envelope is client configuration, not a message
    "api-request-shape": (METADATA, "system prompt and tool schemas of the requests with this shapeHash"),
    # {hash, message}: a content-addressed copy of one request message, written after the
    # transcript lines (user, attachment) that hold the same content
    "api-request-blob": (DUPLICATE, "copy of a request message held by this file's user/attachment lines"),
    "atis-latch": (SKIPPED, "client state latch {atis}"),
    "tools-used": (SKIPPED, "running list of the tool names used so far"),
}
SYSTEM_MESSAGE_SUBTYPES = {
    "compact_boundary",
    "microcompact_boundary",
    "local_command",
    "informational",
    "away_summary",
    "bridge_status",
}
SYSTEM_SKIPPED_SUBTYPES = {"api_error", "turn_duration", "stop_hook_summary"}

MAX_CALLS = 256  # open tool calls kept; orphans (interrupted runs) fall off the front
MAX_RUNS = 8  # open inline sidechain runs
RUN_TAIL = 16  # recent uuids remembered per run, to attach a line to its run
MAX_PENDING = 64


# ---------------------------------------------------------------- the parser


class ClaudeCodeParser:
    """Resumable parser of one Claude Code JSONL source (see the module docstring)."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.emitted: JsonObject = s.get("emitted", {})  # base.claim_emitted's held message
        self.sid: str | None = s.get("sid")
        self.agent_file: bool = bool(s.get("agent"))
        self.turn: dict[str, str] = dict(s.get("turn") or {})
        self.meta: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (s.get("meta") or {}).items()}
        self.created: list[str] = list(s.get("created") or [])
        self.titles: dict[str, int] = dict(s.get("titles") or {})
        self.calls: dict[str, list[Any]] = {k: list(v) for k, v in (s.get("calls") or {}).items()}
        self.runs: dict[str, list[str]] = {k: list(v) for k, v in (s.get("runs") or {}).items()}
        self.pending: dict[str, str] = dict(s.get("pending") or {})
        self.commands: dict[str, str] = dict(s.get("commands") or {})  # thread -> its last slash command line
        self.seen = _Bloom(s.get("seen"))
        self.resume_ids = ResumeIds(s.get("resumeIds"))

    def state(self) -> JsonObject:
        return {
            "emitted": self.emitted,
            "sid": self.sid,
            "agent": self.agent_file,
            "turn": self.turn,
            "meta": self.meta,
            "created": self.created,
            "titles": self.titles,
            "calls": self.calls,
            "runs": self.runs,
            "pending": self.pending,
            "commands": self.commands,
            "seen": self.seen.pack(),
            "resumeIds": self.resume_ids.state(),
        }

    # -- entry point

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return
        records, reports = _loads(line)
        yield from reports
        for d in records:
            if not isinstance(d, dict):
                yield Report(PARSE_ERROR, "not a JSON object", type(d).__name__)
                continue
            # a raise here is a parser bug: ingest records it as adapter_error, never as bad input
            yield from claim_emitted(d, self._record(d, offset), self.emitted)

    def _record(self, d: JsonObject, offset: int) -> Iterator[Row]:
        rtype = d.get("type")
        if not isinstance(rtype, str):
            yield Report(INVALID, "record without type", None)
            return
        handler = HANDLERS.get(rtype)
        if handler is None:
            if rtype in SKIPPED_TYPES:
                handler = ClaudeCodeParser._skipped
            else:
                yield Report(UNKNOWN, rtype, orjson.dumps(d)[:500].decode("utf-8", "replace"))
                return
        yield from handler(self, d, offset)

    # -- thread resolution and thread facts

    def _session(self, d: JsonObject) -> str:
        sid = _str(d.get("sessionId"))
        if sid:
            self.sid = sid
            return sid
        if self.sid:
            return self.sid
        # A record before any sessionId (a summary backfilled at the top of the file):
        # the file is named by its session id.
        stem = Path(self.source.path).stem
        return stem if UUID_RE.match(stem) else f"unknown-{self.source.source_id}"

    def _thread(self, d: JsonObject, out: list[Row]) -> str:
        sid = self._session(d)
        if d.get("isSidechain") is True:
            agent = _str(d.get("agentId"))
            if agent:
                self.agent_file = True
                tid = f"{sid}/agent-{agent}"
                if tid not in self.created:
                    out.append(ThreadFact(tid, {"parentThreadId": sid, "agentId": agent}))
                return tid
            return self._sidechain_run(d, sid, out)
        return sid

    def _sidechain_run(self, d: JsonObject, sid: str, out: list[Row]) -> str:
        """1.0.x inline sidechains: each run starts at parentUuid null; later lines join the
        run holding their parent."""
        uid = _str(d.get("uuid")) or stable_id(self.source.source_id, d.get("timestamp"))
        parent = _str(d.get("parentUuid"))
        run = None
        if parent:
            run = next((r for r, tail in self.runs.items() if parent in tail), None)
            if run is None and self.runs:
                run = list(self.runs)[-1]
                out.append(Report(WARNING, "sidechain line without its run", parent))
        if run is None:
            run = uid
            self.runs[run] = []
            while len(self.runs) > MAX_RUNS:
                self.runs.pop(next(iter(self.runs)))
            tid = f"{sid}/sidechain-{run}"
            fields: JsonObject = {"parentThreadId": sid}
            origin = self._match_spawn(_hash(_as_text((d.get("message") or {}).get("content"))), tid)
            if origin:
                fields["originMessageId"] = origin[0]
                if origin[1]:
                    fields["title"] = origin[1]
            out.append(ThreadFact(tid, fields))
        tail = self.runs[run]
        tail.append(uid)
        del tail[:-RUN_TAIL]
        return f"{sid}/sidechain-{run}"

    def _match_spawn(self, prompt_hash: str | None, child: str) -> tuple[str, str | None] | None:
        """The open Task/Agent call that spawned an inline sidechain: same prompt text,
        else the most recent unmatched one (1.0.x links them only by order and prompt)."""
        spawns = [(k, v) for k, v in self.calls.items() if v[1] in SPAWN_TOOLS and not v[5]]
        pick = next(((k, v) for k, v in spawns if prompt_hash and v[4] == prompt_hash), None)
        if pick is None and spawns:
            pick = spawns[-1]
        if pick is None:
            return None
        pick[1][5] = child
        return pick[1][0], pick[1][3]

    def _facts(self, tid: str, d: JsonObject, out: list[Row]) -> None:
        """createdAt once per thread; metadata keys only when their value changes."""
        fields: JsonObject = {}
        if tid not in self.created and _str(d.get("timestamp")):
            self.created.append(tid)
            fields["createdAt"] = d["timestamp"]
        last = self.meta.setdefault(tid, {})
        changed: JsonObject = {}
        if "provider" not in last:
            last["provider"] = changed["provider"] = NAME
        for key in METADATA_KEYS:
            value = d.get(key)
            if key == "cwd" and "cwd" in last:
                # the project is where the session started; a later `cd` is kept apart
                if value == last.get("lastCwd", last["cwd"]):
                    continue
                key = "lastCwd"
            if isinstance(value, str) and last.get(key) != value:
                last[key] = changed[key] = value
        if changed:
            fields["metadata"] = changed
        if fields:
            out.append(ThreadFact(tid, fields))

    def _set_meta(self, tid: str, key: str, value: Any, out: list[Row]) -> None:
        last = self.meta.setdefault(tid, {})
        if last.get(key) != value:
            last[key] = value
            out.append(ThreadFact(tid, {"metadata": {key: value}}))

    def _links(self, d: JsonObject, tid: str, out: list[Row]) -> None:
        """Record the uuid; warn about a parent never seen (main thread only: subagent and
        compaction-agent roots point into the trunk file, 2.1.39) and about cycles."""
        uid = _str(d.get("uuid"))
        parent = _str(d.get("parentUuid"))
        if not uid:
            return
        if parent == uid or (uid in self.pending and self.pending[uid] == parent):
            out.append(Report(WARNING, "parentUuid cycle", f"{uid} -> {parent}"))
        self.pending.pop(uid, None)
        if parent and parent != uid and parent not in self.seen and d.get("isSidechain") is not True:
            out.append(Report(WARNING, "dangling parentUuid", parent))
            self.pending[parent] = uid
            while len(self.pending) > MAX_PENDING:
                self.pending.pop(next(iter(self.pending)))
        self.seen.add(uid)

    # -- record handlers

    def _skipped(self, d: JsonObject, offset: int) -> Iterator[Row]:
        att = d.get("attachment")
        sub = d.get("operation") or (att.get("type") if isinstance(att, dict) else None)
        out: list[Row] = []
        if _str(d.get("uuid")):  # attachment lines are links of the parentUuid chain (≥2.1.101)
            tid = self._thread(d, out)
            self._facts(tid, d, out)
            self._links(d, tid, out)
        elif _str(d.get("timestamp")) and _str(d.get("sessionId")) and not self.agent_file:
            # a queue-operation is often the first record of a session (2.1.x)
            tid = self._session(d)
            if tid not in self.created:
                self.created.append(tid)
                out.append(ThreadFact(tid, {"createdAt": d["timestamp"]}))
        yield from out
        yield Report(SKIPPED, str(d.get("type")), sub if isinstance(sub, str) else None)

    def _checkpoint(self, d: JsonObject, offset: int) -> Iterator[Row]:
        yield from checkpoint_rows(d, self.source.path, self.sid)  # side.py (issue 38)

    def _request_record(self, d: JsonObject, offset: int) -> Iterator[Row]:
        kind, why = REQUEST_RECORDS[str(d.get("type"))]
        yield Report(kind, str(d.get("type")), why)

    def _attachment(self, d: JsonObject, offset: int) -> Iterator[Row]:
        """An attachment line (≥2.1.101) is a message when the model read it: ≥2.1.3xx
        records what it sent as ``rendered`` (system-reminder texts placed in the next user
        message, or beside a tool result: ``renderedBesideToolResult``); older lines name
        it by type only, and of those a ``queued_command`` (a prompt queued while the agent
        was busy, or a ``<task-notification>`` of a background task) and
        ``hook_additional_context`` carry their text. The rest (prompt_snapshot,
        session_context, and the old listings whose rendering is not recorded) stay
        ``skipped``."""
        att = d.get("attachment") if isinstance(d.get("attachment"), dict) else {}
        atype = _str(att.get("type")) or "?"
        uid = _str(d.get("uuid"))
        rendered = d.get("rendered")
        blocks: list[Block] = []
        if isinstance(rendered, list):
            blocks = [Text(text=r["content"]) for r in rendered if isinstance(r, dict) and isinstance(r.get("content"), str)]
        prompt = att.get("prompt") if atype == "queued_command" else att.get("content") if atype == "hook_additional_context" else None
        if not blocks and isinstance(prompt, str):
            blocks = [Text(text=prompt)]
        elif not blocks and isinstance(prompt, list):
            for b in prompt:
                blocks.extend([Text(text=b)] if isinstance(b, str) else _block(b))
        if not blocks or uid is None:
            yield from self._skipped(d, offset)
            return
        out: list[Row] = []
        tid = self._thread(d, out)
        self._facts(tid, d, out)
        self._links(d, tid, out)
        extra: JsonObject = {"attachment": atype}
        mode = _str(att.get("commandMode"))
        # a prompt the user typed while the agent was busy (steering; no commandMode before
        # ~2.1.1xx) is the user's; a task notification, or any text Claude rendered, is not
        typed = atype == "queued_command" and mode != "task-notification" and not rendered
        text = _as_text(prompt) or ""
        if not typed or text.lstrip().startswith(INJECTED_PREFIXES):
            extra["injected"] = True  # the harness wrote it (a typed queued prompt is the user's)
        if mode == "task-notification" or text.lstrip().startswith(CONVERSATION_PREFIXES):
            extra["conversation"] = True  # a background task's result: conversation, not context
        if mode:
            extra["commandMode"] = mode
        for key in ("renderedRole", "renderedBesideToolResult"):
            if key in d:
                extra[key] = d[key]
        yield from out
        yield MessageRow(self._build(d, tid, uid, "user", blocks, extra))

    def _progress(self, d: JsonObject, offset: int) -> Iterator[Row]:
        out: list[Row] = []
        tid = self._thread(d, out)
        self._facts(tid, d, out)
        self._links(d, tid, out)
        yield from out
        data = d.get("data") if isinstance(d.get("data"), dict) else {}
        sub = data.get("type")
        nested = data.get("message")
        agent = _str(data.get("agentId"))
        if sub == "agent_progress" and isinstance(nested, dict) and agent and nested.get("type") in ("user", "assistant"):
            # A subagent message, as its own file has it (same uuid): projected into the
            # child thread under that uuid. When the subagent's file is archived too, both
            # lines are occurrences of one message (stored once); when it is gone, this
            # is the only copy (2.1.9-~2.1.100).
            rec = {**nested, "sessionId": self._session(d), "isSidechain": True, "agentId": agent}
            keep = self.agent_file  # this is still the trunk's file
            rows = list(self._message(rec, offset))
            self.agent_file = keep
            yield from rows
        elif sub == "agent_progress":
            yield Report(SKIPPED, "progress", "agent_progress without a subagent message")
        else:
            yield Report(SKIPPED, "progress", sub if isinstance(sub, str) else None)

    def _permission_mode(self, d: JsonObject, offset: int) -> Iterator[Row]:
        out: list[Row] = []
        mode = _str(d.get("permissionMode"))
        if mode:
            self._set_meta(self._session(d), "permissionMode", mode, out)
        yield from out
        yield Report(METADATA, "permission-mode", mode)

    def _title(self, d: JsonObject, offset: int) -> Iterator[Row]:
        rtype = str(d.get("type"))
        text = _str(d.get({"summary": "summary", "custom-title": "customTitle", "ai-title": "aiTitle"}[rtype]))
        text = text or _str(d.get("title"))  # some writers put ai-title text in "title"
        tid = self._session(d)
        rank = TITLE_RANK[rtype]
        if text and rank >= self.titles.get(tid, 0):
            self.titles[tid] = rank
            yield ThreadFact(tid, {"title": text})
        else:
            yield Report(METADATA, rtype, "title of lower priority kept" if text else "empty title")

    def _system(self, d: JsonObject, offset: int) -> Iterator[Row]:
        out: list[Row] = []
        tid = self._thread(d, out)
        self._facts(tid, d, out)
        self._links(d, tid, out)
        yield from out
        sub = str(d.get("subtype"))
        reason = f"system/{sub}"
        if sub in SYSTEM_SKIPPED_SUBTYPES:
            detail = None
            if sub == "api_error":
                detail = orjson.dumps(d.get("error"))[:300].decode("utf-8", "replace")
            yield Report(SKIPPED, reason, detail)
            return
        uid = _str(d.get("uuid"))
        content = d.get("content")
        if uid is None or (sub not in SYSTEM_MESSAGE_SUBTYPES and not isinstance(content, str)):
            yield Report(UNKNOWN, reason, orjson.dumps(d)[:500].decode("utf-8", "replace"))
            return
        extra: JsonObject = {"subtype": sub}
        for key in ("level", "compactMetadata", "microcompactMetadata", "logicalParentUuid", "isMeta", "url"):
            if key in d:
                extra[key] = d[key]
        blocks: list[Block] = [Text(text=content)] if isinstance(content, str) else []
        if sub not in SYSTEM_MESSAGE_SUBTYPES:
            blocks.append(Unknown(source_type=reason, raw=d))
        # A compact boundary is a new root (parentUuid null); its logical parent keeps
        # the conversation linked across the compaction.
        parent = _str(d.get("parentUuid")) or _str(d.get("logicalParentUuid"))
        yield MessageRow(
            Message(
                id=uid,
                thread_id=tid,
                role="system",
                ts=_str(d.get("timestamp")),
                content=tuple(blocks),
                turn_id=self.turn.get(tid),
                parent_id=parent,
                provenance=self._provenance(d),
                extra=extra,
            )
        )
        if sub not in SYSTEM_MESSAGE_SUBTYPES:
            yield Report(UNKNOWN, reason, None)

    def _provenance(self, d: JsonObject) -> Provenance:
        extra: JsonObject = {}
        msg = d.get("message") if isinstance(d.get("message"), dict) else {}
        for key, value in (("messageId", msg.get("id")), ("requestId", d.get("requestId")), ("agentId", d.get("agentId"))):
            if isinstance(value, str):
                extra[key] = value
        return Provenance(
            provider=NAME,
            session_id=_str(d.get("sessionId")) or self.sid,
            source_id=_str(d.get("uuid")),
            sidechain=d.get("isSidechain") if isinstance(d.get("isSidechain"), bool) else None,
            extra=extra or None,
        )

    def _message(self, d: JsonObject, offset: int) -> Iterator[Row]:
        msg = d.get("message")
        if not isinstance(msg, dict):
            yield Report(INVALID, f"{d.get('type')} without message", None)
            return
        out: list[Row] = []
        tid = self._thread(d, out)
        self._facts(tid, d, out)
        self._links(d, tid, out)
        # a line emit wrote: the message it was written from (claim_emitted), also for the
        # subagents and results that name it
        uid = (emitted_id(d) or self.resume_ids.id(d, msg, tid == self.sid) or _str(d.get("uuid"))
               or stable_id(self.source.source_id, self.source.generation, offset))
        if d["type"] == "assistant":
            message, more = self._assistant(d, msg, tid, uid)
        else:
            message, more = self._user(d, msg, tid, uid)
        yield from out
        yield MessageRow(message)
        yield from more

    def _assistant(self, d: JsonObject, msg: JsonObject, tid: str, uid: str) -> tuple[Message, list[Row]]:
        more: list[Row] = []
        content = msg.get("content")
        blocks: list[Block] = []
        for b in content if isinstance(content, list) else ([{"type": "text", "text": content}] if isinstance(content, str) else []):
            blocks.extend(_block(b))
        for b in blocks:
            if isinstance(b, ToolCall):
                inp = b.input if isinstance(b.input, dict) else {}
                prompt = inp.get("prompt") if isinstance(inp.get("prompt"), str) else None
                desc = inp.get("description") if isinstance(inp.get("description"), str) else None
                # [message uuid, tool name, thread, description, prompt hash, matched child]
                self.calls[b.call_id] = [uid, b.name, tid, desc, _hash(prompt), None]
                while len(self.calls) > MAX_CALLS:
                    self.calls.pop(next(iter(self.calls)))
        model = _str(msg.get("model"))
        extra: JsonObject = {}
        if model:
            extra["model"] = model
        if msg.get("stop_reason") is not None:
            extra["stopReason"] = msg.get("stop_reason")
        for key in ("isApiErrorMessage", "error", "apiError"):
            if key in d:
                extra[key] = d[key]
        synthetic = model == "<synthetic>"  # API error replies written by Claude Code itself
        if model and not synthetic:
            self._set_meta(tid, "model", model, more)
        usage = msg.get("usage")
        if isinstance(usage, dict) and not synthetic:
            key = _str(msg.get("id")) or _str(d.get("requestId")) or uid
            more.append(
                UsageRow(
                    key=f"{NAME}:{key}",
                    thread_id=tid,
                    usage=_usage(usage),
                    message_id=uid,
                    model=model,
                    ts=_str(d.get("timestamp")),
                )
            )
        return self._build(d, tid, uid, "assistant", blocks, extra), more

    def _build(self, d: JsonObject, tid: str, uid: str, role: str, blocks: list[Block], extra: JsonObject) -> Message:
        return Message(
            id=uid,
            thread_id=tid,
            role=role,
            ts=_str(d.get("timestamp")),
            content=tuple(blocks),
            turn_id=self.turn.get(tid),
            parent_id=self.resume_ids.parent(_str(d.get("parentUuid"))),
            provenance=self._provenance(d),
            extra=extra or None,
        )

    def _user(self, d: JsonObject, msg: JsonObject, tid: str, uid: str) -> tuple[Message, list[Row]]:
        more: list[Row] = []
        content = msg.get("content")
        tur = d.get("toolUseResult")
        blocks: list[Block] = []
        results = 0
        edit_done = False
        items = content if isinstance(content, list) else ([{"type": "text", "text": content}] if isinstance(content, str) else [])
        for b in items:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                results += 1
                produced = _tool_result(b)
                persisted = _persisted_output(tur, b)
                if persisted:
                    res = produced[0]
                    produced[0] = ToolResult(res.call_id, res.output, res.is_error, {**(res.extra or {}), COMPANION: persisted})
                blocks.extend(produced)
                cid = produced[0].call_id  # as _tool_result read it ("" when the vendor gave none)
                call = self.calls.pop(cid, None)
                name = call[1] if call else None
                if tur is not None and not edit_done and b.get("is_error") is not True:
                    fc = _file_change(cid, name, tur)
                    if fc is not None:
                        blocks.append(fc)
                        edit_done = True
                    elif name == "WebSearch" and isinstance(tur, dict) and isinstance(tur.get("query"), str):
                        blocks.append(WebSearch(call_id=cid, query=tur["query"], results=tur.get("results")))
                # toolUseResult.agentId names the child whatever the tool is called (an
                # emitted cross-vendor session keeps the source's spawn tool name)
                if call and (name in SPAWN_TOOLS or (isinstance(tur, dict) and _str(tur.get("agentId")))):
                    more.extend(self._spawned(call, b, tur, d))
            else:
                blocks.extend(_block(b))
        extra: JsonObject = {}
        for key in ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly"):
            if d.get(key) is True:
                extra[key] = True
        text = _as_text(content) or ""
        injected = bool(extra) or text.lstrip().startswith(INJECTED_PREFIXES)
        tool_only = results > 0 and results == len(items)
        if injected:
            extra["injected"] = True
            # a background task's report, or the prompt a slash command expanded to (the
            # isMeta message right after the command line): the harness wrote them, but they
            # are the conversation, not context a target client would write again
            if text.lstrip().startswith(CONVERSATION_PREFIXES) or (
                    extra.get("isMeta") and not text.lstrip().startswith(INJECTED_PREFIXES)
                    and d.get("parentUuid") is not None and d.get("parentUuid") == self.commands.get(tid)):
                extra["conversation"] = True
        elif not tool_only:
            self.turn[tid] = uid  # a real prompt opens a turn
        m = re.search(r"<command-name>([^<]*)</command-name>", text)
        if m and not injected:
            extra["command"] = m.group(1).strip()
            self.commands[tid] = _str(d.get("uuid")) or uid  # compared with a later line's parentUuid
        if tur is not None:
            extra["toolUseResult"] = tur
        return self._build(d, tid, uid, "user", blocks, extra), more

    def _spawned(self, call: list[Any], b: JsonObject, tur: Any, d: JsonObject) -> list[Row]:
        """A Task/Agent result names its child: toolUseResult.agentId (2.1.x), else the
        'agentId: <id>' trailer of the result text (2.0.x)."""
        agent = _str(tur.get("agentId")) if isinstance(tur, dict) else None
        if agent is None:
            text = b.get("content") if isinstance(b.get("content"), str) else _last_text(b.get("content"))
            m = AGENT_ID_IN_TEXT.search(text or "")
            agent = m.group(1) if m else None
        if agent is None:
            return []
        sid = self._session(d)
        fields: JsonObject = {"parentThreadId": call[2], "originMessageId": call[0], "agentId": agent}
        if call[3]:
            fields["title"] = call[3]
        return [ThreadFact(f"{sid}/agent-{agent}", fields)]


def _last_text(content: Any) -> str | None:
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
        return texts[-1] if texts else None
    return None


def _usage(u: JsonObject) -> Usage:
    def num(key: str) -> int | None:
        v = u.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    extra = {k: v for k, v in u.items() if k not in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")}
    return Usage(
        input_tokens=num("input_tokens"),
        output_tokens=num("output_tokens"),
        cache_read_tokens=num("cache_read_input_tokens"),
        cache_write_tokens=num("cache_creation_input_tokens"),
        extra=extra or None,
    )


HANDLERS: dict[str, Callable[[ClaudeCodeParser, JsonObject, int], Iterator[Row]]] = {
    "user": ClaudeCodeParser._message,
    "assistant": ClaudeCodeParser._message,
    "system": ClaudeCodeParser._system,
    "progress": ClaudeCodeParser._progress,
    "summary": ClaudeCodeParser._title,
    "custom-title": ClaudeCodeParser._title,
    "ai-title": ClaudeCodeParser._title,
    "permission-mode": ClaudeCodeParser._permission_mode,
    "attachment": ClaudeCodeParser._attachment,
    "file-history-snapshot": ClaudeCodeParser._checkpoint,
    "file-history-delta": ClaudeCodeParser._checkpoint,
    **{t: ClaudeCodeParser._request_record for t in REQUEST_RECORDS},
}


class ToolResultsFileParser:
    """``<sessionId>/tool-results/<file>``: a tool's full output that the transcript keeps
    only a preview of (the tool_result's ``extra["companion"]`` names it). Stored byte for
    byte as a snapshot source and as a blob."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        parts = Path(self.source.path).parts
        detail = {"companion": "/".join(parts[-3:]), "sha256": hashlib.sha256(line).hexdigest(), "bytes": len(line)}
        yield BlobRow(line, "text/plain")
        yield Report(METADATA, "tool-results file", orjson.dumps(detail).decode())


class AgentMetaParser:
    """``agent-<id>.meta.json`` (≥2.1.172): ``{agentType, description, toolUseId, spawnDepth}``.
    The document names neither the session nor the agent, so both come from the last path
    components ``<sessionId>/subagents/[workflows/<run>/]agent-<id>.meta.json``, the same
    components that identify a snapshot source."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "invalid JSON", str(e))
            return
        parts = Path(self.source.path).parts
        m = AGENT_META_RE.match(parts[-1]) if parts else None
        if not isinstance(d, dict) or m is None or "subagents" not in parts:
            yield Report(INVALID, "agent meta.json", "not an object, or not at <session>/subagents/")
            return
        sid = parts[len(parts) - 1 - list(reversed(parts)).index("subagents") - 1]
        agent = m.group(1)
        fields: JsonObject = {"agentId": agent}
        depth = d.get("spawnDepth")
        # nested agents (depth > 1) are spawned by another agent, which its own result names
        if not isinstance(depth, int) or depth <= 1:
            fields["parentThreadId"] = sid
        if _str(d.get("description")):
            fields["title"] = d["description"]
        meta = {k: d[k] for k in ("agentType", "spawnDepth") if k in d}
        if _str(d.get("toolUseId")):
            meta["spawnCallId"] = d["toolUseId"]  # ingest can resolve it to originMessageId
        if meta:
            fields["metadata"] = meta
        yield ThreadFact(f"{sid}/agent-{agent}", fields)


