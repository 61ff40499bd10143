"""Tags, stars and notes on threads: the user's data, not the vendor's (``thread_tags``,
``thread_notes``, migration m111).

Invariants:

* Kept apart from every derived table and keyed by thread id alone: ``rebuild``, ``forget``
  and upgrades never write them, and a mark on a thread the archive no longer holds stays
  (it comes back with the thread). Only the functions here write them.
* A tag is a non-empty word without spaces or commas, kept as typed (``tags`` are compared
  exactly); tagging twice changes nothing.
* ``export`` gives every mark as JSON lines and ``import_marks`` reads them back: the same
  archive, or another machine's (an import never removes a mark; a note or star it carries
  wins when newer).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from .db import ArchiveError
from .signals import OUTCOME_SQL

_TAG = re.compile(r"^[^\s,]{1,64}$")


class MarkError(ArchiveError):
    """A tag or note the archive cannot take."""


@contextmanager
def _tx(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _check_tags(tags: Iterable[str]) -> list[str]:
    out = []
    for t in tags:
        t = t.strip()
        if not _TAG.match(t):
            raise MarkError(f"not a tag: {t!r} (one word, no spaces or commas, at most 64 characters)")
        out.append(t)
    return out


def tag(conn: sqlite3.Connection, thread_id: str, tags: Iterable[str]) -> list[str]:
    """Add tags to a thread; its tags after."""
    names = _check_tags(tags)
    with _tx(conn):
        conn.executemany("INSERT OR IGNORE INTO thread_tags (thread_id, tag, created_at) VALUES (?, ?, ?)",
                         [(thread_id, t, _now()) for t in names])  # fmt: skip
    return tags_of(conn, thread_id)


def untag(conn: sqlite3.Connection, thread_id: str, tags: Iterable[str]) -> list[str]:
    """Remove tags from a thread (a tag it does not have is no error); its tags after."""
    with _tx(conn):
        conn.executemany("DELETE FROM thread_tags WHERE thread_id = ? AND tag = ?", [(thread_id, t) for t in tags])
    return tags_of(conn, thread_id)


def tags_of(conn: sqlite3.Connection, thread_id: str) -> list[str]:
    return [r[0] for r in conn.execute("SELECT tag FROM thread_tags WHERE thread_id = ? ORDER BY tag", (thread_id,))]


def _set_note(conn: sqlite3.Connection, thread_id: str, **fields: Any) -> None:
    with _tx(conn):
        conn.execute("INSERT OR IGNORE INTO thread_notes (thread_id, starred, note, updated_at) VALUES (?, 0, NULL, ?)",
                     (thread_id, _now()))  # fmt: skip
        for k, v in fields.items():
            conn.execute(f"UPDATE thread_notes SET {k} = ?, updated_at = ? WHERE thread_id = ?", (v, _now(), thread_id))
        conn.execute("DELETE FROM thread_notes WHERE thread_id = ? AND starred = 0 AND note IS NULL", (thread_id,))


def star(conn: sqlite3.Connection, thread_id: str, on: bool = True) -> None:
    _set_note(conn, thread_id, starred=1 if on else 0)


def note(conn: sqlite3.Connection, thread_id: str, text: str | None) -> None:
    """Set the thread's note (one per thread); None or blank clears it."""
    _set_note(conn, thread_id, note=text if text and text.strip() else None)


def tagged(conn: sqlite3.Connection, tags: Iterable[str], *, starred: bool = False) -> list[str]:
    """Ids of the threads carrying every tag in ``tags`` (and starred, if asked)."""
    names = list(tags)
    sql = "SELECT thread_id FROM thread_tags WHERE tag IN (SELECT value FROM json_each(?)) GROUP BY thread_id " \
          "HAVING count(DISTINCT tag) = ?"  # fmt: skip
    params: list[Any] = [json.dumps(names), len(set(names))]
    if not names:
        sql, params = "SELECT thread_id FROM thread_notes WHERE starred = 1", []
    elif starred:
        sql += " INTERSECT SELECT thread_id FROM thread_notes WHERE starred = 1"
    return [r[0] for r in conn.execute(sql, params)]


