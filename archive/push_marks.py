"""``push`` of the user's marks (tags, stars, notes: archive/marks.py) to the team database
(issue 42), kept apart from archive/push.py.

Invariants: the server holds each machine's marks as that machine last pushed them: when
the local marks' digest differs from the one the server keeps for the machine, its rows are
replaced whole in one transaction (marks are few: a full replace is cheaper than tracking
deletions); an unchanged set sends nothing. Marks are the user's words: ``--redact`` masks
the notes' found secrets like every pushed string.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def send_marks(pusher: Any) -> int:
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
