"""The workspace (issue 41): the session list beside the open conversation, and what open
pages poll to follow an archive that ``serve``'s watcher keeps current.

Invariants:

* Read-only, like every module here: plain SELECTs on the connection it is given.
* The side list is the sessions page's list (``sessions.sessions``: the same filters, sorts
  and figures; the page of it that holds the open session), in runs of one UTC day (of last activity, or of first activity for the
  ``oldest`` sort; other sorts are one run), each row marked with its agent and project.
* A session is *being written* when a file one of its threads (or its subagents') was read
  from had an mtime within ``WRITING_SECONDS`` of now, as the last ingest saw it
  (``source_paths.mtime_ns``): the file is still growing, or was moments ago. Unless that
  mtime is more than ``COPIED_SECONDS`` after the thread's last activity (its last message's
  time, ``thread_signals.last_ts``, one row where a thread's messages would be read every
  second by a page following it; else its start): a file copied, restored or touched
  today that holds a session of last week is not being written (a home copied to a new
  machine showed every session as being written). The thread's, not the file's: some files
  hold messages without times (a context file kept beside a timed log). A thread without a
  readable time leaves the mtime alone to decide.
* ``state`` is what a page polls: a version that changes whenever an ingest adds a thread or
  a message or a block (max rowids, which only grow: rows are never rewritten in place by an ingest), and
  the open thread's message count; one indexed aggregate each, cheap enough to ask every second.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from ..pricing import PriceTable
from ..queries import session_root_sql
from ..signals import utc_time
from . import sessions
from .conversation import utc

WRITING_SECONDS = 300  # "being written": the source changed in the last five minutes
# a file changed this long after its thread's last activity was copied or touched, not written;
# a day: wider than any time zone a vendor's times may be off by
COPIED_SECONDS = 86_400


def writing(conn: sqlite3.Connection, thread_ids: list[str], now: float | None = None) -> set[str]:
    """The threads among ``thread_ids`` (sessions: their subagents count for them) whose
    source file changed in the last ``WRITING_SECONDS``, no later than ``COPIED_SECONDS``
    after the thread's last activity (its last message's time, else its start)."""
    cut = int(((now if now is not None else time.time()) - WRITING_SECONDS) * 1e9)
    recent = dict(conn.execute(
        "SELECT source_id, max(mtime_ns) FROM source_paths WHERE mtime_ns >= ? AND missing = 0 GROUP BY source_id", (cut,)))  # fmt: skip
    if not recent or not thread_ids:
        return set()
    ids = json.dumps(thread_ids)
    # by the listed threads first (messages_thread_order leads with thread_id), then by source
    rows = conn.execute(
        f"""SELECT {session_root_sql('t')}, t.id, m.source_id, coalesce(
                (SELECT s.last_ts FROM thread_signals s WHERE s.thread_id = t.id), t.created_at)
            FROM threads t
            JOIN messages m ON m.thread_id = t.id AND m.source_id IN (SELECT value FROM json_each(:recent))
            WHERE t.id IN (SELECT value FROM json_each(:ids)) OR t.parent_thread_id IN (SELECT value FROM json_each(:ids))
            GROUP BY t.id, m.source_id""",
        {"ids": ids, "recent": json.dumps(list(recent))},
    ).fetchall()  # fmt: skip
    wanted = set(thread_ids)
    return {x for root, tid, source_id, last in rows if _written(recent[source_id], last) for x in (root, tid) if x in wanted}


def _written(mtime_ns: int, last_ts: str | None) -> bool:
    """Whether a file changed at ``mtime_ns`` may be being written, its thread's last
    activity at ``last_ts``: unless it changed more than ``COPIED_SECONDS`` after it (a time
    without a zone read as UTC; no readable time: the mtime alone decides)."""
    t = utc_time(last_ts)
    return t is None or mtime_ns / 1e9 - t.timestamp() <= COPIED_SECONDS


def side_list(conn: sqlite3.Connection, f: sessions.SessionFilters, prices: PriceTable, current: str = "",
              now: float | None = None) -> dict[str, Any]:  # fmt: skip
    """The sessions page's list, in day runs: ``{days: [{day, rows}], total, page, pages}``,
    the page that holds ``current`` when the list has it; each row also has ``writing`` (bool)."""
    data = sessions.sessions(conn, f, prices, around=current)
    live = writing(conn, [r["id"] for r in data["rows"]], now)
    days: list[dict[str, Any]] = []
    for r in data["rows"]:
        r["writing"] = r["id"] in live
        r["project_name"] = (r["project"] or "").rstrip("/").rsplit("/", 1)[-1] or (r["project"] or "")
        ts = r["first_ts"] if f.sort == "oldest" else r["last_ts"]
        day = utc(ts)[:10] if f.sort in ("recent", "oldest") else ""
        if not days or days[-1]["day"] != day:
            days.append({"day": day, "rows": []})
        days[-1]["rows"].append(r)
    return {**data, "days": days}


def state(conn: sqlite3.Connection, thread_id: str = "") -> dict[str, Any]:
    """What a page polls: ``version`` (changes when an ingest adds threads or messages) and,
    for a thread, its message count and whether it is being written."""
    version = "{}.{}.{}".format(*conn.execute(
        "SELECT (SELECT coalesce(max(rowid), 0) FROM threads), (SELECT coalesce(max(rowid), 0) FROM messages), "
        "(SELECT coalesce(max(rowid), 0) FROM blocks)").fetchone())  # fmt: skip
    out: dict[str, Any] = {"version": version}
    if thread_id:
        out["messages"] = conn.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (thread_id,)).fetchone()[0]
        out["writing"] = thread_id in writing(conn, [thread_id])
    return out
