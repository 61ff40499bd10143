"""Canonical rows <-> SQLite tables (layer 2), both directions.

Used by ingest (parser rows from file lines), rebuild (the same rows from stored lines)
and ``SqliteMessageStore`` (messages appended through the seed's interface).

Invariants, each what makes ingest order irrelevant (incremental = whole = rebuild):

* Every derived row is keyed by the line it came from: ``(source_id, generation, offset,
  sub)``. Applying the same line twice changes nothing.
* A message is stored once per id. When several lines yield it (a resume copy, a later
  generation, a fork's copy of its parent's history), one occurrence owns the stored row,
  whatever order the lines were applied in: the one of the thread created first (then
  thread id), then the smallest ``(source uid, generation, offset, sub)``. Every
  occurrence is recorded with the thread of its line.
* A thread whose first messages are owned by another thread is a fork of it
  (``thread_lineage``: parent and last inherited message), recomputed for every thread
  holding a copy whenever a copy arrives in another thread; its view (``thread_view``) is the
  parent's view up to the fork point, then its own messages.
* A usage row is one model response: the row from the largest key wins (the final
  snapshot of a split response).
* A thread is the fold of its facts in key order; threads are re-folded after each batch.
* Several files' rows share a flush only where they cannot meet (``Projector.flush``): the
  tables are those of a flush a file.
* ``message_from_rows(load(apply(m))) == m`` for every message (lossless round trip):
  attachment bytes move to ``blobs`` and come back as the same base64 text.
"""

from __future__ import annotations

import hashlib
import sqlite3
from typing import Any

import orjson

from .derived import Live
from .flush_plan import Key, Owner, flush_groups, latest_reports
from .derived import queue as queue_derived
from .model import (
    Attachment,
    Block,
    JsonObject,
    Message,
    Thread,
    Usage,
)
from .vendors import get as get_adapter
from .vendors.base import (
    INVALID,
    PARSE_ERROR,
    RESPONSE_KEY,
    RESPONSE_LINK,
    RESPONSE_MODEL,
    WARNING,
    BlobRow,
    MessageRow,
    Report,
    Row,
    ThreadFact,
    UsageRow,
    message_response_key,
)

from .rows import (  # noqa: F401  re-exported: the projection's row helpers live in rows.py
    _blob_named,
    _blob_of,
    _BLOCK_COL_NAMES,
    _BLOCK_COLS,
    block_from_row,
    block_row,
    block_tuple,
    dumps,
    JSON_INT_MAX,
    json_text,
    LINE_REF,
    LINE_REF_MIN,
    loads,
    message_columns,
    message_from_row,
    message_values,
    needs_taming,
    one_line,
    _OWN_FIELDS,
    REASON_DEEP,
    REASON_INT,
    render_text,
    _REPORTED_PATHS,
    _scalar_text,
    _SHA256_HEX,
    TAME_DEPTH,
    tame_rows,
    TAMED_REASONS,
    _Tamer,
    thread_from_row,
    _Token,
)

# values, blocks, messages and threads <-> rows: archive/rows.py (re-exported here)


_MSG_MARKS = ", ".join("?" * 16)
_BLOCK_INSERT = f"INSERT INTO blocks ({_BLOCK_COLS}) VALUES ({', '.join('?' * len(_BLOCK_COL_NAMES))})"
_MSG_COLS = (
    "id, thread_id, role, ts, turn_id, parent_id, run_id, model, injected, "
    "source_id, generation, offset, sub, provenance, usage, extra"
)


# One model response: the row of a line whose thread owns the message carrying it (an
# emitted session repeats its origin's responses under their keys: the origin's own line
# wins), then the row of the latest line (largest key, the source's uid for its local id, so
# that copies in several files give the same row whatever order they came in).
_OWNS = "((SELECT m.thread_id FROM messages m WHERE m.id = {t}.message_id) IS {t}.thread_id)"
_USAGE_UPSERT = """
    INSERT INTO usage (key, thread_id, message_id, provider, model, ts, input_tokens,
        output_tokens, cache_read_tokens, cache_write_tokens, reasoning_tokens, extra,
        source_id, generation, offset)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT(key) DO UPDATE SET
        thread_id = excluded.thread_id, message_id = excluded.message_id,
        provider = excluded.provider, model = excluded.model, ts = excluded.ts,
        input_tokens = excluded.input_tokens, output_tokens = excluded.output_tokens,
        cache_read_tokens = excluded.cache_read_tokens,
        cache_write_tokens = excluded.cache_write_tokens,
        reasoning_tokens = excluded.reasoning_tokens, extra = excluded.extra,
        source_id = excluded.source_id, generation = excluded.generation,
        offset = excluded.offset
    WHERE {own_x} > {own_u}
        OR {own_x} = {own_u} AND (
        excluded.source_id = usage.source_id AND (excluded.generation, excluded.offset)
            >= (usage.generation, usage.offset)
        OR excluded.source_id != usage.source_id
            AND ((SELECT uid FROM sources WHERE id = excluded.source_id), excluded.generation, excluded.offset)
            >= ((SELECT uid FROM sources WHERE id = usage.source_id), usage.generation, usage.offset))
""".format(own_x=_OWNS.format(t="excluded"), own_u=_OWNS.format(t="usage"))


