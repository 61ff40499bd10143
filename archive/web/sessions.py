"""The home page: sessions (top-level threads), filtered, sorted, a page at a time.

Invariants:

* A row is a thread without a parent; its child threads (subagents, sidechains, forks) are
  folded under it, a fork marked as one (``metadata.forkedFrom``). A filter that matches
  only a child still lists its parent.
* Figures are the thread's own plus its children's: messages, normalised tokens
  (``usage_totals``: the four disjoint buckets) and cost (``archive.pricing``; None when no
  model of the session has a price). Times are the first and last recorded message, UTC.
* Sorting needs every candidate's figures, so one grouped query per figure runs over the
  candidates; labels (``queries.first_prompts``) are read only for the rows on the page.
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from dataclasses import dataclass, replace
from typing import Any

from . import files
from ..pricing import PriceTable, cost
from ..queries import first_prompts, is_fork_sql, is_session_sql, session_root_sql

PAGE_SIZE = 50
SORTS = {"recent": "last activity", "oldest": "first activity", "messages": "messages", "tokens": "tokens",
         "cost": "cost", "errors": "tool errors", "active": "active time"}  # fmt: skip
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class FilterError(ValueError):
    """A filter or page the list cannot honour (the route answers 400)."""


@dataclass(frozen=True)
class SessionFilters:
    provider: str = ""
    project: str = ""
    model: str = ""
    since: str = ""  # YYYY-MM-DD, inclusive, on last activity
    until: str = ""  # YYYY-MM-DD, inclusive, on first activity
    q: str = ""
    sort: str = "recent"
    page: int = 1
    outcome: str = ""  # signals and marks (issue 42, archive/web/files.py)
    tag: str = ""
    starred: bool = False


def _day(value: str, name: str) -> str:
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise FilterError(f"{name} must be a date YYYY-MM-DD, not {value!r}") from None


def _rows(conn: sqlite3.Connection, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    c = conn.execute(sql, params)
    names = [d[0] for d in c.description]
    return [dict(zip(names, r)) for r in c.fetchall()]


def options(conn: sqlite3.Connection) -> dict[str, list[str]]:
    """The values the filter menus offer."""
    return {
        "providers": [r[0] for r in conn.execute("SELECT DISTINCT provider FROM threads WHERE provider IS NOT NULL ORDER BY 1")],
        "projects": [r[0] for r in conn.execute(
            "SELECT cwd FROM threads WHERE cwd IS NOT NULL AND parent_thread_id IS NULL "
            "GROUP BY cwd ORDER BY count(*) DESC, cwd LIMIT 200")],
        "models": [r[0] for r in conn.execute("SELECT DISTINCT model FROM usage_totals WHERE model != '' ORDER BY 1")],
    }


def _priced(conn: sqlite3.Connection, ids_json: str, prices: PriceTable) -> dict[str, dict[str, Any]]:
    """Tokens and cost per top-level thread (children's usage added to their root)."""
    out: dict[str, dict[str, Any]] = {}
    sums = ", ".join(f"sum(u.{f}) AS {f}" for f in TOKEN_FIELDS)
    for r in _rows(conn, f"""
            SELECT {session_root_sql('t')} AS root, u.model, {sums}
            FROM usage_totals u JOIN threads t ON t.id = u.thread_id
            WHERE {session_root_sql('t')} IN (SELECT value FROM json_each(?))
            GROUP BY 1, 2""", (ids_json,)):  # fmt: skip
        g = out.setdefault(r["root"], {"tokens": 0, "cost": None, "unpriced": False})
        g["tokens"] += sum(r[f] or 0 for f in TOKEN_FIELDS)
        hit = prices.lookup(r["model"])
        if hit:
            g["cost"] = (g["cost"] or 0.0) + cost(hit[1], *(r[f] or 0 for f in TOKEN_FIELDS))
        elif any(r[f] for f in TOKEN_FIELDS):
            g["unpriced"] = True
    return out


def _stats(conn: sqlite3.Connection, ids_json: str) -> dict[str, dict[str, Any]]:
    """Messages and times per top-level thread (children's messages counted with their root)."""
    return {r["root"]: r for r in _rows(conn, f"""
        SELECT {session_root_sql('t')} AS root, count(m.id) AS messages, min(m.ts) AS first_ts,
               max(m.ts) AS last_ts, min(t.created_at) AS created_at
        FROM threads t LEFT JOIN messages m ON m.thread_id = t.id
        WHERE {session_root_sql('t')} IN (SELECT value FROM json_each(?)) GROUP BY 1""", (ids_json,))}  # fmt: skip


def with_children(conn: sqlite3.Connection, thread_id: str, prices: PriceTable) -> dict[str, Any] | None:
    """A session's row of the list (its own messages and its subagents', their tokens and
    cost; a fork's own, not the history it inherits), for its page to give beside its own
    figures: None for a subagent, or a session none of whose subagents holds a message."""
    row = conn.execute(f"SELECT {is_session_sql('t')} FROM threads t WHERE t.id = ?", (thread_id,)).fetchone()
    if row is None or not row[0]:
        return None  # a subagent: its figures count with its session's
    children, theirs = conn.execute(
        "SELECT count(*), coalesce(sum((SELECT count(*) FROM messages m WHERE m.thread_id = c.id)), 0) "
        f"FROM threads c WHERE c.parent_thread_id = ? AND NOT {is_fork_sql('c')}", (thread_id,)).fetchone()  # fmt: skip
    if not theirs:
        return None
    ids_json = json.dumps([thread_id])
    p = _priced(conn, ids_json, prices).get(thread_id, {"tokens": 0, "cost": None})
    return {"count": _stats(conn, ids_json)[thread_id]["messages"], "children": children, "tokens": p["tokens"],
            "cost": p["cost"]}  # fmt: skip


def sessions(conn: sqlite3.Connection, f: SessionFilters, prices: PriceTable, around: str = "") -> dict[str, Any]:
    """One page of sessions: ``{rows, total, page, pages}``; each row has the thread's
    fields, ``label``, ``messages``, ``first_ts``, ``last_ts``, ``tokens``, ``cost`` and
    ``children`` (each with ``label`` and ``fork``). ``around``: the page that holds this
    session instead of ``f.page``, when the list has it (the workspace's open session)."""
    if f.sort not in SORTS:
        raise FilterError(f"sort must be one of {', '.join(SORTS)}")
    where, params = ["1"], []
    if f.provider:
        where.append("t.provider = ?")
        params.append(f.provider)
    if f.project:
        where.append("(t.cwd = ? OR c.cwd = ?)")
        params += [f.project, f.project]
    if f.model:
        where.append("(t.model = ? OR c.model = ? OR EXISTS (SELECT 1 FROM usage_totals u WHERE u.model = ? "
                     "AND u.thread_id IN (t.id, c.id)))")  # fmt: skip
        params += [f.model] * 3
    if f.q:
        words = " ".join('"' + w.replace('"', '""') + '"' for w in f.q.split())
        where.append("(instr(lower(coalesce(t.title, '') || ' ' || coalesce(c.title, '') || ' ' || t.id || ' ' "
                     f"|| coalesce(t.cwd, '')), lower(?)) > 0 OR t.id IN (SELECT {session_root_sql('tt')} "
                     "FROM blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid JOIN messages m ON m.id = b.message_id "
                     "JOIN threads tt ON tt.id = m.thread_id WHERE blocks_fts MATCH ?))")  # fmt: skip
        params += [f.q, words]
    candidates = [r[0] for r in conn.execute(
        f"SELECT DISTINCT t.id FROM threads t LEFT JOIN threads c ON c.parent_thread_id = t.id AND NOT {is_fork_sql('c')} "
        f"WHERE {is_session_sql('t')} AND {' AND '.join(where)}", params)]  # fmt: skip
    keep = files.filter_ids(conn, f.outcome, f.tag, f.starred)
    if keep is not None:
        candidates = [c for c in candidates if c in keep]
    ids_json = json.dumps(candidates)
    stats = _stats(conn, ids_json)
    priced = _priced(conn, ids_json, prices)
    rows = []
    for tid in candidates:
        s = stats.get(tid, {})
        if not s.get("messages"):
            continue  # an empty session (no message of its own or its subagents'): as `threads` without --empty
        p = priced.get(tid, {"tokens": 0, "cost": None, "unpriced": False})
        rows.append({"id": tid, "messages": s.get("messages", 0), "first_ts": s.get("first_ts") or s.get("created_at"),
                     "last_ts": s.get("last_ts") or s.get("created_at"), **p})  # fmt: skip
    if f.sort in ("errors", "active"):
        files.add_signals(conn, rows)
    if f.since:
        rows = [r for r in rows if (r["last_ts"] or "") >= _day(f.since, "since")]
    if f.until:
        rows = [r for r in rows if r["first_ts"] and r["first_ts"][:10] <= _day(f.until, "until")]
    key = {"recent": lambda r: r["last_ts"] or "", "oldest": lambda r: r["first_ts"] or "\uffff",
           "messages": lambda r: r["messages"], "tokens": lambda r: r["tokens"],
           "cost": lambda r: r["cost"] or 0.0, "errors": lambda r: r["tool_errors"],
           "active": lambda r: r["active_seconds"]}[f.sort]  # fmt: skip
    rows.sort(key=lambda r: r["id"])
    rows.sort(key=key, reverse=f.sort != "oldest")
    total = len(rows)
    pages = max(1, -(-total // PAGE_SIZE))
    at = next((i for i, r in enumerate(rows) if r["id"] == around), None) if around else None
    if at is not None:
        f = replace(f, page=at // PAGE_SIZE + 1)
    if f.page < 1 or f.page > pages:
        raise FilterError(f"page {f.page} is outside the list (pages 1 to {pages})")
    shown = rows[(f.page - 1) * PAGE_SIZE : f.page * PAGE_SIZE]
    _details(conn, shown)
    files.add_signals(conn, shown)
    return {"rows": shown, "total": total, "page": f.page, "pages": pages}


def _details(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    ids = json.dumps([r["id"] for r in rows])
    threads = {r["id"]: r for r in _rows(conn, "SELECT id, title, provider, cwd, model, created_at, metadata FROM threads "
                                         "WHERE id IN (SELECT value FROM json_each(?))", (ids,))}  # fmt: skip
    children: dict[str, list[dict[str, Any]]] = {}
    for c in _rows(conn, "SELECT id, parent_thread_id, title, agent_id, created_at, metadata FROM threads "
                   "WHERE parent_thread_id IN (SELECT value FROM json_each(?)) ORDER BY created_at, id", (ids,)):  # fmt: skip
        children.setdefault(c["parent_thread_id"], []).append(c)
    untitled = [t for t in threads if not threads[t]["title"]]
    untitled += [c["id"] for cs in children.values() for c in cs if not c["title"]]
    labels = first_prompts(conn, untitled, width=140)
    models = {}
    for r in conn.execute("SELECT thread_id, model FROM usage_totals WHERE thread_id IN (SELECT value FROM json_each(?)) "
                          "AND model != '' GROUP BY 1, 2 ORDER BY sum(output_tokens) DESC", (ids,)):  # fmt: skip
        models.setdefault(r[0], r[1])
    for r in rows:
        t = threads[r["id"]]
        r.update(title=t["title"], provider=t["provider"], project=t["cwd"],
                 model=t["model"] or models.get(r["id"]), label=t["title"] or labels.get(r["id"]) or r["id"],
                 fork_of=_forked_from(t["metadata"]), handoff=_forked_from(t["metadata"], "emittedFrom"))  # fmt: skip
        r["children"] = [{"id": c["id"], "fork": _forked_from(c["metadata"]) is not None,
                          "handoff": _forked_from(c["metadata"], "emittedFrom") is not None,
                          "label": c["title"] or labels.get(c["id"]) or (f"agent {c['agent_id']}" if c["agent_id"] else c["id"])}
                         for c in children.get(r["id"], [])]  # fmt: skip


def _forked_from(metadata: str | None, key: str = "forkedFrom") -> str | None:
    """The thread a fork continues (``emittedFrom``: the thread ``emit`` wrote it from)."""
    try:
        meta = json.loads(metadata) if metadata else None
    except ValueError:
        return None
    v = meta.get(key) if isinstance(meta, dict) else None
    return v if isinstance(v, str) else None
