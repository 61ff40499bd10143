"""Push the local archive into a team PostgreSQL database (``sesh-archive push``).

The local SQLite archive stays the source of truth; the server gets a copy of its
canonical layer (and with ``with_sources`` its source layer) under this archive's machine
id (``push_machine``, created by the first push). The server's schema is archive/pg/schema.py.

Invariants:

* Incremental: the watermark is the server's ``generations.end_offset`` per (machine,
  source, generation). Every canonical row the local archive derives from a line is keyed by
  that line (archive/projection.py), so the rows to send are those keyed at or after the
  watermark; a no-op push reads the watermarks, the local ``generations`` and the threads
  (compared by digest), and sends nothing.
* Idempotent: every row is an upsert on its key ((machine, source uid, generation, offset)
  or the canonical id), with the ownership rules of archive/pg/schema.py, so any push sent
  twice, or by two machines in any order, leaves the same tables.
* Crash-safe: a batch's rows and the watermarks that cover them commit in one PostgreSQL
  transaction (rows go through COPY into temporary staging tables, then one upsert per
  table); a push killed at any moment and run again gives the tables of one clean push.
  A generation larger than a batch goes in parts whose watermarks commit in file order
  (a part waits for the one before it), so a watermark never passes a row not yet sent.
  The local side is one SQLite read transaction: a consistent snapshot even while an
  ingest runs.
* Concurrent: machines write disjoint keyed rows; shared canonical rows are upserted in
  key order (no lock-order deadlock between two batches) and a deadlock or serialization
  failure retries the batch. Two pushes of one machine are serialised by an advisory lock.
* A message copied into several threads (a fork's inherited history) belongs to the copy in
  the thread created first, whoever pushed which copy first (``_rank``). Each batch records
  the threads it wrote in ``unsettled_threads``; at the end of the push, under one
  server-wide lock, when every batch of it has committed (``_settle``), the usage rows of
  such messages follow their owner and the threads holding their copies get their
  ``thread_lineage`` derived, laid over their rows (``_send_lineage``). A batch cannot do
  it: the copies and the message may come in two batches of one push, written at once, or
  from two machines. A push killed before its end leaves its threads unsettled for the
  next. A machine sends its thread rows without what its own lineage added (it may lack
  the original).
* A ``rebuild`` since the last push re-derives rows under unchanged keys: the machine's
  watermarks and line-keyed rows on the server are reset and everything is sent again.
  (Canonical rows that a rebuild no longer produces stay on the server.)
* Batches commit with ``synchronous_commit`` off: a server crash may lose the last
  commits, each whole with its watermarks, so the next push sends them again.
* Nothing is redacted unless asked: the server receives what the archive holds, secrets
  included; with ``redact`` every string of every pushed row (and text blobs) has the
  scan's findings masked (``secrets.Redactor``), and the source layer is not sent.
"""

from __future__ import annotations

import hashlib
import itertools
import queue
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import orjson
from sqlite_utils import Database

from . import pg
from .lines import Codec, LineReader
from .projection import LINE_REF, dumps
from .push_marks import send_marks
from .push_side import send_side

# Line bytes covered by one server transaction: a batch's rows take ~3x that in Python
# objects, and WORKERS + 1 batches are in memory at once (one being read, one per worker).
BATCH_BYTES = 16_000_000
BLOB_BATCH_BYTES = 64_000_000
RETRIES = 5
# Server connections writing batches while this process reads the next one. The server's
# time goes to the full-text vectors of block text (to_tsvector and its GIN index: 33 s of
# the 47 s of a 200 MiB first push, against 14 s without the column), one core per
# statement. Four writers: 34-37 s against 47 s with two on this shared 2-core machine
# (load 5-8), no better with six (docs/benchmarks.md); a server with more cores uses them.
WORKERS = 4

