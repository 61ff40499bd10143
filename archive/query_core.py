"""The read queries written once for both backends (issue 34): ``threads``, ``search``,
``resolve_thread``, the summary ``show`` heads with, ``stats`` and the tool stats, each taking a
``Dialect`` (archive/sql_dialect.py) and an open connection: the local archive's SQLite
(archive/queries.py calls them with ``SQLITE``) or the team database's PostgreSQL
(archive/pg/queries.py, ``POSTGRES``). A new query is written here, once.

Invariants:

* The same query over the same threads gives the same rows on both backends (tests/test_pg_queries.py
  compares them on an archive and the team database pushed from it).
* Results are plain values (dicts of JSON types) whose shapes are the commands' ``--json``
  output, kept stable.
* Token accounting: see archive/queries.py. A response is counted in the thread it was
  first written in; a fork shows what it inherited apart.
* A scope the caller adds (``scope``: a condition and its parameters, e.g. the team
  database's ``machine``) narrows the rows and changes nothing else.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from typing import Any

from .filters import (
    UTC,
    AmbiguousThread,
    Filters,
    QueryError,
    ThreadNotFound,
    _bound,
    _like_prefix,
    _relative,
    _utc_iso,
    _where,
    first_prompts,
    is_utc,
    zone,
)
from .pricing import PriceTable, cost
from .sql_dialect import MARK_END, MARK_START, SQLITE, Dialect
from .vendors import get as get_adapter

STATS_BY = ("day", "week", "month", "model", "project", "provider", "thread", "tool", "vendor-tool")
Scope = tuple[str, list[Any]]  # a condition (``?`` placeholders) and its parameters
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _and(conds: list[str]) -> str:
    return "WHERE " + " AND ".join(conds) if conds else ""


def _narrow(d: Dialect, where: list[str], params: list[Any], column: str, ids: Iterable[str] | None,
            scope: Scope | None) -> None:  # fmt: skip
    """Add ``column`` in ``ids`` (None: any) and the caller's ``scope`` to ``where``."""
    if ids is not None:
        cond, arg = d.in_list(column, ids)
        where.append(cond)
        params.append(arg)
    if scope is not None:
        where.append(scope[0])
        params += scope[1]


# ---------------------------------------------------------------- search


def _split_snippet(marked: str) -> tuple[str, list[list[int]]]:
    text, matches, start = [], [], None
    n = 0
    for ch in marked:
        if ch == MARK_START:
            start = n
        elif ch == MARK_END:
            if start is not None:
                matches.append([start, n])
            start = None
        else:
            text.append(ch)
            n += 1
    return "".join(text), matches


def search_rows(d: Dialect, conn: Any, query: str, f: Filters = Filters(), *, limit: int | None = 20,
                literal: bool = False, tokens: int = 16, offset: int = 0, kinds: Iterable[str] = ()) -> list[dict[str, Any]]:  # fmt: skip
    """Blocks matching ``query`` in the backend's full-text syntax, best match first, each with
    ``thread_id, thread_title, provider, project, message_id, role, ts, block_type, tool_name,
    snippet, matches, also_in`` (archive/queries.py ``search`` says what each is). A query the
    backend rejects raises its driver's error: the caller says what went wrong."""
    hits = search_ranking(d, conn, query, f, limit=limit, literal=literal, tokens=tokens, offset=offset,
                          kinds=kinds, snippets=True)  # fmt: skip
    return finish_hits(d, conn, hits)


