"""pi coding agent sessions (``~/.pi/agent/sessions/--<cwd>--/<ISO time>_<uuid>.jsonl``).

Format (session format version 3, checked with pi 0.73.1): a ``session`` header line
(``id`` = the session uuid, ``cwd``, ``version``, ``parentSession`` = the path of the file a
fork was copied from), then entries that form a tree by ``id``/``parentId`` (8 hex digits,
unique within a file): ``message`` (roles ``user``, ``assistant``, ``toolResult``,
``bashExecution``, ``custom``, ``branchSummary``, ``compactionSummary``), ``model_change``,
``thinking_level_change``, ``compaction``, ``branch_summary``, ``custom``,
``custom_message``, ``label``, ``session_info``. The file is append-only.

Invariants of this module (each is tested on real recordings):

* **Threads.** The file's own thread is the header's ``id``. An entry whose parent is not
  the leaf of its parent's thread starts a *branch* (pi's ``/tree``, written in place):
  a thread ``<session>/branch-<first entry id>`` with ``parentThreadId`` the parent's
  thread, ``originMessageId`` the nearest message at or above the fork point and
  ``metadata.forkEntryId`` the entry it grew from (the lineage model of Claude Code forks).
* **Fork files.** ``pi --fork`` and ``/fork`` copy the parent's entries byte for byte into a
  new file whose header names ``parentSession``; pi 0.73.1 keeps the copies' timestamps,
  which are older than the new header. Entries stamped before the header are copies: they
  belong to the parent thread (its uuid is the last ``_<uuid>.jsonl`` part of
  ``parentSession``) with the ids the parent's own file gives them, so the history is stored
  once; the file's own thread gets ``parentThreadId`` and ``originMessageId`` (the last
  copied message its first own entry grew from).
* **Message ids** are ``stable_id("pi", <session the entry was first written in>, entry
  id)``; a message's ``parentId`` is the nearest message above it in the tree (settings
  entries such as ``model_change`` are in the tree but are not messages).
* **Usage, neutral already.** pi's ``usage.input`` excludes cache reads and cache writes
  (its OpenAI and Anthropic providers subtract them) and ``output`` includes reasoning, so
  the buckets are taken as they are; the whole vendor record, ``cost`` included (pi
  prices every response with its model table), stays in ``usage.extra["vendor"]``. One
  ``UsageRow`` per assistant entry, keyed ``pi:<message id>``: a copy in a fork file is
  the same response.
* **Thinking** keeps pi's ``thinkingSignature`` (Anthropic signatures, or the name of the
  OpenAI-compatible field the text came in, such as ``reasoning_content``) and
  ``redacted`` in ``Reasoning.extra``.
* **Session format v1** (pi 0.7 - 0.30; checked with 0.7.6, 0.13.2, 0.27.9 and 0.30.2; format
  v2, 0.31 on, has ids, checked with 0.31.1): a header
  without ``version`` (0.7: ``model`` as ``provider/id``; 0.13: ``provider``, ``modelId``,
  ``thinkingLevel``; a branch names its parent file in ``branchedFrom``) and entries without
  ``id``/``parentId``. pi's own loader (0.45+, ``migrateV1ToV2``) gives each non-header
  entry, in file order, a *random* 8-hex id and the previous entry as parent, and rewrites
  the file in place (0.73.1 on ``--session``: ``version`` appended to the header, ``id`` and
  ``parentId`` appended to each entry). Randomness cannot be repeated, so both readings use
  the entry's position instead: the k-th entry after the header is ``v1-<k>`` with
  ``v1-<k-1>`` as parent, in a v1 file and in its migrated copy alike (an entry whose
  ``id`` is not its second key, in a file whose header has ``version`` after ``id``, is
  such a migrated entry; its random id is remembered as an alias, the newest ``ALIAS_CAP``,
  so entries pi appends later attach to it; one that grows from an older migrated entry
  than that starts a branch). The rewritten file becomes a new generation whose
  messages are the same messages of the same thread. A v1 header may come after the first
  entries it describes (pi writes it at the first answer, 0.13 - 0.30): only a branch file's
  entries stamped before its header are copies. ``branchedFrom`` is read as ``parentSession``.
* **Bounded state.** The parser remembers only entries that are not plain messages of the
  file's own thread (copies, branches, settings entries), at most ``KNOWN_CAP``; an older
  one that was forgotten is taken as a message of the file's own thread (a warning names
  it when a branch grows from it). Resumable, deterministic, never raises on input; every
  non-blank line yields at least one row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    JsonObject,
    Message,
    Provenance,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
)
from ..base import claim_emitted
from ..base import nonempty_str as _str
from ..base import (
    decode_object,
    INVALID,
    METADATA,
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

NAME = "pi"
KNOWN_CAP = 400  # remembered entries (branches, copies, settings entries)
ALIAS_CAP = 128  # remembered random ids of migrated v1 entries (the newest; the leaf is the last)
MAX_THREADS = 64
_SESSION_FILE_RE = re.compile(r"_([0-9a-fA-F-]{36})\.jsonl$")


def _parse_ts(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _snippet(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)[:2000].decode("utf-8", "replace")


def _ms_ts(value: Any) -> str | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 10**14:
        dt = datetime.fromtimestamp(value / 1000, tz=timezone.utc)
        return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
    return None


def parent_session_id(path: Any) -> str | None:
    """The session uuid in a ``parentSession`` path (``.../<time>_<uuid>.jsonl``)."""
    m = _SESSION_FILE_RE.search(path) if isinstance(path, str) else None
    return m.group(1) if m else None


def content_blocks(content: Any) -> list[Block]:
    """pi user / tool result content: a string or a list of ``text`` and ``image`` parts."""
    if isinstance(content, str):
        return [Text(content)]
    if not isinstance(content, list):
        return [] if content is None else [Unknown(source_type=type(content).__name__, raw=content)]
    out: list[Block] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            extra = {k: v for k, v in part.items() if k not in ("type", "text")}
            out.append(Text(part["text"], extra=extra or None))
        elif kind == "image":
            extra = {k: v for k, v in part.items() if k not in ("type", "data", "mimeType")}
            out.append(Attachment(media_type=_str(part.get("mimeType")), data=_str(part.get("data")), extra=extra or None))
        else:
            out.append(Unknown(source_type=str(kind), raw=part))
    return out


def _assistant_blocks(content: Any) -> list[Block]:
    if not isinstance(content, list):
        return content_blocks(content)
    out: list[Block] = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            extra = {k: v for k, v in part.items() if k not in ("type", "text")}
            out.append(Text(part["text"], extra=extra or None))
        elif kind == "thinking":
            extra = {k: v for k, v in part.items() if k not in ("type", "thinking", "redacted")}
            if "thinkingSignature" in extra:
                extra["signature"] = extra.pop("thinkingSignature")
            out.append(Reasoning(text=part.get("thinking") if isinstance(part.get("thinking"), str) else None,
                                 redacted=True if part.get("redacted") is True else None, extra=extra or None))
        elif kind == "toolCall" and _str(part.get("id")) and isinstance(part.get("name"), str):
            extra = {k: v for k, v in part.items() if k not in ("type", "id", "name", "arguments")}
            out.append(ToolCall(part["id"], part["name"], part.get("arguments"), extra=extra or None))
        else:
            out.append(Unknown(source_type=str(kind), raw=part))
    return out


def tool_output(content: Any) -> Any:
    """A toolResult's content as the canonical output: the text when it is one text part
    (pi's usual shape), else the list as pi wrote it."""
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and content[0].get("type") == "text" and isinstance(content[0].get("text"), str) and len(content[0]) == 2:
        return content[0]["text"]
    return content


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def neutral_usage(u: JsonObject) -> Usage:
    """pi's usage in the neutral buckets (pi's are neutral already; see the module doc)."""
    return Usage(input_tokens=_int(u.get("input")), output_tokens=_int(u.get("output")),
                 cache_read_tokens=_int(u.get("cacheRead")), cache_write_tokens=_int(u.get("cacheWrite")),
                 reasoning_tokens=_int(u.get("reasoningTokens")),  # OpenClaw 2026.9 adds it; pi 0.73.1 does not
                 extra={"vendor": u})


class PiParser:
    """Feeds pi session lines; see the module docstring for what each line becomes.
    ``vendor`` names the provider of the rows (ids, provenance, usage keys): OpenClaw
    writes the same format and reads it with a subclass."""

    vendor = NAME

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.emitted: JsonObject = s.get("emitted", {})  # base.claim_emitted's held message
        self.session: str | None = s.get("session")  # the file's own thread (header id)
        self.header_ts: str | None = s.get("headerTs")
        self.parent: str | None = s.get("parent")  # parent session of a fork file
        self.cwd: str | None = s.get("cwd")
        self.own_started: bool = s.get("ownStarted", False)
        self.threads: list[str] = s.get("threads", [])  # thread index -> thread id
        self.leaves: dict[str, str] = s.get("leaves", {})  # thread index -> leaf entry id
        # entry id -> [thread index, is a copy] for a message (its id follows from these),
        # [thread index, is a copy, nearest message id above it] for a settings entry
        self.known: dict[str, list[Any]] = s.get("known", {})
        self.facts: dict[str, JsonObject] = s.get("facts", {})  # last metadata emitted per thread
        # session format v1 (no entry ids; see the module docstring): "v1" a v1 file,
        # "migrated" a v1 file pi rewrote, None the current format
        self.legacy: str | None = s.get("legacy")
        self.position: int = s.get("position", 0)  # entries after the header so far (v1 ids)
        self.aliases: dict[str, str] = s.get("aliases", {})  # migrated random id -> v1 id

    def parent_session(self, path: Any) -> str | None:
        """The session id a fork header's ``parentSession`` names."""
        return parent_session_id(path)

    def state(self) -> JsonObject:
        return {
            "emitted": self.emitted,
            "session": self.session, "headerTs": self.header_ts, "parent": self.parent, "cwd": self.cwd,
            "ownStarted": self.own_started, "threads": self.threads, "leaves": self.leaves,
            "known": self.known, "facts": self.facts,
            "legacy": self.legacy, "position": self.position, "aliases": self.aliases,
        }

    # -- identity

    def _session(self) -> str:
        if self.session is None:
            # no header before entries (a torn or trimmed file): a stable stand-in
            self.session = "pi-" + stable_id(self.source.source_id, "session")
        return self.session

    def _tidx(self, thread: str) -> int:
        if thread not in self.threads:
            self.threads.append(thread)
        return self.threads.index(thread)

    def _lookup(self, entry_id: str) -> tuple[str, str | None, bool, bool]:
        """(thread, nearest message id, is a copy, was remembered) of an earlier entry."""
        s = self._session()
        k = self.known.get(entry_id)
        if k is not None:
            copy = bool(k[1])
            anchor = k[2] if len(k) > 2 else stable_id(self.vendor, self.parent if copy and self.parent else s, entry_id)
            return self.threads[k[0]], anchor, copy, True
        return s, stable_id(self.vendor, s, entry_id), False, False

    def _remember(self, entry_id: str, thread: str, anchor: str | None, copy: bool, is_message: bool) -> None:
        k: list[Any] = [self._tidx(thread), 1 if copy else 0]
        if not is_message:
            k.append(anchor)
        self.known[entry_id] = k
        while len(self.known) > KNOWN_CAP:
            del self.known[next(iter(self.known))]

    # -- feeding

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        d = decode_object(line)
        if not isinstance(d, dict):
            return iter(() if d is None else [d])
        return iter(list(claim_emitted(d, self._dispatch(d), self.emitted)))

    def _dispatch(self, d: JsonObject) -> Iterator[Row]:
        kind = d.get("type")
        if kind == "session":
            yield from self._header(d)
            return
        raw, d = d, self._v1_ids(d)  # pi numbers every entry, known or not
        handler = HANDLERS.get(kind)  # type: ignore[arg-type]
        if handler is None:
            yield Report(UNKNOWN, f"entry type {kind}", _snippet(raw))
            return
        if not _str(d.get("id")):
            yield Report(INVALID, f"{kind}: entry without id", _snippet(raw))
            return
        thread, anchor_parent, origin, rows = self._place(d)
        yield from rows
        yield from handler(self, d, thread, anchor_parent, origin)

    def _v1_ids(self, d: JsonObject) -> JsonObject:
        """The entry with the ids pi's migration gives it, by position (module docstring):
        a v1 entry, or a migrated one (its random id becomes an alias); a current entry
        whose parent is a migrated one points at that one's v1 id."""
        if self.legacy is None:
            return d
        keys = list(d)
        pos = self.position
        self.position += 1
        if self.legacy == "v1" or (len(keys) < 2 or keys[1] != "id"):
            eid = f"v1-{pos}"
            if self.legacy == "migrated" and _str(d.get("id")):
                self.aliases[d["id"]] = eid
                while len(self.aliases) > ALIAS_CAP:
                    del self.aliases[next(iter(self.aliases))]
            return {**d, "id": eid, "parentId": f"v1-{pos - 1}" if pos else None}
        pid = _str(d.get("parentId"))
        return {**d, "parentId": self.aliases[pid]} if pid in self.aliases else d

    def _header(self, d: JsonObject) -> Iterator[Row]:
        sid = _str(d.get("id"))
        if sid is None:
            yield Report(INVALID, "session header without id", _snippet(d))
            return
        if self.session is not None and self.session != sid:
            yield Report(WARNING, "a second session header", _snippet(d))
            return
        self.session = sid
        self.header_ts = _str(d.get("timestamp"))
        self.cwd = _str(d.get("cwd"))
        keys = list(d)
        if "version" not in d:
            self.legacy = "v1"
        elif "id" in keys and keys.index("version") > keys.index("id"):
            self.legacy = "migrated"  # pi appended ``version`` when it rewrote a v1 file
        parent_path = d.get("parentSession") or d.get("branchedFrom")
        self.parent = self.parent_session(parent_path)
        self._tidx(sid)
        meta: JsonObject = {k: v for k, v in (("cwd", self.cwd), ("sessionVersion", d.get("version")),
                                              ("parentSession", parent_path)) if v is not None}
        if self.legacy:
            meta["sessionFormat"] = self.legacy
        fields: JsonObject = {"createdAt": self.header_ts or None, "metadata": meta}
        if self.parent:
            fields["parentThreadId"] = self.parent
        yield ThreadFact(sid, {k: v for k, v in fields.items() if v is not None})
        # v1 headers name the model and thinking level the session started with
        model, provider = _str(d.get("modelId")), _str(d.get("provider"))
        combined = _str(d.get("model"))  # 0.7: "google/gemini-2.5-flash"
        if model is None and combined:
            provider, _, model = combined.partition("/") if "/" in combined else (None, "", combined)
        yield from self.fact(sid, "model", model)
        yield from self.fact(sid, "modelProvider", provider or None)
        yield from self.fact(sid, "thinkingLevel", _str(d.get("thinkingLevel")))

    def _is_copy(self, d: JsonObject) -> bool:
        if self.parent is None or self.own_started:
            return False
        ts, head = _parse_ts(d.get("timestamp")), _parse_ts(self.header_ts)
        return ts is not None and head is not None and ts < head

    def _place(self, d: JsonObject) -> tuple[str, str | None, str, list[Row]]:
        """(thread, nearest message id above the entry, session the entry was written in,
        rows for a new branch) for an entry; updates the tree bookkeeping."""
        session = self._session()
        eid: str = d["id"]
        pid = _str(d.get("parentId"))
        rows: list[Row] = []
        if self._is_copy(d):
            assert self.parent is not None
            thread, origin = self.parent, self.parent
            anchor = self._lookup(pid)[1] if pid else None
        else:
            origin = session
            if pid is None:
                anchor = None
                if not self.own_started:
                    thread = session
                else:
                    thread = f"{session}/branch-{eid}"
                    rows.append(ThreadFact(thread, {"parentThreadId": session, "createdAt": d.get("timestamp"),
                                                    "metadata": {"cwd": self.cwd, "forkEntryId": None,
                                                                 "forkedFrom": session}}))
            else:
                pthread, anchor, _copy, remembered = self._lookup(pid)
                if not self.own_started:
                    thread = session
                    if pthread != session:  # a fork file: the first own entry grows from a copy
                        rows.append(ThreadFact(session, {"parentThreadId": pthread, "originMessageId": anchor,
                                                         "metadata": {"forkEntryId": pid, "forkedFrom": pthread}}))
                elif self.leaves.get(str(self._tidx(pthread))) == pid:
                    thread = pthread
                else:
                    thread = f"{session}/branch-{eid}"
                    fields: JsonObject = {"parentThreadId": pthread, "createdAt": d.get("timestamp"),
                                          "metadata": {"forkEntryId": pid, "forkedFrom": pthread,
                                                       **({"cwd": self.cwd} if self.cwd else {})}}
                    if anchor:
                        fields["originMessageId"] = anchor
                    rows.append(ThreadFact(thread, fields))
                    if not remembered and pthread == session and len(self.known) >= KNOWN_CAP:
                        rows.append(Report(WARNING, "branch from a forgotten entry",
                                           f"{pid}: taken as an entry of the session's own thread"))
            self.own_started = True
        if len(self.threads) >= MAX_THREADS and thread not in self.threads:
            rows.append(Report(WARNING, "too many branches", f"{eid}: kept in the last branch"))
            thread = self.threads[-1]
        is_message = d.get("type") in MESSAGE_TYPES
        mine = stable_id(self.vendor, origin, eid)
        own_anchor = mine if is_message else anchor
        self.leaves[str(self._tidx(thread))] = eid
        if thread != session or not is_message or origin != session:
            self._remember(eid, thread, own_anchor, origin != session, is_message)
        return thread, anchor, origin, rows

    # -- rows

    def fact(self, thread: str, key: str, value: Any) -> Iterator[Row]:
        seen = self.facts.setdefault(thread, {})
        if value is None or seen.get(key) == value:
            return
        seen[key] = value
        yield ThreadFact(thread, {"metadata": {key: value}})

    def message(self, d: JsonObject, thread: str, parent: str | None, origin: str, role: str,
                blocks: list[Block], extra: JsonObject, usage: Usage | None = None, model: str | None = None,
                ts: str | None = None) -> Iterator[Row]:
        mid = stable_id(self.vendor, origin, d["id"])
        msg = Message(
            id=mid, thread_id=thread, role=role, ts=_str(d.get("timestamp")) or ts, content=tuple(blocks),
            parent_id=parent, usage=None,
            provenance=Provenance(self.vendor, session_id=origin, source_id=d["id"]),
            extra={"piType": d.get("type"), **extra},
        )
        yield MessageRow(msg)
        if usage is not None:
            yield UsageRow(f"{self.vendor}:{mid}", thread, usage, mid, model, msg.ts)


MESSAGE_TYPES = {"message", "custom_message", "branch_summary", "compaction"}


def _message(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    m = d.get("message")
    if not isinstance(m, dict):
        yield Report(INVALID, "message without a message object", _snippet(d))
        return
    role = m.get("role")
    ts = _ms_ts(m.get("timestamp"))
    keep = {k: v for k, v in m.items() if k not in ("role", "content", "timestamp", "usage")}
    extra: JsonObject = {"piRole": role} if role not in ("user", "assistant") else {}
    if isinstance(m.get("timestamp"), (int, float)):
        extra["piTimestamp"] = m["timestamp"]
    if role == "user":
        yield from p.message(d, thread, parent, origin, "user", content_blocks(m.get("content")), {**extra, **keep}, ts=ts)
    elif role == "assistant":
        usage = neutral_usage(m["usage"]) if isinstance(m.get("usage"), dict) else None
        model = _str(m.get("model"))
        x = {**extra, **keep}
        yield from p.message(d, thread, parent, origin, "assistant", _assistant_blocks(m.get("content")), x,
                             usage, model, ts)
        yield from p.fact(thread, "model", model)
        yield from p.fact(thread, "modelProvider", _str(m.get("provider")))
    elif role == "toolResult":
        x = {k: v for k, v in keep.items() if k not in ("toolCallId", "isError", "details")}
        block_extra = {"toolName": m["toolName"]} if isinstance(m.get("toolName"), str) else {}
        if "details" in m:
            block_extra["details"] = m["details"]
        result = ToolResult(str(m.get("toolCallId") or ""), tool_output(m.get("content")),
                            m["isError"] if isinstance(m.get("isError"), bool) else None, extra=block_extra or None)
        x.pop("toolName", None)
        yield from p.message(d, thread, parent, origin, "tool", [result], {**extra, **x}, ts=ts)
    elif role in ("branchSummary", "compactionSummary"):
        text = m.get("summary")
        blocks: list[Block] = [Text(text)] if isinstance(text, str) else [Unknown(source_type=f"pi:{role}", raw=m)]
        yield from p.message(d, thread, parent, origin, "user", blocks, {**extra, **keep, "injected": True}, ts=ts)
    elif role == "custom":
        yield from p.message(d, thread, parent, origin, "user", content_blocks(m.get("content")),
                             {**extra, **keep, "injected": True}, ts=ts)
    else:
        # bashExecution (the user's own ``!command``) and roles this version does not know:
        # kept whole, as pi wrote them
        yield from p.message(d, thread, parent, origin, "user", [Unknown(source_type=f"pi:{role}", raw=m)],
                             {**extra, "injected": True}, ts=ts)


def _summary_entry(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    # compaction / branch_summary entries: the summary pi puts in front of the kept context
    keep = {k: v for k, v in d.items() if k not in ("type", "id", "parentId", "timestamp", "summary")}
    text = d.get("summary")
    blocks: list[Block] = [Text(text)] if isinstance(text, str) else []
    yield from p.message(d, thread, parent, origin, "user", blocks, {**keep, "injected": True})


def _custom_message(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    keep = {k: v for k, v in d.items() if k not in ("type", "id", "parentId", "timestamp", "content")}
    yield from p.message(d, thread, parent, origin, "user", content_blocks(d.get("content")), {**keep, "injected": True})


def _model_change(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    rows = list(p.fact(thread, "model", _str(d.get("modelId")))) + list(p.fact(thread, "modelProvider", _str(d.get("provider"))))
    yield from rows
    yield Report(METADATA, "model_change", _snippet({k: d.get(k) for k in ("provider", "modelId")}))


def _thinking_level(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    yield from p.fact(thread, "thinkingLevel", _str(d.get("thinkingLevel")))
    yield Report(METADATA, "thinking_level_change", _str(d.get("thinkingLevel")))


def _session_info(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    name = _str(d.get("name"))
    if name:
        yield ThreadFact(thread, {"title": name})
    yield Report(METADATA, "session_info", name)


def _label(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    yield Report(METADATA, "label", _snippet({k: d.get(k) for k in ("targetId", "label")}))


def _custom(p: PiParser, d: JsonObject, thread: str, parent: str | None, origin: str) -> Iterator[Row]:
    # extension state: never sent to the model
    yield Report(SKIPPED, "custom", _str(d.get("customType")))


Handler = Callable[[PiParser, JsonObject, str, "str | None", str], Iterator[Row]]
HANDLERS: dict[str, Handler] = {
    "message": _message,
    "compaction": _summary_entry,
    "branch_summary": _summary_entry,
    "custom_message": _custom_message,
    "model_change": _model_change,
    "thinking_level_change": _thinking_level,
    "session_info": _session_info,
    "label": _label,
    "custom": _custom,
}