_MSG_COLS = ("id", "thread_id", "role", "ts", "turn_id", "parent_id", "run_id", "model", "injected")
_MSG_TAIL = ("provenance", "usage", "extra")
_BLOCK_COLS = pg.BLOCK_COLS
_USAGE_COLS = ("key", "thread_id", "message_id", "provider", "model", "ts", "input_tokens", "output_tokens",
               "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "extra")  # fmt: skip
_THREAD_COLS = ("id", "provider", "agent_id", "parent_thread_id", "origin_message_id", "title", "created_at",
                "cwd", "model", "metadata", "extra")  # fmt: skip
_KEY5 = ("machine_id", "source_uid", "generation", "offset", "sub")
_ORDER = 'm.machine_id COLLATE "C", m.source_no, m.generation, m."offset", m.sub'  # a thread's messages


def _rank(t: str) -> str:
    """The ownership rank of the ``messages`` row ``t`` (the smaller owns): projection's
    ``_before`` made machine-wide. The copy in the thread created first (no createdAt: last),
    then the thread id, then the smallest line key by source uid, then the machine (a
    session ``emit`` wrote ranks after the thread it came from: ``_CREATED_RANK``)."""
    return (f'({t}.thread_created_at IS NULL, coalesce({t}.thread_created_at, \'\') COLLATE "C", '
            f'{t}.thread_id COLLATE "C", {t}.source_uid COLLATE "C", {t}.generation, {t}."offset", {t}.sub, '
            f'{t}.machine_id COLLATE "C")')  # fmt: skip


# The createdAt a copy ranks by on the server (``messages.thread_created_at``): a session
# ``emit`` wrote repeats the times of the thread it came from, and ranks after it locally
# (projection ``_before``), so its createdAt gets a '~', which sorts after the same time and
# before any later one.
_CREATED_RANK = ("CASE WHEN json_extract(t.metadata, '$.emittedFrom') IS NOT NULL AND t.created_at IS NOT NULL "
                 "THEN t.created_at || '~' ELSE t.created_at END")

# A fork's lineage on the server, as projection.resolve_lineage derives it locally: walking
# the thread's copies in order (machine, then its files' order), the owner of the last copy
# before the first message the thread owns itself, and that message.
_LINEAGE = """
WITH occ AS (
    SELECT o.thread_id, o.message_id, m.thread_id AS owner,
           row_number() OVER (PARTITION BY o.thread_id ORDER BY o.machine_id COLLATE "C",
               o.source_uid COLLATE "C", o.generation, o."offset", o.sub) AS n
    FROM message_occurrences o JOIN messages m ON m.id = o.message_id
    WHERE o.thread_id = ANY(%(threads)s)),
stop AS (SELECT thread_id, min(n) AS n FROM occ WHERE owner = thread_id GROUP BY thread_id)
INSERT INTO thread_lineage (thread_id, parent_thread_id, origin_message_id)
SELECT DISTINCT ON (o.thread_id) o.thread_id, o.owner, o.message_id
FROM occ o LEFT JOIN stop s ON s.thread_id = o.thread_id
WHERE s.n IS NULL OR o.n < s.n
ORDER BY o.thread_id, o.n DESC
"""


class PushError(pg.PostgresError):
    pass


@dataclass
class PushOptions:
    schema: str = pg.DEFAULT_SCHEMA
    machine_name: str | None = None  # names (or renames) this archive's machine on the server
    with_sources: bool = False
    # mask the secrets the scan found (archive/secrets.py) in every pushed row; refused with
    # with_sources, whose lines go byte for byte
    redact: bool = False
    progress: Callable[[int, int], None] | None = None  # (line bytes done, line bytes to do)


@dataclass
class PushSummary:
    machine_id: str
    machine_name: str
    server: str
    schema: str
    full: bool = False  # everything sent again (first push, or a rebuild since the last)
    generations: int = 0
    bytes: int = 0  # source bytes whose rows were sent
    rows: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    retries: int = 0
    elapsed_seconds: float = 0.0

    def count(self, table: str, n: int) -> None:
        if n:
            self.rows[table] = self.rows.get(table, 0) + n

    @property
    def sent(self) -> int:
        return sum(self.rows.values())

    def line(self) -> str:
        if not self.sent:
            return f"push: nothing new for machine {self.machine_name} ({self.machine_id[:8]}) in {self.elapsed_seconds:.2f}s"
        parts = ", ".join(f"{n:,} {t}" for t, n in sorted(self.rows.items()))
        return (f"push: machine {self.machine_name} ({self.machine_id[:8]}) -> {self.server} schema {self.schema}: "
                f"{self.generations} source generations, {self.bytes / 1e6:,.1f} MB of lines; {parts}; "
                f"{self.batches} batches in {self.elapsed_seconds:.1f}s")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "machine_id": self.machine_id, "machine_name": self.machine_name, "server": self.server,
            "schema": self.schema, "full": self.full, "generations": self.generations, "bytes": self.bytes,
            "rows": dict(sorted(self.rows.items())), "batches": self.batches, "retries": self.retries,
            "elapsed_seconds": round(self.elapsed_seconds, 3),
        }  # fmt: skip


def machine_identity(db: Database, name: str | None = None) -> tuple[str, str]:
    """This archive's (machine id, name), creating the id on first use; ``name`` renames."""
    conn = db.conn
    row = conn.execute("SELECT id, name FROM push_machine").fetchone()
    if row is not None and (not name or name == row[1]):
        return str(row[0]), str(row[1])  # no write lock for a push with nothing to change
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT id, name FROM push_machine").fetchone()
        if row is None:
            row = (uuid.uuid4().hex, name or socket.gethostname() or "machine")
            conn.execute(
                "INSERT INTO push_machine (id, name, created_at) VALUES (?, ?, ?)",
                (*row, datetime.now(timezone.utc).isoformat(timespec="seconds")),
            )
        elif name and name != row[1]:
            conn.execute("UPDATE push_machine SET name = ? WHERE id = ?", (name, row[0]))
            row = (row[0], name)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return str(row[0]), str(row[1])


