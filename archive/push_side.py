"""``push`` of the side files' views (issue 38: prompt histories, side files) to the team
database, and ``lost`` read back from it; kept apart from archive/push.py and the team
query layer (archive/pg/queries.py).

Invariants: the server holds each machine's ``prompt_history`` and ``side_files`` rows as
that machine last pushed them: when their digest differs from the one the server keeps for
the machine, its rows are replaced whole in one transaction (the views are derived from
reports a rewrite or a rebuild renumbers: a full replace needs no tracking); an unchanged
set sends nothing. ``--redact`` masks the prompts' found secrets like every pushed string.
The team's lost sessions are those no machine pushed a transcript of (pg view
``lost_sessions``, migration p060), listed as archive/side_files.py lists them locally.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def send_side(pusher: Any) -> int:
    """Replace this machine's prompt histories and side files on the server when they
    changed; how many rows sent."""
    sq, mid = pusher.sq, pusher.machine_id
    prompts = sq.execute(
        "SELECT provider, thread_id, session_id, project, ts, prompt FROM prompt_history "
        "ORDER BY source_id, generation, offset"
    ).fetchall()
    sides = sq.execute("SELECT provider, path, kind, thread_id, detail FROM side_files ORDER BY source_id").fetchall()
    digest = hashlib.blake2b(orjson.dumps([prompts, sides]), digest_size=16).hexdigest()
    row = pusher.pg.execute("SELECT digest FROM machine_side WHERE machine_id = %s", (mid,)).fetchone()
    pusher.pg.commit()
    if (row[0] if row else None) == digest:
        return 0
    if pusher.redactor is not None:
        prompts = [pusher._masked(p) for p in prompts]
        sides = [pusher._masked(s) for s in sides]

    def work(cur: Any) -> None:
        cur.execute("DELETE FROM prompt_history WHERE machine_id = %s", (mid,))
        cur.execute("DELETE FROM side_files WHERE machine_id = %s", (mid,))
        if prompts:
            cur.executemany("INSERT INTO prompt_history (machine_id, seq, provider, thread_id, session_id, project, ts, "
                            "prompt) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                            [(mid, i, *p) for i, p in enumerate(prompts)])  # fmt: skip
        if sides:
            cur.executemany("INSERT INTO side_files (machine_id, seq, provider, path, kind, thread_id, detail) "
                            "VALUES (%s, %s, %s, %s, %s, %s, %s)", [(mid, i, *s) for i, s in enumerate(sides)])  # fmt: skip
        cur.execute("INSERT INTO machine_side (machine_id, digest) VALUES (%s, %s) "
                    "ON CONFLICT (machine_id) DO UPDATE SET digest = excluded.digest", (mid, digest))  # fmt: skip

    pusher._tx(work)
    pusher.summary.count("prompt_history", len(prompts))
    pusher.summary.count("side_files", len(sides))
    return len(prompts) + len(sides)


def team_lost_sessions(conn: Any, provider: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """``side_files.lost_sessions`` over the team database: the same rows and keys."""
    sql = "SELECT provider, thread_id, session_id, project, prompts, first_ts, last_ts FROM lost_sessions"
    params: list[Any] = []
    if provider:
        sql += " WHERE provider = %s"
        params.append(provider)
    # NULLs placed as SQLite places them: the same order as the local listing
    sql += " ORDER BY last_ts DESC NULLS LAST, provider, project NULLS FIRST, thread_id NULLS FIRST"
    if limit:
        sql += f" LIMIT {int(limit)}"
    out = []
    for prov, thread, session, project, count, first, last in conn.execute(sql, params).fetchall():
        if thread is not None:
            where, args = "provider = %s AND thread_id = %s", (prov, thread)
        else:
            where, args = "provider = %s AND thread_id IS NULL AND project IS NOT DISTINCT FROM %s", (prov, project)
        prompts = [{"ts": ts, "prompt": text} for ts, text in conn.execute(
            f"SELECT ts, prompt FROM lost_prompts WHERE {where} GROUP BY ts, prompt ORDER BY ts NULLS FIRST, min(machine_id), min(seq)",
            args)]  # fmt: skip
        out.append({"provider": prov, "thread_id": thread, "session_id": session, "project": project,
                    "prompts": int(count), "first_ts": first, "last_ts": last, "history": prompts})
    conn.commit()
    return out
