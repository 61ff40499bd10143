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

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ..model import (
    Attachment,
    Block,
    FileChange,
    JsonObject,
    Message,
    Provenance,
    Reasoning,
    Text,
    Thread,
    ToolCall,
    ToolResult,
    Unknown,
    WebSearch,
)
from .base import (
    INVALID,
    LINES,
    METADATA,
    PARSE_ERROR,
    REFUSED,
    SKIPPED,
    SNAPSHOT,
    UNKNOWN,
    WARNING,
    Adapter,
    BlobRow,
    EmitResult,
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
        handler = RECORDS.get(rtype)
        if handler is None:
            rows.append(Report(UNKNOWN, rtype, "record type this version does not know; clm skips it"))
        else:
            rows.extend(handler(self, offset, value, first))
        return rows

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


# ---------------------------------------------------------------- emit


def _dumps(obj: JsonObject) -> bytes:
    # cJSON_PrintUnformatted: no spaces, non-ASCII raw, control characters as \\u00xx
    return orjson.dumps(obj)


def _created_seconds(created_at: str | None) -> int | None:
    if not created_at:
        return None
    try:
        dt = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp())


def clm_id(thread: Thread) -> str:
    """The thread id if clm accepts it, else ``YYYYMMDD-HHMMSS-xxxxxxxx`` from createdAt
    (UTC, to stay deterministic) and a hash of the thread id."""
    if ID_RE.match(thread.id):
        return thread.id
    secs = _created_seconds(thread.created_at) or 0
    stamp = datetime.fromtimestamp(secs, tz=timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{stable_id(NAME, thread.id, length=8)}"


def _tool_output_text(output: Any, result: EmitResult) -> str | None:
    if output is None:
        return None
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(p, dict) for p in output):
        texts = [p["text"] for p in output if p.get("type") == "text" and isinstance(p.get("text"), str)]
        if len(texts) != len(output):
            result.count("tool output part that is not text")
        return "\n".join(texts)
    result.count("tool output serialised as JSON")
    return orjson.dumps(output).decode()


