"""Hermes Agent: the adapter (its home ``~/.hermes`` or ``$HERMES_HOME``, the documents read
from ``state.db``, the JSONL transcripts and JSON snapshots under ``sessions/``, emit).

**A database as a source.** Hermes Agent (0.19.0) keeps every session in ``state.db``
(SQLite, WAL mode: right after a run every row may still be in ``state.db-wal``, the main
file a bare header). ``classify`` calls it ``RECORDS``; ingest opens it read-only
(``archive.readonly``: ``mode=ro``, never ``immutable``, so the WAL is read) and
``documents`` gives two documents per session (their lines in ``parse.py``):

* ``<db>#<session>.jsonl``: the session's head, then its ``messages`` rows by ``id`` (an
  AUTOINCREMENT: it only grows), so new messages append and a rerun adds nothing;
* ``<db>#<session>.session.jsonl``: the ``sessions`` row (with the id of the last answer
  Hermes wrote, which carries the totals: ``carrier``) and the ``session_model_usage``
  rows, which Hermes updates in place (title, totals): each change is a new generation.

``sessions/<id>.jsonl`` (transcripts of gateway sessions and of releases before state.db)
are ``LINES``; ``sessions/session_<id>.json`` (snapshots, ``sessions.write_json_snapshots``)
and the export documents ``emit`` writes (``hermes-import/<id>.json``) are ``SNAPSHOT``.
Restore writes the documents back byte for byte and, beside them, each session as the
export document (``restores_by_emit``).

Side files (issue 38, ``side.py``): the TUI's prompt history ``.hermes_history`` (LINES),
and the session pruning of ``config.yaml`` as the vendor's retention.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, RECORDS, SNAPSHOT, Adapter, Document, EmitOptions, EmitResult, Query, Retention, SourceInfo, env_path
from . import side
from .emit import FOLDER as EXPORT_FOLDER
from .emit import emit_session, resume_hint
from .parse import NAME, HermesParser, message_id, message_mark

DB_NAME = "state.db"
_HEADS = (b'{"table":"sessions","id":', b'{"table":"sessions","row":', b'{"role":"session_meta"')


def _text(v: object) -> object:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def row_line(table: str, row: dict[str, object], **extra: object) -> bytes:
    """One row as a JSON line: its columns in the table's order, text as it is stored."""
    return orjson.dumps({"table": table, "row": {k: _text(v) for k, v in row.items()}, **extra}) + b"\n"


def carrier(sid: str, columns: list[str], messages: Sequence[Sequence[object]]) -> str | None:
    """The id of the session's last answer Hermes wrote (not one emit wrote, which is the
    archived thread's message): the message the session's totals are carried by, as the
    canonical model keeps usage on a message (Hermes keeps none per response)."""
    for n in range(len(messages) - 1, -1, -1):
        m = {k: _text(v) for k, v in zip(columns, messages[n])}
        if m.get("role") == "assistant" and message_mark(m) is None:
            return message_id(sid, n, m)
    return None


class HermesAdapter(Adapter):
    name = NAME
    revision = 2  # 2: the session's totals carried by its last answer
    emits = True
    restores_by_emit = True
    env_vars = ("HERMES_HOME",)
    tool_kinds = {"terminal": "shell", "process": "shell", "read_file": "read", "write_file": "edit", "patch": "edit",
                  "search_files": "search", "web_search": "web", "web_extract": "web", "delegate_task": "agent",
                  "todo": "plan", "execute_code": "shell", "browser_navigate": "web"}

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [env_path(env, "HERMES_HOME") or home / ".hermes"]

    def retention(self, env: Mapping[str, str], home: Path) -> Retention | None:
        return side.retention(env, home)

    def classify(self, path: Path) -> str | None:
        if side.classify(path):
            return side.classify(path)
        if path.name == DB_NAME:
            return RECORDS
        if path.parent.name == EXPORT_FOLDER and path.suffix == ".json":
            return SNAPSHOT
        if path.parent.name != "sessions":
            return None
        if path.name.startswith("session_") and path.suffix == ".json":
            return SNAPSHOT
        if path.suffix == ".jsonl":
            return LINES
        return None

    def detect(self, head: bytes) -> bool:
        if side.HISTORY_HEAD.match(head):
            # the prompt history (Aider's input history has the same format: a file given by
            # hand goes by its name, ``.hermes_history``, to this adapter, else to Aider's)
            return True
        first = head.split(b"\n", 1)[0].lstrip()
        if first.startswith(_HEADS):
            return True
        # an export document emit wrote, or a snapshot: a JSON object with messages
        return first.startswith(b"{") and b'"messages"' in head and (
            b'"session_start"' in head or b'"hermesExport"' in head)

    def session_key(self, path: Path) -> str | None:
        name = path.name.rpartition("#")[2]
        return name[: -len(".jsonl")] if name.endswith(".jsonl") else name.split(".", 1)[0] or None

    def documents(self, path: Path, query: Query | None) -> Iterator[Document]:
        """Two documents per session (module docstring), each from one statement per table."""
        if query is None:
            return
        tables = {r[0] for r in query("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
        if not {b"sessions", b"messages"} <= tables:
            return
        scols = [r[1].decode() for r in query("PRAGMA table_info(sessions)", ())]
        mcols = [r[1].decode() for r in query("PRAGMA table_info(messages)", ())]
        ucols = [r[1].decode() for r in query("PRAGMA table_info(session_model_usage)", ())] \
            if b"session_model_usage" in tables else []
        # Hermes records no client version; its store's schema version (22 in 0.19.0, 11 in
        # 0.13.0) is what tells its releases apart, for the coverage per version
        schema = query("SELECT max(version) FROM schema_version", ())[0][0] if b"schema_version" in tables else None
        for srow in query("SELECT * FROM sessions ORDER BY started_at, id", ()):
            session = dict(zip(scols, srow))
            sid = _text(session["id"])
            assert isinstance(sid, str)
            messages = query("SELECT * FROM messages WHERE session_id = ? ORDER BY id", (sid,))
            usage = query("SELECT * FROM session_model_usage WHERE session_id = ? ORDER BY model, billing_provider, "
                          "billing_base_url, billing_mode, task", (sid,)) if ucols else []
            # the head never changes but for the schema, which a Hermes upgrade bumps (the
            # session's messages then read again as a new generation, stored once)
            head = orjson.dumps({"table": "sessions", "id": sid, "started_at": session.get("started_at"),
                                 "schema": schema}) + b"\n"
            yield Document(f"{path}#{sid}.jsonl",
                           head + b"".join(row_line("messages", dict(zip(mcols, m))) for m in messages))
            yield Document(f"{path}#{sid}.session.jsonl",
                           row_line("sessions", session, usage_rows=len(usage), schema=schema,
                                    carrier=carrier(sid, mcols, messages))
                           + b"".join(row_line("session_model_usage", dict(zip(ucols, u))) for u in usage))

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> HermesParser | side.HistoryParser:
        if side.classify(Path(source.path)):
            return side.HistoryParser(source, state)
        return HermesParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        name = Path(stored_path).name
        if "#" in name:
            return None  # a document of state.db, not a file Hermes reads: emit builds an export
        return str(Path(".hermes") / "sessions" / name)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)
ADAPTER = HermesAdapter()
