"""How the projection's flush writes what several files queued (layer 2): in groups of files
whose rows cannot meet, each group as one flush (``flush_groups``), and without the usage rows a
later row of the same flush replaces anyway (``latest_reports``).

Invariant: every table is as when each file's rows were flushed on their own, whatever files
shared a flush (tests/test_projection_flush.py); ``rebuild`` reads a source at a time.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

from .rows import dumps
from .vendors.base import RESPONSE_LINK

Key = tuple[int, int, int, int]  # (source_id, generation, offset, sub): the line a row came from
Owner = dict[str, tuple[Key, str]]  # message id -> its stored owner (key, thread)
Queues = tuple[list[Any], ...]  # queued facts, messages, occurrences, usage and reports
Parcel = Queues  # one file's


def flush_groups(queues: Queues, marks: list[tuple[int, ...]], owner: Owner) -> Iterator[tuple[Queues, set[str]]]:
    """The queued rows cut at ``marks`` (where each file's rows start) into files, and the
    files into groups, in order: each group's rows and threads. A file joins the group before
    it when its rows cannot meet theirs (``Touch.meets``); a file that ranks copies (it holds
    a message already stored, or one message in two threads: the ranking reads the stored
    rows of their threads) is a group of its own. ``owner`` is read as each group is formed:
    the caller brings it up to date as it writes a group."""
    if marks[0] != (0,) * len(queues):
        marks = [(0,) * len(queues), *marks]
    ends = [*marks[1:], tuple(len(q) for q in queues)]
    parcels = [tuple(q[a:b] for q, a, b in zip(queues, start, end)) for start, end in zip(marks, ends)]
    i = 0
    while i < len(parcels):
        j = i + 1
        seen = Touch(parcels[i])
        if not seen.ranks and not holds_stored(parcels[i], owner):
            while j < len(parcels) and not holds_stored(parcels[j], owner):
                touch = Touch(parcels[j])
                if touch.ranks or seen.meets(touch):
                    break
                seen.add(touch)
                j += 1
        group = parcels[i:j]
        yield tuple([r for p in group for r in p[k]] for k in range(len(queues))), seen.threads
        i = j


def holds_stored(parcel: Parcel, owner: Owner) -> bool:
    return any(m.id in owner for m, *_ in parcel[1])


class Touch:
    """What one file's queued rows name, for ``flush_groups`` to tell whether its rows can
    meet another file's: its threads, messages and usage keys; ``ranks``: a message twice
    in two threads (its ranking folds the threads, reading their stored rows); ``links``: a
    usage row that names no message or another file's, or a message carrying a response
    link (``RESPONSE_LINK``), whose row is matched against what its thread holds when it is
    written."""

    __slots__ = ("threads", "ids", "keys", "ranks", "links")

    def __init__(self, parcel: Parcel) -> None:
        facts, messages, _occ, usage, _rep = parcel
        self.threads = {f[4] for f in facts} | {u[1] for u in usage}
        by_id: dict[str, str] = {}
        self.ranks = self.links = False
        for m, *_ in messages:
            self.threads.add(m.thread_id)
            if by_id.setdefault(m.id, m.thread_id) != m.thread_id:
                self.ranks = True
            if m.extra and RESPONSE_LINK in m.extra:
                self.links = True
        self.ids = set(by_id)
        self.keys = set()
        for u in usage:
            self.keys.add(u[0])
            if u[2] is None or u[2] not in by_id:
                self.links = True
                if u[2] is not None:
                    self.ids.add(u[2])

    def meets(self, other: Touch) -> bool:
        """Whether rows of the two files may meet: a message in common, or, where either
        links usage to what is stored (``links``), a thread or a usage key in common. Two
        rows of one usage key, each naming its own file's message, rank alike whichever
        was written first (``projection._USAGE_UPSERT`` reads whether each one's thread owns its
        message, and both messages are written before either row)."""
        if self.ids & other.ids:
            return True
        return (self.links or other.links) and bool(self.threads & other.threads or self.keys & other.keys)

    def add(self, other: Touch) -> None:
        self.threads |= other.threads
        self.ids |= other.ids
        self.keys |= other.keys
        self.links = self.links or other.links


def latest_reports(conn: sqlite3.Connection, usage: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The queued usage rows without those a later row of the same flush replaces anyway:
    the same response key from the same source at a larger (generation, offset), whose
    message is owned by its thread exactly when the earlier row's is (the first rank of
    ``projection._USAGE_UPSERT``), wins against the earlier row and against whatever the
    earlier row would have beaten (a response streamed over several lines: 100 MB
    synthetic, 6.3k of 18.7k rows). Any other row of the same key stays, in order, for the
    upsert to rank."""
    counts: dict[str, int] = {}
    for u in usage:
        counts[u[0]] = counts.get(u[0], 0) + 1
    if len(counts) == len(usage):
        return usage
    ids = sorted({u[2] for u in usage if counts[u[0]] > 1 and u[2] is not None})
    owner = dict(conn.execute(
        "SELECT id, thread_id FROM messages WHERE id IN (SELECT value FROM json_each(?))", (dumps(ids),)
    ).fetchall())  # fmt: skip
    out: list[tuple[Any, ...]] = []
    last: dict[str, int] = {}
    for u in usage:
        i = last.get(u[0])
        if i is not None:
            p = out[i]
            if (
                p[12] == u[12]
                and (u[13], u[14]) >= (p[13], p[14])
                and (owner.get(p[2]) == p[1]) == (owner.get(u[2]) == u[1])
            ):
                out[i] = u
                continue
        last[u[0]] = len(out)
        out.append(u)
    return out