class _Emitter:
    def __init__(self, cid: str, blobs: Mapping[str, bytes], result: EmitResult) -> None:
        self.cid = cid
        self.blobs = blobs
        self.result = result
        self.lines: list[bytes] = []
        self.call_names: dict[str, str] = {}
        self.answered: set[str] = set()
        self.last_prompt: str | None = None

    def message(self, m: Message) -> None:
        r = self.result
        if m.ts is not None:
            r.count("message timestamp")
        if m.usage is not None:
            r.count("usage")
        texts: list[str] = []
        calls: list[ToolCall] = []
        results: list[ToolResult] = []
        atts: list[JsonObject] = []
        extras: dict[str, Any] = {}
        for b in m.content:
            if isinstance(b, Text):
                texts.append(b.text)
            elif isinstance(b, ToolCall):
                calls.append(b)
            elif isinstance(b, ToolResult):
                results.append(b)
            elif isinstance(b, Attachment):
                att = self.attachment(b)
                if att is not None:
                    atts.append(att)
            elif isinstance(b, Unknown) and b.source_type.startswith(UNKNOWN_KEY_PREFIX):
                extras[b.source_type[len(UNKNOWN_KEY_PREFIX):]] = b.raw
            elif isinstance(b, Reasoning):
                r.count("reasoning")
            elif isinstance(b, FileChange):
                r.count("file_change")
            elif isinstance(b, WebSearch):
                r.count("web_search")
            else:
                r.count(f"{b.TYPE} block")
        if len(texts) > 1:
            r.count("text blocks joined", len(texts) - 1)
        text = "\n\n".join(texts) if texts else None
        if m.role == "system":
            self.prompt(text, calls, results, atts, extras)
            return
        for res in results:
            self.tool(res)
        if m.role == "tool":
            if text is not None or calls or atts:
                r.count("tool message content outside a tool_result")
            return
        if text is None and not calls and not atts and not extras:
            if not results:
                r.count("empty message")
            return
        if calls and m.role != "assistant":
            r.count(f"tool calls on a {m.role} message")
        obj: JsonObject = {"role": m.role if m.role in ROLES else "user"}
        if text is not None:
            self.check_cap(text)
            obj["content"] = text
        for key in ("tool_call_id", "tool_name"):
            if key in extras:
                obj[key] = extras.pop(key)
        if calls:
            obj["tool_calls"] = [self.call(c) for c in calls]
        elif "tool_calls" in extras:
            obj["tool_calls"] = extras.pop("tool_calls")
        obj["type"] = "msg"
        if atts:
            obj["attachments"] = atts
        elif "attachments" in extras:
            obj["attachments"] = extras.pop("attachments")
        for key, val in extras.items():
            obj.setdefault(key, val)
        self.lines.append(_dumps(obj))

    def prompt(self, text: str | None, calls: list[ToolCall], results: list[ToolResult], atts: list[JsonObject], extras: dict[str, Any]) -> None:
        if calls or results or atts or extras:
            self.result.count("system message parts other than text")
        if text is None:
            self.result.count("empty message")
            return
        # clm writes a prompt record only when it differs from the last one
        if text == self.last_prompt:
            self.result.count("repeated system prompt")
            return
        self.last_prompt = text
        note = "system messages became prompt records: clm keeps them for reference and rebuilds the prompt from its config on resume"
        if note not in self.result.notes:
            self.result.notes.append(note)
        data = text.encode("utf-8", "surrogatepass")
        self.lines.append(_dumps({"type": "prompt", "hash": fnv1a64(data), "content": text}))

    def call(self, c: ToolCall) -> JsonObject:
        self.call_names[c.call_id] = c.name
        extra = c.extra or {}
        args = extra.get("args")
        if not isinstance(args, str):
            value = c.input
            if not isinstance(value, dict):
                self.result.count("tool input that is not an object")
                value = {} if value is None else {"input": value}
            args = orjson.dumps(value).decode()
        return {"id": c.call_id, "name": c.name, "args": args}

    def tool(self, res: ToolResult) -> None:
        extra = res.extra or {}
        if res.call_id not in self.call_names:
            self.result.count("tool result without its call")
        self.answered.add(res.call_id)
        if res.is_error:
            self.result.count("tool error flag")
        obj: JsonObject = {"role": "tool"}
        text = extra["clmContent"] if "clmContent" in extra else _tool_output_text(res.output, self.result)
        if text is not None:
            if isinstance(text, str):
                self.check_cap(text)
            obj["content"] = text
        obj["tool_call_id"] = res.call_id
        name = extra.get("toolName") or self.call_names.get(res.call_id)
        if isinstance(name, str):
            obj["tool_name"] = name
        else:
            self.result.count("tool result without a tool name")
        obj["type"] = "msg"
        self.lines.append(_dumps(obj))

    def attachment(self, a: Attachment) -> JsonObject | None:
        extra = a.extra or {}
        media = a.media_type or "application/octet-stream"
        data: bytes | None = None
        if a.data is not None:
            try:
                data = base64.b64decode(a.data, validate=True)
            except (binascii.Error, ValueError):
                self.result.count("attachment with invalid base64")
                return None
        sha = hashlib.sha256(data).hexdigest() if data is not None else extra.get("sha256")
        if not isinstance(sha, str) or not BLOB_RE.match(f"{sha}.bin"):
            self.result.count("attachment without data")
            return None
        if data is None:
            data = self.blobs.get(sha)
        if data is not None:
            self.result.files[f"{self.cid}.blobs/{sha}.{MEDIA_EXT.get(media, 'bin')}"] = data
        else:
            self.result.count("attachment bytes not available (clm notes a missing image)")
        if not media.startswith("image/"):
            self.result.count("attachment that is not an image")
        size = len(data) if data is not None else extra.get("bytes")
        out: JsonObject = {"type": extra.get("clmType", "image"), "media_type": media, "sha256": sha}
        if size is not None:
            out["bytes"] = size
        for key, val in extra.items():
            if key not in ("sha256", "bytes", "clmType"):
                out.setdefault(key, val)
        return out

    def check_cap(self, text: str) -> None:
        if len(text.encode("utf-8", "surrogatepass")) > CONTENT_CAP:
            self.result.count(f"content over {CONTENT_CAP} bytes (clm cuts it on load)")


