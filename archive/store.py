"""The seed's ``MessageStore`` interface and four implementations.

* ``SqliteMessageStore(path)``: the archive database itself. Threads and messages appended
  through it live beside ingested ones, owned by a pseudo-source of kind ``store`` so that
  every projection row keeps its ``(source, generation, offset)`` key.
* ``MemoryMessageStore``: a dict, for tests and embedding.
* ``JsonlMessageStore(path)``: the canonical JSONL interchange file (one seed record per
  line, threads and messages mixed, append-only; a later thread record with the same id
  replaces the earlier one). ``sesh-archive ingest FILE`` and ``emit --to canonical`` use
  the same format.
* ``PostgresMessageStore(url)`` (archive/pg/store.py, imported here): the team database
  that ``sesh-archive push`` fills; psycopg is needed only to make one.

Contract (tests/test_store.py runs it against every one):

* ``get_messages`` returns a thread's messages in append order (ingested ones in file
  order), a fork's inherited history first (the conversation its client sees); ``after_id`` is exclusive; an ``after_id`` not in the thread gives ``[]``;
  ``limit`` caps the count.
* Re-appending a message id that is already stored changes nothing.
* Unknown thread ids: ``get_thread`` gives None, ``get_messages`` gives ``[]``.
* ``put_thread`` replaces the thread's fields.
* ``list_threads`` is ordered by ``createdAt`` then id, filtered by agent and parent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, runtime_checkable

import orjson

from .derived import refresh as refresh_derived
from .ingest import open_archive
from .model import Message, Thread, page_messages
from .projection import (
    Projector,
    dumps,
    fold_thread,
    index_text,
    inherited_from,
    load_messages,
    load_threads,
)
from .secrets import scan_new
from .thread_view import MessagePages
from .vendors.base import response_row


@runtime_checkable
class MessageStore(Protocol):
    def append_message(self, msg: Message) -> None: ...

    def put_thread(self, thread: Thread) -> None: ...

    def get_thread(self, thread_id: str) -> Thread | None: ...

    def list_threads(self, agent_id: str | None = None, parent_thread_id: str | None = None) -> list[Thread]: ...

    def get_messages(self, thread_id: str, after_id: str | None = None, limit: int | None = None) -> list[Message]: ...


def _filter_threads(threads: list[Thread], agent_id: str | None, parent_thread_id: str | None) -> list[Thread]:
    out = [
        t
        for t in threads
        if (agent_id is None or t.agent_id == agent_id)
        and (parent_thread_id is None or t.parent_thread_id == parent_thread_id)
    ]
    return sorted(out, key=lambda t: (t.created_at or "", t.id))


class MemoryMessageStore:
    def __init__(self) -> None:
        self._threads: dict[str, Thread] = {}
        self._messages: dict[str, list[Message]] = {}
        self._ids: set[str] = set()

    def append_message(self, msg: Message) -> None:
        if msg.id in self._ids:
            return
        self._ids.add(msg.id)
        self._messages.setdefault(msg.thread_id, []).append(msg)

    def put_thread(self, thread: Thread) -> None:
        self._threads[thread.id] = thread

    def get_thread(self, thread_id: str) -> Thread | None:
        return self._threads.get(thread_id)

    def list_threads(self, agent_id: str | None = None, parent_thread_id: str | None = None) -> list[Thread]:
        return _filter_threads(list(self._threads.values()), agent_id, parent_thread_id)

    def get_messages(self, thread_id: str, after_id: str | None = None, limit: int | None = None) -> list[Message]:
        return page_messages(list(self._messages.get(thread_id, [])), after_id, limit)


class JsonlMessageStore(MemoryMessageStore):
    """Append-only canonical JSONL file; the whole file is indexed in memory on open."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__()
        self.path = Path(os.path.expanduser(path))
        if self.path.exists():
            with open(self.path, "rb") as f:
                for line in f:
                    if not line.strip():
                        continue
                    d = orjson.loads(line)
                    if "role" in d and "threadId" in d:
                        super().append_message(Message.from_dict(d))
                    else:
                        super().put_thread(Thread.from_dict(d))

    def _append(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as f:
            f.write(orjson.dumps(record) + b"\n")

    def append_message(self, msg: Message) -> None:
        if msg.id in self._ids:
            return
        self._append(msg.to_dict())
        super().append_message(msg)

    def put_thread(self, thread: Thread) -> None:
        self._append(thread.to_dict())
        super().put_thread(thread)


class SqliteMessageStore:
    """The archive database as a MessageStore (reads ingested threads too)."""

    STORE_UID = "store"

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.db = open_archive(os.path.expanduser(path))
        self.conn = self.db.conn

    def _store_source(self) -> int:
        row = self.conn.execute("SELECT id FROM sources WHERE uid = ?", (self.STORE_UID,)).fetchone()
        if row:
            return int(row[0])
        cur = self.conn.execute(
            "INSERT INTO sources (uid, provider, kind, current_generation) VALUES (?, 'store', 'store', 1)",
            (self.STORE_UID,),
        )
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def _next_offset(self, sid: int) -> int:
        row = self.conn.execute(
            "SELECT max(o) FROM (SELECT max(offset) AS o FROM message_occurrences WHERE source_id = ?1 "
            "UNION ALL SELECT max(offset) FROM thread_facts WHERE source_id = ?1)",
            (sid,),
        ).fetchone()
        return (row[0] + 1) if row and row[0] is not None else 0

    def append_message(self, msg: Message) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.conn.execute("SELECT 1 FROM messages WHERE id = ?", (msg.id,)).fetchone() is None:
                sid = self._store_source()
                offset = self._next_offset(sid)
                projector = Projector(self.conn)
                projector.put_message(msg, (sid, 1, offset, 0))
                row = response_row(msg)
                if row is not None:
                    projector.put_usage("store", row, (sid, 1, offset))
                projector.refold()
                refresh_derived(self.conn)
                index_text(self.conn)
                scan_new(self.conn)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def put_thread(self, thread: Thread) -> None:
        fields = thread.to_dict()
        fields.pop("id")
        fields.pop("v", None)
        # replace semantics: the store's earlier facts about this thread no longer count,
        # and keys this record lacks are cleared explicitly
        for k in ("title", "agentId", "parentThreadId", "originMessageId", "metadata"):
            fields.setdefault(k, None if k != "metadata" else {})
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            sid = self._store_source()
            self.conn.execute("DELETE FROM thread_facts WHERE source_id = ? AND thread_id = ?", (sid, thread.id))
            offset = self._next_offset(sid)
            self.conn.execute(
                "INSERT INTO thread_facts VALUES (?, 1, ?, 0, ?, ?)", (sid, offset, thread.id, dumps(fields))
            )
            fold_thread(self.conn, thread.id)
            refresh_derived(self.conn)
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def get_thread(self, thread_id: str) -> Thread | None:
        found = load_threads(self.conn, "id = ?", (thread_id,))
        return found[0] if found else None

    def list_threads(self, agent_id: str | None = None, parent_thread_id: str | None = None) -> list[Thread]:
        where, params = "1", []
        if agent_id is not None:
            where += " AND agent_id = ?"
            params.append(agent_id)
        if parent_thread_id is not None:
            where += " AND parent_thread_id = ?"
            params.append(parent_thread_id)
        return load_threads(self.conn, where, tuple(params))

    def get_messages(self, thread_id: str, after_id: str | None = None, limit: int | None = None) -> list[Message]:
        """The thread's view: a fork's inherited history first (``thread_view.MessagePages``)."""
        if inherited_from(self.conn, thread_id):
            return page_messages(list(MessagePages(self.db, thread_id, full_outputs=False)), after_id, limit)
        where, params = "m.thread_id = ?", [thread_id]
        if after_id is not None:
            key = self.conn.execute(
                "SELECT source_id, generation, offset, sub FROM messages WHERE id = ? AND thread_id = ?",
                (after_id, thread_id),
            ).fetchone()
            if key is None:
                return []
            where += " AND (m.source_id, m.generation, m.offset, m.sub) > (?, ?, ?, ?)"
            params += list(key)
        if limit is not None:
            ids = [
                r[0]
                for r in self.conn.execute(
                    f"SELECT m.id FROM messages m WHERE {where} "
                    "ORDER BY m.source_id, m.generation, m.offset, m.sub LIMIT ?",
                    (*params, max(limit, 0)),
                )
            ]
            if not ids:
                return []
            where = f"m.id IN ({', '.join('?' * len(ids))})"
            params = ids
        return load_messages(self.conn, where, tuple(params))


# the team database's store (archive/pg/store.py); psycopg is imported only when one is made
from .pg.store import PostgresMessageStore  # noqa: E402,F401
