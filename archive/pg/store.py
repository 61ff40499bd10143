"""``PostgresMessageStore``: the seed's MessageStore over the team database.

It reads every thread and message pushed there, and writes as the local
``SqliteMessageStore`` does: messages appended through it are owned by a pseudo-source
``store`` of the pseudo-machine ``machine`` (default ``store``), keyed on
``(machine, 'store', 1, offset, 0)`` with offsets in append order, so the contract's
append order holds and pushed rows keep their own keys.

Contract (tests/test_store.py runs the same one against every store): append order;
``after_id`` exclusive, unknown ``after_id`` gives ``[]``; re-appending an id changes
nothing; unknown ids give None / ``[]``; ``put_thread`` replaces the thread's fields;
``list_threads`` ordered by ``createdAt`` then id.
"""

from __future__ import annotations

from ..vendors.base import RESPONSE_KEY, RESPONSE_MODEL, response_row
from ..model import Message, Thread, page_messages
from ..projection import _blob_of, block_row, dumps, fork_of, message_columns
from . import (
    BLOCK_COLS,
    DEFAULT_SCHEMA,
    connect,
    nul_free,
    nul_safe_block,
    nul_safe_row,
)
from .queries import load_messages, load_threads

STORE_UID = "store"
_BLOCK_COLS = BLOCK_COLS