def _meta_line(thread: Thread, cid: str, result: EmitResult) -> bytes:
    md = thread.metadata or {}
    created = _created_seconds(thread.created_at)
    if created is None:
        result.count("createdAt not ISO 8601 (created written as 0)")
        created = 0
    meta: JsonObject = {"type": "meta", "v": FORMAT_VERSION, "id": cid, "created": created}
    if isinstance(md.get("model"), str):
        meta["model"] = md["model"]
    if isinstance(md.get("modelProvider"), str):
        meta["provider"] = md["modelProvider"]
    if isinstance(md.get("agent"), str):
        meta["agent"] = md["agent"]
    extra = md.get("clmMetaExtra")
    if isinstance(extra, dict):
        for key, val in extra.items():
            meta.setdefault(key, val)
    return _dumps(meta)


# ---------------------------------------------------------------- adapter


class ClmAdapter(Adapter):
    name = NAME
    env_vars = ("XDG_STATE_HOME",)
    tool_kinds = {"shell_exec": "shell"}  # the one tool seen in clm logs so far

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        # session.c clm_session_state_dir: XDG_STATE_HOME only when set and non-empty
        base = env.get("XDG_STATE_HOME")
        if base:
            return [Path(base) / "clm"]
        return [home / ".local" / "state" / "clm"]

    def classify(self, path: Path) -> str | None:
        name = path.name
        for suffix in (".jsonl", ".jsonl.bak"):
            if name.endswith(suffix) and ID_RE.match(name[: -len(suffix)]):
                return LINES
        folder = path.parent.name
        if folder.endswith(".blobs") and ID_RE.match(folder[:-6]) and BLOB_RE.match(name):
            return SNAPSHOT
        if folder.endswith(".spool") and ID_RE.match(folder[:-6]) and SPOOL_RE.match(name):
            return SNAPSHOT
        return None  # .jsonl.tmp is a rewrite in flight; blob temp files likewise

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        value, _, error = _load(first)
        if error is not None or not isinstance(value, dict):
            return False
        if value.get("type") == "meta":
            return "v" in value and isinstance(value.get("id"), str) and "created" in value
        if value.get("type") == "msg":
            return value.get("role") in ROLES and "threadId" not in value
        return False

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> ClmParser:
        return ClmParser(source, state)

    def emit(
        self,
        thread: Thread | JsonObject,
        messages: list[Message],
        children: list[Any] | None = None,
        **options: Any,
    ) -> EmitResult:
        """Write ``<id>.jsonl`` (and ``<id>.blobs/`` images). ``blobs`` (sha256 -> bytes)
        supplies image bytes for attachments whose data lives in the archive's blob table."""
        if isinstance(thread, dict):
            thread = Thread.from_dict(thread)
        cid = clm_id(thread)
        result = EmitResult(thread_id=cid)
        if cid != thread.id:
            result.notes.append(f"thread id {thread.id!r} is not a valid clm session id; wrote {cid}")
        if children:
            result.count("child thread", len(children))
        emitter = _Emitter(cid, options.get("blobs") or {}, result)
        emitter.lines.append(_meta_line(thread, cid, result))
        for m in messages:
            emitter.message(m)
        unanswered = [c for c in emitter.call_names if c not in emitter.answered]
        if unanswered:
            result.count("tool call without a result", len(unanswered))
        result.files[f"{cid}.jsonl"] = b"\n".join(emitter.lines) + b"\n"
        result.resume_hint = (
            f"copy {cid}.jsonl (and {cid}.blobs/ if present) into $XDG_STATE_HOME/clm "
            f"(default ~/.local/state/clm), then run: clm --resume {cid}  "
            "(interactive UI only; the system prompt, model and provider come from the current config)"
        )
        return result


ADAPTER = ClmAdapter()
