"""OpenCode's JSON storage before 1.2 (and that of forks with the same legacy ``storage/``,
such as Kilo Code): one small JSON file per session, message and part, each rewritten in
place by the client, read as one document per session.

The three layouts (each recorded with the real client, ``tests/fixtures/recorded/``):

* 0.1.x (0.1.174): ``project/<project>/storage/session/info/<ses>.json`` and
  ``.../session/message/<ses>/<msg>.json``; a message file holds its parts (AI SDK
  ``UIMessage`` parts: ``text``, ``reasoning``, ``tool-invocation``, ``step-start``,
  ``file``) and, in ``metadata.assistant``, the model, tokens and cost of the response.
* 0.5.x (0.5.29): the same ``info`` and ``message`` folders, the parts in
  ``.../session/part/<ses>/<msg>/<prt>.json``, messages and parts in the shapes the database
  keeps today.
* 1.0-1.1 (1.1.65): ``storage/session/<project>/<ses>.json``, ``storage/message/<ses>/<msg>.json``,
  ``storage/part/<msg>/<prt>.json`` (the layout OpenCode 1.2 migrates into ``opencode.db``);
  1.1 adds ``storage/session_diff/<ses>.json`` (the files the session changed), kept with
  the session as bookkeeping.

Invariants:

* **One session, one source.** The session's info file is the record (``classify`` gives
  ``RECORDS``); ``record_files`` lists the session's files without opening them, so a
  rerun stats them and opens nothing when none changed (``archive.records``). The
  document (virtual path ``<info file>#<session>.jsonl``) holds one JSON line per file,
  ``{"file": <path below storage/>, "text": <the file's text>}`` (``"base64"`` for bytes
  that are not UTF-8): the session's info, then each message by id (OpenCode's ids grow
  with time) followed by its parts by id. The client rewrites the info file (``time.updated``)
  and the message file (tokens, ``time.completed``) with every response, so a session that
  changed is a new generation of its document, older ones kept (as the database's sessions
  read from their rows); a session no client writes any more (the storage a user kept after
  upgrading) is read once.
* **Byte-exact files.** Every file comes back byte for byte from its line (``unpack``):
  ``restore`` writes them beside the document.
* **The same ids as the database.** Thread id = the session id, message ids = the part ids,
  usage keys = the step-finish part ids, as ``opencode.db`` holds them after 1.2 migrated
  the storage: a user who upgraded and keeps both gets one thread, stored once. 0.1.x parts
  have no ids: ``<message id>:<index>``, usage keyed by the message.
* The message and part shapes of 0.5 and 1.x are read by ``parse.OpenCodeParser``'s own
  handlers, not a copy.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Reasoning, Text, ToolCall, ToolResult, Unknown
from ..base import (
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    UNKNOWN,
    WARNING,
    Document,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    loads_line,
)
from .parse import NAME, OpenCodeParser, _dict, _str, iso_ms, opencode_usage

STORAGE = "storage"
HEAD = b'{"file":'


def session_info(path: Path) -> tuple[Path, str] | None:
    """(the ``storage`` folder, the layout: ``"0.x"`` or ``"1.x"``) when ``path`` is a
    session's info file of the JSON storage, else None."""
    if path.suffix != ".json" or not path.name.startswith("ses_"):
        return None
    parts = path.parts
    if len(parts) >= 4 and parts[-4] == STORAGE and parts[-3] == "session" and parts[-2] == "info":
        return path.parents[2], "0.x"
    in_project = len(parts) >= 6 and parts[-6] == "project"  # 0.x: project/<p>/storage (its other session/ folders: share, ...)
    if len(parts) >= 4 and parts[-4] == STORAGE and parts[-3] == "session" and not in_project \
            and parts[-2] not in ("message", "part"):
        return path.parents[2], "1.x"
    return None


