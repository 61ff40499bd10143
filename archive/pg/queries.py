"""``search``, ``threads``, ``show`` and ``stats`` against the team database
(``--db postgresql://...``): the functions of archive/queries.py with the same arguments and
the same result shapes, over the PostgreSQL schema (archive/pg/schema.py).

Differences, each because PostgreSQL is not SQLite:

* ``search`` takes PostgreSQL web-search syntax (words, "quoted phrases", ``OR``,
  ``-word``) over the ``simple`` text configuration, ranked by ``ts_rank``; a query it
  cannot read matches nothing instead of failing.
* Text is compared and ordered with the C collation, as SQLite does.
* ``stats`` and ``threads`` accept ``machine`` (a machine id or name): only the rows that
  machine owns (archive/pg/schema.py says which).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..model import Message, Thread
from ..pricing import PriceTable, cost
from ..projection import _usage_from_rows as usage_from_rows
from ..projection import block_from_row, dumps, fork_of, lineage_of, message_from_row, one_line, thread_from_row
from ..queries import (
    _DATE,
    MARK_END,
    MARK_START,
    STATS_BY,
    THREAD_KEYS,
    TOKEN_FIELDS,
    AmbiguousThread,
    Filters,
    QueryError,
    ThreadNotFound,
    _add,
    _bound,
    _empty_group,
    _finish,
    _iso_week,
    _like_prefix,
    _split_snippet,
    prompt_label,
    tool_kind,
)
from ..thread_view import ThreadView
from . import nul_restore

ORDER = 'm.machine_id COLLATE "C", m.source_no, m.generation, m."offset", m.sub'


def _rows(conn: Any, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, tuple(params))
        out = cur.fetchall()
    conn.commit()  # readers hold no transaction open between calls
    return out


def _where(f: Filters, *, ts: str | None, project: str, provider: str = "t.provider", thread: str = "t.id",
           role: str | None = None) -> tuple[list[str], list[Any]]:  # fmt: skip
    sql: list[str] = []
    params: list[Any] = []
    if f.provider:
        sql.append(f"{provider} = %s")
        params.append(f.provider)
    if f.role and role:
        sql.append(f"{role} = %s")
        params.append(f.role)
    if f.thread:
        sql.append(f"{thread} LIKE %s ESCAPE '\\'")
        params.append(_like_prefix(f.thread))
    if f.project:
        if f.project.startswith("/"):
            root = f.project.rstrip("/") or "/"
            sql.append(f"({project} = %s OR {project} LIKE %s ESCAPE '\\')")
            params += [root, _like_prefix(root.rstrip("/") + "/")]
        else:
            sql.append(f"strpos({project}, %s) > 0")
            params.append(f.project)
    if ts and f.since:
        sql.append(f'{ts} >= %s COLLATE "C"')
        params.append(_bound(f.since))
    if ts and f.until:
        sql.append(f'{ts} < %s COLLATE "C"')
        params.append(_bound(f.until, end=True))
    return sql, params


def machine_id(conn: Any, machine: str | None) -> str | None:
    """The id of the machine named or identified by ``machine`` (None: every machine)."""
    if machine is None:
        return None
    rows = _rows(conn, "SELECT id FROM machines WHERE id = %s OR name = %s OR id LIKE %s ORDER BY id",
                 (machine, machine, _like_prefix(machine)))  # fmt: skip
    if len(rows) != 1:
        raise QueryError(f"{'no' if not rows else len(rows)} machines match {machine!r}")
    return str(rows[0]["id"])


# ---------------------------------------------------------------- loading canonical objects


def _inherited_ids(conn: Any, thread_id: str, seen: frozenset[str] = frozenset()) -> list[str]:
    """The ids of the messages a fork inherits (``projection.inherited_ids``)."""
    found = load_threads(conn, "id = %s", (thread_id,))
    fork = fork_of(found[0]) if found else None
    if fork is None or fork[0] in seen or fork[0] == thread_id:
        return []
    own = [r["id"] for r in _rows(
        conn, 'SELECT id FROM messages m WHERE thread_id = %s ORDER BY m.machine_id COLLATE "C", m.source_no, '
        'm.generation, m."offset", m.sub', (fork[0],))]  # fmt: skip
    before = _inherited_ids(conn, fork[0], seen | {thread_id}) + own
    return before[: before.index(fork[1]) + 1] if fork[1] in before else []


def _fork_rows(conn: Any, ids: list[str]) -> dict[str, tuple[str, int, int, str | None]]:
    """For each fork among ``ids``: (parent, inherited messages, their tokens, fork or handoff), as the local
    archive's ``threads`` gives them (each response counted in its own thread only)."""
    out = {}
    for t in load_threads(conn, "id = ANY(%s) AND origin_message_id IS NOT NULL AND parent_thread_id IS NOT NULL", (ids,)):
        fork = fork_of(t)
        if fork is None:
            continue
        got = _inherited_ids(conn, t.id)
        tokens = _rows(conn, "SELECT coalesce(sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens), 0) "
                       "AS n FROM usage_responses WHERE message_id = ANY(%s) AND thread_id != %s", (got, t.id))[0]["n"]  # fmt: skip
        out[t.id] = (fork[0], len(got), int(tokens), lineage_of(t))
    return out


