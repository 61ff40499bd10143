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
JSON lines of the events, not an OpenCode database) and, beside it, the session as the JSON
document that ``opencode import FILE`` reads (``restores_by_emit``: the format of
``opencode export``, which ``emit --to opencode`` builds).

The JSON storage of the releases before 1.2 (three layouts: 0.1.x, 0.5.x, 1.0-1.1) is read
by ``storage.py``: each session's info file is a record of files (``record_files``), read as
one document per session whose lines hold its files byte for byte, with the ids the database
holds after 1.2 migrated it (one thread for a session kept in both).
A session whose event log is not whole (``opencode import`` writes rows and no events;
sessions from before the event table) is read from its rows instead: the session row, its
message rows and part rows as JSON lines (``row_line``); rows change in place, so each
change of such a session is a new generation of its document (older ones kept).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...model import JsonObject, Message, Thread
from ..base import (
    RECORDS,
    SNAPSHOT,
    Adapter,
    Document,
    EmitOptions,
    EmitResult,
    Query,
    SourceInfo,
    env_path,
)
from .emit import emit_session, folder, resume_hint
from . import side, storage, storage_emit
from .parse import NAME

DB_NAME = "opencode.db"
# JSON lines of the virtual documents start like this (detect, and the contract fixtures)
_HEAD = b'{"aggregate":'


def event_line(aggregate: bytes, seq: int, event_id: bytes, kind: bytes, data: bytes) -> bytes:
    """One event row as a JSON line: the text columns as JSON strings, ``data`` as it is
    when it is one line of JSON (else as a string under ``dataText``)."""
    head = b'{"aggregate":' + orjson.dumps(aggregate.decode("utf-8", "surrogateescape"))
    head += b',"seq":' + str(seq).encode() + b',"id":' + orjson.dumps(event_id.decode("utf-8", "surrogateescape"))
    head += b',"type":' + orjson.dumps(kind.decode("utf-8", "surrogateescape"))
    return head + _data_field(data) + b"}\n"


def row_line(table: bytes, row_id: bytes, owner: bytes, created: int, updated: int, data: bytes) -> bytes:
    """A message or part row as a JSON line: ``owner`` is the message row's session or the
    part row's message; ``data`` as in ``event_line``."""
    key = b"session_id" if table == b"message" else b"message_id"
    head = b'{"table":' + orjson.dumps(table.decode()) + b',"id":' + orjson.dumps(row_id.decode("utf-8", "replace"))
    head += b',"' + key + b'":' + orjson.dumps(owner.decode("utf-8", "replace"))
    head += b',"time_created":' + orjson.dumps(created) + b',"time_updated":' + orjson.dumps(updated)
    return head + _data_field(data) + b"}\n"


def _data_field(data: bytes) -> bytes:
    if b"\n" not in data and b"\r" not in data:
        try:
            orjson.loads(data)
            return b',"data":' + data
        except orjson.JSONDecodeError:
            pass
    return b',"dataText":' + orjson.dumps(data.decode("utf-8", "replace"))


