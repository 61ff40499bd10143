"""OpenCode: the adapter (its database under ``XDG_DATA_HOME``, the documents read from it,
detect, parser, emit).

**A database as a source.** OpenCode (1.18.33) keeps every session in one SQLite database,
``$XDG_DATA_HOME/opencode/opencode.db`` (WAL mode), written while the client runs.
``classify`` calls it ``RECORDS``; ingest opens it read-only (``archive.readonly``: a
``mode=ro`` URI, not ``immutable``, one short statement per query, ``SQLITE_BUSY``
retried) and asks ``documents`` for one document per session: the session's rows of the
append-only ``event`` table, ordered by ``seq``, each serialised as one JSON line (the
format is in ``parse.py``) that holds the ``data`` column byte for byte. The ``session``,
``message`` and ``part`` tables (current state, updated in place) are not read: every
version of their rows is an event. A document only grows, so ingest reads it as an
append-only file at the virtual path ``<database>#<session id>.jsonl``: offsets (byte
positions in the document, one per event) are stable, a rerun adds nothing, a run while the
client writes takes the events committed so far and the next run continues after them. A
part OpenCode rewrites after it was archived arrives as a new event, whose row ``revises``
the canonical message.

``restore`` writes each session's document back (``<database>#<session>.jsonl``, byte-exact
JSON lines of the events, not an OpenCode database); ``emit --to opencode`` builds the JSON
document that ``opencode import FILE`` reads (the format of ``opencode export``).

The older layout (before the database: ``storage/session``, ``storage/message``,
``storage/part`` with one JSON file each) has no public example to test with and is not read.
A session that has rows but no events (none seen in 1.18.33) is not read either.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import orjson

from ...model import JsonObject, Message, Thread
from ..base import RECORDS, SNAPSHOT, Adapter, Document, EmitOptions, EmitResult, Query, SourceInfo, env_path
from .emit import FOLDER as EXPORT_FOLDER
from .emit import emit_session, resume_hint
from .parse import NAME, OpenCodeParser

DB_NAME = "opencode.db"
# JSON lines of the virtual documents start like this (detect, and the contract fixtures)
_HEAD = b'{"aggregate":'


def event_line(aggregate: bytes, seq: int, event_id: bytes, kind: bytes, data: bytes) -> bytes:
    """One event row as a JSON line: the text columns as JSON strings, ``data`` as it is
    when it is one line of JSON (else as a string under ``dataText``)."""
    head = b'{"aggregate":' + orjson.dumps(aggregate.decode("utf-8", "surrogateescape"))
    head += b',"seq":' + str(seq).encode() + b',"id":' + orjson.dumps(event_id.decode("utf-8", "surrogateescape"))
    head += b',"type":' + orjson.dumps(kind.decode("utf-8", "surrogateescape"))
    raw_ok = b"\n" not in data and b"\r" not in data
    if raw_ok:
        try:
            orjson.loads(data)
        except orjson.JSONDecodeError:
            raw_ok = False
    if raw_ok:
        return head + b',"data":' + data + b"}\n"
    return head + b',"dataText":' + orjson.dumps(data.decode("utf-8", "replace")) + b"}\n"


class OpenCodeAdapter(Adapter):
    name = NAME
    emits = True
    env_vars = ("XDG_DATA_HOME",)
    tool_kinds = {"bash": "shell", "edit": "edit", "write": "edit", "patch": "edit", "read": "read", "grep": "search",
                  "glob": "search", "list": "search", "webfetch": "web", "websearch": "web", "task": "agent",
                  "todowrite": "plan", "todoread": "plan"}

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        data = env_path(env, "XDG_DATA_HOME") or home / ".local" / "share"
        return [data / "opencode"]

    def classify(self, path: Path) -> str | None:
        if path.name == DB_NAME:
            return RECORDS
        if path.parent.name == EXPORT_FOLDER and path.name.startswith("ses_") and path.suffix == ".json":
            return SNAPSHOT  # an import file emit wrote
        return None

    def detect(self, head: bytes) -> bool:
        if head.lstrip().startswith(b"{") and b'"info"' in head[:300] and b'"ses_' in head[:600]:
            return True  # an ``opencode export`` document
        first = head.split(b"\n", 1)[0]
        if not first.startswith(_HEAD):
            return False
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        return isinstance(d, dict) and isinstance(d.get("seq"), int) and isinstance(d.get("type"), str)

    def session_key(self, path: Path) -> str | None:
        return path.name.rpartition("#")[2].split(".", 1)[0] or None

    def documents(self, path: Path, query: Query) -> Iterator[Document]:
        """One document per session: its events in ``seq`` order. One statement per
        session, so each document is one consistent snapshot."""
        tables = {r[0] for r in query("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
        if b"event" not in tables:
            return
        for (aggregate,) in query("SELECT DISTINCT aggregate_id FROM event ORDER BY aggregate_id", ()):
            rows = query("SELECT seq, id, type, CAST(data AS BLOB) FROM event WHERE aggregate_id = ? ORDER BY seq",
                         (aggregate.decode("utf-8", "surrogateescape"),))
            data = b"".join(event_line(aggregate, seq, eid, kind, raw) for seq, eid, kind, raw in rows)
            if data:
                yield Document(f"{path}#{aggregate.decode('utf-8', 'replace')}.jsonl", data)

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> OpenCodeParser:
        return OpenCodeParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        return None  # the stored documents are event logs, not files OpenCode reads: emit builds an import file

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)


ADAPTER = OpenCodeAdapter()