# the message of a thread carrying a response link (``RESPONSE_LINK``), the first in its files'
# order: what a usage row naming that link belongs to (``_link_usage``, ``_link_queued``)
_LINKED_MESSAGE = (
    "(SELECT m.id FROM messages m WHERE m.thread_id = {thread} "
    f"AND json_extract(m.extra, '$.{RESPONSE_LINK}') = {{link}} "
    "ORDER BY m.source_id, m.generation, m.offset LIMIT 1)"
)


# provider -> its adapter's ``line_backed_extra`` (a class attribute: looked up once, not per line)
_LINE_BACKED: dict[str, tuple[str, ...]] = {}


class Projector:
    """Applies parser rows to the projection tables inside the caller's transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.dirty_threads: set[str] = set()
        self.messages_added = 0
        # rows not yet written, one executemany each in flush(): blocks, and rows nothing
        # reads before the batch ends (1 GB corpus: ~1.5M single-row statements saved)
        self._blocks: list[tuple[Any, ...]] = []
        self._messages: list[tuple[Message, Key, tuple[str, ...], bool]] = []
        self._occurrences: list[tuple[Any, ...]] = []
        self._facts: list[tuple[Any, ...]] = []
        self._usage: list[tuple[Any, ...]] = []
        self._owned: set[str] = set()  # messages (re)written in this flush: their usage follows them
        self._linked: set[str] = set()  # threads with a RESPONSE_LINK row in this flush (``_link_usage``)
        self._reports: list[tuple[Any, ...]] = []
        self._shared: set[str] = set()  # messages seen in more than one thread: lineage to recompute
        self._moved: set[str] = set()  # shared messages that changed owner thread in this flush
        self._sharers: set[str] = set()  # threads that took an occurrence of a shared message
        self._fact_threads: set[str] = set()  # threads with thread_facts rows in this flush
        self._uids: dict[int, str] = {}
        self._created: dict[str, tuple[str | None, str | None]] = {}
        # dirty threads a ranking folded in this flush: folded again when it ends, so that the
        # next copies read their row instead of folding them each time (``flush``)
        self._ranked: set[str] = set()
        self.live: Live | None = None  # an ingest run's file index and signals, computed as messages are written
        # the lines and bytes whose rows wait for the next flush (ingest's ``_flush_rows``)
        self.lines_held = self.bytes_held = 0
        self._parcels: list[tuple[int, int, int, int, int]] = []  # where each file's queued rows start (``parcel``)

    # -- rows of one line
    def apply(self, provider: str, key3: tuple[int, int, int], rows: list[Row]) -> None:
        source_id, generation, offset = key3
        msg_sub = fact_sub = report_seq = 0
        line_backed = _LINE_BACKED.get(provider)
        if line_backed is None:
            line_backed = _LINE_BACKED[provider] = get_adapter(provider).line_backed_extra
        # a line the adapter had to repair (NUL bytes, bad UTF-8, glued records) is not read
        # back by a plain JSON parse, so its fields stay in the projection
        for r in rows:
            if isinstance(r, Report) and (r.kind in (PARSE_ERROR, WARNING) or (r.kind == INVALID and r.reason in TAMED_REASONS)):
                line_backed = ()
                break
        for row in rows:
            if isinstance(row, MessageRow):
                self.put_message(row.message, (source_id, generation, offset, msg_sub), line_backed, row.revises)
                msg_sub += 1
            elif isinstance(row, ThreadFact):
                self._facts.append((source_id, generation, offset, fact_sub, row.thread_id, dumps(row.fields)))
                self.dirty_threads.add(row.thread_id)
                fact_sub += 1
            elif isinstance(row, UsageRow):
                self.put_usage(provider, row, (source_id, generation, offset))
            elif isinstance(row, BlobRow):
                self.put_blob(row.data, row.media_type)
            elif isinstance(row, Report):
                self.put_report((source_id, generation, offset), report_seq, row)
                report_seq += 1

    def _link_usage(self, threads: set[str]) -> None:
        """Usage rows of these threads that name a response link (``RESPONSE_LINK``: the
        vendor wrote the usage in another file than the message) and no message get the
        message of their thread carrying that link, whichever of the two was read first."""
        self.conn.execute(
            "UPDATE usage SET message_id = "
            + _LINKED_MESSAGE.format(thread="usage.thread_id", link=f"json_extract(usage.extra, '$.{RESPONSE_LINK}')")
            + " WHERE thread_id IN (SELECT value FROM json_each(?)) AND message_id IS NULL "
            f"AND json_extract(extra, '$.{RESPONSE_LINK}') IS NOT NULL",
            (dumps(sorted(threads)),),
        )

    def put_report(self, key3: tuple[int, int, int], seq: int, report: Report) -> None:
        self._reports.append((*key3, seq, report.kind, report.reason, report.detail))

    def put_blob(self, data: bytes, media_type: str | None) -> str:
        sha = hashlib.sha256(data).hexdigest()
        self.conn.execute(
            "INSERT OR IGNORE INTO blobs (sha256, media_type, size, data) VALUES (?, ?, ?, ?)",
            (sha, media_type, len(data), data),
        )
        return sha

    def put_usage(self, provider: str, row: UsageRow, key3: tuple[int, int, int]) -> None:
        u = row.usage
        extra = {k: v for k, v in (u.extra or {}).items() if k not in (RESPONSE_KEY, RESPONSE_MODEL)}
        if row.message_id is None and RESPONSE_LINK in extra:
            self._linked.add(row.thread_id)
        self._usage.append((
            row.key, row.thread_id, row.message_id, row.provider or provider, row.model, row.ts,
            u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens,
            u.reasoning_tokens, dumps(extra) if extra else None, *key3,
        ))  # fmt: skip

    def put_message(self, msg: Message, key: Key, line_backed: tuple[str, ...] = (), revises: bool = False) -> None:
        """Queue a message seen at ``key``; ``flush`` writes it if no smaller key owns it,
        or, with ``revises``, over the version its own source stored before.
        ``line_backed``: extra keys to store as references to the line at ``key``; only for
        messages read from a vendor line (not the store's own)."""
        self._occurrences.append((*key, msg.id, msg.thread_id))
        self.dirty_threads.add(msg.thread_id)
        self._messages.append((msg, key, line_backed if key[3] == 0 else (), revises))
        if msg.extra and RESPONSE_LINK in msg.extra:
            self._linked.add(msg.thread_id)

    def _uid(self, source_id: int) -> str:
        uid = self._uids.get(source_id)
        if uid is None:
            row = self.conn.execute("SELECT uid FROM sources WHERE id = ?", (source_id,)).fetchone()
            uid = self._uids[source_id] = row[0] if row else ""
        return uid

    def _created_at(self, thread_id: str) -> tuple[str | None, str | None]:
        """The thread's createdAt and the thread it was emitted from (``emittedFrom``) for
        ranking copies: folded now from its facts (written before the messages), so the rank
        does not wait for the end of the batch."""
        if thread_id not in self._created:
            if thread_id in self.dirty_threads:
                fold_thread(self.conn, thread_id)
                self._ranked.add(thread_id)
            row = self.conn.execute(
                "SELECT created_at, json_extract(metadata, '$.emittedFrom') FROM threads WHERE id = ?", (thread_id,)
            ).fetchone()
            self._created[thread_id] = (row[0], row[1]) if row else (None, None)
        return self._created[thread_id]

    def _before(self, a: tuple[Key, str], b: tuple[Key, str]) -> bool:
        """Whether occurrence ``a`` (key, thread) owns a message rather than ``b``: the thread
        created first (a session ``emit`` wrote from an archived thread after the thread it
        came from, whose times it repeats), then the smallest key with the source's uid for
        its local id (both the same whatever order the sources were read in)."""
        (ka, ta), (kb, tb) = a, b
        if ta != tb:
            (ca, fa), (cb, fb) = self._created_at(ta), self._created_at(tb)
            if fa == tb or fb == ta:
                return fb == ta
            return (ca is None, ca or "", fa is not None, ta) < (cb is None, cb or "", fb is not None, tb)
        if ka[0] != kb[0]:
            return (self._uid(ka[0]), *ka[1:]) < (self._uid(kb[0]), *kb[1:])
        return ka < kb

    def _write_messages(self, owner: Owner | None = None) -> None:
        """The queued messages, with one lookup and one ``executemany``: the occurrence that
        ranks first (``_before``) owns a message; one ranking before the stored one replaces
        it, blocks included. A revision (a later version from the owner's own source and
        thread) replaces the content and keeps the owner's key, so the message keeps its place."""
        queued, self._messages = self._messages, []
        conn = self.conn
        if owner is None:
            owner = self._owners(queued)
        stored = {m.id for m, _k, _lb, _r in queued if m.id in owner}
        rows: dict[str, tuple[Any, ...]] = {}
        blocks: dict[str, list[tuple[Any, ...]]] = {}
        self._created = {}
        live = self.live
        for msg, key, line_backed, revises in queued:
            held = owner.get(msg.id)
            if held is not None:
                if revises and key[0] == held[0][0] and held[1] == msg.thread_id:
                    # the new version in the first version's place; its fields stay inline,
                    # since the line at the kept key holds the old version
                    key, line_backed = held[0], ()
                else:
                    if held[1] != msg.thread_id:
                        self._shared.add(msg.id)
                        self._sharers.add(msg.thread_id)
                    if not self._before((key, msg.thread_id), held):
                        continue  # an occurrence ranking first owns it
                    if held[1] != msg.thread_id:
                        self._moved.add(msg.id)
                        self.dirty_threads.add(held[1])
                if live is not None:  # a message replaced: both threads read back (derived.Live)
                    live.spoil(held[1], msg.thread_id)
            owner[msg.id] = (key, msg.thread_id)
            v = message_values(msg, line_backed)
            rows[msg.id] = (*v[:9], *key, *v[9:])
            out = blocks[msg.id] = []
            for position, block in enumerate(msg.content):
                sha = None
                if type(block) is Attachment:  # the only blocks with a blob
                    blob = _blob_of(block)
                    sha = self.put_blob(*blob) if blob else _blob_named(block)
                out.append(block_tuple(msg.id, position, block, sha))
            if live is not None:
                live.message(key, v, out)
        self._owned |= set(rows)
        replaced = [(i,) for i in rows if i in stored]
        if replaced:
            conn.executemany("DELETE FROM blocks WHERE message_id = ?", replaced)
            conn.executemany("DELETE FROM messages WHERE id = ?", replaced)
        conn.executemany(f"INSERT INTO messages ({_MSG_COLS}) VALUES ({_MSG_MARKS})", list(rows.values()))
        queue_derived(conn, {r[1] for r in rows.values()})  # their file index and signals (no per-row trigger: m138)
        if live is not None:
            live.flush()
        self.messages_added += len(rows) - len(replaced)
        for out in blocks.values():
            self._blocks.extend(out)

    def _owners(self, queued: list[tuple[Message, Key, tuple[str, ...], bool]]) -> Owner:
        """The stored owner (key, thread) of each of these messages that is stored."""
        return {
            r[0]: ((r[1], r[2], r[3], r[4]), r[5])
            for r in self.conn.execute(
                "SELECT id, source_id, generation, offset, sub, thread_id FROM messages "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (dumps(sorted({m.id for m, _k, _lb, _r in queued})),),
            )
        }

    def _write_usage(self) -> None:
        """The queued usage rows, and the thread of every response carried by a message
        (re)written in this flush (``usage_totals`` follows by its triggers, row by row).

        Tried and not kept: the totals added once per flush (triggers held by a flag, the
        touched groups read before and after): 100 MB synthetic -0.2 s, 300 MB replicated
        real +0.45 s CPU (two more queries and two flag writes for each small file's flush)."""
        conn = self.conn
        # a response's usage belongs to the thread that owns the message carrying it,
        # whichever copy of the line (a fork, a resume) reported it last
        queued = self._link_queued(self._usage)
        touched = self._owned | {u[2] for u in queued if u[2] is not None}
        usage, self._usage, self._owned = latest_reports(conn, queued), [], set()
        if usage:
            conn.executemany(_USAGE_UPSERT, usage)
        conn.execute(
            "UPDATE usage SET thread_id = (SELECT m.thread_id FROM messages m WHERE m.id = usage.message_id) "
            "WHERE message_id IN (SELECT value FROM json_each(?)) "
            "AND thread_id IS NOT (SELECT m.thread_id FROM messages m WHERE m.id = usage.message_id) "
            "AND EXISTS (SELECT 1 FROM messages m WHERE m.id = usage.message_id)",
            (dumps(sorted(touched)),),
        )

    def _link_queued(self, usage: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """The queued usage rows, each that names a response link (``RESPONSE_LINK``) and no
        message given the message of its thread carrying that link, if one is stored (this
        flush's messages are): linked before the upsert ranks them, so that which row of a
        response wins does not depend on which rows shared a flush (``_link_usage`` links
        the rows stored before their message came)."""
        wanted: dict[tuple[str, str], str | None] = {}
        found: list[tuple[int, tuple[str, str]]] = []
        for i, u in enumerate(usage):
            if u[2] is None and u[11] is not None and RESPONSE_LINK in u[11]:
                link = orjson.loads(u[11]).get(RESPONSE_LINK)
                if isinstance(link, str):
                    wanted[(u[1], link)] = None
                    found.append((i, (u[1], link)))
        if not found:
            return usage
        for thread, link, mid in self.conn.execute(
            "SELECT json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), "
            + _LINKED_MESSAGE.format(thread="json_extract(j.value, '$[0]')", link="json_extract(j.value, '$[1]')")
            + " FROM json_each(?) j",
            (dumps([list(k) for k in wanted]),),
        ):
            wanted[(thread, link)] = mid
        out = list(usage)
        for i, k in found:
            mid = wanted[k]
            if mid is not None:
                out[i] = (*out[i][:2], mid, *out[i][3:])
        return out

    def parcel(self) -> None:
        """The rows queued from here on are one file's (``flush`` groups files by them)."""
        mark = (len(self._facts), len(self._messages), len(self._occurrences), len(self._usage), len(self._reports))
        if not self._parcels or self._parcels[-1] != mark:
            self._parcels.append(mark)

    def flush(self) -> None:
        """Write the pending rows. The blocks' text reaches the full-text index when the
        transaction commits (``index_text``), or at once for ids under its watermark
        (``_write_blocks``).

        Rows queued as several files' (``parcel``) are written in groups of files, each
        group as one flush. A file joins the group before it when its rows cannot meet
        theirs (``flush_plan.Touch.meets``: no message in common; where usage is linked to what a
        thread holds, no thread or usage key in common), and a file that ranks copies (it
        holds a message already stored, or one message in two threads: the ranking reads
        the stored rows of their threads) is a group of its own. Every table is then as
        when each file was flushed on its own, which is how ``rebuild`` reads them
        (tests/test_projection_flush.py)."""
        self.lines_held = self.bytes_held = 0
        marks, self._parcels = self._parcels, []
        if len(marks) < 2:
            self._flush_group(None)
            return
        queues = (self._facts, self._messages, self._occurrences, self._usage, self._reports)
        linked, self._linked = self._linked, set()
        owner = self._owners(self._messages)
        for group, threads in flush_groups(queues, marks, owner):
            self._facts, self._messages, self._occurrences, self._usage, self._reports = group
            self._linked = linked & threads
            self._flush_group(owner)  # writing its messages brings ``owner`` up to date for the next group

    def _flush_group(self, owner: Owner | None) -> None:
        """Write the queued rows as one flush (``owner``: the stored owners of the queued
        messages, kept up to date as they are written; None: looked up)."""
        conn = self.conn
        if self._facts:  # before the messages: ranking copies reads the threads' createdAt
            conn.executemany("INSERT OR REPLACE INTO thread_facts VALUES (?, ?, ?, ?, ?, ?)", self._facts)
            self._fact_threads = {f[4] for f in self._facts}
            self._facts = []
        # only the threads whose vendor links usage to messages by RESPONSE_LINK (the others
        # never pay for the UPDATE)
        linked, self._linked = self._linked, set()
        if self._messages:
            self._write_messages(owner)
        if self._occurrences:
            conn.executemany(
                "INSERT OR IGNORE INTO message_occurrences (source_id, generation, offset, sub, message_id, thread_id) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                self._occurrences,
            )
            self._occurrences = []
        if self._shared:
            self._resolve_lineage()
        self._moved, self._sharers, self._fact_threads = set(), set(), set()
        if self._usage or self._owned:
            self._write_usage()
        if linked:
            self._link_usage(linked)
        if self._reports:
            conn.executemany("INSERT OR REPLACE INTO reports VALUES (?, ?, ?, ?, ?, ?, ?)", self._reports)
            self._reports = []
        if self._blocks:
            self._write_blocks()
        if self._ranked:
            for tid in sorted(self._ranked & self.dirty_threads):
                fold_thread(conn, tid)
                self.dirty_threads.discard(tid)
            self._ranked = set()

    def _write_blocks(self) -> None:
        """Row by row when every new id is above the full-text index's watermark: each row is
        a statement with its own statement journal (the triggers make each a multi-row write),
        which the ingest loop keeps in memory (engine.py; in a file they cost two write calls a
        page). Ids under the watermark (the newest blocks were deleted: a rebuild, a replaced
        message) fire the FTS trigger, which indexes row by row 5x slower in statements of
        their own than in one: those go in one INSERT ... SELECT from a temp table."""
        conn = self.conn
        top, upto = conn.execute(
            "SELECT (SELECT max(id) FROM blocks), (SELECT indexed_upto FROM blocks_fts_progress)"
        ).fetchone()
        if (top or 0) >= (upto or 0):
            conn.executemany(_BLOCK_INSERT, self._blocks)
            self._blocks = []
            return
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS _pending_blocks ({_BLOCK_COLS})")
        conn.executemany(f"INSERT INTO temp._pending_blocks VALUES ({', '.join('?' * len(_BLOCK_COL_NAMES))})", self._blocks)
        self._blocks = []
        conn.execute(f"INSERT INTO blocks ({_BLOCK_COLS}) SELECT {_BLOCK_COLS} FROM temp._pending_blocks ORDER BY rowid")
        conn.execute("DELETE FROM temp._pending_blocks")

    def discard(self) -> None:
        """Forget pending rows and dirty threads (the caller rolled its transaction back)."""
        self.dirty_threads.clear()
        self.lines_held = self.bytes_held = 0
        self._parcels = []
        if self.live is not None:
            self.live.discard()
        self._blocks, self._occurrences, self._facts, self._usage, self._reports = [], [], [], [], []
        self._owned, self._linked = set(), set()
        self._messages = []
        self._shared, self._moved, self._sharers, self._fact_threads = set(), set(), set(), set()
        self._created, self._ranked = {}, set()

    def _resolve_lineage(self) -> None:
        """Recompute ``thread_lineage`` of the threads whose lineage this flush may change, and
        queue those threads for folding. A thread's lineage reads its occurrences in its own
        order, the owner thread and owning key of each, and its facts (``resolve_lineage``).
        Lineage is resolved for the threads holding a copy of a message seen in more than one
        thread (a message moving between keys of one thread resolves nothing, as before:
        resolved then, an emitted session its client rewrote would lose its parent); of those
        holders, a flush can change the lineage of a thread that took such a copy now, of every
        holder of one that changed owner thread, and of a holder whose facts were written. Any
        other holder's inputs are as they were when it was last resolved (300 MB replicated
        real corpus: 94k resolutions, 3.3 s, where every holder was resolved again)."""
        shared, self._shared = self._shared, set()
        wanted = set(self._sharers)
        if self._moved:
            wanted |= self._holders(self._moved)
        if self._fact_threads:
            # looked up by thread: a message copied into many threads (a resumed session's
            # history, each copy of it) would otherwise return every holder to keep a few
            wanted |= {r[0] for r in self.conn.execute(
                "SELECT DISTINCT thread_id FROM message_occurrences "
                "WHERE thread_id IN (SELECT value FROM json_each(?)) AND message_id IN (SELECT value FROM json_each(?))",
                (dumps(sorted(self._fact_threads)), dumps(sorted(shared))),
            )}  # fmt: skip
        for tid in sorted(wanted):
            # a thread whose lineage is what it was needs no new fold for it: its other
            # inputs changed only if it has rows of its own in the flush or lost a message
            # (dirty either way). On replicated sessions (many copies of the same ids) every
            # copy re-folded each other copy: 300 MB real corpus, 102k folds for 8k files
            if resolve_lineage(self.conn, tid):
                self.dirty_threads.add(tid)

    def _holders(self, message_ids: set[str]) -> set[str]:
        """The threads holding an occurrence of these messages."""
        return {r[0] for r in self.conn.execute(
            "SELECT DISTINCT thread_id FROM message_occurrences WHERE message_id IN (SELECT value FROM json_each(?)) "
            "AND thread_id IS NOT NULL",
            (dumps(sorted(message_ids)),),
        )}  # fmt: skip

    # -- threads
    def refold(self) -> None:
        self.flush()
        for tid in sorted(self.dirty_threads):
            fold_thread(self.conn, tid)
        self.dirty_threads.clear()


_THREAD_KEYS = {
    "title": "title",
    "createdAt": "created_at",
    "agentId": "agent_id",
    "parentThreadId": "parent_thread_id",
    "originMessageId": "origin_message_id",
}


def fold_thread(conn: sqlite3.Connection, thread_id: str) -> None:
    """Recompute one ``threads`` row from its facts (in key order) and its messages."""
    facts = conn.execute(
        "SELECT f.fields, s.provider FROM thread_facts f JOIN sources s ON s.id = f.source_id "
        "WHERE f.thread_id = ? ORDER BY f.source_id, f.generation, f.offset, f.sub",
        (thread_id,),
    ).fetchall()
    cols: dict[str, Any] = {v: None for v in _THREAD_KEYS.values()}
    metadata: JsonObject = {}
    extra: JsonObject = {}
    provider = None
    for fields_json, source_provider in facts:
        provider = provider or source_provider
        for k, v in orjson.loads(fields_json).items():
            if k == "metadata" and isinstance(v, dict):
                metadata.update(v)
            elif k in _THREAD_KEYS:
                cols[_THREAD_KEYS[k]] = v
            elif k != "v":
                extra[k] = v
    if provider is None or cols["created_at"] is None:
        first = conn.execute(
            "SELECT m.ts, s.provider FROM messages m LEFT JOIN sources s ON s.id = m.source_id "
            "WHERE m.thread_id = ? ORDER BY m.source_id, m.generation, m.offset, m.sub LIMIT 1",
            (thread_id,),
        ).fetchone()
        if first is not None:
            provider = provider or first[1]
            if cols["created_at"] is None:
                cols["created_at"] = first[0]
    if cols["parent_thread_id"] is None:
        fork = conn.execute(
            "SELECT parent_thread_id, origin_message_id FROM thread_lineage WHERE thread_id = ?", (thread_id,)
        ).fetchone()
        if fork is not None:
            cols["parent_thread_id"], cols["origin_message_id"] = fork
            metadata["forkedFrom"] = fork[0]
    fork_end = metadata.get("forkedFromOffset")
    if cols["origin_message_id"] is None and isinstance(fork_end, int) and metadata.get("forkedFrom") == cols["parent_thread_id"]:
        # a fork that names where it leaves its parent's file (Codex 0.171): the parent's
        # last message before that byte offset; resolved again when the parent arrives
        found = conn.execute(
            "SELECT id FROM messages WHERE thread_id = ? AND offset < ? ORDER BY offset DESC, sub DESC LIMIT 1",
            (cols["parent_thread_id"], fork_end),
        ).fetchone()
        cols["origin_message_id"] = found[0] if found else None
    spawn_call = metadata.get("spawnCallId")
    if cols["origin_message_id"] is None and isinstance(spawn_call, str):
        # Claude Code's agent meta.json names the spawning tool call, not its message
        found = conn.execute(
            "SELECT b.message_id FROM blocks b JOIN messages m ON m.id = b.message_id "
            "WHERE b.call_id = ? AND b.type = 'tool_call' AND (m.thread_id = ? OR ? IS NULL) "
            "ORDER BY m.source_id, m.generation, m.offset, m.sub LIMIT 1",
            (spawn_call, cols["parent_thread_id"], cols["parent_thread_id"]),
        ).fetchone()
        cols["origin_message_id"] = found[0] if found else None
    provider = metadata.get("provider") if isinstance(metadata.get("provider"), str) else provider
    cwd = metadata.get("cwd")
    model = metadata.get("model")
    conn.execute(
        "INSERT OR REPLACE INTO threads (id, provider, agent_id, parent_thread_id, origin_message_id, "
        "title, created_at, cwd, model, metadata, extra) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            thread_id, provider, cols["agent_id"], cols["parent_thread_id"], cols["origin_message_id"],
            cols["title"], cols["created_at"], cwd if isinstance(cwd, str) else None,
            model if isinstance(model, str) else None,
            dumps(metadata) if metadata else None, dumps(extra) if extra else None,
        ),
    )  # fmt: skip


def resolve_lineage(conn: sqlite3.Connection, thread_id: str) -> bool:
    """A thread whose first messages (in its own files' order) are owned by other threads
    forked from the owner of the last of them, at the last of that owner's messages in the
    owner's order (Claude Code ``--fork-session`` copies the history with the same uuids, in
    order; an emitted session may write a prompt's context before the prompt). The kind is
    ``handoff`` when the thread was written by ``emit`` (``metadata.emittedFrom``). Whether the
    stored lineage changed."""
    parent = origin = None
    inherited: list[tuple[str, str, tuple[Any, ...]]] = []
    for message_id, owner, *at in conn.execute(
        "SELECT o.message_id, m.thread_id, (SELECT uid FROM sources WHERE id = m.source_id), m.generation, "
        "m.offset, m.sub FROM message_occurrences o JOIN sources s ON s.id = o.source_id "
        "JOIN messages m ON m.id = o.message_id WHERE o.thread_id = ? "
        "ORDER BY s.uid, o.generation, o.offset, o.sub",
        (thread_id,),
    ):
        if owner == thread_id:
            break
        inherited.append((message_id, owner, tuple(at)))
        parent = owner
    stored = conn.execute(
        "SELECT parent_thread_id, origin_message_id, kind FROM thread_lineage WHERE thread_id = ?", (thread_id,)
    ).fetchone()
    if parent is None:
        if stored is None:
            return False
        conn.execute("DELETE FROM thread_lineage WHERE thread_id = ?", (thread_id,))
        return True
    origin = max((at, mid) for mid, owner, at in inherited if owner == parent)[1]
    emitted = conn.execute(
        "SELECT 1 FROM thread_facts WHERE thread_id = ? AND json_extract(fields, '$.metadata.emittedFrom') IS NOT NULL",
        (thread_id,),
    ).fetchone()
    row = (parent, origin, "handoff" if emitted else "fork")
    if stored == row:
        return False
    conn.execute("INSERT OR REPLACE INTO thread_lineage (thread_id, parent_thread_id, origin_message_id, kind) "
                 "VALUES (?, ?, ?, ?)", (thread_id, *row))
    return True


def index_text(conn: sqlite3.Connection) -> None:
    """Add the blocks written since the last call to the full-text index, in one statement.

    Every writer of ``blocks`` calls this before it commits (migration m005): FTS5 then
    tokenizes a whole transaction's text at once instead of flushing a segment per file."""
    upto = conn.execute("SELECT indexed_upto FROM blocks_fts_progress").fetchone()[0]
    top = conn.execute("SELECT max(id) FROM blocks").fetchone()[0]
    if top is None or top <= upto:
        return
    conn.execute(
        "INSERT INTO blocks_fts(rowid, text) SELECT id, text FROM blocks WHERE id > ? AND id <= ? ORDER BY id",
        (upto, top),
    )
    conn.execute("UPDATE blocks_fts_progress SET indexed_upto = ?", (top,))


def resolve_origins(conn: sqlite3.Connection) -> None:
    """Re-fold child threads whose spawning message (or fork point) was not yet archived
    when they were folded: run at the end of every ingest and rebuild, so the result does not depend on
    which file came first."""
    for (tid,) in conn.execute(
        "SELECT id FROM threads WHERE origin_message_id IS NULL "
        "AND (json_extract(metadata, '$.spawnCallId') IS NOT NULL OR json_extract(metadata, '$.forkedFromOffset') IS NOT NULL)"
    ).fetchall():
        fold_thread(conn, tid)


def load_threads(conn: sqlite3.Connection, where: str = "1", params: tuple[Any, ...] = ()) -> list[Thread]:
    """Threads matching ``where`` (a condition on ``threads``), oldest first."""
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    rows = cur.execute(f"SELECT * FROM threads WHERE {where} ORDER BY coalesce(created_at, ''), id", params)
    return [thread_from_row(r) for r in rows]


def load_messages(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[Message]:
    """Messages matching ``where`` (a condition on alias ``m``), in thread order, with blocks."""
    saved = conn.row_factory
    conn.row_factory = sqlite3.Row
    try:
        rows = conn.execute(
            f"SELECT m.* FROM messages m WHERE {where} "
            "ORDER BY m.thread_id, m.source_id, m.generation, m.offset, m.sub",
            params,
        ).fetchall()
        blocks: dict[str, list[Block]] = {}
        for b in conn.execute(
            "SELECT b.*, bl.data AS blob_data FROM blocks b "
            "LEFT JOIN blobs bl ON bl.sha256 = b.blob_sha256 "
            f"WHERE b.message_id IN (SELECT m.id FROM messages m WHERE {where}) "
            "ORDER BY b.message_id, b.position",
            params,
        ):
            blocks.setdefault(b["message_id"], []).append(block_from_row(b, b["blob_data"]))
        usage = _responses_of(conn, where, params)
        messages = [message_from_row(r, blocks.get(r["id"], []), usage.get(r["id"])) for r in rows]
    finally:
        conn.row_factory = saved
    _read_back_line_fields(conn, rows, messages)
    return messages


def _responses_of(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> dict[str, Usage]:
    """The usage of the model response each message carries (``usage.message_id``); a
    message that carries several responses' usage gets their sum and their keys."""
    out: dict[str, list[sqlite3.Row]] = {}
    for u in conn.execute(
        "SELECT u.*, (SELECT model FROM messages WHERE id = u.message_id) AS message_model FROM usage u "
        "WHERE u.message_id IN (SELECT m.id FROM messages m WHERE " + where + ") "
        "ORDER BY u.message_id, u.source_id, u.generation, u.offset, u.key",
        params,
    ):
        out.setdefault(u["message_id"], []).append(u)
    return {mid: _usage_from_rows(rows) for mid, rows in out.items()}


def _usage_from_rows(rows: list[sqlite3.Row]) -> Usage:
    def total(col: str) -> int | None:
        values = [r[col] for r in rows if r[col] is not None]
        return sum(values) if values else None

    extra: JsonObject = dict(loads(rows[0]["extra"]) or {}) if len(rows) == 1 else {}
    if len(rows) > 1:
        extra[RESPONSE_KEY] = [r["key"] for r in rows]
    elif rows[0]["key"] != message_response_key(rows[0]["message_id"]):
        extra[RESPONSE_KEY] = rows[0]["key"]
    models = {r["model"] for r in rows} - {None, rows[0]["message_model"]}
    if models:  # the response names a model of its own (the message's is the default)
        extra[RESPONSE_MODEL] = sorted(models)[0]
    return Usage(
        input_tokens=total("input_tokens"),
        output_tokens=total("output_tokens"),
        cache_read_tokens=total("cache_read_tokens"),
        cache_write_tokens=total("cache_write_tokens"),
        reasoning_tokens=total("reasoning_tokens"),
        extra=extra or None,
    )


def _read_back_line_fields(conn: sqlite3.Connection, rows: list[sqlite3.Row], messages: list[Message]) -> None:
    """Replace ``{LINE_REF: key}`` values in ``extra`` with ``key`` of the stored line."""
    from .lines import LineReader

    reader = None
    for row, msg in zip(rows, messages):
        if not msg.extra or row["extra"] is None or LINE_REF not in row["extra"]:
            continue
        refs = [k for k, v in msg.extra.items() if isinstance(v, dict) and v.keys() == {LINE_REF} and v[LINE_REF] == k]
        if not refs:
            continue
        reader = reader or LineReader(conn)
        where = (row["source_id"], row["generation"], row["offset"])
        try:
            line = orjson.loads(reader.line(*where))
            for k in refs:
                msg.extra[k] = line[k]
        except (KeyError, TypeError, orjson.JSONDecodeError) as e:
            raise ValueError(f"message {msg.id}: cannot read {refs} back from its line {where}: {e}") from None


def fork_of(thread: Thread) -> tuple[str, str] | None:
    """(parent thread, fork point) when ``thread`` continues its parent's conversation: the
    adapter or the copies say so (``metadata.forkedFrom`` names the parent). A subagent or
    sidechain child has a parent too but a conversation of its own."""
    parent, origin = thread.parent_thread_id, thread.origin_message_id
    if parent and origin and (thread.metadata or {}).get("forkedFrom") == parent:
        return parent, origin
    return None


def lineage_of(thread: Thread) -> str | None:
    """``handoff`` for a fork that ``emit`` wrote from its parent (``metadata.emittedFrom``),
    ``fork`` for another fork, None for a thread that continues no other."""
    if fork_of(thread) is None:
        return None
    return "handoff" if (thread.metadata or {}).get("emittedFrom") else "fork"


def inherited_from(conn: sqlite3.Connection, thread_id: str) -> str | None:
    """The parent whose history the thread continues (a fork), else None; one lookup."""
    row = conn.execute(
        "SELECT parent_thread_id FROM threads WHERE id = ? AND origin_message_id IS NOT NULL "
        "AND json_extract(metadata, '$.forkedFrom') = parent_thread_id",
        (thread_id,),
    ).fetchone()
    return row[0] if row else None


def _own_ids(conn: sqlite3.Connection, thread_id: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT id FROM messages m WHERE thread_id = ? ORDER BY m.source_id, m.generation, m.offset, m.sub",
        (thread_id,),
    )]  # fmt: skip


def inherited_ids(conn: sqlite3.Connection, thread_id: str, seen: frozenset[str] = frozenset()) -> list[str]:
    """The ids of the messages a fork inherits (its ancestors' up to each fork point), in order; [] otherwise."""
    row = conn.execute(
        "SELECT parent_thread_id, origin_message_id FROM threads WHERE id = ? AND origin_message_id IS NOT NULL "
        "AND json_extract(metadata, '$.forkedFrom') = parent_thread_id",
        (thread_id,),
    ).fetchone()
    if row is None or row[0] in seen or row[0] == thread_id:
        return []
    parent, origin = row
    before = inherited_ids(conn, parent, seen | {thread_id}) + _own_ids(conn, parent)
    return before[: before.index(origin) + 1] if origin in before else []
