"""clm (github.com/mischief/clm) session logs: ``$XDG_STATE_HOME/clm/<id>.jsonl`` and companions.

Format (clm-session(5), format version 1): JSON Lines; line 1 is a ``meta`` record
(``v``, ``id``, ``created`` in epoch seconds, optional ``model``/``provider``/``agent``),
then ``prompt`` records (the system prompt as sent, with a 64-bit FNV-1a ``hash``) and
``msg`` records (``role``, plain ``content``, ``tool_calls`` with ``args`` as a raw JSON
string, ``tool_call_id``/``tool_name`` on tool results, image ``attachments`` that point at
``<id>.blobs/<sha256>.<ext>``). There are no message ids and no timestamps. A compaction
rewrites the whole file (meta line kept verbatim, new inode, may shrink) and leaves the
previous file as ``<id>.jsonl.bak``; ingest turns that into a new generation.

Invariants:

* **Reader rules are clm's.** A line that is not a JSON object, or whose ``type`` is
  unknown, is reported and skipped. A ``meta`` whose ``v`` is a number larger than 1,
  on any line, refuses the file from there on (clm's loader fails with EPROTONOSUPPORT):
  one ``REFUSED`` report for it and for every later line; the state remembers it.
* **Message identity without vendor ids.** clm compacts only at a *cut point*: a user
  message, or (agentic runs with one user message) an assistant message carrying
  ``tool_calls`` (history.c ``clm_history_compact``). Those records are *anchors*; a
  compaction keeps whole segments ``[anchor, next anchor)`` verbatim behind a new summary.
  With ``h`` the sha256 of a record (type plus every key but ``type``, sorted, so key order
  and spacing do not matter):

  - an anchor's id is ``stable_id("clm", session, h, k)``, ``k`` counting the earlier
    anchors of this generation with the same ``h``;
  - any other record's id is ``stable_id("clm", session, anchor id, h, k)``, ``k``
    counting the same ``h`` since that anchor (prompt records count over the generation).

  So a kept message gets the same id in every generation however far it moved, even a
  "Done." that every turn ends with. Known limit: if the folded-away part held an anchor
  identical to a kept one (a user typing "yes" twice; tool-call anchors carry the
  provider's call ids), the kept anchor's ``k`` drops and it takes the earliest twin's id,
  and its segment follows it; contents are equal, only superseded flags point at the
  wrong copy.
* **Turns.** Every ``role=user`` message (typed or ``[context update]``) opens a turn whose
  id derives from the message id; other messages join the current turn. Prompt records
  are in no turn. ``ts`` is always null: clm has no message times. Known limit: after an
  agentic compaction the kept exchanges follow the summary (a user message), so their
  turn in the new generation is the summary's, while their ids stay.
* **Bytes.** Content capped at 65535 bytes may end inside a UTF-8 sequence, which orjson
  rejects: such a line is decoded with ``surrogateescape`` (the id hashes the exact
  bytes), its text shown with U+FFFD, and a ``WARNING`` is recorded. The exact bytes stay
  in the source layer.
* **Companions.** ``<id>.blobs/<sha>.<ext>`` and ``<id>.spool/<call>.txt`` are snapshot
  sources: each yields a ``BlobRow`` (spool files also a ``METADATA`` report naming the
  call). A tool result whose text names its spool file carries ``extra["spool"]``.
* **Emit** writes what clm itself would write: meta first, clm's key order, compact JSON
  (cJSON_PrintUnformatted), ``args`` as a string; a clm thread parsed here re-emits byte
  for byte. Everything clm cannot hold is counted in ``EmitResult.counts``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    JsonObject,
    Message,
    Provenance,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
)
from ..base import (
    EMIT_MARK,
    claim_emitted,
    INVALID,
    METADATA,
    PARSE_ERROR,
    REFUSED,
    SKIPPED,
    SNAPSHOT,
    UNKNOWN,
    WARNING,
    BlobRow,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    stable_id,
)

NAME = "clm"
FORMAT_VERSION = 1  # clm-session(5) version 1, the only one published (clm, August 2026)
CONTENT_CAP = 65535  # history.c stores content_len as uint16_t and cuts silently
CONTEXT_UPDATE = "[context update]"
ROLES = ("system", "user", "assistant", "tool")

ID_RE = re.compile(r"^[0-9A-Za-z-]{1,64}$")  # session.c id_valid / schema sessionId
BLOB_RE = re.compile(r"^([0-9a-f]{64})\.(png|jpg|gif|webp|bin)$")
SPOOL_RE = re.compile(r"^[0-9A-Za-z_-]{1,128}\.txt$")  # clm_session_spool sanitises call ids

EXT_MEDIA = {
    "png": "image/png",
    "jpg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "bin": "application/octet-stream",
}
MEDIA_EXT = {v: k for k, v in EXT_MEDIA.items() if k != "bin"}  # anything else is .bin

MAX_DEPTH = 200  # json and orjson (255 levels on output) must still handle it inside a message; cJSON takes 1000
MSG_KEYS = ("role", "content", "tool_call_id", "tool_name", "tool_calls", "type", "attachments")
META_KEYS = ("type", "v", "id", "created", "model", "provider", "agent")
UNKNOWN_KEY_PREFIX = "clm:msg."  # Unknown.source_type of a msg key this version does not know


# ---------------------------------------------------------------- small helpers


def fnv1a64(data: bytes) -> str:
    """clm's prompt hash: FNV-1a 64 over the C string (stops at NUL), 0 mapped to 1."""
    h = 0xCBF29CE484222325
    for b in data:
        if b == 0:
            break
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h or 1:016x}"