def search_ranking(d: Dialect, conn: Any, query: str, f: Filters = Filters(), *, limit: int | None = 20,
                   literal: bool = False, tokens: int = 16, offset: int = 0, kinds: Iterable[str] = (),
                   snippets: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    """``search_rows``'s hits in its order, as its SQL gives them: without ``snippets``, each
    has the block's ``block_id`` in place of ``snippet`` (the snippet function reads the
    block's whole text: hybrid search ranks 300 hits and shows 20, ``snippets_of``)."""
    if not query.strip():
        raise QueryError("empty search query")
    ft = d.full_text(query, literal=literal, tokens=tokens)
    where, params = _where(f, ts="m.ts", project="coalesce(t.cwd, p.cwd)", provider="t.provider",
                           thread="m.thread_id", role="m.role", d=d)  # fmt: skip
    if kinds:
        cond, arg = d.in_list("b.type", kinds)
        where.append(cond)
        params.append(arg)
    lim, lim_params = d.limit(limit, offset)
    sql = f"""{ft.cte}
        SELECT m.thread_id, t.title AS thread_title, t.provider, coalesce(t.cwd, p.cwd) AS project,
               m.id AS message_id, m.role, m.ts, b.type AS block_type, b.tool_name,
               {ft.snippet + ' AS snippet' if snippets else 'b.id AS block_id'}
        FROM {ft.source}
        JOIN messages m ON m.id = b.message_id
        LEFT JOIN threads t ON t.id = m.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        WHERE {ft.match} {''.join(' AND ' + w for w in where)}
        ORDER BY {ft.order}
        {lim}"""
    return d.rows(conn, sql, [*ft.cte_params, *(ft.snippet_params if snippets else ()), *ft.match_params, *params,
                              *lim_params])  # fmt: skip


def snippets_of(d: Dialect, conn: Any, query: str, block_ids: Iterable[int], *, literal: bool = False,
                tokens: int = 16) -> dict[int, str]:  # fmt: skip
    """The highlighted snippet ``search_rows`` gives each of these blocks for ``query`` (SQLite)."""
    ids = sorted(set(block_ids))
    if not ids:
        return {}
    if d.postgres:
        raise QueryError("snippets_of: SQLite only")
    ft = d.full_text(query, literal=literal, tokens=tokens)
    sql = (f"SELECT blocks_fts.rowid AS id, {ft.snippet} AS snippet FROM blocks_fts "
           f"WHERE {ft.match} AND blocks_fts.rowid = ?")  # fmt: skip
    out: dict[int, str] = {}
    for bid in ids:  # one row each: FTS5 seeks to a rowid, it does not join one from a list
        for r in d.rows(conn, sql, [*ft.snippet_params, *ft.match_params, bid]):
            out[r["id"]] = r["snippet"]
    return out


def finish_hits(d: Dialect, conn: Any, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``search_ranking(snippets=True)``'s rows as ``search_rows`` returns them: the snippet
    split from its marks, the thread's label, the forks that hold the message too."""
    labels = first_prompts(conn, (h["thread_id"] for h in hits if not h["thread_title"]), d=d)
    forks = inheritors(d, conn, {h["thread_id"] for h in hits})
    for h in hits:
        h["snippet"], h["matches"] = _split_snippet(h["snippet"] or "")
        h["thread_title"] = h["thread_title"] or labels.get(h["thread_id"])
        h["also_in"] = sorted(f for f, ids in forks.get(h["thread_id"], {}).items() if h["message_id"] in ids)
    return hits


def inheritors(d: Dialect, conn: Any, thread_ids: set[str], cap: int = 200) -> dict[str, dict[str, set[str]]]:
    """For each thread, its forks (and theirs) with the message ids each inherits: a hit in a
    message stored once is also in the conversation of every fork that inherited it."""
    out: dict[str, dict[str, set[str]]] = {}
    for tid in sorted(thread_ids):
        frontier: list[str] = [tid]
        found: dict[str, set[str]] = {}
        while frontier and len(found) < cap:
            cond, arg = d.in_list("parent_thread_id", frontier)
            kids = [r["id"] for r in d.rows(conn, f"SELECT id FROM threads t WHERE {cond} AND {is_fork_sql('t', d)}", [arg])]
            frontier = [k for k in kids if k not in found and k != tid]
            for k in frontier:
                found[k] = set(inherited_ids(d, conn, k))
        if found:
            out[tid] = found
    return out


def inherited_ids(d: Dialect, conn: Any, thread_id: str, seen: frozenset[str] = frozenset()) -> list[str]:
    """The ids of the messages a fork inherits (its ancestors' up to each fork point), in
    order; [] for a thread that continues no other (``projection.inherited_ids``)."""
    row = d.rows(conn, "SELECT parent_thread_id, origin_message_id FROM threads WHERE id = ? "
                 f"AND origin_message_id IS NOT NULL AND {d.json_text('metadata', 'forkedFrom')} = parent_thread_id",
                 (thread_id,))  # fmt: skip
    if not row or row[0]["parent_thread_id"] in seen or row[0]["parent_thread_id"] == thread_id:
        return []
    parent, origin = row[0]["parent_thread_id"], row[0]["origin_message_id"]
    own = [r["id"] for r in d.rows(conn, f"SELECT id FROM messages m WHERE thread_id = ? ORDER BY {d.message_order}", (parent,))]
    before = inherited_ids(d, conn, parent, seen | {thread_id}) + own
    return before[: before.index(origin) + 1] if origin in before else []


# ---------------------------------------------------------------- threads

def norm_sums(d: Dialect = SQLITE, prefix: str = "") -> str:
    """Sums over usage_responses, whose rows are already in the four disjoint buckets."""
    return "count(*) AS responses, " + ", ".join(
        f"{d.int_sum(prefix + c)} AS {c}" for c in (*TOKEN_FIELDS, "reasoning_tokens"))  # fmt: skip


TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")

# What a *session* is, everywhere (`threads`, the web list, their counts): a thread that is
# not a subagent, i.e. a top-level thread, a fork or a hand-off. A subagent's messages and
# usage count with the session it belongs to. A session is *empty* when neither it nor its
# subagents hold a message; lists leave empty sessions out unless asked (`threads --empty`).


def is_fork_sql(alias: str = "t", d: Dialect = SQLITE) -> str:
    """A thread continuing its parent's conversation (projection.fork_of), not a subagent."""
    forked_from = d.json_text(f"{alias}.metadata", "forkedFrom")
    return f"({alias}.origin_message_id IS NOT NULL AND {d.same(forked_from, f'{alias}.parent_thread_id')})"


def is_session_sql(alias: str = "t", d: Dialect = SQLITE) -> str:
    return f"({alias}.parent_thread_id IS NULL OR {is_fork_sql(alias, d)})"


def session_root_sql(alias: str = "t", d: Dialect = SQLITE) -> str:
    """The session a thread's messages and usage count with: itself, or a subagent's parent."""
    return f"(CASE WHEN {is_session_sql(alias, d)} THEN {alias}.id ELSE {alias}.parent_thread_id END)"


def thread_rows(d: Dialect, conn: Any, f: Filters = Filters(), *, limit: int | None = 50,
                ids: Iterable[str] | None = None, top_level: bool = False, include_empty: bool = True,
                prices: PriceTable | None = None, offset: int = 0, scope: Scope | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of ``threads`` (archive/queries.py says what each key is)."""
    static, params = _where(f, ts=None, project="coalesce(t.cwd, p.cwd)", d=d)
    if top_level:  # a fork is a session of its own, listed with the others
        static.append(is_session_sql("t", d))
    _narrow(d, static, params, "t.id", ids, scope)
    where: list[str] = [] if include_empty else [
        "(ms.messages > 0 OR EXISTS (SELECT 1 FROM threads c JOIN messages cm ON cm.thread_id = c.id "
        f"WHERE c.parent_thread_id = t.id AND NOT {is_fork_sql('c', d)}))"]
    if f.since:
        where.append(f"ms.last_ts >= {d.c('?')}")
        params.append(_bound(f.since, tz=f.tz))
    if f.until:
        where.append(f"ms.first_ts < {d.c('?')}")
        params.append(_bound(f.until, end=True, tz=f.tz))
    lim, lim_params = d.limit(limit, offset)
    # the per-thread aggregates only over the threads that pass the static filters, so
    # `show` (one thread) does not aggregate the whole archive
    sql = f"""
        WITH ids AS (SELECT t.id FROM threads t LEFT JOIN threads p ON p.id = t.parent_thread_id {_and(static)}),
             ms AS (SELECT thread_id, min({d.c('ts')}) AS first_ts, max({d.c('ts')}) AS last_ts, count(*) AS messages
                    FROM messages WHERE thread_id IN (SELECT id FROM ids) GROUP BY thread_id),
             us AS (SELECT thread_id, {norm_sums(d)} FROM usage_responses
                    WHERE thread_id IN (SELECT id FROM ids) GROUP BY thread_id),
             cs AS (SELECT parent_thread_id, count(*) AS children FROM threads t
                    WHERE parent_thread_id IN (SELECT id FROM ids) AND NOT {is_fork_sql('t', d)} GROUP BY parent_thread_id)
        SELECT t.id, t.title, t.provider, coalesce(t.cwd, p.cwd) AS project, t.model, t.parent_thread_id,
               t.created_at, ms.first_ts, ms.last_ts, coalesce(ms.messages, 0) AS messages,
               coalesce(cs.children, 0) AS children,
               coalesce(us.input_tokens, 0) AS input_tokens, coalesce(us.output_tokens, 0) AS output_tokens,
               coalesce(us.cache_read_tokens, 0) AS cache_read_tokens,
               coalesce(us.cache_write_tokens, 0) AS cache_write_tokens
        FROM threads t
        JOIN ids ON ids.id = t.id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        LEFT JOIN ms ON ms.thread_id = t.id
        LEFT JOIN us ON us.thread_id = t.id
        LEFT JOIN cs ON cs.parent_thread_id = t.id
        {_and(where)}
        ORDER BY {d.c("coalesce(ms.last_ts, t.created_at, '')")} DESC, {d.c('t.id')}
        {lim}"""
    rows = d.rows(conn, sql, [*params, *lim_params])
    labels = first_prompts(conn, (r["id"] for r in rows if not r["title"]), d=d)
    costs = thread_costs(d, conn, [r["id"] for r in rows], prices) if prices is not None else {}
    out = []
    forks = fork_rows(d, conn, [r["id"] for r in rows])
    for r in rows:
        r["total_tokens"] = sum(r[k] for k in TOKEN_FIELDS)
        r["label"] = r["title"] or labels.get(r["id"])
        r["forked_from"], r["inherited_messages"], r["inherited_tokens"], r["lineage"] = forks.get(r["id"], (None, 0, 0, None))
        row = {k: r[k] for k in THREAD_KEYS}
        if prices is not None:
            row["cost_usd"], row["unpriced_models"] = costs.get(r["id"], (None, []))
        out.append(row)
    return out


def fork_rows(d: Dialect, conn: Any, ids: list[str]) -> dict[str, tuple[str, int, int, str]]:
    """For each fork among ``ids``: (parent, inherited messages, tokens of the inherited
    responses, ``fork`` or ``handoff``: ``projection.lineage_of``). A response is counted in the
    thread it was first written in; a fork shows what it inherited apart, never in its own totals."""
    out = {}
    cond, arg = d.in_list("id", ids)
    for r in d.rows(conn, f"SELECT id, parent_thread_id, {d.json_text('metadata', 'emittedFrom')} AS emitted FROM threads "
                    f"WHERE {cond} AND origin_message_id IS NOT NULL "
                    f"AND {d.json_text('metadata', 'forkedFrom')} = parent_thread_id", [arg]):  # fmt: skip
        got = inherited_ids(d, conn, r["id"])
        in_got, got_arg = d.in_list("message_id", got)
        tokens = d.rows(conn, "SELECT coalesce("
                        f"{d.int_sum('input_tokens + output_tokens + cache_read_tokens + cache_write_tokens')}, 0) AS n "
                        f"FROM usage_responses WHERE {in_got} AND thread_id != ?", [got_arg, r["id"]])[0]["n"]  # fmt: skip
        out[r["id"]] = (r["parent_thread_id"], len(got), tokens, "handoff" if r["emitted"] else "fork")
    return out


def thread_costs(d: Dialect, conn: Any, ids: list[str], prices: PriceTable) -> dict[str, tuple[float | None, list[str]]]:
    """Each thread's cost (its own responses, each priced by its model) and unpriced models."""
    acc: dict[str, list[Any]] = {}
    cond, arg = d.in_list("thread_id", ids)
    for r in d.rows(conn, f"SELECT thread_id, model, {norm_sums(d)} FROM usage_responses WHERE {cond} GROUP BY 1, 2", [arg]):
        a = acc.setdefault(r["thread_id"], [None, set()])
        hit = prices.lookup(r["model"])
        if hit is None:
            a[1].add(r["model"] or "")
        else:
            a[0] = (a[0] or 0.0) + cost(hit[1], *(r[f] or 0 for f in TOKEN_FIELDS))
    return {k: (None if c is None else round(c, 8), sorted(u)) for k, (c, u) in acc.items()}


THREAD_KEYS = (
    "id", "title", "label", "provider", "project", "model", "parent_thread_id", "created_at", "first_ts",
    "last_ts", "messages", "children", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "total_tokens", "forked_from", "lineage", "inherited_messages", "inherited_tokens",
)  # fmt: skip



# ---------------------------------------------------------------- show


def resolve_thread(d: Dialect, conn: Any, ref: str) -> str:
    """The thread id ``ref`` names: the exact id, else the only id starting with it, else
    the one starting with it that every other such id extends with ``/`` (a parent whose
    children are named after it). Several: ``AmbiguousThread`` listing them (at most 20)."""
    ref = ref.strip()
    if not ref:
        raise ThreadNotFound("empty thread id")
    if d.rows(conn, "SELECT 1 AS found FROM threads WHERE id = ?", (ref,)):
        return ref
    like = "id LIKE ? ESCAPE '\\'"
    ids = [r["id"] for r in d.rows(conn, f"SELECT id FROM threads WHERE {like} ORDER BY {d.c('id')} LIMIT 21",
                                   (_like_prefix(ref),))]  # fmt: skip
    if not ids:
        raise ThreadNotFound(f"no thread id starts with {ref!r} (see `sesh-archive threads`)")
    if len(ids) > 20:
        # more children than the list holds: the parent is the one match without a "/"
        # after the prefix, if every other match is below it
        roots = [r["id"] for r in d.rows(
            conn, f"SELECT id FROM threads WHERE {like} AND {d.contains('substr(id, ?)', chr(39) + '/' + chr(39))} = 0 LIMIT 2",
            (_like_prefix(ref), len(ref) + 1))]  # fmt: skip
        if len(roots) == 1 and not d.rows(
            conn, f"SELECT 1 AS found FROM threads WHERE {like} AND id != ? AND NOT {like} LIMIT 1",
            (_like_prefix(ref), roots[0], _like_prefix(roots[0] + "/"))):  # fmt: skip
            return roots[0]
    # child threads named ``<parent>/…``: a prefix of the parent also prefixes them,
    # and then means the parent.
    roots = [i for i in ids if all(j == i or j.startswith(i + "/") for j in ids)]
    if len(ids) > 1 and len(ids) <= 20 and len(roots) == 1:
        return roots[0]
    if len(ids) > 1:
        found = {r["id"]: r for r in thread_rows(d, conn, ids=ids[:20], limit=None)}
        raise AmbiguousThread(ref, [found[i] for i in ids if i in found])
    return ids[0]


def show_summary(d: Dialect, conn: Any, tid: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``show``'s head: the thread's ``threads`` row and its child threads' rows, oldest first."""
    # the thread and its children in one query (child ids need not share the parent's prefix)
    child_ids = [r["id"] for r in d.rows(conn, "SELECT id FROM threads WHERE parent_thread_id = ?", (tid,))]
    summary = thread_rows(d, conn, ids=[tid, *child_ids], limit=None)
    own = next(s for s in summary if s["id"] == tid)
    children = sorted((s for s in summary if s["id"] != tid),
                      key=lambda s: (s["first_ts"] or s["created_at"] or "", s["id"]))  # fmt: skip
    return own, children


# ---------------------------------------------------------------- stats


def _iso_week(day: str | None) -> str | None:
    if not day:
        return None
    try:
        y, w, _ = dt.date.fromisoformat(day).isocalendar()
    except ValueError:
        return None
    return f"{y}-W{w:02d}"


def stats(d: Dialect, conn: Any, by: str, prices: PriceTable, *, since: str | None = None, until: str | None = None,
          provider: str | None = None, tz: str | None = None, tids: list[str] | None = None,
          scope: Scope | None = None) -> dict[str, Any]:  # fmt: skip
    """Token and cost totals grouped ``by`` day|week|month|model|project|provider|thread,
    or tool call counts ``by`` tool (neutral kinds) | vendor-tool (vendor names). Shape:
    ``{by, tz, since, until, thread, prices, rows, total, unpriced_models}`` (README "stats").

    Days, weeks and months are those of ``tz`` (None: UTC): a response at 23:30 UTC is on
    the next day in Paris. ``tids`` keeps those threads (a thread and its child threads);
    ``scope`` (a condition on usage_responses or tool_calls ``tc``) keeps its rows. Days of a
    zone other than UTC are the local archive's (its daily totals, SQLite only)."""
    if by not in STATS_BY:
        raise QueryError(f"cannot group by {by!r}; one of {', '.join(STATS_BY)}")
    z = zone(tz)
    tz_name = UTC if z is dt.timezone.utc else str(tz)
    if by in ("tool", "vendor-tool"):
        return tool_stats(d, conn, by, since=since, until=until, provider=provider, tz=tz, tids=tids, scope=scope)
    sb = _bound(since, tz=tz) if since else None
    ub = _bound(until, end=True, tz=tz) if until else None
    local_days = by in ("day", "week", "month") and z is not dt.timezone.utc
    whole = [None if v is None else _whole_local_day(v, z, end) for v, end in ((since, False), (until, True))]
    whole_days = all(w is not None for v, w in zip((since, until), whole) if v is not None)
    to_day: Any = None
    raw: list[dict[str, Any]] | None = None
    if tids is None and not local_days and by != "thread" and all(v is None or _DATE.fullmatch(v) for v in (sb, ub)):
        sql, params = _totals_sql(d, by, sb, ub, provider, scope)
    elif tids is None and z is not dt.timezone.utc and whole_days and by != "thread":
        assert not d.postgres and scope is None, "local days are the local archive's"
        # local days from the daily totals, moving only the responses between a UTC
        # midnight and the local one (see _local_totals)
        raw = _local_totals(conn, z, provider, whole[0], whole[1], project=by == "project")
        if by in ("model", "provider", "project"):
            raw = _merge_keys(raw, None, by)
        sql, params = "", []
    else:  # every response: a bound within a day, a thread, or days of a zone other than UTC
        if local_days:
            # quarter hours (every zone's offset is a multiple of 15 minutes), each mapped to
            # its local day below: one scan, right across DST changes
            key = "substr(ts, 1, 13) || ':' || printf('%02d', (cast(substr(ts, 15, 2) AS integer) / 15) * 15)"
            to_day = _local_day(z)
        else:
            key = {"day": "day", "week": "day", "month": "substr(ts, 1, 7)", "model": "model",
                   "project": "project", "provider": "provider", "thread": "thread_id"}[by]  # fmt: skip
        where, params = _where(Filters(provider=provider), ts=None, project="project", provider="provider", d=d)
        if sb:
            where.append(f"ts >= {d.c('?')}")
            params.append(sb)
        if ub:
            where.append(f"ts < {d.c('?')}")
            params.append(ub)
        _narrow(d, where, params, "thread_id", tids, scope)
        sql = (
            f"SELECT {key} AS key, provider, model, {norm_sums(d)} FROM usage_responses "
            f"{'WHERE ' + ' AND '.join(where) if where else ''} GROUP BY 1, 2, 3"
        )
    if raw is None:
        raw = d.rows(conn, sql, params)
        if to_day is not None:
            raw = _merge_keys(raw, to_day)
    groups: dict[Any, dict[str, Any]] = {}
    total = _empty_group()
    unpriced: dict[tuple[str | None, str | None], int] = {}
    for r in raw:
        k: Any = r["key"]
        if local_days and k is not None and by == "month":
            k = k[:7]
        if by == "week":
            k = _iso_week(k)
        if by == "model":
            k = (r["provider"], r["model"])
        g = groups.get(k)
        hit = prices.lookup(r["model"])
        if g is None:
            head: dict[str, Any] = {"key": k}
            if by == "model":
                head = {"key": r["model"], "provider": r["provider"], "model": r["model"],
                        "priced_as": hit[0] if hit else None}  # fmt: skip
            g = groups[k] = {**head, **_empty_group()}
            g["key"] = head["key"]
        c = cost(hit[1], *(r[f] or 0 for f in TOKEN_FIELDS)) if hit else None
        for target in (g, total):
            _add(target, r, c, r["model"])
        if c is None:
            unpriced[(r["provider"], r["model"])] = unpriced.get((r["provider"], r["model"]), 0) + r["responses"]
    rows = [_finish(g) for g in groups.values()]
    if by in ("day", "week", "month"):
        rows.sort(key=lambda g: (g["key"] is None, g["key"] or ""))
    else:
        rows.sort(key=lambda g: (-g["total_tokens"], str(g["key"])))
    if by == "thread":
        labels = _labels(d, conn, [r["key"] for r in rows if r["key"]])
        forks = fork_rows(d, conn, [r["key"] for r in rows if r["key"]])
        for r in rows:
            r["label"] = labels.get(r["key"])
            # a fork's rows are its own responses; what it inherited is counted in its parent
            r["forked_from"], _, r["inherited_tokens"], _ = forks.get(r["key"], (None, 0, 0, None))
    return {
        "by": by,
        "tz": tz_name,
        "since": since,
        "until": until,
        "thread": tids[0] if tids else None,
        "prices": prices.describe(),
        "rows": rows,
        "total": {k: v for k, v in _finish(total).items() if k != "key"},
        "unpriced_models": [
            {"provider": p, "model": m, "responses": n} for (p, m), n in sorted(unpriced.items(), key=lambda x: (str(x[0][0]), str(x[0][1])))
        ],
    }


_SUMS = ("responses", *TOKEN_FIELDS, "reasoning_tokens")


def _merge_keys(rows: list[dict[str, Any]], to_key: Any, field: str | None = None) -> list[dict[str, Any]]:
    """Rows re-keyed by ``to_key(key)`` (or by their ``field``) and summed per (key,
    provider, model)."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        k = (r[field] if field else to_key(r["key"]), r["provider"], r["model"])
        g = out.get(k)
        if g is None:
            out[k] = {**r, "key": k[0]}
        else:
            for f in _SUMS:
                g[f] = (g[f] or 0) + (r[f] or 0)
    return list(out.values())


def _whole_local_day(value: str, z: dt.tzinfo, end: bool) -> dt.date | None:
    """The local day a whole-day bound names (an end bound: the day after, exclusive), or
    None for a bound within a day (a date-time, ``12h``)."""
    v = value.strip()
    rel = _relative(v, z, None)
    if rel is None and _DATE.fullmatch(v):
        rel = dt.date.fromisoformat(v)
    if rel is None or isinstance(rel, dt.datetime):
        return None
    return rel + dt.timedelta(days=1) if end else rel


def _local_totals(conn: Any, z: dt.tzinfo, provider: str | None, since: dt.date | None,
                  until: dt.date | None, project: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    """Totals per local day (``key``), provider and model, from the UTC-day totals.

    A UTC day holds one local midnight at most (no zone is 24 h off, DST moves an hour), so
    its responses belong to two local days, split at that midnight. The day's total goes to
    the local day holding most of its hours, and only the responses of the smaller part
    (at most 12 hours, read through the ts index) move to the other: for a zone one hour
    off, 1/24 of the responses are read one by one. Same figures as mapping every response
    (test_cli_everyday checks it across zones). With ``project``, rows carry the project too."""
    pf = " AND u.provider = ?" if provider else ""
    # the project: the thread's folder, or its parent's (as the usage_responses view says)
    pj, joins = ("NULL", "")
    if project:
        pj = "coalesce(t.cwd, p.cwd)"
        joins = " LEFT JOIN threads t ON t.id = u.thread_id LEFT JOIN threads p ON p.id = t.parent_thread_id"
    lo_hi = conn.execute("SELECT min(day), max(day) FROM usage_totals WHERE day != ''").fetchone()
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}

    def add(day: dt.date | None, r: Any, sign: int) -> None:
        key = (day.isoformat() if day else None, r[0], r[1], r[2])
        g = rows.setdefault(key, {"key": key[0], "provider": r[0], "model": r[1], "project": r[2],
                                  **{f: 0 for f in _SUMS}})  # fmt: skip
        for i, f in enumerate(_SUMS):
            g[f] += sign * (r[3 + i] or 0)

    sums = ", ".join(f"sum(u.{c})" for c in _SUMS)
    if lo_hi[0] is not None:
        first = dt.date.fromisoformat(lo_hi[0])
        last = dt.date.fromisoformat(lo_hi[1])
        if since is not None:
            first = max(first, since - dt.timedelta(days=1))
        if until is not None:
            last = min(last, until + dt.timedelta(days=1))
        base: dict[str, dt.date] = {}
        moves: list[tuple[str, str, dt.date, dt.date]] = []  # UTC [lo, hi) moves from one local day to another
        u = first
        while u <= last:
            start = dt.datetime.combine(u, dt.time(), tzinfo=dt.timezone.utc)
            end = start + dt.timedelta(days=1)
            l0 = start.astimezone(z).date()
            split = dt.datetime.combine(l0 + dt.timedelta(days=1), dt.time(), tzinfo=z).astimezone(dt.timezone.utc)
            if split >= end:  # no local midnight inside this UTC day (UTC+0 that day)
                base[u.isoformat()] = l0
            elif split - start >= dt.timedelta(hours=12):
                base[u.isoformat()] = l0
                moves.append((_utc_iso(split), _utc_iso(end), l0, l0 + dt.timedelta(days=1)))
            else:
                base[u.isoformat()] = l0 + dt.timedelta(days=1)
                moves.append((_utc_iso(start), _utc_iso(split), l0 + dt.timedelta(days=1), l0))
            u += dt.timedelta(days=1)
        for r in conn.execute(
            f"SELECT u.day, u.provider, nullif(u.model, ''), {pj}, {sums} FROM usage_totals u{joins} "
            f"WHERE u.day >= ? AND u.day <= ?{pf} GROUP BY 1, 2, 3, 4",
            (first.isoformat(), last.isoformat(), *([provider] if provider else []))):  # fmt: skip
            add(base[r[0]], r[1:], 1)
        sums_r = ", ".join(f"sum(u.{c})" for c in ("1", *_SUMS[1:])).replace("sum(u.1)", "count(*)")
        for lo, hi, src, dst in moves:
            for r in conn.execute(
                f"SELECT u.provider, u.model, {'u.project' if project else 'NULL'}, {sums_r} FROM usage_responses u "
                f"WHERE u.ts >= ? AND u.ts < ?{pf} GROUP BY 1, 2, 3", (lo, hi, *([provider] if provider else []))):  # fmt: skip
                add(src, r, -1)
                add(dst, r, 1)
    if since is None and until is None:
        for r in conn.execute(f"SELECT u.provider, nullif(u.model, ''), {pj}, {sums} FROM usage_totals u{joins} "
                                 f"WHERE u.day = ''{pf} GROUP BY 1, 2, 3", tuple([provider] if provider else ())):  # fmt: skip
            add(None, r, 1)
    out = []
    for g in rows.values():
        if g["responses"] == 0:
            continue
        if g["key"] is not None and ((since and g["key"] < since.isoformat()) or (until and g["key"] >= until.isoformat())):
            continue
        out.append(g)
    return out


def _local_day(z: dt.tzinfo) -> Any:
    cache: dict[str | None, str | None] = {}

    def day(quarter: str | None) -> str | None:
        if quarter not in cache:
            try:
                t = dt.datetime.fromisoformat(quarter + ":00").replace(tzinfo=dt.timezone.utc)  # type: ignore[operator]
                cache[quarter] = t.astimezone(z).date().isoformat()
            except (TypeError, ValueError):
                cache[quarter] = None
        return cache[quarter]

    return day


def _labels(d: Dialect, conn: Any, ids: list[str]) -> dict[str, str]:
    """Title, else first typed prompt, of each thread."""
    cond, arg = d.in_list("id", ids)
    out = {r["id"]: r["title"] for r in d.rows(conn, f"SELECT id, title FROM threads WHERE {cond} AND title IS NOT NULL", [arg])}
    out.update(first_prompts(conn, [i for i in ids if i not in out], d=d))
    return out



def _totals_sql(d: Dialect, by: str, since: str | None, until: str | None, provider: str | None,
                scope: Scope | None = None) -> tuple[str, list[Any]]:  # fmt: skip
    """The stats query over the daily totals (``Dialect.totals_table``: the local
    ``usage_totals``, one row per thread, UTC day and model, kept by triggers): the same
    figures as over usage_responses when the bounds are whole UTC days (``since``/``until``
    here are parse_time's bounds: bare dates, ``until`` exclusive)."""
    key = {"day": "nullif(u.day, '')", "week": "nullif(u.day, '')", "month": "nullif(substr(u.day, 1, 7), '')",
           "model": "nullif(u.model, '')", "project": d.totals_project, "provider": "u.provider"}[by]  # fmt: skip
    where: list[str] = []
    params: list[Any] = []
    if provider:
        where.append("u.provider = ?")
        params.append(provider)
    if since:
        where.append(f"u.day >= {d.c('?')}")
        params.append(since)
    if until:
        where.append(f"u.day != '' AND u.day < {d.c('?')}")
        params.append(until)
    _narrow(d, where, params, "", None, scope)
    joins = d.totals_project_joins if by == "project" else ""
    sums = ", ".join(f"{d.int_sum('u.' + c)} AS {c}" for c in (*TOKEN_FIELDS, "reasoning_tokens"))
    sql = (
        f"SELECT {key} AS key, u.provider AS provider, nullif(u.model, '') AS model, "
        f"{d.totals_responses} AS responses, {sums} FROM {d.totals_table} u{joins} {_and(where)} GROUP BY 1, 2, 3"
    )
    return sql, params


def _empty_group() -> dict[str, Any]:
    return {"key": None, "responses": 0, **{f: 0 for f in TOKEN_FIELDS}, "reasoning_tokens": 0,
            "cost_usd": None, "_unpriced": set()}  # fmt: skip


def _add(g: dict[str, Any], r: dict[str, Any], c: float | None, model: str | None) -> None:
    g["responses"] += r["responses"]
    for f in (*TOKEN_FIELDS, "reasoning_tokens"):
        g[f] += r[f] or 0
    if c is None:
        g["_unpriced"].add(model or "")
    else:
        g["cost_usd"] = (g["cost_usd"] or 0.0) + c


def _finish(g: dict[str, Any]) -> dict[str, Any]:
    unpriced = g.pop("_unpriced")
    cost_usd = g.pop("cost_usd")
    g["total_tokens"] = sum(g[f] for f in TOKEN_FIELDS)
    g["cost_usd"] = None if cost_usd is None else round(cost_usd, 8)
    g["unpriced_models"] = sorted(unpriced)
    return g


def tool_stats(d: Dialect, conn: Any, by: str, *, since: str | None, until: str | None, provider: str | None,
               tz: str | None, tids: list[str] | None, scope: Scope | None = None) -> dict[str, Any]:  # fmt: skip
    """Tool calls, errors and calls without a result, per neutral tool kind (``by`` tool:
    the adapters' ``tool_kinds``, e.g. Bash, shell, exec_command -> shell; a name no adapter
    maps keeps its own name) or per vendor tool name (``by`` vendor-tool)."""
    where, params = _where(Filters(provider=provider, since=since, until=until, tz=tz), ts="tc.call_ts", project="",
                           provider="t.provider", d=d)  # fmt: skip
    _narrow(d, where, params, "tc.thread_id", tids, scope)
    sql = f"""
        SELECT t.provider AS provider, tc.tool_name AS name, count(*) AS calls,
               {d.int_sum("CASE WHEN tc.is_error = 1 THEN 1 ELSE 0 END")} AS errors,
               {d.int_sum(f"CASE WHEN {d.no_result} THEN 1 ELSE 0 END")} AS no_result
        FROM tool_calls tc LEFT JOIN threads t ON t.id = tc.thread_id
        {_and(where)}
        GROUP BY 1, 2"""
    groups: dict[Any, dict[str, Any]] = {}
    for r in d.rows(conn, sql, params):
        if by == "tool":
            key = tool_kind(r["provider"], r["name"])
        else:
            key = r["name"]
        g = groups.setdefault(key, {"key": key, "calls": 0, "errors": 0, "no_result": 0, "tools": set()})
        for c in ("calls", "errors", "no_result"):
            g[c] += r[c] or 0
        g["tools"].add(f"{r['provider']}:{r['name']}" if by == "tool" else r["provider"] or "?")
    rows = []
    for g in groups.values():
        g["error_rate"] = round(g["errors"] / g["calls"], 4) if g["calls"] else None
        g[("vendor_tools" if by == "tool" else "providers")] = sorted(g.pop("tools"))
        rows.append(g)
    rows.sort(key=lambda g: (-g["calls"], str(g["key"])))
    calls = sum(r["calls"] for r in rows)
    errors = sum(r["errors"] for r in rows)
    total = {"calls": calls, "errors": errors, "no_result": sum(r["no_result"] for r in rows),
             "error_rate": round(errors / calls, 4) if calls else None}  # fmt: skip
    return {"by": by, "tz": UTC if is_utc(tz) else tz, "since": since, "until": until,
            "thread": tids[0] if tids else None, "rows": rows, "total": total}  # fmt: skip


def tool_kind(provider: str | None, name: str | None) -> str | None:
    """The neutral kind of a vendor's tool (shell, edit, read, search, web, agent, ...), from
    the adapter's ``tool_kinds``; a tool no adapter maps (MCP tools, new tools) keeps its name."""
    if name is None:
        return None
    kinds = _TOOL_KINDS.get(provider or "")
    if kinds is None:
        try:
            kinds = dict(getattr(get_adapter(provider or ""), "tool_kinds", {}) or {})
        except KeyError:
            kinds = {}
        _TOOL_KINDS[provider or ""] = kinds
    return kinds.get(name, name)


_TOOL_KINDS: dict[str, dict[str, str]] = {}