def _cleaned(rows: list[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    # PostgreSQL text cannot hold NUL (schema.py); the bytes stay exact in source_lines
    for r in rows:
        yield tuple(pg.nul_free(v) for v in r)


@dataclass
class _Item:
    """One local (source, generation), or a part of one, with rows to send: those keyed in
    ``[from_offset, hi)``, and lines in ``[lines_from, hi)``."""

    source_id: int
    uid: str
    kind: str
    generation: int
    from_offset: int  # canonical rows keyed at or after this
    end_offset: int  # the generation's end: the watermark once its last part is in
    lines_from: int | None  # source lines from here (None: not sent this time)
    gen_row: tuple[Any, ...]  # line_count, last_line_offset, last_line_sha, content_sha256
    hi: int = -1  # rows keyed before this (-1: end_offset)
    part: int = 0  # parts of a generation larger than a batch commit in order
    mark: int = -1  # the watermark this part leaves (-1: end_offset)

    @property
    def final(self) -> bool:
        return self.hi in (-1, self.end_offset)

    @property
    def upto(self) -> int:
        return self.end_offset if self.hi == -1 else self.hi


def _split(item: _Item, done: int) -> list[_Item]:
    """``item`` in parts of about BATCH_BYTES (a 600 MB session file is not one transaction
    nor a few GB of rows in memory). ``done``: the server's watermark, which no part lowers."""
    lo = min(item.from_offset, item.lines_from if item.lines_from is not None else item.from_offset)
    if item.end_offset - lo <= BATCH_BYTES:
        return [item]
    cuts = [*range(lo, item.end_offset, BATCH_BYTES), item.end_offset]
    parts = []
    for n, (a, b) in enumerate(itertools.pairwise(cuts)):
        parts.append(_Item(
            item.source_id, item.uid, item.kind, item.generation, max(item.from_offset, a), item.end_offset,
            None if item.lines_from is None else max(item.lines_from, a), item.gen_row, hi=b, part=n,
            mark=max(done, b) if b < item.end_offset else item.end_offset,
        ))  # fmt: skip
    return parts


class _Pusher:
    def __init__(self, db: Database, url: str, options: PushOptions) -> None:
        self.db = db
        self.sq = db.conn
        self.url = url
        self.options = options
        self.pg = pg.connect(url, options.schema)
        self.machine_id, self.machine_name = machine_identity(db, options.machine_name)
        self.summary = PushSummary(self.machine_id, self.machine_name, pg.redact_url(url), options.schema)
        self.reader = LineReader(self.sq)
        self.codec = Codec()
        self.lock = threading.Lock()  # the summary, from the writer threads
        self.local = threading.local()  # per writer: whether this transaction replaces NULs
        if options.redact and options.with_sources:
            raise PushError("--redact cannot send the source layer (its lines go byte for byte): leave out --with-sources")
        self.redactor = None
        if options.redact:
            from .secrets import redactor_all

            self.redactor = redactor_all(self.sq)

    def _masked(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        red = self.redactor
        assert red is not None
        return tuple(red.text(v) if isinstance(v, str) else v for v in row)

    # ------------------------------------------------------------ server side helpers
    def _tx(self, work: Callable[[Any], None], conn: Any = None) -> None:
        """Run ``work(cursor)`` in one server transaction on ``conn`` (default: the main
        connection), again on deadlock or serialization failure, and again with NUL
        characters replaced when the server refused one (rare: checking every value
        first cost 6 s of a 60 s push)."""
        import psycopg

        conn = conn or self.pg
        clean = False
        for attempt in range(RETRIES):
            try:
                self.local.clean = clean
                with conn.transaction(), conn.cursor() as cur:
                    # atomic either way; a server crash may only lose whole recent batches
                    cur.execute("SET LOCAL synchronous_commit = off")
                    work(cur)
                return
            except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure):
                if attempt == RETRIES - 1:
                    raise
                with self.lock:
                    self.summary.retries += 1
                time.sleep(0.05 * (attempt + 1))
            except psycopg.DataError as e:
                if clean or "0x00" not in str(e).lower() and "nul" not in str(e).lower():
                    raise
                clean = True

    def _stage(self, cur: Any, table: str, cols: tuple[str, ...], rows: list[tuple[Any, ...]]) -> None:
        """COPY ``rows`` into the temporary staging table for ``table`` (emptied first)."""
        quoted = ", ".join(f'"{c}"' for c in cols)
        cur.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS _s_{table} AS SELECT {quoted} FROM {table} WITH NO DATA"
        )
        cur.execute(f"TRUNCATE _s_{table}")
        if getattr(self.local, "clean", False):
            if table == "blocks":
                rows = [pg.nul_safe_block(r) for r in rows]
            elif table in pg.NUL_FIELDS:
                rows = [pg.nul_safe_row(table, cols, r) for r in rows]
            else:
                rows = list(_cleaned(rows))
        with cur.copy(f"COPY _s_{table} ({quoted}) FROM STDIN") as cp:
            for r in rows:
                cp.write_row(r)

    def _upsert(self, cur: Any, table: str, cols: tuple[str, ...], key: tuple[str, ...], rows: list[tuple[Any, ...]],
                where: str = "", order: str | None = None, returning: str = "") -> None:  # fmt: skip
        if not rows:
            return
        self._stage(cur, table, cols, rows)
        quoted = ", ".join(f'"{c}"' for c in cols)
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in cols if c not in key)
        conflict = ", ".join(f'"{c}"' for c in key)
        order_by = order or conflict
        cur.execute(
            f"INSERT INTO {table} ({quoted}) SELECT {quoted} FROM _s_{table} ORDER BY {order_by} "
            f"ON CONFLICT ({conflict}) DO UPDATE SET {sets} {where} {returning}"
        )

    # ------------------------------------------------------------ the push
    def run(self) -> PushSummary:
        started = time.monotonic()
        mid = self.machine_id
        # one push per machine at a time (the lock goes with the session)
        self.pg.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"sesh-archive:push:{mid}",))
        self.pg.commit()
        try:
            self._run()
        finally:
            self.pg.execute("SELECT pg_advisory_unlock(hashtext(%s))", (f"sesh-archive:push:{mid}",))
            self.pg.commit()
            self.pg.close()
        self.summary.elapsed_seconds = time.monotonic() - started
        return self.summary

    def _run(self) -> None:
        mid = self.machine_id
        # a no-op push writes nothing on the server (no commit to flush: 1.2 s once, right
        # after a 1 GB first push, while the server checkpointed)
        with self.pg.transaction():
            row = self.pg.execute("SELECT name, blobs_upto, rebuild_upto FROM machines WHERE id = %s", (mid,)).fetchone()
            if row is None:
                self.pg.execute(
                    "INSERT INTO machines (id, name, first_push_at) VALUES (%s, %s, now()) ON CONFLICT (id) DO NOTHING",
                    (mid, self.machine_name),
                )
                row = (self.machine_name, 0, 0)
            elif row[0] != self.machine_name:
                self.pg.execute("UPDATE machines SET name = %s WHERE id = %s", (self.machine_name, mid))
        blobs_upto, rebuild_upto = row[1], row[2]
        self.sq.execute("BEGIN")  # one snapshot of the local archive for the whole push
        try:
            last_rebuild = self.sq.execute(
                "SELECT coalesce(max(id), 0) FROM ingest_runs WHERE command = 'rebuild'"
            ).fetchone()[0]
            if last_rebuild > rebuild_upto:
                self._reset(last_rebuild)
            items, sources = self._plan()
            self._send_items(items, sources)
            self._send_blobs(blobs_upto)
            self._send_threads()
            send_marks(self)  # tags, stars, notes (archive/push_marks.py)
            send_side(self)  # prompt histories and side files (archive/push_side.py)
        finally:
            self.sq.execute("COMMIT")

    def _reset(self, last_rebuild: int) -> None:
        """After a local rebuild: forget what this machine sent (its line-keyed rows and
        watermarks); the push then sends everything again."""
        mid = self.machine_id

        def work(cur: Any) -> None:
            for table in ("message_occurrences", "thread_facts", "reports", "generations", "machine_threads"):
                cur.execute(f"DELETE FROM {table} WHERE machine_id = %s", (mid,))
            cur.execute("UPDATE machines SET rebuild_upto = %s WHERE id = %s", (last_rebuild, mid))

        self._tx(work)
        self.summary.full = True

    def _plan(self) -> tuple[list[_Item], dict[int, tuple[Any, ...]]]:
        mid, sq = self.machine_id, self.sq
        remote = {
            (r[0], r[1]): (r[2], r[3], r[4])
            for r in self.pg.execute(
                "SELECT source_uid, generation, end_offset, lines_end, lines_from FROM generations WHERE machine_id = %s",
                (mid,),
            )
        }
        remote_sources = {
            r[0]: tuple(r[1:])
            for r in self.pg.execute(
                "SELECT uid, source_no, provider, kind, current_generation, first_path, last_path "
                "FROM sources WHERE machine_id = %s",
                (mid,),
            )
        }
        self.pg.commit()
        if not remote:
            self.summary.full = True
        sources = {
            r[0]: tuple(r)
            for r in sq.execute("SELECT id, uid, provider, kind, current_generation, first_path, last_path FROM sources")
        }
        gens: list[tuple[Any, ...]] = sq.execute(
            "SELECT source_id, generation, end_offset, line_count, last_line_offset, last_line_sha, content_sha256 "
            "FROM generations ORDER BY source_id, generation"
        ).fetchall()
        # a store's rows (SqliteMessageStore) have no generations row: its watermark is the
        # end of its keys, and it is sent whole whenever it grew (put_thread rewrites facts)
        for sid, (_id, _uid, _prov, kind, *_rest) in sources.items():
            if kind == "store":
                top = sq.execute(
                    "SELECT max(o) FROM (SELECT max(offset) AS o FROM message_occurrences WHERE source_id = ?1 "
                    "UNION ALL SELECT max(offset) FROM thread_facts WHERE source_id = ?1 "
                    "UNION ALL SELECT max(offset) FROM usage WHERE source_id = ?1)",
                    (sid,),
                ).fetchone()[0]
                gens.append((sid, 1, (top + 1) if top is not None else 0, 0, None, None, None))
        with_sources = self.options.with_sources
        items: list[_Item] = []
        for sid, g, end, *gen_rest in gens:
            src = sources[sid]
            uid, kind = src[1], src[3]
            done, lines_end, lines_from = remote.get((uid, g), (None, None, None))
            canon = done is None or end > done
            lines = with_sources and kind != "store" and (lines_end is None or end > lines_end)
            if not canon and not lines:
                continue
            start = 0 if kind == "store" or done is None else done
            item = _Item(sid, uid, kind, g, start if canon else end, end,
                         (lines_from or 0) if lines and lines_end is not None else (0 if lines else None),
                         tuple(gen_rest))  # fmt: skip
            items += _split(item, start)
        changed_sources = {
            sid: src for sid, src in sources.items()
            if remote_sources.get(src[1]) != (sid, *src[2:])
        }  # fmt: skip
        return items, changed_sources

    def _send_items(self, items: list[_Item], sources: dict[int, tuple[Any, ...]]) -> None:
        """Batches of about BATCH_BYTES, read here (SQLite is this thread's) and written by
        WORKERS server connections; each batch is one transaction, in any order."""
        def span(it: _Item) -> int:
            return it.upto - min(it.from_offset, it.lines_from if it.lines_from is not None else it.upto)

        batches: list[list[_Item]] = [[]]
        after: list[set[int]] = [set()]  # batches holding earlier parts of a generation in this one
        last_part: dict[tuple[int, int], int] = {}
        size = 0
        for item in items:
            if size >= BATCH_BYTES:
                batches.append([])
                after.append(set())
                size = 0
            key = (item.source_id, item.generation)
            if item.part and last_part.get(key, len(batches) - 1) != len(batches) - 1:
                after[-1].add(last_part[key])
            last_part[key] = len(batches) - 1
            batches[-1].append(item)
            size += span(item)
        in_items = {it.source_id for it in items}
        rest = {sid: s for sid, s in sources.items() if sid not in in_items}  # moved files, no new lines
        if not items and not rest:
            return
        total = sum(span(it) for it in items)
        done = 0
        jobs: queue.Queue[Any] = queue.Queue(maxsize=1)
        written = [threading.Event() for _ in batches]
        errors: list[BaseException] = []
        n = min(WORKERS, len(batches))
        conns = [self.pg] + [pg.connect(self.url, self.options.schema, migrate=False) for _ in range(n - 1)]

        def writer(conn: Any) -> None:
            while True:
                job = jobs.get()
                if job is None:
                    return
                i, job = job
                if not errors:
                    try:
                        self._write_batch(conn, *job)
                    except BaseException as e:  # noqa: BLE001 - re-raised by the reading thread
                        errors.append(e)
                written[i].set()

        threads = [threading.Thread(target=writer, args=(c,), daemon=True) for c in conns]
        for t in threads:
            t.start()
        try:
            for i, batch in enumerate(batches):
                if errors:
                    break
                job = self._prepare_batch(batch, sources, rest if i == len(batches) - 1 else None)
                for j in after[i]:  # a generation's watermark only moves forward, part after part
                    written[j].wait()
                jobs.put((i, job))
                done += sum(span(it) for it in batch)
                if self.options.progress and total:
                    self.options.progress(done, total)
        finally:
            for _ in threads:
                jobs.put(None)
            for t in threads:
                t.join()
            for c in conns[1:]:
                c.close()
        if errors:
            raise errors[0]

    def _read_batch(self, batch: list[_Item]) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of the batch's lines, as the server's tables want them."""
        sq, mid = self.sq, self.machine_id
        out: dict[str, list[tuple[Any, ...]]] = {k: [] for k in (
            "message_occurrences", "messages", "blocks", "thread_facts", "reports", "usage", "source_lines")}  # fmt: skip
        msg_cols = ", ".join(f"m.{c}" for c in (*_MSG_COLS, "source_id", "generation", "offset", "sub", *_MSG_TAIL))
        block_cols = ", ".join(f"b.{c}" for c in _BLOCK_COLS)
        for it in batch:
            if it.from_offset < it.upto:
                key = (it.source_id, it.generation, it.from_offset, it.upto)
                where = "o.source_id = ? AND o.generation = ? AND o.offset >= ? AND o.offset < ?"
                out["message_occurrences"] += [
                    (mid, it.uid, g, off, sub, m, t)
                    for g, off, sub, m, t in sq.execute(
                        f"SELECT generation, offset, sub, message_id, thread_id FROM message_occurrences o WHERE {where}",
                        key,
                    )
                ]
                # the messages whose owner (smallest key) is one of these lines
                owned = (f"FROM message_occurrences o JOIN messages m ON m.id = o.message_id AND m.source_id = o.source_id "
                         f"AND m.generation = o.generation AND m.offset = o.offset AND m.sub = o.sub WHERE {where}")  # fmt: skip
                # with the createdAt of the owner's thread: the rank of this copy on the server
                ranked = owned.replace("WHERE", "LEFT JOIN threads t ON t.id = m.thread_id WHERE", 1)
                for r in sq.execute(f"SELECT {msg_cols}, {_CREATED_RANK} {ranked}", key):
                    extra = r[15]
                    if extra is not None and LINE_REF in extra:
                        extra = self._expand_line_refs(extra, r[9], r[10], r[11])
                    out["messages"].append((*r[:9], mid, it.uid, r[9], r[10], r[11], r[12], r[13], r[14], extra, r[16]))
                out["blocks"] += sq.execute(
                    f"SELECT {block_cols} {owned.replace('WHERE', 'JOIN blocks b ON b.message_id = m.id WHERE', 1)}", key
                ).fetchall()
                out["thread_facts"] += [
                    (mid, it.uid, *r)
                    for r in sq.execute(
                        "SELECT generation, offset, sub, thread_id, fields FROM thread_facts o WHERE " + where, key
                    )
                ]
                out["reports"] += [
                    (mid, it.uid, *r)
                    for r in sq.execute(
                        "SELECT generation, offset, seq, kind, reason, detail FROM reports o WHERE " + where, key
                    )
                ]
                out["usage"] += [
                    (*r[:-2], mid, it.uid, it.source_id, r[-2], r[-1])
                    for r in sq.execute(
                        f"SELECT {', '.join(_USAGE_COLS)}, generation, offset FROM usage o WHERE {where}", key
                    )
                ]
            if it.lines_from is not None:
                out["source_lines"] += [
                    (mid, it.uid, it.generation, off, length, term, data)
                    for off, length, term, data in self._lines(it.source_id, it.generation, it.lines_from, it.upto)
                ]
        return out

    def _lines(self, sid: int, g: int, lo: int, hi: int) -> Iterator[tuple[int, int, int, bytes]]:
        """``iter_stored_lines`` of the lines at offsets in ``[lo, hi)``, unpacking only the
        chunks that hold them."""
        sq = self.sq
        for first, end, c, data in sq.execute(
            "SELECT first_offset, end_offset, codec, data FROM source_chunks WHERE source_id = ? AND generation = ? "
            "AND end_offset > ? AND first_offset < ? ORDER BY first_offset",
            (sid, g, lo, hi),
        ).fetchall():
            raw = self.codec.unpack(c, data)
            for offset, length, terminated in sq.execute(
                "SELECT offset, length, terminated FROM source_lines WHERE source_id = ? AND generation = ? "
                "AND offset >= ? AND offset < ? ORDER BY offset",
                (sid, g, max(first, lo), min(end, hi)),
            ).fetchall():
                yield offset, length, terminated, raw[offset - first : offset - first + length]

    def _expand_line_refs(self, extra: str, sid: int, g: int, offset: int) -> str:
        """messages.extra with line-backed fields written out (the server has no lines to
        read them from unless --with-sources)."""
        d = orjson.loads(extra)
        refs = [k for k, v in d.items() if isinstance(v, dict) and v.keys() == {LINE_REF} and v[LINE_REF] == k]
        if not refs:
            return extra
        line = orjson.loads(self.reader.line(sid, g, offset))
        for k in refs:
            d[k] = line[k]
        return orjson.dumps(d).decode()

    def _prepare_batch(self, batch: list[_Item], sources: dict[int, tuple[Any, ...]],
                       rest: dict[int, tuple[Any, ...]] | None = None) -> tuple[Any, ...]:  # fmt: skip
        """A batch's rows, read from the local archive (this thread's connection)."""
        mid = self.machine_id
        rows = self._read_batch(batch)
        if self.redactor is not None:
            rows = {t: [self._masked(r) for r in rs] for t, rs in rows.items()}
        in_batch = {it.source_id for it in batch} | set(rest or ())
        src_rows = [(mid, s[1], sid, *s[2:]) for sid, s in sources.items() if sid in in_batch]
        gen_rows = [(mid, it.uid, it.generation, it.end_offset if it.mark == -1 else it.mark, *it.gen_row)
                    for it in batch]  # fmt: skip
        line_rows = [
            (mid, it.uid, it.generation, it.end_offset, it.gen_row[1] or 0)
            for it in batch
            if it.lines_from is not None and it.final
        ]
        store_uids = sorted({it.uid for it in batch if it.kind == "store"})
        rows["sources"] = src_rows
        return batch, rows, gen_rows, line_rows, store_uids

    def _write_batch(self, conn: Any, batch: list[_Item], rows: dict[str, list[tuple[Any, ...]]],
                     gen_rows: list[tuple[Any, ...]], line_rows: list[tuple[Any, ...]], store_uids: list[str]) -> None:  # fmt: skip
        """One batch in one server transaction, its watermarks with it."""
        mid = self.machine_id
        src_rows = rows["sources"]
        threads = {r[1] for r in rows["messages"]} | {r[6] for r in rows["message_occurrences"]}

        def work(cur: Any) -> None:
            unsettled = set(threads)
            for uid in store_uids:  # sent whole: facts it rewrote must not linger
                cur.execute("DELETE FROM thread_facts WHERE machine_id = %s AND source_uid = %s", (mid, uid))
                unsettled.update(r[0] for r in cur.execute(
                    "DELETE FROM message_occurrences WHERE machine_id = %s AND source_uid = %s RETURNING thread_id",
                    (mid, uid)))  # fmt: skip
            unsettled.discard(None)
            if unsettled:  # in key order, as every shared row (no lock-order deadlock)
                cur.executemany("INSERT INTO unsettled_threads VALUES (%s, %s) ON CONFLICT DO NOTHING",
                                [(mid, t) for t in sorted(unsettled)])  # fmt: skip
            self._upsert(cur, "sources", ("machine_id", "uid", "source_no", "provider", "kind", "current_generation",
                                          "first_path", "last_path"), ("machine_id", "uid"), src_rows)  # fmt: skip
            self._upsert(cur, "message_occurrences", (*_KEY5, "message_id", "thread_id"), _KEY5,
                         rows["message_occurrences"])  # fmt: skip
            self._upsert(cur, "thread_facts", (*_KEY5, "thread_id", "fields"), _KEY5, rows["thread_facts"])
            k5 = ("machine_id", "source_uid", "generation", "offset", "seq")
            self._upsert(cur, "reports", (*k5, "kind", "reason", "detail"), k5, rows["reports"])
            self._write_messages(cur, rows["messages"], rows["blocks"])
            own = '(excluded.machine_id COLLATE "C", excluded.source_no, excluded.generation, excluded."offset")'
            self._upsert(cur, "usage", (*_USAGE_COLS, "machine_id", "source_uid", "source_no", "generation", "offset"),
                         ("key",), rows["usage"], where=f"WHERE {own} >= "
                         '(usage.machine_id COLLATE "C", usage.source_no, usage.generation, usage."offset")')  # fmt: skip
            k4 = ("machine_id", "source_uid", "generation", "offset")
            self._upsert(cur, "source_lines", (*k4, "length", "terminated", "data"), k4, rows["source_lines"])
            gcols = ("machine_id", "source_uid", "generation", "end_offset", "line_count", "last_line_offset",
                     "last_line_sha", "content_sha256")  # fmt: skip
            self._upsert(cur, "generations", gcols, gcols[:3], gen_rows)
            if line_rows:
                cur.executemany(
                    "UPDATE generations SET lines_end = %s, lines_from = %s "
                    "WHERE machine_id = %s AND source_uid = %s AND generation = %s",
                    [(end, frm, m, u, g) for m, u, g, end, frm in line_rows],
                )

        self._tx(work, conn)
        with self.lock:
            for table, r in rows.items():
                self.summary.count(table, len(r))
            self.summary.generations += len(batch)
            self.summary.generations -= sum(1 for it in batch if not it.final)
            self.summary.bytes += sum(max(it.upto - it.from_offset, 0) for it in batch)
            self.summary.batches += 1

    def _write_messages(self, cur: Any, messages: list[tuple[Any, ...]], blocks: list[tuple[Any, ...]]) -> None:
        """Messages that rank before the stored owner (``_rank``), or new, replace it, their
        blocks with them; the others change nothing."""
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS _owned (id text, inserted boolean)")
        cur.execute("TRUNCATE _owned")
        if not messages:
            return
        cols = (*_MSG_COLS, "machine_id", "source_uid", "source_no", "generation", "offset", "sub", *_MSG_TAIL,
                "thread_created_at")  # fmt: skip
        self._stage(cur, "messages", cols, messages)
        quoted = ", ".join(f'"{c}"' for c in cols)
        sets = ", ".join(f'"{c}" = excluded."{c}"' for c in cols if c != "id")
        cur.execute(
            f"WITH up AS (INSERT INTO messages ({quoted}) SELECT {quoted} FROM _s_messages ORDER BY id "
            f"ON CONFLICT (id) DO UPDATE SET {sets} "
            f"  WHERE {_rank('excluded')} <= {_rank('messages')} "
            # xmax = 0: a new row, with no blocks to delete (1.2 s of a 200 MB first push)
            "RETURNING id, xmax = 0) INSERT INTO _owned SELECT * FROM up"
        )
        if blocks:
            self._stage(cur, "blocks", _BLOCK_COLS, blocks)
        cur.execute("DELETE FROM blocks b USING _owned o WHERE b.message_id = o.id AND NOT o.inserted")
        if blocks:
            quoted = ", ".join(f'"{c}"' for c in _BLOCK_COLS)
            cur.execute(
                f"INSERT INTO blocks ({quoted}) SELECT {', '.join('s.' + q for q in quoted.split(', '))} "
                "FROM _s_blocks s JOIN _owned o ON o.id = s.message_id ORDER BY s.message_id, s.position"
            )

    def _settle(self, cur: Any) -> list[str]:
        """The threads whose lineage this machine's pushes may have changed (its
        ``unsettled_threads``, taken), with the usage rows of their shared messages moved
        to the messages' owners (as locally). Run once every batch has committed, under the
        lineage lock, so it sees the rows of every batch and of every machine that finished
        before it; a machine finishing later settles what its own rows changed."""
        sent = sorted(r[0] for r in cur.execute(
            "DELETE FROM unsettled_threads WHERE machine_id = %s RETURNING thread_id", (self.machine_id,)))  # fmt: skip
        if not sent:
            return []
        # messages copied into a thread they do not belong to, on either side of this push's threads
        cur.execute("CREATE TEMP TABLE IF NOT EXISTS _shared (id text)")
        cur.execute("TRUNCATE _shared")
        cur.execute(
            "INSERT INTO _shared SELECT o.message_id FROM message_occurrences o JOIN messages m ON m.id = o.message_id "
            "WHERE o.thread_id = ANY(%(t)s) AND o.thread_id IS DISTINCT FROM m.thread_id "
            "UNION SELECT m.id FROM messages m JOIN message_occurrences o ON o.message_id = m.id "
            "WHERE m.thread_id = ANY(%(t)s) AND o.thread_id IS DISTINCT FROM m.thread_id",
            {"t": sent},
        )
        cur.execute(
            "UPDATE usage u SET thread_id = m.thread_id FROM _shared s JOIN messages m ON m.id = s.id "
            "WHERE u.message_id = s.id AND u.thread_id IS DISTINCT FROM m.thread_id"
        )
        # every thread holding a copy, and those of this push that had a lineage (it may be gone)
        return sorted({r[0] for r in cur.execute(
            "SELECT o.thread_id FROM message_occurrences o JOIN _shared s ON s.id = o.message_id "
            "WHERE o.thread_id IS NOT NULL UNION SELECT thread_id FROM thread_lineage WHERE thread_id = ANY(%s)",
            (sent,),
        )})  # fmt: skip

    def _send_lineage(self, cur: Any, sent: set[str]) -> None:
        """``thread_lineage`` of the threads this push touched, laid over the rows of those
        threads, of the threads sent (``sent``) and of their children whose fork point is
        unknown, as ``projection.fold_thread`` does locally: a fold naming no parent takes its
        lineage's; a fork point named by a byte offset (``forkedFromOffset``) or a spawning
        call (``spawnCallId``) is looked up among every machine's messages."""
        # one machine at a time, so the last push to finish sees every machine's copies
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"sesh-archive:lineage:{self.options.schema}",))
        threads = self._settle(cur)
        if not threads and not sent:
            return
        if threads:
            cur.execute("DELETE FROM thread_lineage WHERE thread_id = ANY(%s)", (threads,))
            cur.execute(_LINEAGE, {"threads": threads})
        sent_ids = sorted(sent)
        changes = []
        for tid, parent, origin, meta, derived, l_parent, l_origin in cur.execute(
            "SELECT t.id, t.parent_thread_id, t.origin_message_id, t.metadata, t.derived, l.parent_thread_id, "
            "l.origin_message_id FROM threads t LEFT JOIN thread_lineage l ON l.thread_id = t.id "
            "WHERE t.id = ANY(%s) OR t.id = ANY(%s) OR (t.parent_thread_id = ANY(%s) AND t.origin_message_id IS NULL) "
            "OR t.derived IS NOT NULL AND t.parent_thread_id = ANY(%s)",
            (threads, sent_ids, sent_ids, sent_ids),
        ).fetchall():
            md = orjson.loads(meta) if meta else {}
            p, o, how = parent, origin, None
            if derived == "lineage":  # what the last overlay added goes first
                p = o = None
                md.pop("forkedFrom", None)
            elif derived == "origin":
                o = None
            if p is None and l_parent is not None:
                p, o, how = l_parent, l_origin, "lineage"
                md["forkedFrom"] = l_parent
            fork_end, spawn = md.get("forkedFromOffset"), md.get("spawnCallId")
            if o is None and isinstance(fork_end, int) and md.get("forkedFrom") == p and p is not None:
                found = cur.execute(
                    'SELECT id FROM messages WHERE thread_id = %s AND "offset" < %s ORDER BY "offset" DESC, sub DESC '
                    "LIMIT 1",
                    (p, fork_end),
                ).fetchone()
                o, how = (found[0], how or "origin") if found else (o, how)
            if o is None and isinstance(spawn, str):
                found = cur.execute(
                    "SELECT b.message_id FROM blocks b JOIN messages m ON m.id = b.message_id WHERE b.call_id = %s "
                    "AND b.type = 'tool_call' AND (m.thread_id = %s OR %s::text IS NULL) "
                    f"ORDER BY {_ORDER} LIMIT 1",
                    (spawn, p, p),
                ).fetchone()
                o, how = (found[0], how or "origin") if found else (o, how)
            new_meta = (dumps(md) if md else None) if (derived or how) else meta
            if (p, o, how, new_meta) != (parent, origin, derived, meta):
                changes.append((p, o, new_meta, how, tid))
        if changes:
            cur.executemany(
                "UPDATE threads SET parent_thread_id = %s, origin_message_id = %s, metadata = %s, derived = %s "
                "WHERE id = %s",
                changes,
            )

    def _send_blobs(self, upto: int) -> None:
        """Blobs added since the last push (local rowids only grow: blobs are never deleted)."""
        mid = self.machine_id
        while True:
            rows, size, top = [], 0, upto
            for rowid, sha, media, n, data in self.sq.execute(
                "SELECT rowid, sha256, media_type, size, data FROM blobs WHERE rowid > ? ORDER BY rowid", (upto,)
            ):
                if self.redactor is not None and (media or "").startswith("text/"):
                    data = self.redactor.bytes(bytes(data))  # the sha stays the archive's key
                    n = len(data)
                rows.append((sha, media, n, data))
                size += n
                top = rowid
                if size >= BLOB_BATCH_BYTES:
                    break
            if not rows:
                return

            def work(cur: Any, rows: list[tuple[Any, ...]] = rows, top: int = top) -> None:
                self._stage(cur, "blobs", ("sha256", "media_type", "size", "data"), rows)
                cur.execute(
                    "INSERT INTO blobs SELECT * FROM _s_blobs ORDER BY sha256 ON CONFLICT (sha256) DO NOTHING"
                )
                cur.execute("UPDATE machines SET blobs_upto = %s WHERE id = %s", (top, mid))

            self._tx(work)
            self.summary.count("blobs", len(rows))
            upto = top

    def _send_threads(self) -> None:
        """Threads whose local row changed since the last push (by digest). The row on the
        server is the smallest machine id's fold of it."""
        mid = self.machine_id
        remote = dict(self.pg.execute("SELECT thread_id, digest FROM machine_threads WHERE machine_id = %s", (mid,)))
        # threads a push killed before its end wrote and did not settle
        unsettled = self.pg.execute("SELECT EXISTS (SELECT 1 FROM unsettled_threads WHERE machine_id = %s)",
                                    (mid,)).fetchone()[0]  # fmt: skip
        self.pg.commit()
        rows, digests = [], []
        lineage = _local_lineage(self.sq)
        for r in self.sq.execute(f"SELECT {', '.join(_THREAD_COLS)} FROM threads"):
            d = hashlib.blake2b(orjson.dumps(list(r)), digest_size=16).hexdigest()
            if remote.get(r[0]) != d:
                f = _without_lineage(r, lineage.get(r[0]))
                rows.append((*(self._masked(f) if self.redactor is not None else f), mid, None))
                digests.append((mid, r[0], d))

        def work(cur: Any) -> None:
            self._upsert(cur, "threads", (*_THREAD_COLS, "machine_id", "derived"), ("id",), rows,
                         where='WHERE excluded.machine_id COLLATE "C" <= threads.machine_id COLLATE "C"')  # fmt: skip
            self._send_lineage(cur, {r[0] for r in rows})
            self._upsert(cur, "machine_threads", ("machine_id", "thread_id", "digest"), ("machine_id", "thread_id"),
                         digests)  # fmt: skip
            if self.summary.sent or rows:
                cur.execute("UPDATE machines SET last_push_at = now() WHERE id = %s", (mid,))

        if rows or self.summary.sent or unsettled:
            self._tx(work)
        self.summary.count("threads", len(rows))