class OpenCodeAdapter(Adapter):
    """OpenCode's store, and through ``name`` that of a fork that keeps it under its own
    name (Kilo, ``archive/vendors/kilo``): the data folder ``$XDG_DATA_HOME/<name>``, the
    database, the import folder ``<name>-import``, the config ``<name>/<name>.json``, the
    command in the resume hint, and the provider every row names."""

    name = NAME
    revision = 2  # 2: tool parts in any state (a call left running is kept, unfinished)
    emits = True
    # restore writes the event documents byte for byte and, beside them, each session as
    # the JSON ``opencode import`` reads
    restores_by_emit = True
    env_vars = ("XDG_DATA_HOME",)
    tool_kinds = {"bash": "shell", "edit": "edit", "write": "edit", "patch": "edit", "read": "read", "grep": "search",
                  "glob": "search", "list": "search", "webfetch": "web", "websearch": "web", "task": "agent",
                  "todowrite": "plan", "todoread": "plan"}

    # the provider logins OpenCode keeps beside its database (1.x)
    not_sessions = ("auth.json", "mcp-auth.json")

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        data = env_path(env, "XDG_DATA_HOME") or home / ".local" / "share"
        return [data / self.name]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        state = env_path(env, "XDG_STATE_HOME") or home / ".local" / "state"
        return [state / self.name / side.PROMPT_HISTORY]

    def is_database(self, path: Path) -> bool:
        return path.name == DB_NAME

    def classify(self, path: Path) -> str | None:
        if side.classify(path):
            return side.classify(path)
        if self.is_database(path):
            return RECORDS
        if storage.session_info(path) is not None:
            return RECORDS  # a session of the JSON storage (before 1.2): its files are one record
        if path.parent.name == folder(self.name) and path.name.startswith("ses_") and path.suffix == ".json":
            return SNAPSHOT  # an import file emit wrote
        return None

    def detect(self, head: bytes) -> bool:
        if head.lstrip().startswith(b"{") and b'"info"' in head[:300] and b'"ses_' in head[:600]:
            return True  # an ``opencode export`` document
        first = head.split(b"\n", 1)[0]
        if first.startswith(storage.HEAD + b'"session/'):
            return True  # a session document of the JSON storage
        if first.startswith(b'{"table":"session","row":'):
            return True  # a document of rows
        if not first.startswith(_HEAD):
            return False
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        return isinstance(d, dict) and isinstance(d.get("seq"), int) and isinstance(d.get("type"), str)

    def session_key(self, path: Path) -> str | None:
        return path.name.rpartition("#")[2].split(".", 1)[0] or None

    def record_files(self, path: Path) -> list[str] | None:
        files = storage.session_files(path)
        return None if files is None else [full for _rel, full in files]

    def documents(self, path: Path, query: Query | None) -> Iterator[Document]:
        """One document per session: its events in ``seq`` order when the event log is
        whole (it starts with ``session.created``), else its rows (below). One statement
        per session and table, each one consistent snapshot. A session of the JSON
        storage: the document of its files (``storage.document``)."""
        if query is None:
            doc = storage.document(path)
            if doc is not None:
                yield doc
            return
        tables = {r[0] for r in query("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
        logged: set[bytes] = set()
        if b"event" in tables:
            for (aggregate,) in query("SELECT DISTINCT aggregate_id FROM event ORDER BY aggregate_id", ()):
                rows = query("SELECT seq, id, type, CAST(data AS BLOB) FROM event WHERE aggregate_id = ? ORDER BY seq",
                             (aggregate.decode("utf-8", "surrogateescape"),))
                if not rows or rows[0][0] != 0 or not rows[0][2].startswith(b"session.created"):
                    continue  # a log that does not hold the whole session: read its rows instead
                logged.add(aggregate)
                yield Document(f"{path}#{aggregate.decode('utf-8', 'replace')}.jsonl",
                               b"".join(event_line(aggregate, seq, eid, kind, raw) for seq, eid, kind, raw in rows))
        if {b"session", b"message", b"part"} <= tables:
            yield from self._row_documents(path, query, logged)

    def _row_documents(self, path: Path, query: Query, logged: set[bytes]) -> Iterator[Document]:
        """Sessions without a whole event log (``opencode import`` writes rows and no events,
        1.18.33): the session row, then each message row (by creation) followed by its part
        rows (by id), as JSON lines. The rows change in place, so such a document is
        rewritten, not appended to: each change is a new generation of the source."""
        cols = [r[1].decode() for r in query("PRAGMA table_info(session)", ())]
        for row in query("SELECT * FROM session ORDER BY id", ()):
            session = dict(zip(cols, row))
            sid = session["id"]
            if sid in logged:
                continue
            text = sid.decode("utf-8", "surrogateescape")
            lines = [b'{"table":"session","row":' + orjson.dumps(
                {k: v.decode("utf-8", "replace") if isinstance(v, bytes) else v for k, v in session.items()}) + b"}\n"]
            parts: dict[bytes, list[tuple]] = {}
            for prow in query("SELECT id, message_id, time_created, time_updated, CAST(data AS BLOB) FROM part "
                              "WHERE session_id = ? ORDER BY id", (text,)):
                parts.setdefault(prow[1], []).append(prow)
            for mid, created, updated, data in query(
                    "SELECT id, time_created, time_updated, CAST(data AS BLOB) FROM message WHERE session_id = ? "
                    "ORDER BY time_created, id", (text,)):
                lines.append(row_line(b"message", mid, sid, created, updated, data))
                for pid, _mid, pcreated, pupdated, pdata in parts.pop(mid, []):
                    lines.append(row_line(b"part", pid, mid, pcreated, pupdated, pdata))
            for orphans in parts.values():  # parts whose message row is gone
                for pid, pmid, pcreated, pupdated, pdata in orphans:
                    lines.append(row_line(b"part", pid, pmid, pcreated, pupdated, pdata))
            yield Document(f"{path}#{text}.jsonl", b"".join(lines))

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Any:
        if side.classify(Path(source.path)):
            return side.PromptHistoryParser(source, state)
        return storage.StorageParser(source, state, self.name)

    def unpack(self, document_path: str, data: bytes) -> list[tuple[str, bytes]]:
        """The files a restored JSON-storage document holds, at their place under its
        ``storage`` folder (relative to ``/``, as restore lays sources out)."""
        folder = storage.storage_dir(document_path)
        if folder is None:
            return []
        return [(str(folder / rel).lstrip("/"), raw) for rel, raw in storage.unpack(data)]

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        if storage_emit.storage_release(options.client_version):  # 1.0-1.1: the JSON storage
            return storage_emit.to_storage(emit_session(thread, messages, children, options))
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        return None  # the stored documents are event logs, not files OpenCode reads: emit builds an import file

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd, self.name)

    def configured_options(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """``model_provider`` and ``model`` from the ``model`` (``provider/model``) of the
        user's opencode.json: an imported session then names a model their OpenCode has."""
        config = (env_path(env, "XDG_CONFIG_HOME") or home / ".config") / self.name / f"{self.name}.json"
        try:
            d = orjson.loads(config.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        model = d.get("model") if isinstance(d, dict) else None
        if not isinstance(model, str) or "/" not in model:
            return {}
        provider, name = model.split("/", 1)
        return {"model_provider": provider, "model": name}


ADAPTER = OpenCodeAdapter()