class PostgresMessageStore:
    """The team database as a MessageStore (``url``: postgresql://...)."""

    def __init__(self, url: str, schema: str = DEFAULT_SCHEMA, machine: str = "store") -> None:
        self.conn = connect(url, schema)
        self.machine = machine
        with self.conn.transaction():
            self.conn.execute(
                "INSERT INTO machines (id, name) VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (machine, machine)
            )
            self.conn.execute(
                "INSERT INTO sources (machine_id, uid, source_no, provider, kind, current_generation) "
                "VALUES (%s, %s, 0, 'store', 'store', 1) ON CONFLICT DO NOTHING",
                (machine, STORE_UID),
            )

    def close(self) -> None:
        self.conn.close()

    def append_message(self, msg: Message) -> None:
        with self.conn.transaction(), self.conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"sesh-archive:store:{self.machine}",))
            if cur.execute("SELECT 1 FROM messages WHERE id = %s", (nul_free(msg.id),)).fetchone():
                return
            offset = cur.execute(
                'SELECT coalesce(max("offset") + 1, 0) FROM message_occurrences WHERE machine_id = %s AND source_uid = %s',
                (self.machine, STORE_UID),
            ).fetchone()[0]
            c = message_columns(msg)
            cols = ("id", "thread_id", "role", "ts", "turn_id", "parent_id", "run_id", "model", "injected",
                    "machine_id", "source_uid", "source_no", "generation", "offset", "sub", "provenance", "usage",
                    "extra")  # fmt: skip
            c.update(machine_id=self.machine, source_uid=STORE_UID, source_no=0, generation=1, offset=offset, sub=0)
            cur.execute(
                f"INSERT INTO messages ({', '.join(f'{chr(34)}{k}{chr(34)}' for k in cols)}) "
                f"VALUES ({', '.join(['%s'] * len(cols))})",
                nul_safe_row("messages", cols, tuple(c[k] for k in cols)),
            )
            cur.execute(
                'INSERT INTO message_occurrences (machine_id, source_uid, generation, "offset", sub, message_id, '
                "thread_id) VALUES (%s, %s, 1, %s, 0, %s, %s)",
                (self.machine, STORE_UID, offset, nul_free(msg.id), nul_free(msg.thread_id)),
            )
            rows = []
            for position, block in enumerate(msg.content):
                blob = _blob_of(block)
                sha = None
                if blob:
                    import hashlib

                    sha = hashlib.sha256(blob[0]).hexdigest()
                    cur.execute(
                        "INSERT INTO blobs (sha256, media_type, size, data) VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT DO NOTHING",
                        (sha, blob[1], len(blob[0]), blob[0]),
                    )
                r = block_row(msg.id, position, block, sha)
                rows.append(nul_safe_block(tuple(r[k] for k in _BLOCK_COLS)))
            if rows:
                cur.executemany(
                    f"INSERT INTO blocks ({', '.join(_BLOCK_COLS)}) VALUES ({', '.join(['%s'] * len(_BLOCK_COLS))})", rows
                )
            response = response_row(msg)  # keyed as the local store keys it
            if response is not None:
                u = response.usage
                model = response.model
                extra = {k: v for k, v in (u.extra or {}).items() if k not in (RESPONSE_KEY, RESPONSE_MODEL)}
                cur.execute(
                    "INSERT INTO usage (key, thread_id, message_id, provider, model, ts, input_tokens, output_tokens, "
                    "cache_read_tokens, cache_write_tokens, reasoning_tokens, extra, machine_id, source_uid, "
                    'source_no, generation, "offset") VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, '
                    "%s, %s, 0, 1, %s) ON CONFLICT (key) DO NOTHING",
                    (*map(nul_free, (response.key, msg.thread_id, msg.id)), response.provider or "store",
                     *map(nul_free, (model, msg.ts)),
                     u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens, u.reasoning_tokens,
                     dumps(extra) if extra else None, self.machine, STORE_UID, offset),
                )  # fmt: skip
            # a thread nobody described yet is known by its messages, as in the local archive
            cur.execute(
                "INSERT INTO threads (id, machine_id, provider, created_at) VALUES (%s, %s, 'store', %s) "
                "ON CONFLICT (id) DO NOTHING",
                (nul_free(msg.thread_id), self.machine, nul_free(msg.ts)),
            )

    def put_thread(self, thread: Thread) -> None:
        meta = thread.metadata or {}
        provider = meta.get("provider") if isinstance(meta.get("provider"), str) else "store"
        cwd, model = meta.get("cwd"), meta.get("model")
        row = (
            thread.id, self.machine, provider, thread.agent_id, thread.parent_thread_id, thread.origin_message_id,
            thread.title, thread.created_at, cwd if isinstance(cwd, str) else None,
            model if isinstance(model, str) else None,
            dumps(thread.metadata) if thread.metadata else None, dumps(thread.extra) if thread.extra else None,
        )  # fmt: skip
        cols = ("id", "machine_id", "provider", "agent_id", "parent_thread_id", "origin_message_id", "title",
                "created_at", "cwd", "model", "metadata", "extra")  # fmt: skip
        with self.conn.transaction():
            self.conn.execute(
                f"INSERT INTO threads ({', '.join(cols)}) VALUES ({', '.join(['%s'] * len(cols))}) "
                f"ON CONFLICT (id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in cols[1:])}",
                nul_safe_row("threads", cols, row),
            )

    def _own(self, thread_id: str) -> list[Message]:
        return load_messages(self.conn, "m.thread_id = %s", (nul_free(thread_id),))

    def _inherited(self, thread: Thread, seen: frozenset[str] = frozenset()) -> list[Message]:
        """A fork's ancestors' messages up to each fork point (``projection.inherited``)."""
        fork = fork_of(thread)
        parent = self.get_thread(fork[0]) if fork is not None and fork[0] not in seen else None
        if fork is None or parent is None:
            return []
        before = self._inherited(parent, seen | {thread.id}) + self._own(parent.id)
        ids = [m.id for m in before]
        return before[: ids.index(fork[1]) + 1] if fork[1] in ids else []

    def get_thread(self, thread_id: str) -> Thread | None:
        found = load_threads(self.conn, "id = %s", (nul_free(thread_id),))
        return found[0] if found else None

    def list_threads(self, agent_id: str | None = None, parent_thread_id: str | None = None) -> list[Thread]:
        where, params = ["true"], []
        if agent_id is not None:
            where.append("agent_id = %s")
            params.append(nul_free(agent_id))
        if parent_thread_id is not None:
            where.append("parent_thread_id = %s")
            params.append(nul_free(parent_thread_id))
        return load_threads(self.conn, " AND ".join(where), tuple(params))

    def get_messages(self, thread_id: str, after_id: str | None = None, limit: int | None = None) -> list[Message]:
        """The thread's view: a fork's inherited history first (as ``SqliteMessageStore``)."""
        thread = self.get_thread(thread_id)
        if thread is not None and fork_of(thread) is not None:
            return page_messages(self._inherited(thread) + self._own(thread_id), after_id, limit)
        where, params = ["m.thread_id = %s"], [nul_free(thread_id)]
        if after_id is not None:
            key = self.conn.execute(
                'SELECT machine_id, source_no, generation, "offset", sub FROM messages WHERE id = %s AND thread_id = %s',
                (nul_free(after_id), nul_free(thread_id)),
            ).fetchone()
            self.conn.commit()
            if key is None:
                return []
            where.append(
                '(m.machine_id COLLATE "C", m.source_no, m.generation, m."offset", m.sub) '
                '> (%s COLLATE "C", %s, %s, %s, %s)'
            )
            params += list(key)
        if limit is not None:
            where.append(
                'm.id IN (SELECT m.id FROM messages m WHERE ' + " AND ".join(where) + ' ORDER BY m.machine_id COLLATE "C", '
                'm.source_no, m.generation, m."offset", m.sub LIMIT %s)'
            )
            params = params + params + [max(limit, 0)]
        return load_messages(self.conn, " AND ".join(where), tuple(params))
