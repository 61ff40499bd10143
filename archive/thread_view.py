"""One thread as every reader sees it: ``show``, ``emit``, the conversation page, ``export``,
the MCP server's session tools and the ``MessageStore`` all load it here (``load_view``).

Invariants:

* **Lineage-aware.** A fork (a resume into a new file, a hand-off ``emit`` wrote, a branch) sees
  the conversation its client had: its ancestors' messages up to each fork point
  (``projection.inherited_ids``), then its own. A subagent or sidechain child has a parent but a
  conversation of its own; its messages are never inherited.
* **Thread order** is (source, generation, offset, sub): the order the lines were written.
* **Bounded.** A view holds the thread record, its summary and the ids a fork inherits (a fork's
  history, not the thread's own messages); ``MessagePages`` reads the messages a page at a time,
  with keyset paging for a walk through the whole thread and one indexed ``LIMIT``/``OFFSET`` for
  a page in the middle, so neither ``show`` nor a web page holds a 100k-message thread.
* **Whole outputs.** A tool result the vendor kept in a companion file reads with the companion's
  text, not the transcript's preview (``companions.with_full_outputs``); ``replaced`` counts them.
* **The session.** ``descendants`` are the child threads at every depth that belong to the same
  session (subagents, sidechains); a fork is a session of its own and is left out, as its client
  resumes it alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sqlite_utils import Database

from . import saved_copies
from .companions import with_full_outputs
from .errors import ArchiveError
from .model import Message, Thread
from .pricing import PriceTable
from .projection import fork_of, inherited_ids, load_messages, load_threads
from .queries import resolve_thread, threads

ORDER = "m.source_id, m.generation, m.offset, m.sub"


class MessagePages:
    """A thread's messages in thread order (a fork's inherited history first), read from the
    database a page at a time on each iteration. ``len`` is the count; ``ids(start, stop)`` and
    ``between(start, stop)`` read one range (the web page, the MCP tool)."""

    def __init__(self, db: Database, thread_id: str, page: int = 500, full_outputs: bool = True) -> None:
        self.db, self.conn, self.thread_id, self.page = db, db.conn, thread_id, page
        self.full_outputs = full_outputs  # False: tool results as the transcript recorded them (MessageStore)
        self.inherited = inherited_ids(self.conn, thread_id)
        self.own = self.conn.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (thread_id,)).fetchone()[0]
        self.replaced: dict[int, int] = {}  # page start -> tool outputs read in full from companions

    def __len__(self) -> int:
        return len(self.inherited) + self.own

    def ids(self, start: int, stop: int) -> list[str]:
        """The ids of messages ``start`` to ``stop`` (thread order, end exclusive)."""
        start, stop = max(start, 0), min(stop, len(self))
        if start >= stop:
            return []
        out = self.inherited[start:stop]
        if len(out) < stop - start:
            out += [r[0] for r in self.conn.execute(
                f"SELECT id FROM messages m WHERE thread_id = ? ORDER BY {ORDER} LIMIT ? OFFSET ?",
                (self.thread_id, stop - start - len(out), max(start - len(self.inherited), 0)))]  # fmt: skip
        return out

    def _own_ids(self, first: int) -> Iterator[list[str]]:
        """The thread's own ids a page at a time (``first`` ids in the first), each page after
        the last one's key."""
        key: tuple[Any, ...] | None = None
        size = first or self.page
        while True:
            after, params = ("", ()) if key is None else ("AND (m.source_id, m.generation, m.offset, m.sub) > (?, ?, ?, ?)", key)
            rows = self.conn.execute(
                f"SELECT id, source_id, generation, offset, sub FROM messages m WHERE thread_id = ? {after} "
                f"ORDER BY {ORDER} LIMIT ?", (self.thread_id, *params, size)).fetchall()  # fmt: skip
            if not rows:
                return
            yield [r[0] for r in rows]
            key, size = tuple(rows[-1][1:]), self.page

    def _read(self, at: int, chunk: list[str]) -> Iterator[Message]:
        page = load_messages(self.conn, "m.id IN (SELECT value FROM json_each(?))", (json.dumps(chunk),))
        if self.full_outputs:
            page, self.replaced[at] = with_full_outputs(self.db, page)
        msgs = {m.id: m for m in page}
        for mid in chunk:
            if mid in msgs:
                yield msgs[mid]

    def __iter__(self) -> Iterator[Message]:
        """Pages of ``page`` ids over the inherited history and then the thread's own messages
        (a page may hold both: a short fork is read in one query)."""
        at, chunk = 0, []
        for part in (self.inherited[i : i + self.page] for i in range(0, len(self.inherited), self.page)):
            chunk = part
            if len(chunk) == self.page:
                yield from self._read(at, chunk)
                at, chunk = at + len(chunk), []
        for part in self._own_ids(self.page - len(chunk)):
            chunk += part
            yield from self._read(at, chunk)
            at, chunk = at + len(chunk), []
        if chunk:
            yield from self._read(at, chunk)

    def between(self, start: int, stop: int) -> Iterator[Message]:
        """Messages ``start`` to ``stop`` (thread order, end exclusive), read a page at a time."""
        for i in range(max(start, 0), min(stop, len(self)), self.page):
            yield from self._read(i, self.ids(i, min(i + self.page, stop)))