def load_threads(conn: Any, where: str = "true", params: tuple[Any, ...] = ()) -> list[Thread]:
    rows = _rows(conn, f'SELECT * FROM threads WHERE {where} ORDER BY coalesce(created_at, \'\') COLLATE "C", id COLLATE "C"', params)
    return [thread_from_row(nul_restore(r)) for r in rows]  # type: ignore[arg-type]


def load_messages(conn: Any, where: str, params: tuple[Any, ...]) -> list[Message]:
    """Messages matching ``where`` (a condition on alias ``m``) in thread order, with blocks."""
    rows = _rows(conn, f"SELECT m.* FROM messages m WHERE {where} ORDER BY m.thread_id COLLATE \"C\", {ORDER}", params)
    if not rows:
        return []
    blocks: dict[str, list[Any]] = {}
    for b in _rows(
        conn,
        "SELECT b.*, bl.data AS blob_data FROM blocks b LEFT JOIN blobs bl ON bl.sha256 = b.blob_sha256 "
        "WHERE b.message_id = ANY(%s) ORDER BY b.message_id, b.position",
        ([r["id"] for r in rows],),
    ):
        data = b["blob_data"]
        blocks.setdefault(b["message_id"], []).append(block_from_row(b, bytes(data) if data is not None else None))
    # the response each message carries, as the local store gives it (Message.usage)
    responses: dict[str, list[Any]] = {}
    for u in _rows(
        conn,
        "SELECT u.*, (SELECT model FROM messages WHERE id = u.message_id) AS message_model FROM usage u "
        'WHERE u.message_id = ANY(%s) ORDER BY u.message_id, u.key COLLATE "C"',
        ([r["id"] for r in rows],),
    ):
        if isinstance(u.get("extra"), (dict, list)):
            u["extra"] = dumps(u["extra"])
        responses.setdefault(u["message_id"], []).append(u)
    return [message_from_row(nul_restore(r), blocks.get(r["id"], []),  # type: ignore[arg-type]
                             usage_from_rows(responses[r["id"]]) if r["id"] in responses else None) for r in rows]


def first_prompts(conn: Any, thread_ids: Iterable[str], width: int = 120, candidates: int = 12) -> dict[str, str]:
    """As ``archive.queries.first_prompts``: each thread's first typed user text, harness
    markup turned into its command (``prompt_label``), one line."""
    ids = sorted(set(thread_ids))
    if not ids:
        return {}
    rows = _rows(
        conn,
        f"""SELECT thread_id, text FROM (
                SELECT m.thread_id, b.text,
                       row_number() OVER (PARTITION BY m.thread_id ORDER BY {ORDER}, b.position) AS n
                FROM messages m JOIN blocks b ON b.message_id = m.id
                WHERE m.thread_id = ANY(%s) AND m.role = 'user' AND m.injected = 0 AND b.type = 'text'
                  AND trim(coalesce(b.text, '')) != '') c
            WHERE n <= %s ORDER BY thread_id, n""",
        (ids, candidates),
    )
    out: dict[str, str] = {}
    for r in rows:
        if r["thread_id"] in out:
            continue
        label = prompt_label(r["text"])
        if label:
            out[r["thread_id"]] = one_line(label, width)
    return out