def _listing(folder: str) -> list[str]:
    try:
        return sorted(e for e in os.listdir(folder) if e.endswith(".json"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def session_files(path: Path) -> list[tuple[str, str]] | None:
    """(path below ``storage/``, path) of every file of the session whose info file is
    ``path``, in document order; listed, not opened. None: not a session info file."""
    found = session_info(path)
    if found is None:
        return None
    storage, layout = found
    sid = path.stem
    root = str(storage)
    out = [(os.path.relpath(str(path), root), str(path))]
    if layout == "0.x":
        msg_dir, part_dir = f"session/message/{sid}", f"session/part/{sid}"
    else:
        msg_dir, part_dir = f"message/{sid}", "part"
    for name in _listing(os.path.join(root, msg_dir)):
        rel = f"{msg_dir}/{name}"
        out.append((rel, os.path.join(root, rel)))
        pdir = f"{part_dir}/{name[:-5]}"
        for pname in _listing(os.path.join(root, pdir)):
            prel = f"{pdir}/{pname}"
            out.append((prel, os.path.join(root, prel)))
    diff = f"session_diff/{sid}.json"  # 1.1: the session's file changes (bookkeeping, kept whole)
    if layout == "1.x" and os.path.isfile(os.path.join(root, diff)):
        out.append((diff, os.path.join(root, diff)))
    return out


def file_line(rel: str, data: bytes) -> bytes:
    """One file as a JSON line of the session's document."""
    try:
        body = b'"text":' + orjson.dumps(data.decode("utf-8"))
    except (UnicodeDecodeError, orjson.JSONEncodeError):
        body = b'"base64":' + orjson.dumps(base64.b64encode(data).decode())
    return HEAD + orjson.dumps(rel) + b"," + body + b"}\n"


def document(path: Path) -> Document | None:
    """The session's document: its files' lines. A file that vanished between the listing
    and the read (the client deleting a message) is left out: the next run sees the change."""
    files = session_files(path)
    if files is None:
        return None
    lines = []
    for rel, full in files:
        try:
            with open(full, "rb") as f:
                lines.append(file_line(rel, f.read()))
        except FileNotFoundError:
            if rel == files[0][0]:
                raise
    return Document(f"{path}#{path.stem}.jsonl", b"".join(lines))


def unpack(data: bytes) -> Iterator[tuple[str, bytes]]:
    """(path below ``storage/``, the file's bytes) of each line of a session's document."""
    for line in data.splitlines():
        if not line.startswith(HEAD):
            continue
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a line restore --redact changed
        rel = d.get("file") if isinstance(d, dict) else None
        if not isinstance(rel, str) or rel.startswith("/") or ".." in Path(rel).parts:
            continue  # never written outside the storage folder
        if isinstance(d.get("text"), str):
            yield rel, d["text"].encode("utf-8")
        elif isinstance(d.get("base64"), str):
            yield rel, base64.b64decode(d["base64"])


def storage_dir(document_path: str) -> Path | None:
    """The ``storage`` folder a session document was read from (``<info file>#<ses>.jsonl``)."""
    found = session_info(Path(document_path.rpartition("#")[0] or document_path))
    return found[0] if found else None


# ---------------------------------------------------------------- the parser


def _kind(rel: str) -> str:
    parts = rel.split("/")
    if parts[0] == "session" and len(parts) == 3 and parts[1] != "message":
        return "info"
    if "part" in parts[:2]:
        return "part"
    if "message" in parts[:2]:
        return "message"
    return "other"


class StorageParser(OpenCodeParser):
    """``OpenCodeParser`` that also reads the lines of a JSON-storage document (any other
    line goes to ``OpenCodeParser.feed``)."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None, name: str = NAME) -> None:
        super().__init__(source, state, name)
        self.legacy: bool = bool((state or {}).get("legacy"))  # a 0.x session: cwd from its messages

    def state(self) -> JsonObject:
        out = super().state()
        if self.legacy:
            out["legacy"] = True
        return out

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.startswith(HEAD):
            yield from super().feed(offset, line)
            return
        try:
            d, warning = loads_line(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "not JSON", str(e))
            return
        if warning is not None:
            yield warning
        rel = d.get("file") if isinstance(d, dict) else None
        if not isinstance(rel, str):
            yield Report(INVALID, "storage line without a file", None)
            return
        text = d.get("text")
        if not isinstance(text, str):
            yield Report(INVALID, "storage file not UTF-8", rel)
            return
        try:
            data, warning = loads_line(text.encode("utf-8"))
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "storage file not JSON", f"{rel}: {e}")
            return
        if warning is not None:
            yield warning
        kind = _kind(rel)
        if kind == "other":
            yield from self.other_file(rel, data)
        elif not isinstance(data, dict):
            yield Report(INVALID, "storage file not an object", rel)
        else:
            yield from FILES[kind](self, rel, data)

    def _session_id(self, data: dict[str, Any]) -> str:
        return _str(data.get("sessionID")) or self.row_session or self.source.source_id

    def info_file(self, rel: str, data: dict[str, Any]) -> Iterator[Row]:
        self.row_session = _str(data.get("id")) or self.row_session
        self.legacy = rel.startswith("session/info/")
        yield from self.session(self._session_id({}), {"info": data})

    def message_file(self, rel: str, data: dict[str, Any]) -> Iterator[Row]:
        session = self._session_id(_dict(data.get("metadata")) if "metadata" in data else data)
        if isinstance(data.get("parts"), list):
            yield from self.v01_message(session, data)
            return
        yield from self.message(session, {"info": data})
        cwd = _str(_dict(data.get("path")).get("cwd"))
        if self.legacy and cwd:  # 0.5.29: the session info names no directory
            yield ThreadFact(session, {"metadata": {"cwd": cwd}})

    def part_file(self, rel: str, data: dict[str, Any]) -> Iterator[Row]:
        yield from self.part(self._session_id(data), {"part": data})

    def other_file(self, rel: str, data: Any) -> Iterator[Row]:
        yield Report(SKIPPED, "storage file", f"{rel}: bookkeeping (the files the session changed), not sent to the model")

    # ------------------------------------------------------------------ 0.1.x
    def v01_message(self, session: str, d: dict[str, Any]) -> Iterator[Row]:
        """A 0.1.x message file: the message and its ``UIMessage`` parts in one document;
        ``metadata.assistant`` holds the response's model, tokens, cost and cwd,
        ``metadata.tool`` each call's title, exit code and times."""
        mid = _str(d.get("id"))
        if mid is None:
            yield Report(INVALID, "message without an id", None)
            return
        meta = _dict(d.get("metadata"))
        assistant = _dict(meta.get("assistant"))
        time = _dict(meta.get("time"))
        role = _str(d.get("role")) or "assistant"
        self._remember(mid, [role, _str(assistant.get("modelID")), _str(assistant.get("providerID")), None,
                             time.get("created"), None])
        yield Report(METADATA, "message", "role, model and tokens for its parts; system prompt kept in the source layer")
        facts: dict[str, Any] = {}
        if _str(assistant.get("modelID")):
            facts["model"] = assistant["modelID"]
            if _str(assistant.get("providerID")):
                facts["modelProvider"] = assistant["providerID"]
        if _str(_dict(assistant.get("path")).get("cwd")):
            facts["cwd"] = assistant["path"]["cwd"]
        if facts:
            yield ThreadFact(session, {"metadata": facts})
        if meta.get("error") is not None:
            yield Report(WARNING, "message error", orjson.dumps(meta["error"]).decode()[:2000])
        tools = _dict(meta.get("tool"))
        for i, part in enumerate(d["parts"]):
            if not isinstance(part, dict):
                yield Report(INVALID, "part not an object", f"{mid}:{i}")
                continue
            handler = V01_PARTS.get(str(part.get("type")))
            if handler is None:
                yield Report(UNKNOWN, f"part {part.get('type')}", "kept as an unknown block")
                yield from self._msg(session, {}, f"{mid}:{i}", mid, None, [Unknown(source_type=str(part.get("type")), raw=part)])
                continue
            yield from handler(self, session, part, f"{mid}:{i}", mid, tools)
        tokens = _dict(assistant.get("tokens"))
        if role == "assistant" and tokens:
            info = self.msgs.get(mid)
            yield UsageRow(f"{self.name}:{mid}", session, opencode_usage(tokens, assistant.get("cost")),
                           info[5] if info else None, _str(assistant.get("modelID")),
                           iso_ms(time.get("completed")) or iso_ms(time.get("created")))

    def v01_text(self, session: str, part: dict[str, Any], pid: str, mid: str, tools: dict[str, Any]) -> Iterator[Row]:
        text = part.get("text") if isinstance(part.get("text"), str) else ""
        yield from self._msg(session, {}, pid, mid, None, [Text(text)])

    def v01_reasoning(self, session: str, part: dict[str, Any], pid: str, mid: str, tools: dict[str, Any]) -> Iterator[Row]:
        text = part.get("text") if isinstance(part.get("text"), str) else part.get("reasoning")
        extra = {"details": part["details"]} if part.get("details") else None
        yield from self._msg(session, {}, pid, mid, "assistant",
                             [Reasoning(text=text if isinstance(text, str) else "", extra=extra)])

    def v01_tool(self, session: str, part: dict[str, Any], pid: str, mid: str, tools: dict[str, Any]) -> Iterator[Row]:
        inv = _dict(part.get("toolInvocation"))
        call_id = _str(inv.get("toolCallId")) or pid
        meta = _dict(tools.get(call_id))
        call_extra = {"title": meta["title"]} if meta.get("title") is not None else None
        yield from self._msg(session, {}, pid, mid, "assistant",
                             [ToolCall(call_id=call_id, name=_str(inv.get("toolName")) or "", input=inv.get("args"),
                                       extra=call_extra)])
        if inv.get("state") != "result":
            yield Report(WARNING, "tool call without a result", f"state {inv.get('state')}")
            return
        error = meta.get("error") is not None and meta.get("error") is not False
        extra = {k: v for k, v in meta.items() if k != "title"} or None
        yield from self._msg(session, {"time": {"start": _dict(meta.get("time")).get("end")}}, pid, mid, "tool",
                             [ToolResult(call_id=call_id, output=inv.get("result"), is_error=error, extra=extra)],
                             suffix=":result")

    def v01_file(self, session: str, part: dict[str, Any], pid: str, mid: str, tools: dict[str, Any]) -> Iterator[Row]:
        url = _str(part.get("url"))
        data = url.split(";base64,", 1)[1] if url and url.startswith("data:") and ";base64," in url else None
        extra = {"filename": part["filename"]} if part.get("filename") else None
        yield from self._msg(session, {}, pid, mid, None, [Attachment(
            media_type=_str(part.get("mediaType")) or _str(part.get("mimeType")), uri=None if data else url,
            data=data, extra=extra)])

    def v01_step(self, session: str, part: dict[str, Any], pid: str, mid: str, tools: dict[str, Any]) -> Iterator[Row]:
        yield Report(SKIPPED, "step-start", "a step boundary, not sent to the model")


FileHandler = Callable[[StorageParser, str, dict[str, Any]], Iterator[Row]]
FILES: dict[str, FileHandler] = {
    "info": StorageParser.info_file,
    "message": StorageParser.message_file,
    "part": StorageParser.part_file,
}
V01Handler = Callable[[StorageParser, str, dict[str, Any], str, str, dict[str, Any]], Iterator[Row]]
V01_PARTS: dict[str, V01Handler] = {
    "text": StorageParser.v01_text,
    "reasoning": StorageParser.v01_reasoning,
    "tool-invocation": StorageParser.v01_tool,
    "file": StorageParser.v01_file,
    "step-start": StorageParser.v01_step,
}