def annotate(conn: sqlite3.Connection, rows: list[dict[str, Any]], key: str = "id") -> list[dict[str, Any]]:
    """Add each thread's ``signals`` (with its ``outcome``), ``tags``, ``starred`` and ``note``."""
    ids = json.dumps([r[key] for r in rows])
    sig: dict[str, dict[str, Any]] = {}
    c = conn.execute(f"SELECT s.*, {OUTCOME_SQL} AS outcome FROM thread_signals s "
                     "WHERE s.thread_id IN (SELECT value FROM json_each(?))", (ids,))  # fmt: skip
    names = [d[0] for d in c.description]
    for r in c.fetchall():
        d = dict(zip(names, r))
        sig[d.pop("thread_id")] = d
    tags: dict[str, list[str]] = {}
    for tid, t in conn.execute("SELECT thread_id, tag FROM thread_tags WHERE thread_id IN (SELECT value FROM json_each(?)) "
                               "ORDER BY tag", (ids,)):  # fmt: skip
        tags.setdefault(tid, []).append(t)
    notes = {tid: (s, n) for tid, s, n in conn.execute(
        "SELECT thread_id, starred, note FROM thread_notes WHERE thread_id IN (SELECT value FROM json_each(?))", (ids,))}
    return apply_marks(rows, key, sig, tags, notes)


def apply_marks(rows: list[dict[str, Any]], key: str, sig: dict[str, dict[str, Any]], tags: dict[str, list[str]],
                notes: dict[str, tuple[int, str | None]]) -> list[dict[str, Any]]:  # fmt: skip
    """Each row's ``signals``, ``tags``, ``starred`` and ``note`` from what was read (by thread id)."""
    for r in rows:
        r["signals"] = sig.get(r[key])
        r["tags"] = tags.get(r[key], [])
        s, n = notes.get(r[key], (0, None))
        r["starred"], r["note"] = bool(s), n
    return rows


def export(conn: sqlite3.Connection) -> Iterator[dict[str, Any]]:
    """Every mark, one dict per thread: ``thread_id, tags, starred, note, updated_at``."""
    found: dict[str, dict[str, Any]] = {}
    for tid, t, at in conn.execute("SELECT thread_id, tag, created_at FROM thread_tags ORDER BY thread_id, tag"):
        d = found.setdefault(tid, {"thread_id": tid, "tags": [], "starred": False, "note": None, "updated_at": at})
        d["tags"].append(t)
        d["updated_at"] = max(d["updated_at"], at)
    for tid, s, n, at in conn.execute("SELECT thread_id, starred, note, updated_at FROM thread_notes"):
        d = found.setdefault(tid, {"thread_id": tid, "tags": [], "starred": False, "note": None, "updated_at": at})
        d["starred"], d["note"], d["updated_at"] = bool(s), n, max(d["updated_at"], at)
    for tid in sorted(found):
        yield found[tid]


def import_marks(conn: sqlite3.Connection, records: Iterable[dict[str, Any]]) -> int:
    """Merge exported marks in; how many threads they named."""
    n = 0
    with _tx(conn):
        for r in records:
            tid = r.get("thread_id")
            if not isinstance(tid, str) or not tid:
                raise MarkError(f"a mark without a thread_id: {r!r}")
            at = str(r.get("updated_at") or _now())
            conn.executemany("INSERT OR IGNORE INTO thread_tags (thread_id, tag, created_at) VALUES (?, ?, ?)",
                             [(tid, t, at) for t in _check_tags(r.get("tags") or [])])  # fmt: skip
            if r.get("starred") or r.get("note"):
                conn.execute(
                    "INSERT INTO thread_notes (thread_id, starred, note, updated_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (thread_id) DO UPDATE SET starred = excluded.starred, note = excluded.note, "
                    "updated_at = excluded.updated_at WHERE excluded.updated_at > thread_notes.updated_at",
                    (tid, 1 if r.get("starred") else 0, r.get("note"), at),
                )
            n += 1
    return n
