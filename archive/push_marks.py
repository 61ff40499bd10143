"""``push`` of the user's marks (tags, stars, notes: archive/marks.py) and of the threads'
signals (archive/signals.py) to the team database (issue 42), kept apart from archive/push.py.

Invariants: the server holds each machine's marks as that machine last pushed them: when
the local marks' digest differs from the one the server keeps for the machine, its rows are
replaced whole in one transaction (marks are few: a full replace is cheaper than tracking
deletions); an unchanged set sends nothing. Marks are the user's words: ``--redact`` masks
the notes' found secrets like every pushed string. Signals are derived, per machine from its
copy of the thread: the server keeps each machine's rows as it last pushed them (only the
rows that differ are sent, those the machine no longer has removed), and an unchanged set
(the digest the server keeps in ``machine_signals``) sends nothing.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def send_marks(pusher: Any) -> int:
    """The user's marks, then the threads' signals: how many rows sent."""
    return _send_user_marks(pusher) + send_signals(pusher)


SIGNAL_COLUMNS = ("thread_id", "tool_calls", "tool_errors", "retries", "same_file_edits", "compactions",
                  "interrupted_turns", "ending", "first_ts", "last_ts", "duration_seconds", "active_seconds")  # fmt: skip


def send_signals(pusher: Any) -> int:
    """Bring this machine's ``thread_signals`` rows on the server to the local ones when their
    digest changed: the rows that differ are written, the ones gone locally removed; how many."""
    sq, mid = pusher.sq, pusher.machine_id
    cols = ", ".join(SIGNAL_COLUMNS)
    local = {r[0]: tuple(r) for r in sq.execute(f"SELECT {cols} FROM thread_signals ORDER BY thread_id")}
    digest = hashlib.blake2b(orjson.dumps(list(local.values())), digest_size=16).hexdigest()
    row = pusher.pg.execute("SELECT digest FROM machine_signals WHERE machine_id = %s", (mid,)).fetchone()
    pusher.pg.commit()
    if (row[0] if row else None) == digest:
        return 0
    remote = {r[0]: tuple(r) for r in pusher.pg.execute(f"SELECT {cols} FROM thread_signals WHERE machine_id = %s", (mid,))}
    pusher.pg.commit()
    changed = [v for k, v in local.items() if remote.get(k) != v]
    gone = [k for k in remote if k not in local]
    marks = ", ".join(["%s"] * (len(SIGNAL_COLUMNS) + 1))
    updates = ", ".join(f"{c} = excluded.{c}" for c in SIGNAL_COLUMNS[1:])

    def work(cur: Any) -> None:
        if gone:
            cur.execute("DELETE FROM thread_signals WHERE machine_id = %s AND thread_id = ANY(%s)", (mid, gone))
        if changed:
            cur.executemany(f"INSERT INTO thread_signals (machine_id, {cols}) VALUES ({marks}) "
                            f"ON CONFLICT (machine_id, thread_id) DO UPDATE SET {updates}", [(mid, *v) for v in changed])  # fmt: skip
        cur.execute("INSERT INTO machine_signals (machine_id, digest) VALUES (%s, %s) "
                    "ON CONFLICT (machine_id) DO UPDATE SET digest = excluded.digest", (mid, digest))  # fmt: skip

    pusher._tx(work)
    if changed or gone:
        pusher.summary.count("signals", len(changed) + len(gone))
    return len(changed) + len(gone)


def _send_user_marks(pusher: Any) -> int:
    """Replace this machine's marks on the server when they changed; how many rows sent."""
    sq, mid = pusher.sq, pusher.machine_id
    tags = sq.execute("SELECT thread_id, tag, created_at FROM thread_tags ORDER BY 1, 2").fetchall()
    notes = sq.execute("SELECT thread_id, starred, note, updated_at FROM thread_notes ORDER BY 1").fetchall()
    digest = hashlib.blake2b(orjson.dumps([tags, notes]), digest_size=16).hexdigest()
    row = pusher.pg.execute("SELECT digest FROM machine_marks WHERE machine_id = %s", (mid,)).fetchone()
    pusher.pg.commit()
    if (row[0] if row else None) == digest:
        return 0
    if pusher.redactor is not None:
        notes = [pusher._masked(n) for n in notes]

    def work(cur: Any) -> None:
        cur.execute("DELETE FROM thread_tags WHERE machine_id = %s", (mid,))
        cur.execute("DELETE FROM thread_notes WHERE machine_id = %s", (mid,))
        if tags:
            cur.executemany("INSERT INTO thread_tags (machine_id, thread_id, tag, created_at) VALUES (%s, %s, %s, %s)",
                            [(mid, *t) for t in tags])  # fmt: skip
        if notes:
            cur.executemany("INSERT INTO thread_notes (machine_id, thread_id, starred, note, updated_at) "
                            "VALUES (%s, %s, %s, %s, %s)", [(mid, *n) for n in notes])  # fmt: skip
        cur.execute("INSERT INTO machine_marks (machine_id, digest) VALUES (%s, %s) "
                    "ON CONFLICT (machine_id) DO UPDATE SET digest = excluded.digest", (mid, digest))  # fmt: skip

    pusher._tx(work)
    pusher.summary.count("marks", len(tags) + len(notes))
    return len(tags) + len(notes)