@dataclass(frozen=True)
class ThreadView:
    thread: Thread
    summary: dict[str, Any]  # the thread's ``queries.threads`` row ({} when loaded without summaries)
    messages: Iterable[Message]  # MessagePages: iterate (more than once if needed), len() counts
    children: list[dict[str, Any]]  # ``queries.threads`` rows of the direct child threads, oldest first
    children_total: int = 0  # every direct child, summarised in ``children`` or not
    # The session's shape below is read on first use only (show and the MCP overview never ask):
    # ``db`` is the database the view was loaded from; a view built without one has none.
    db: Database | None = field(default=None, repr=False, compare=False)

    @cached_property
    def descendants(self) -> list[str]:
        """The session's child threads at every depth, parents before children."""
        return descendants(self.db, self.thread.id) if self.db is not None else []

    @cached_property
    def ancestors(self) -> list[str]:
        """The threads whose history a fork inherits, nearest first."""
        return fork_ancestors(self.db, self.thread) if self.db is not None else []

    @cached_property
    def session(self) -> str:
        """The thread that is the session its client resumes (itself, or a subagent's top)."""
        return session_of(self.db, self.thread) if self.db is not None else self.thread.id


def thread_record(db: Database, thread_id: str) -> Thread:
    found = load_threads(db.conn, "id = ?", (thread_id,))
    if not found:
        raise ArchiveError(f"no thread {thread_id!r}")
    return found[0]


def descendants(db: Database, thread_id: str) -> list[str]:
    """The child threads of the session at every depth, parents before children (forks left out)."""
    out, frontier = [], [thread_id]
    while frontier:
        children = [r[0] for r in db.execute(
            f"SELECT id FROM threads WHERE parent_thread_id IN ({', '.join('?' * len(frontier))}) "
            "AND json_extract(metadata, '$.forkedFrom') IS NOT parent_thread_id ORDER BY created_at, id",
            frontier,
        )]  # fmt: skip
        children = [c for c in children if c not in out and c != thread_id]
        out += children
        frontier = children
    return out


def fork_ancestors(db: Database, thread: Thread) -> list[str]:
    """The threads a fork inherits its history from, nearest first (a fork as
    ``projection.fork_of`` defines it: its metadata names its parent as ``forkedFrom``)."""
    out: list[str] = []
    parent = fork_of(thread)[0] if fork_of(thread) else None
    while parent is not None and parent not in out and parent != thread.id:
        out.append(parent)
        row = db.execute(
            "SELECT parent_thread_id FROM threads WHERE id = ? AND origin_message_id IS NOT NULL "
            "AND json_extract(metadata, '$.forkedFrom') = parent_thread_id", (parent,)).fetchone()  # fmt: skip
        parent = row[0] if row else None
    return out


def session_of(db: Database, thread: Thread) -> str:
    """The session a child thread belongs to: its parents followed up to the top, or to a
    fork (a session of its own)."""
    if fork_of(thread) is not None:
        return thread.id
    tid, parent, seen = thread.id, thread.parent_thread_id, set()
    while parent and parent not in seen:
        seen.add(parent)
        row = db.execute(
            "SELECT id, parent_thread_id, json_extract(metadata, '$.forkedFrom') IS parent_thread_id "
            "AND origin_message_id IS NOT NULL FROM threads WHERE id = ?",
            (parent,),
        ).fetchone()
        if row is None:
            break
        tid, parent = row[0], (None if row[2] else row[1])
    return tid


def load_view(db: Database, ref: str, *, summaries: bool = True, children: int | None = None,
              prices: PriceTable | None = None, page: int = 500) -> ThreadView:
    """The thread ``ref`` names (an id or an unambiguous prefix: ``queries.resolve_thread``).

    ``summaries``: the ``threads`` rows of the thread and its direct children (counts, usage,
    times; with ``prices``, cost), which ``show``, the pages and the MCP overview print; ``emit``
    does without them. ``children``: summarise at most that many children, oldest first (a
    session with thousands of subagents: summing them all takes seconds); ``children_total``
    counts them all."""
    found = load_threads(db.conn, "id = ?", (ref.strip(),))  # an id as given: no prefix search
    thread = found[0] if found else thread_record(db, resolve_thread(db, ref))
    tid = thread.id
    summary: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    # child ids need not share the parent's prefix
    child_ids = [r[0] for r in db.conn.execute(
        "SELECT id FROM threads WHERE parent_thread_id = ? ORDER BY coalesce(created_at, ''), id", (tid,))]  # fmt: skip
    if summaries:
        shown = child_ids if children is None else child_ids[: max(children, 0)]
        found = threads(db, ids=[tid, *shown], limit=None, prices=prices)  # one query for them all
        summary = next(s for s in found if s["id"] == tid)
        rows = sorted((s for s in found if s["id"] != tid),
                      key=lambda s: (s["first_ts"] or s["created_at"] or "", s["id"]))  # fmt: skip
        # a /chat save checkpoint and the session it was saved from (issue 33)
        # (named only when there is one: the team database does not hold these links yet)
        copy_of, copies = saved_copies.links_of(db.conn, tid)
        summary.update({k: v for k, v in (("saved_copy_of", copy_of), ("saved_copies", copies)) if v})
    return ThreadView(thread, summary, MessagePages(db, tid, page), rows, len(child_ids), db)


def child_views(db: Database, view: ThreadView, page: int = 500) -> list[tuple[Thread, MessagePages]]:
    """Each of the session's child threads with its messages, paged (``emit`` writes them beside it)."""
    return [(thread_record(db, c), MessagePages(db, c, page)) for c in view.descendants]


def own_messages(db: Database, thread_id: str) -> tuple[Thread, list[Message]]:
    """The thread and its own messages, whole (no inherited history, previews as recorded):
    what an adapter's emit reads when a test holds the messages in a list."""
    return thread_record(db, thread_id), load_messages(db.conn, "m.thread_id = ?", (thread_id,))
