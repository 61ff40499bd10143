"""File history, signals and marks on the web pages (issue 42): the file page's timeline,
the session list's signal columns and filters, the conversation page's panel.

Invariants: read-only; figures come from the derived tables (``file_touches``,
``thread_signals``) and the user's (``thread_tags``, ``thread_notes``) through
archive/file_touches.py and archive/marks.py, never recomputed here. A session's figures
are its root thread's (subagents have their own, on their own pages).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from markupsafe import Markup, escape
from sqlite_utils import Database

from ..file_touches import file_history
from ..marks import annotate
from ..signals import OUTCOME_SQL, OUTCOMES

TIMELINE_LIMIT = 500


def timeline(conn: sqlite3.Connection, path: str) -> dict[str, Any]:
    """The file page: every call that touched files matching ``path``, newest first, and
    the sessions they belong to."""
    calls = file_history(Database(conn), path, limit=TIMELINE_LIMIT) if path.strip() else []
    return {"path": path, "calls": calls, "paths": sorted({c["path"] for c in calls}),
            "sessions": len({c["thread_id"] for c in calls}), "limited": len(calls) == TIMELINE_LIMIT}  # fmt: skip


def filter_ids(conn: sqlite3.Connection, outcome: str = "", tag: str = "", starred: bool = False) -> set[str] | None:
    """The thread ids the list's outcome/tag/star filters keep (None: no such filter)."""
    if outcome and outcome not in OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(OUTCOMES)}")
    keep: set[str] | None = None
    if outcome:
        keep = {r[0] for r in conn.execute(f"SELECT s.thread_id FROM thread_signals s WHERE {OUTCOME_SQL} = ?", (outcome,))}
    if tag:
        tagged = {r[0] for r in conn.execute("SELECT thread_id FROM thread_tags WHERE tag = ?", (tag,))}
        keep = tagged if keep is None else keep & tagged
    if starred:
        stars = {r[0] for r in conn.execute("SELECT thread_id FROM thread_notes WHERE starred = 1")}
        keep = stars if keep is None else keep & stars
    return keep


def add_signals(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Each row (a session, ``id``) gets ``outcome``, ``tool_calls``, ``tool_errors``,
    ``active_seconds``, ``tags``, ``starred``."""
    annotate(conn, rows)
    for r in rows:
        s = r.pop("signals") or {}
        r["outcome"] = s.get("outcome")
        for k in ("tool_calls", "tool_errors", "retries", "active_seconds"):
            r[k] = s.get(k) or 0


def tags_in_use(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT tag FROM thread_tags GROUP BY tag ORDER BY count(*) DESC, tag LIMIT 200")]


def _minutes(seconds: float | None) -> str:
    if not seconds:
        return "0 min"
    return f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def panel(conn: sqlite3.Connection, thread_id: str, file_url: Any) -> Markup:
    """The conversation page's signals, tags, star and note, and the files it changed."""
    row = annotate(conn, [{"id": thread_id}])[0]
    s = row["signals"]
    parts = []
    if s:
        label = s["outcome"] or s["ending"]  # a prompt log has no outcome: its ending, ``log``
        parts.append(
            f'<span class="sesh-badge sesh-outcome-{escape(label)}">{escape(label)}</span> '
            f'{s["tool_calls"]} tool calls, {s["tool_errors"]} errors, {s["retries"]} retries, '
            f'{s["same_file_edits"]} repeat edits, {s["compactions"]} compactions, '
            f'{s["interrupted_turns"]} interrupted turns &middot; active {_minutes(s["active_seconds"])} '
            f'of {_minutes(s["duration_seconds"])}'
        )
    if row["starred"]:
        parts.append('<span class="sesh-badge">&#9733; starred</span>')
    if row["tags"]:
        parts.append(" ".join(f'<span class="sesh-badge sesh-tag">{escape(t)}</span>' for t in row["tags"]))
    html = f'<p class="sesh-meta sesh-signals">{" &middot; ".join(parts)}</p>' if parts else ""
    if row["note"]:
        html += f'<p class="sesh-note">{escape(row["note"])}</p>'
    changed = conn.execute(
        "SELECT path, count(*) FROM file_touches WHERE thread_id = ? AND action IN ('changed', 'created', 'deleted') "
        "GROUP BY path ORDER BY count(*) DESC, path LIMIT 20", (thread_id,)).fetchall()  # fmt: skip
    if changed:
        items = "".join(f'<li><a href="{escape(file_url(p))}"><code>{escape(p)}</code></a> &times;{n}</li>' for p, n in changed)
        html += f'<details class="sesh-files"><summary>{len(changed)} file{"" if len(changed) == 1 else "s"} changed</summary><ul>{items}</ul></details>'
    return Markup(html)


def ids_json(ids: set[str]) -> str:
    return json.dumps(sorted(ids))
