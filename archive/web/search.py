"""Full-text search for the search page: the SQL for one page of hits and for their total.

Invariants:

* The query is read as the CLI reads it (``queries.fts_query``: FTS5 syntax kept, any other
  word quoted); the caller retries with ``literal=True`` if FTS5 still rejects it (a stray
  operator).
* Filters: provider, project (the thread's folder or its parent's; a path matches that
  folder and below), role, block kind, and a date range on the message time (UTC days,
  inclusive). Sort: relevance (bm25) or date (newest first).
* ``mode``: lexical (the SQL below), semantic or hybrid (``semantic.search``, issue 40:
  ``meaning_rows`` shapes its hits as the SQL's rows; their count is the hits found).
* Grouped by session (issue 41, ``groups_sql`` / ``group_rows``): one entry per thread with
  its number of hits and its best ``SNIPPETS`` hits (by relevance), threads in the order of
  their best hit; paged by ``GROUP_PAGE`` threads. The date sort stays a flat timeline.
* Paging is bounded: ``offset`` is 0 to ``MAX_OFFSET``; anything else is a ``SearchError``
  (the page answers 400), as is a date that is not ``YYYY-MM-DD``.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from ..queries import fts_literal, fts_query

PAGE_SIZE = 50
GROUP_PAGE = 20  # sessions a page of grouped hits
SNIPPETS = 3  # best hits shown per session
MAX_OFFSET = 100_000
SORTS = ("relevance", "date")
MODES = ("lexical", "semantic", "hybrid")
KINDS = ("text", "reasoning", "tool_call", "tool_result", "file_change", "web_search", "attachment", "unknown")
ROLES = ("user", "assistant", "tool", "system")
MARK_OPEN, MARK_CLOSE = "\u27e6", "\u27e7"


class SearchError(ValueError):
    """A search request that cannot be answered as asked (400)."""


@dataclass(frozen=True)
class SearchRequest:
    q: str
    provider: str = ""
    project: str = ""
    role: str = ""
    kind: str = ""
    since: str = ""
    until: str = ""
    sort: str = "relevance"
    offset: int = 0
    mode: str = "lexical"
    thread: str = ""  # one thread's hits (a group's best snippets)


def parse_offset(value: str | None) -> int:
    if value in (None, ""):
        return 0
    try:
        n = int(value)
    except ValueError:
        raise SearchError(f"offset must be a whole number, not {value!r}") from None
    if not 0 <= n <= MAX_OFFSET:
        raise SearchError(f"offset must be between 0 and {MAX_OFFSET:,}")
    return n


def _day(value: str, name: str) -> str:
    try:
        return dt.date.fromisoformat(value).isoformat()
    except ValueError:
        raise SearchError(f"{name} must be a date YYYY-MM-DD, not {value!r}") from None


def _where(r: SearchRequest) -> tuple[str, dict[str, Any]]:
    if r.sort not in SORTS:
        raise SearchError(f"sort must be one of {', '.join(SORTS)}")
    if r.mode not in MODES:
        raise SearchError(f"mode must be one of {', '.join(MODES)}")
    if r.role and r.role not in ROLES:
        raise SearchError(f"role must be one of {', '.join(ROLES)}")
    if r.kind and r.kind not in KINDS:
        raise SearchError(f"kind must be one of {', '.join(KINDS)}")
    sql, params = [], {}
    if r.provider:
        sql.append("t.provider = :provider")
        params["provider"] = r.provider
    if r.project:
        if r.project.startswith("/"):
            root = r.project.rstrip("/") or "/"
            sql.append("(coalesce(t.cwd, p.cwd) = :project OR substr(coalesce(t.cwd, p.cwd), 1, length(:prefix)) = :prefix)")
            params.update(project=root, prefix=root.rstrip("/") + "/")
        else:
            sql.append("instr(coalesce(t.cwd, p.cwd), :project) > 0")
            params["project"] = r.project
    if r.thread:
        sql.append("m.thread_id = :thread")
        params["thread"] = r.thread
    if r.role:
        sql.append("m.role = :role")
        params["role"] = r.role
    if r.kind:
        sql.append("b.type = :kind")
        params["kind"] = r.kind
    if r.since:
        sql.append("m.ts >= :since")
        params["since"] = _day(r.since, "since")
    if r.until:
        sql.append("m.ts < :until")
        params["until"] = (dt.date.fromisoformat(_day(r.until, "until")) + dt.timedelta(days=1)).isoformat()
    return "".join(" AND " + s for s in sql), params


_FROM = """FROM blocks_fts
JOIN blocks b ON b.id = blocks_fts.rowid
JOIN messages m ON m.id = b.message_id
LEFT JOIN threads t ON t.id = m.thread_id
LEFT JOIN threads p ON p.id = t.parent_thread_id
WHERE blocks_fts MATCH :match"""


def hits_sql(r: SearchRequest, literal: bool = False, limit: int = PAGE_SIZE + 1) -> tuple[str, dict[str, Any]]:
    where, params = _where(r)
    order = "blocks_fts.rank, m.ts, b.id" if r.sort == "relevance" else "m.ts DESC, b.id DESC"
    sql = f"""SELECT b.id AS block_id, b.type, b.tool_name, m.thread_id, m.id AS message_id, m.role, m.ts, t.title,
       t.provider, coalesce(t.cwd, p.cwd) AS project,
       snippet(blocks_fts, 0, :open, :close, '\u2026', 24) AS snippet
{_FROM}{where}
ORDER BY {order}
LIMIT :limit OFFSET :offset"""
    params.update(match=fts_literal(r.q) if literal else fts_query(r.q), open=MARK_OPEN, close=MARK_CLOSE, limit=limit,
                  offset=r.offset)  # fmt: skip
    return sql, params


def groups_sql(r: SearchRequest, literal: bool = False, limit: int = GROUP_PAGE + 1) -> tuple[str, dict[str, Any]]:
    """One page of sessions with hits: ``thread_id``, ``n`` (its hits), ``best`` (bm25 of its best)."""
    where, params = _where(r)
    sql = f"""SELECT m.thread_id, count(*) AS n, min(blocks_fts.rank) AS best
{_FROM}{where}
GROUP BY m.thread_id
ORDER BY best, m.thread_id
LIMIT :limit OFFSET :offset"""
    params.update(match=fts_literal(r.q) if literal else fts_query(r.q), limit=limit, offset=r.offset)
    return sql, params


def sessions_count_sql(r: SearchRequest, literal: bool = False) -> tuple[str, dict[str, Any]]:
    where, params = _where(r)
    params["match"] = fts_literal(r.q) if literal else fts_query(r.q)
    return f"SELECT count(DISTINCT m.thread_id) {_FROM}{where}", params


def group_rows(rows: list[dict[str, Any]], counts: dict[str, int] | None = None, per: int = SNIPPETS) -> list[dict[str, Any]]:
    """Hits (best first) as groups per thread, in the order of each thread's best hit:
    ``{thread_id, n, hits}``; ``n`` from ``counts`` when given, else the hits among ``rows``."""
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        g = groups.setdefault(row["thread_id"], {"thread_id": row["thread_id"], "n": 0, "hits": []})
        g["n"] += 1
        if len(g["hits"]) < per:
            g["hits"].append(row)
    for tid, g in groups.items():
        if counts and tid in counts:
            g["n"] = counts[tid]
    return list(groups.values())


def count_sql(r: SearchRequest, literal: bool = False) -> tuple[str, dict[str, Any]]:
    where, params = _where(r)
    params["match"] = fts_literal(r.q) if literal else fts_query(r.q)
    return f"SELECT count(*) {_FROM}{where}", params


def meaning_rows(conn: Any, r: SearchRequest, limit: int = PAGE_SIZE + 1) -> list[dict[str, Any]]:
    """One page of ``semantic`` or ``hybrid`` hits (relevance order), as ``hits_sql``'s rows."""
    from ..queries import Filters
    from ..semantic_search import search
    from sqlite_utils import Database

    _where(r)  # the same checks
    f = Filters(provider=r.provider or None, role=r.role or None, project=r.project or None,
                since=r.since or None, until=r.until or None)  # fmt: skip
    hits = search(Database(conn), r.q, f, mode=r.mode, limit=r.offset + limit, kinds=[r.kind] if r.kind else ())
    return [{"block_id": h.get("block_id"), "type": h["block_type"], "tool_name": h["tool_name"],
             "thread_id": h["thread_id"], "message_id": h["message_id"], "role": h["role"], "ts": h["ts"],
             "title": h["thread_title"], "provider": h["provider"], "project": h["project"],
             "snippet": _marked(h["snippet"], h.get("matches") or [])} for h in hits[r.offset:]]  # fmt: skip


def _marked(text: str, matches: list[list[int]]) -> str:
    for a, b in sorted(matches, reverse=True):
        text = text[:a] + MARK_OPEN + text[a:b] + MARK_CLOSE + text[b:]
    return text