def _local_lineage(sq: Any) -> dict[str, tuple[str, str]]:
    """The local archive's fork lineage (migration m010): thread -> (parent, fork point)."""
    return {r[0]: (r[1], r[2]) for r in sq.execute(
        "SELECT thread_id, parent_thread_id, origin_message_id FROM thread_lineage")}  # fmt: skip


def _without_lineage(row: tuple[Any, ...], fork: tuple[str, str] | None) -> tuple[Any, ...]:
    """A local ``threads`` row (_THREAD_COLS) as its facts alone fold it: without what
    ``fold_thread`` took from the local lineage, which the server derives from every
    machine's copies instead (a machine holding only the fork knows no lineage)."""
    if fork is None or (row[3], row[4]) != fork:
        return row
    md = orjson.loads(row[9]) if row[9] else {}
    if md.get("forkedFrom") != fork[0]:
        return row
    del md["forkedFrom"]
    return (*row[:3], None, None, *row[5:9], dumps(md) if md else None, row[10])


def push(db: Database, url: str, options: PushOptions | None = None) -> PushSummary:
    """Send what the server does not have yet of the archive ``db`` to ``url``."""
    if not pg.is_postgres_url(url):
        raise PushError(f"not a PostgreSQL URL: {pg.redact_url(url)!r} (postgresql://user@host/db)")
    import psycopg

    try:
        return _Pusher(db, url, options or PushOptions()).run()
    except psycopg.Error as e:
        raise PushError(f"push to {pg.redact_url(url)} failed: {str(e).strip()}") from None