# ---------------------------------------------------------------- search


def search(conn: Any, query: str, f: Filters = Filters(), *, limit: int | None = 20, literal: bool = False,
           tokens: int = 16) -> list[dict[str, Any]]:  # fmt: skip
    if not query.strip():
        raise QueryError("empty search query")
    tsq = "plainto_tsquery('simple', %s)" if literal else "websearch_to_tsquery('simple', %s)"
    q = " ".join(query.split()) if literal else query
    where, params = _where(f, ts="m.ts", project="coalesce(t.cwd, p.cwd)", provider="t.provider",
                           thread="m.thread_id", role="m.role")  # fmt: skip
    words = max(1, min(tokens, 64))
    options = f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords={words}, MinWords={max(1, words // 2)}"
    sql = f"""
        WITH q AS (SELECT {tsq} AS q)
        SELECT m.thread_id, t.title AS thread_title, t.provider, coalesce(t.cwd, p.cwd) AS project,
               m.id AS message_id, m.role, m.ts, b.type AS block_type, b.tool_name,
               ts_headline('simple', left(b.text, 100000), q.q, %s) AS snippet
        FROM q, blocks b
        JOIN messages m ON m.id = b.message_id
        LEFT JOIN threads t ON t.id = m.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        WHERE b.tsv @@ q.q {''.join(' AND ' + w for w in where)}
        ORDER BY ts_rank(b.tsv, q.q) DESC, m.ts COLLATE "C", b.message_id COLLATE "C", b.position
        {'LIMIT %s' if limit is not None else ''}"""
    args = [q, options, *params]
    if limit is not None:
        args.append(max(limit, 0))
    hits = _rows(conn, sql, args)
    labels = first_prompts(conn, (h["thread_id"] for h in hits if not h["thread_title"]))
    for h in hits:
        h["snippet"], h["matches"] = _split_snippet(h["snippet"] or "")
        h["thread_title"] = h["thread_title"] or labels.get(h["thread_id"])
    return hits


# ---------------------------------------------------------------- threads


def _sums(prefix: str = "") -> str:
    cols = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
    return "count(*) AS responses, " + ", ".join(f"sum({prefix}{c})::bigint AS {c}" for c in cols)


# a thread continuing its parent's conversation (projection.fork_of), not a subagent
_IS_FORK = "(t.origin_message_id IS NOT NULL AND (t.metadata->>'forkedFrom') IS NOT DISTINCT FROM t.parent_thread_id)"


def threads(conn: Any, f: Filters = Filters(), *, limit: int | None = 50, ids: Iterable[str] | None = None,
            machine: str | None = None, top_level: bool = False, include_empty: bool = True,
            prices: PriceTable | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """archive.queries.threads over the team database; ``machine``: threads that machine has."""
    static, params = _where(f, ts=None, project="coalesce(t.cwd, p.cwd)")
    if top_level:  # a fork is a session of its own, listed with the others
        static.append(f"(t.parent_thread_id IS NULL OR {_IS_FORK})")
    if ids is not None:
        static.append("t.id = ANY(%s)")
        params.append(list(ids))
    mid = machine_id(conn, machine)
    if mid is not None:
        static.append("t.id IN (SELECT thread_id FROM machine_threads WHERE machine_id = %s)")
        params.append(mid)
    where: list[str] = [] if include_empty else ["ms.messages > 0"]
    if f.since:
        where.append('ms.last_ts >= %s COLLATE "C"')
        params.append(_bound(f.since))
    if f.until:
        where.append('ms.first_ts < %s COLLATE "C"')
        params.append(_bound(f.until, end=True))
    sql = f"""
        WITH ids AS (SELECT t.id FROM threads t LEFT JOIN threads p ON p.id = t.parent_thread_id
                     {'WHERE ' + ' AND '.join(static) if static else ''}),
             ms AS (SELECT thread_id, min(ts COLLATE "C") AS first_ts, max(ts COLLATE "C") AS last_ts,
                           count(*) AS messages
                    FROM messages WHERE thread_id IN (SELECT id FROM ids) GROUP BY thread_id),
             us AS (SELECT thread_id, {_sums()} FROM usage_responses
                    WHERE thread_id IN (SELECT id FROM ids) GROUP BY thread_id),
             cs AS (SELECT parent_thread_id, count(*) AS children FROM threads t
                    WHERE parent_thread_id IN (SELECT id FROM ids) AND NOT {_IS_FORK} GROUP BY parent_thread_id)
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
        {'WHERE ' + ' AND '.join(where) if where else ''}
        ORDER BY coalesce(ms.last_ts, t.created_at, '') COLLATE "C" DESC, t.id COLLATE "C"
        {'LIMIT %s' if limit is not None else ''}"""
    if limit is not None:
        params.append(max(limit, 0))
    rows = _rows(conn, sql, params)
    labels = first_prompts(conn, (r["id"] for r in rows if not r["title"]))
    costs = _thread_costs(conn, [r["id"] for r in rows], prices) if prices is not None else {}
    forks = _fork_rows(conn, [r["id"] for r in rows])
    out = []
    for r in rows:
        r["total_tokens"] = sum(r[k] for k in TOKEN_FIELDS)
        r["label"] = r["title"] or labels.get(r["id"])
        r["forked_from"], r["inherited_messages"], r["inherited_tokens"], r["lineage"] = forks.get(r["id"], (None, 0, 0, None))
        row = {k: r[k] for k in THREAD_KEYS}
        if prices is not None:
            row["cost_usd"], row["unpriced_models"] = costs.get(r["id"], (None, []))
        out.append(row)
    return out


def _thread_costs(conn: Any, ids: list[str], prices: PriceTable) -> dict[str, tuple[float | None, list[str]]]:
    """As ``archive.queries._thread_costs``: each thread's own responses priced by model."""
    acc: dict[str, list[Any]] = {}
    for r in _rows(conn, f"SELECT thread_id, model, {_sums()} FROM usage_responses WHERE thread_id = ANY(%s) "
                   "GROUP BY 1, 2", (ids,)):  # fmt: skip
        a = acc.setdefault(r["thread_id"], [None, set()])
        hit = prices.lookup(r["model"])
        if hit is None:
            a[1].add(r["model"] or "")
        else:
            a[0] = (a[0] or 0.0) + cost(hit[1], *(r[f] or 0 for f in TOKEN_FIELDS))
    return {k: (None if c is None else round(c, 8), sorted(u)) for k, (c, u) in acc.items()}


# ---------------------------------------------------------------- show


def resolve_thread(conn: Any, ref: str) -> str:
    """archive.queries.resolve_thread over the team database."""
    ref = ref.strip()
    if not ref:
        raise ThreadNotFound("empty thread id")
    if _rows(conn, "SELECT 1 FROM threads WHERE id = %s", (ref,)):
        return ref
    ids = [r["id"] for r in _rows(
        conn, "SELECT id FROM threads WHERE id LIKE %s ESCAPE '\\' ORDER BY id COLLATE \"C\" LIMIT 21",
        (_like_prefix(ref),))]  # fmt: skip
    if not ids:
        raise ThreadNotFound(f"no thread id starts with {ref!r} (see `sesh-archive threads`)")
    roots = [i for i in ids if all(j == i or j.startswith(i + "/") for j in ids)]
    if len(ids) > 1 and len(ids) <= 20 and len(roots) == 1:
        return roots[0]
    if len(ids) > 1:
        found = {r["id"]: r for r in threads(conn, ids=ids[:20], limit=None)}
        raise AmbiguousThread(ref, [found[i] for i in ids if i in found])
    return ids[0]


def show(conn: Any, ref: str) -> ThreadView:
    tid = resolve_thread(conn, ref)
    (thread,) = load_threads(conn, "id = %s", (tid,))
    child_ids = [r["id"] for r in _rows(conn, "SELECT id FROM threads WHERE parent_thread_id = %s", (tid,))]
    summary = threads(conn, ids=[tid, *child_ids], limit=None)
    own = next(s for s in summary if s["id"] == tid)
    children = sorted((s for s in summary if s["id"] != tid),
                      key=lambda s: (s["first_ts"] or s["created_at"] or "", s["id"]))  # fmt: skip
    return ThreadView(thread, own, load_messages(conn, "m.thread_id = %s", (tid,)), children)


# ---------------------------------------------------------------- stats


def stats(conn: Any, by: str, prices: PriceTable, *, since: str | None = None, until: str | None = None,
          provider: str | None = None, machine: str | None = None) -> dict[str, Any]:  # fmt: skip
    """archive.queries.stats over the team database (same shape); ``machine``: the usage
    rows that machine owns."""
    if by not in STATS_BY:
        raise QueryError(f"cannot group by {by!r}; one of {', '.join(STATS_BY)}")
    mid = machine_id(conn, machine)
    if by in ("tool", "vendor-tool"):
        return _tool_stats(conn, since=since, until=until, provider=provider, machine_id=mid, by=by)
    if by == "thread":
        raise QueryError("--by thread is for the local archive")
    day = "nullif(day, '')"
    key = {"day": day, "week": day, "month": f"nullif(substr({day}, 1, 7), '')", "model": "nullif(model, '')",
           "project": "project", "provider": "provider"}[by]  # fmt: skip
    if all(v is None or _DATE.fullmatch(v.strip()) for v in (since, until)):
        # whole days: compare the day, as the local usage_totals does
        where, params = [], []
        if provider:
            where.append("provider = %s")
            params.append(provider)
        if since:
            where.append('day >= %s COLLATE "C"')
            params.append(_bound(since))
        if until:
            where.append("day != '' AND day < %s COLLATE \"C\"")
            params.append(_bound(until, end=True))
    else:
        where, params = _where(Filters(provider=provider, since=since, until=until), ts="ts", project="project",
                               provider="provider")  # fmt: skip
    if mid is not None:
        where.append("machine_id = %s")
        params.append(mid)
    sql = (
        f"SELECT {key} AS key, provider, nullif(model, '') AS model, {_sums()} FROM usage_responses "
        f"{'WHERE ' + ' AND '.join(where) if where else ''} GROUP BY 1, 2, 3"
    )
    groups: dict[Any, dict[str, Any]] = {}
    total = _empty_group()
    unpriced: dict[tuple[str | None, str | None], int] = {}
    for r in _rows(conn, sql, params):
        k: Any = _iso_week(r["key"]) if by == "week" else r["key"]
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
    return {
        "by": by,
        "tz": "UTC",  # the team database's days are UTC days
        "since": since,
        "until": until,
        "thread": None,
        "prices": prices.describe(),
        "rows": rows,
        "total": {k: v for k, v in _finish(total).items() if k != "key"},
        "unpriced_models": [
            {"provider": p, "model": m, "responses": n}
            for (p, m), n in sorted(unpriced.items(), key=lambda x: (str(x[0][0]), str(x[0][1])))
        ],
    }


def _tool_stats(conn: Any, *, since: str | None, until: str | None, provider: str | None,
                machine_id: str | None, by: str = "tool") -> dict[str, Any]:  # fmt: skip
    """As ``archive.queries``: per neutral tool kind (``by`` tool, the adapters'
    ``tool_kinds``) or per vendor tool name (``by`` vendor-tool)."""
    where, params = _where(Filters(provider=provider, since=since, until=until), ts="tc.call_ts", project="",
                           provider="t.provider")  # fmt: skip
    if machine_id is not None:
        where.append("tc.machine_id = %s")
        params.append(machine_id)
    sql = f"""
        SELECT t.provider AS provider, tc.tool_name AS name, count(*) AS calls,
               count(*) FILTER (WHERE tc.is_error = 1) AS errors,
               count(*) FILTER (WHERE tc.result_message_id IS NULL) AS no_result
        FROM tool_calls tc LEFT JOIN threads t ON t.id = tc.thread_id
        {'WHERE ' + ' AND '.join(where) if where else ''}
        GROUP BY 1, 2
        """
    groups: dict[Any, dict[str, Any]] = {}
    for r in _rows(conn, sql, params):
        key = tool_kind(r["provider"], r["name"]) if by == "tool" else r["name"]
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
    return {"by": by, "tz": "UTC", "since": since, "until": until, "thread": None, "rows": rows, "total": total}