def _has_surrogates(s: str) -> bool:
    # strict UTF-8 encoding fails exactly on surrogates; C speed, unlike a per-character scan
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _clean_str(s: str) -> str:
    """Text for the projection: invalid bytes kept by surrogateescape become U+FFFD."""
    if not _has_surrogates(s):
        return s
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:  # a lone surrogate written as a \\ud800 escape
        return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in s)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _clean_str(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {_clean_str(k): _clean(v) for k, v in value.items()}
    return value


def _any_surrogates(value: Any) -> bool:
    if isinstance(value, str):
        return _has_surrogates(value)
    if isinstance(value, list):
        return any(_any_surrogates(v) for v in value)
    if isinstance(value, dict):
        return any(_any_surrogates(k) or _any_surrogates(v) for k, v in value.items())
    return False


def _exact_bytes(s: str) -> bytes:
    try:
        return s.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return s.encode("utf-8", "surrogatepass")


def record_hash(rtype: str, record: JsonObject) -> str:
    """sha256 of a record independent of key order and spacing; json (not orjson) so
    that surrogate-escaped bytes and big integers hash too."""
    body = {k: v for k, v in record.items() if k != "type"}
    canon = json.dumps([rtype, body], sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode("ascii")).hexdigest()


def iso_utc(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def spool_name(call_id: str) -> str:
    """The spool file clm writes for a call id (session.c clm_session_spool)."""
    safe = "".join(c if (c.isascii() and (c.isalnum() or c == "-")) else "_" for c in call_id[:128])
    return f"{safe}.txt"


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _depth(value: Any) -> int:
    """Nesting depth, iteratively (the value may be deeper than Python's recursion limit)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, d)
            stack.extend((x, d + 1) for x in v)
    return deepest


def _load(line: bytes) -> tuple[Any, str | None, str | None]:
    """(value, warning, error). orjson first; clm's cut content can hold invalid UTF-8,
    which only the lenient decoder accepts."""
    try:
        return orjson.loads(line), None, None
    except orjson.JSONDecodeError as e:
        strict_error = str(e)
    try:
        value = json.loads(line.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None, None, strict_error
    if _any_surrogates(value):
        return value, "invalid UTF-8 replaced by U+FFFD in the projection; exact bytes are in the source layer", None
    return value, f"accepted only by the lenient decoder: {strict_error}", None


# ---------------------------------------------------------------- parser


class ClmParser:
    """Resumable parser of one clm log generation (or one companion file)."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        st = state or {}
        self.emitted: JsonObject = st.get("emitted", {})  # base.claim_emitted's held message
        self.thread: str | None = st.get("thread")
        self.session: str | None = st.get("session")  # the meta id; None without a meta line
        self.started: bool = bool(st.get("started", False))
        self.turn: str | None = st.get("turn")
        self.refused: int | None = st.get("refused")
        # anchor/prompt hash prefix -> how many of this generation had it (their k)
        self.seen: dict[str, int] = dict(st.get("seen", {}))
        self.anchor: str | None = st.get("anchor")  # id of the last anchor message
        # hash prefix -> count since that anchor (the k of the records it heads)
        self.local: dict[str, int] = dict(st.get("local", {}))

    def state(self) -> JsonObject:
        return {
            "emitted": self.emitted,
            "thread": self.thread,
            "session": self.session,
            "started": self.started,
            "turn": self.turn,
            "refused": self.refused,
            "seen": self.seen,
            "anchor": self.anchor,
            "local": self.local,
        }

    # ------------------------------------------------------------ entry point

    def feed(self, offset: int, line: bytes) -> list[Row]:
        if self.source.kind == SNAPSHOT:
            return self._companion(line)
        if not line.strip():
            return []
        if self.refused is not None:
            return [Report(REFUSED, "refused", f"the file was refused at offset {self.refused}; clm reads nothing after it")]
        value, warning, error = _load(line)
        if error is not None:
            return [Report(PARSE_ERROR, "invalid JSON", f"{error}; clm skips the line")]
        if not isinstance(value, dict):
            return [Report(PARSE_ERROR, "not a JSON object", "clm skips the line")]
        if _depth(value) > MAX_DEPTH:
            return [Report(INVALID, "too deep", f"JSON nested more than {MAX_DEPTH} levels; not projected")]
        rtype = value.get("type")
        if not isinstance(rtype, str):
            return [Report(INVALID, "no type", "record without a string type; clm skips it")]
        rows: list[Row] = []
        if warning is not None:
            rows.append(Report(WARNING, "encoding", warning))
        first = not self.started
        self.started = True
        if rtype != "meta" and self.thread is None:
            rows.extend(self._no_meta())
        # the emit mark is not a msg key of clm's (it would be kept as an unknown block)
        mark = value.pop(EMIT_MARK, None)
        handler = RECORDS.get(rtype)
        if handler is None:
            rows.append(Report(UNKNOWN, rtype, "record type this version does not know; clm skips it"))
        else:
            rows.extend(handler(self, offset, value, first))
        return rows if mark is None else list(claim_emitted({**value, EMIT_MARK: mark}, rows, self.emitted))

    # ------------------------------------------------------------ records

    def _no_meta(self) -> list[Row]:
        # clm's loader accepts a file without meta (fuzz seeds, a hand-made log); there is
        # then no session id, so the thread is named after the source.
        self.thread = "clm-" + stable_id(NAME, self.source.source_id, length=16)
        return [
            ThreadFact(self.thread, {"metadata": {"provider": NAME}}),
            Report(WARNING, "no meta", "the file does not start with a meta record; thread id derived from the source"),
        ]

    def _meta(self, offset: int, d: JsonObject, first: bool) -> list[Row]:
        v = d.get("v")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > FORMAT_VERSION:
            self.refused = offset
            return [Report(REFUSED, "meta", f"format version {v} is newer than {FORMAT_VERSION}; clm refuses the file, nothing after this line is projected")]
        if not first or self.thread is not None:
            return [Report(SKIPPED, "meta", "meta record after the first line; clm keeps the first one")]
        rows: list[Row] = []
        sid = d.get("id")
        if isinstance(sid, str) and sid:
            self.thread = self.session = _clean_str(sid)
            if not ID_RE.match(sid):
                rows.append(Report(WARNING, "meta", f"session id {self.thread!r} is not a valid clm id"))
        else:
            rows.extend(self._no_meta()[:1])
            rows.append(Report(WARNING, "meta", "meta record without an id; thread id derived from the source"))
        assert self.thread is not None
        metadata: JsonObject = {"provider": NAME}
        fields: JsonObject = {}
        created = d.get("created")
        if isinstance(created, float) and created.is_integer():
            created = int(created)
        if _is_int(created) and 0 <= created < 253402300800:
            fields["createdAt"] = iso_utc(created)
        else:
            rows.append(Report(WARNING, "meta", f"created {created!r} is not epoch seconds"))
        if not _is_int(v):
            rows.append(Report(WARNING, "meta", f"version {v!r} is not an integer"))
        for key, name in (("model", "model"), ("provider", "modelProvider"), ("agent", "agent")):
            if isinstance(d.get(key), str):
                metadata[name] = _clean_str(d[key])
        extra = {k: _clean(val) for k, val in d.items() if k not in META_KEYS}
        for key in ("model", "provider", "agent"):
            if key in d and not isinstance(d[key], str):
                extra[key] = _clean(d[key])
        if extra:
            metadata["clmMetaExtra"] = extra
        fields["metadata"] = metadata
        rows.insert(0, ThreadFact(self.thread, fields))
        return rows

    def _prompt(self, offset: int, d: JsonObject, first: bool) -> list[Row]:
        content = d.get("content")
        if not isinstance(content, str):
            return [Report(INVALID, "prompt", "prompt record without string content")]
        rows: list[Row] = []
        exact = _exact_bytes(content)
        extra: JsonObject = {"systemPrompt": True, "sha256": hashlib.sha256(exact).hexdigest()}
        clm_hash = d.get("hash")
        if isinstance(clm_hash, str):
            extra["promptHash"] = clm_hash
            if clm_hash != fnv1a64(exact):
                rows.append(Report(WARNING, "prompt", f"hash {clm_hash} is not the FNV-1a of the content ({fnv1a64(exact)})"))
        for key, val in d.items():
            if key not in ("type", "hash", "content"):
                extra.setdefault("clmExtra", {})[key] = _clean(val)
        msg = Message(
            id=self._anchor_id("prompt", d),
            thread_id=self._thread(),
            role="system",
            ts=None,
            content=(Text(_clean_str(content)),),
            provenance=self._provenance(),
            extra=extra,
        )
        rows.insert(0, MessageRow(msg))
        return rows

    def _msg(self, offset: int, d: JsonObject, first: bool) -> list[Row]:
        role = d.get("role")
        if role not in ROLES:
            return [Report(INVALID, "msg", f"role {role!r} is not one of {', '.join(ROLES)}; clm skips the record")]
        if role == "tool" and not isinstance(d.get("tool_call_id"), str):
            return [Report(INVALID, "msg", "tool message without tool_call_id; clm skips the record")]
        rows: list[Row] = []
        blocks: list[Block] = []
        content = d.get("content")
        if content is not None and not isinstance(content, str):
            rows.append(Report(WARNING, "msg", f"content is a {type(content).__name__}, not a string"))
        if role == "tool":
            blocks.append(self._tool_result(d))
        elif content is not None:
            blocks.append(Text(_clean_str(content)) if isinstance(content, str) else Unknown("clm:content", _clean(content)))
        if isinstance(content, str) and len(_exact_bytes(content)) >= CONTENT_CAP:
            rows.append(Report(WARNING, "content cap", f"content is at clm's {CONTENT_CAP}-byte cap; it was probably cut"))
        calls = d.get("tool_calls")
        if calls is not None:
            if role != "assistant":
                rows.append(Report(WARNING, "msg", f"tool_calls on a {role} message"))
            if isinstance(calls, list):
                blocks.extend(_tool_call(c) for c in calls)
            else:
                blocks.append(Unknown(UNKNOWN_KEY_PREFIX + "tool_calls", _clean(calls)))
        atts = d.get("attachments")
        if atts is not None:
            if isinstance(atts, list):
                blocks.extend(self._attachment(a) for a in atts)
            else:
                blocks.append(Unknown(UNKNOWN_KEY_PREFIX + "attachments", _clean(atts)))
        for key, val in d.items():
            if key not in MSG_KEYS:
                blocks.append(Unknown(UNKNOWN_KEY_PREFIX + key, _clean(val)))
        if role != "tool" and any(k in d for k in ("tool_call_id", "tool_name")):
            for key in ("tool_call_id", "tool_name"):
                if key in d:
                    blocks.append(Unknown(UNKNOWN_KEY_PREFIX + key, _clean(d[key])))
        if role == "user" or (role == "assistant" and isinstance(calls, list) and calls):
            mid = self._anchor_id("msg", d)
            self.anchor, self.local = mid, {}
        else:
            mid = self._segment_id(d)
        extra: JsonObject | None = None
        if role == "user":
            self.turn = stable_id(NAME, "turn", mid)
            if isinstance(content, str) and content.startswith(CONTEXT_UPDATE):
                extra = {"injected": True}
        msg = Message(
            id=mid,
            thread_id=self._thread(),
            role=role,
            ts=None,
            content=tuple(blocks),
            turn_id=self.turn,
            provenance=self._provenance(),
            extra=extra,
        )
        rows.insert(0, MessageRow(msg))
        return rows

    def _tool_result(self, d: JsonObject) -> ToolResult:
        call_id = _clean_str(d["tool_call_id"])
        content = d.get("content")
        extra: JsonObject = {}
        if isinstance(d.get("tool_name"), str):
            extra["toolName"] = _clean_str(d["tool_name"])
        elif "tool_name" in d:
            extra["clmToolName"] = _clean(d["tool_name"])
        if isinstance(content, str):
            # the cut result names its spool file (clm-session(5) "Companion files")
            name = spool_name(d["tool_call_id"])
            if f".spool/{name}" in content:
                extra["spool"] = name
        elif "content" in d:
            extra["clmContent"] = _clean(content)
        return ToolResult(
            call_id=call_id,
            output=_clean_str(content) if isinstance(content, str) else None,
            extra=extra or None,
        )

    def _attachment(self, a: Any) -> Block:
        if not isinstance(a, dict):
            return Unknown(UNKNOWN_KEY_PREFIX + "attachments", _clean(a))
        media = a.get("media_type") if isinstance(a.get("media_type"), str) else None
        sha = a.get("sha256") if isinstance(a.get("sha256"), str) else None
        extra: JsonObject = {}
        if sha is not None:
            extra["sha256"] = sha
        if "bytes" in a:
            extra["bytes"] = a["bytes"]
        if a.get("type") != "image":
            extra["clmType"] = _clean(a.get("type"))
        for key, val in a.items():
            if key not in ("type", "media_type", "sha256", "bytes"):
                extra[key] = _clean(val)
        uri = None
        if sha is not None and BLOB_RE.match(f"{sha}.png") and self.session is not None:
            uri = f"{self.session}.blobs/{sha}.{MEDIA_EXT.get(media or '', 'bin')}"
        return Attachment(media_type=media, uri=uri, extra=extra or None)

    # ------------------------------------------------------------ companions

    def _companion(self, data: bytes) -> list[Row]:
        path = Path(self.source.path)
        folder = path.parent.name
        m = BLOB_RE.match(path.name)
        if folder.endswith(".blobs") and m:
            rows: list[Row] = [BlobRow(data, EXT_MEDIA[m.group(2)])]
            actual = hashlib.sha256(data).hexdigest()
            if actual != m.group(1):
                rows.append(Report(WARNING, "blob", f"sha256 of the bytes is {actual}, not the file name"))
            return rows
        if folder.endswith(".spool") and SPOOL_RE.match(path.name):
            detail = {
                "sessionId": folder[: -len(".spool")],
                "spool": path.name,
                "sha256": hashlib.sha256(data).hexdigest(),
                "bytes": len(data),
            }
            return [
                BlobRow(data, "text/plain"),
                Report(METADATA, "spool", orjson.dumps(detail).decode()),
            ]
        return [Report(INVALID, "companion", f"{path.name} is neither a clm image nor a spool file")]

    # ------------------------------------------------------------ identity

    def _thread(self) -> str:
        assert self.thread is not None
        return self.thread

    def _anchor_id(self, rtype: str, d: JsonObject) -> str:
        h = record_hash(rtype, d)
        k = self.seen.get(h[:16], 0)
        self.seen[h[:16]] = k + 1
        return stable_id(NAME, self._thread(), h, k)

    def _segment_id(self, d: JsonObject) -> str:
        h = record_hash("msg", d)
        k = self.local.get(h[:16], 0)
        self.local[h[:16]] = k + 1
        return stable_id(NAME, self._thread(), self.anchor, h, k)

    def _provenance(self) -> Provenance:
        return Provenance(provider=NAME, session_id=self.session)


def _tool_call(c: Any) -> Block:
    if not isinstance(c, dict):
        return Unknown(UNKNOWN_KEY_PREFIX + "tool_calls", _clean(c))
    call_id = _clean_str(c["id"]) if isinstance(c.get("id"), str) else ""
    name = _clean_str(c["name"]) if isinstance(c.get("name"), str) else ""
    args = c.get("args")
    extra: JsonObject = {}
    value: Any = None
    if isinstance(args, str):
        # args is the model's raw JSON text; keep it whenever re-serialising would differ
        try:
            value = orjson.loads(args)
            if orjson.dumps(value) != args.encode("utf-8", "surrogatepass"):
                extra["args"] = args
        except orjson.JSONDecodeError:
            extra["args"] = _clean_str(args)
            extra["argsInvalid"] = True
    elif "args" in c:
        value = _clean(args)
        extra["argsNotString"] = True
    for key, val in c.items():
        if key not in ("id", "name", "args"):
            extra[key] = _clean(val)
    return ToolCall(call_id=call_id, name=name, input=value, extra=extra or None)


RecordHandler = Callable[[ClmParser, int, JsonObject, bool], list[Row]]

RECORDS: dict[str, RecordHandler] = {
    "meta": ClmParser._meta,
    "prompt": ClmParser._prompt,
    "msg": ClmParser._msg,
}


