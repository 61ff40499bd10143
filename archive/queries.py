"""Read-only queries behind ``search``, ``threads`` and ``stats`` (a thread as ``show`` prints it:
``archive/thread_view.py``).

SQL lives here, not in cli.py; every function takes an open archive and returns plain
values (dicts of JSON types, or canonical model objects), whose shapes are the commands'
``--json`` output and are kept stable.

Filters (``Filters``) and time handling: ``archive/filters.py`` (re-exported here).

Token accounting (``stats``, ``threads``). Every usage row is already in the neutral
buckets, each token in exactly one: ``input_tokens`` is input neither read from nor written
to the cache, then ``cache_read_tokens``, ``cache_write_tokens``, ``output_tokens``
(reasoning included; ``reasoning_tokens`` is shown for information and never added again).
Each vendor adapter normalises its own figures when it reads them (a vendor that counts
cached input inside its input has it taken out there) and keeps the vendor's numbers in
``usage.extra``; nothing here asks which provider a row came from. ``total_tokens`` is the
sum of the four. Cost prices each bucket once (``archive.pricing``), so cached tokens are
never charged twice. The ``usage`` table has one row per model response (ingest keeps one row
per response key), so sums over it count each response once.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from collections.abc import Iterable
from typing import Any

from sqlite_utils import Database

from .pricing import PriceTable, cost
from .projection import inherited_ids
from .vendors import get as get_adapter

from .filters import (  # noqa: F401  re-exported: the shared filters live in filters.py
    AmbiguousThread,
    _bound,
    _CAVEAT,
    _COMMAND,
    _COMMAND_ARGS,
    Filters,
    first_prompts,
    _HARNESS_BLOCK,
    is_utc,
    _like_prefix,
    local_zone_name,
    parse_time,
    prompt_label,
    QueryError,
    _RELATIVE,
    _relative,
    _rows,
    ThreadNotFound,
    UTC,
    _utc_iso,
    _where,
    zone,
)

MARK_START, MARK_END = "\x02", "\x03"  # snippet() markers; control characters never in indexed text
STATS_BY = ("day", "week", "month", "model", "project", "provider", "thread", "tool", "vendor-tool")


# ---------------------------------------------------------------- search


def fts_literal(query: str) -> str:
    """Every whitespace-separated word as a quoted FTS5 string: all must occur, no syntax."""
    return " ".join('"' + w.replace('"', '""') + '"' for w in query.split())


# a word FTS5 takes bare (letters, digits, underscore, any non-ASCII), with an optional prefix star
_BAREWORD = re.compile(r"[\w\u0080-\U0010ffff]+\*?", re.UNICODE)
_FTS_TOKEN = re.compile(r'"[^"]*"\*?|[()]|[^\s()"]+')
_OPERATORS = {"AND", "OR", "NOT", "NEAR"}


def fts_query(query: str) -> str:
    """What people type, as the FTS5 expression they mean; FTS5 syntax kept.

    Operators (AND, OR, NOT, NEAR(...)), "quoted phrases", prefix* and parentheses stay as
    they are; any other word FTS5 would not take bare (``hello-from-tool``, ``src/app.py``,
    ``localhost:8080``, ``don't``) becomes a quoted phrase of its own, which FTS5 tokenizes as
    it tokenized the text: so a hyphen or a dot never reads as a column filter or a syntax
    error. Unbalanced quotes or parentheses: every word quoted (``fts_literal``)."""
    if query.count('"') % 2 or query.count("(") != query.count(")"):
        return fts_literal(query.replace('"', " "))
    out: list[str] = []
    for tok in _FTS_TOKEN.findall(query):
        if not (tok[0] in '"()' or tok in _OPERATORS or _BAREWORD.fullmatch(tok)):
            tok = '"' + tok[:-1] + '"*' if tok.endswith("*") and len(tok) > 1 else '"' + tok + '"'
        # FTS5 takes "a b" as a AND b but not "(a OR b) c": say the AND it means
        if out and (out[-1] == ")" and tok not in _OPERATORS and tok != ")"
                    or tok == "(" and out[-1] not in _OPERATORS and out[-1] != "("):
            out.append("AND")
        out.append(tok)
    return " ".join(out)


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


def search(db: Database, query: str, f: Filters = Filters(), *, limit: int | None = 20, literal: bool = False,
           tokens: int = 16, offset: int = 0, kinds: Iterable[str] = ()) -> list[dict[str, Any]]:  # fmt: skip
    """Blocks matching an FTS5 ``query``, best match first (bm25).

    Each hit: ``thread_id, thread_title, provider, project, message_id, role, ts,
    block_type, tool_name, snippet, matches, also_in`` (``matches``: ``[start, end)`` character
    ranges of the highlighted terms in ``snippet``; ``also_in``: the forks whose conversation
    holds the message too, inherited from ``thread_id``). A query FTS5 rejects raises
    ``QueryError``; with ``literal`` the words are quoted first and never rejected. ``kinds``
    keeps blocks of those types (text, tool_call, ...); ``offset`` skips that many hits."""
    if not query.strip():
        raise QueryError("empty search query")
    q = fts_literal(query) if literal else fts_query(query)
    where, params = _where(f, ts="m.ts", project="coalesce(t.cwd, p.cwd)", provider="t.provider",
                           thread="m.thread_id", role="m.role")  # fmt: skip
    if kinds:
        where.append("b.type IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(kinds)))
    sql = f"""
        SELECT m.thread_id, t.title AS thread_title, t.provider, coalesce(t.cwd, p.cwd) AS project,
               m.id AS message_id, m.role, m.ts, b.type AS block_type, b.tool_name,
               snippet(blocks_fts, 0, ?, ?, '…', ?) AS snippet
        FROM blocks_fts
        JOIN blocks b ON b.id = blocks_fts.rowid
        JOIN messages m ON m.id = b.message_id
        LEFT JOIN threads t ON t.id = m.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        WHERE blocks_fts MATCH ? {''.join(' AND ' + w for w in where)}
        ORDER BY blocks_fts.rank, m.ts, b.id
        LIMIT ? OFFSET ?"""
    try:
        hits = _rows(db.conn, sql, [MARK_START, MARK_END, max(1, min(tokens, 64)), q, *params, -1 if limit is None else max(limit, 0),
                                max(offset, 0)])
    except sqlite3.OperationalError as e:
        raise QueryError(
            f"invalid search query {query!r} ({e}); FTS5 syntax: words, \"quoted phrases\", AND/OR/NOT, "
            "prefix*, NEAR(a b); use --literal to search the words as typed"
        ) from None
    labels = first_prompts(db.conn, (h["thread_id"] for h in hits if not h["thread_title"]))
    forks = _inheritors(db, {h["thread_id"] for h in hits})
    for h in hits:
        h["snippet"], h["matches"] = _split_snippet(h["snippet"] or "")
        h["thread_title"] = h["thread_title"] or labels.get(h["thread_id"])
        h["also_in"] = sorted(f for f, ids in forks.get(h["thread_id"], {}).items() if h["message_id"] in ids)
    return hits


def _inheritors(db: Database, thread_ids: set[str], cap: int = 200) -> dict[str, dict[str, set[str]]]:
    """For each thread, its forks (and theirs) with the message ids each inherits: a hit in a
    message stored once is also in the conversation of every fork that inherited it."""
    out: dict[str, dict[str, set[str]]] = {}
    for tid in sorted(thread_ids):
        frontier, found = [tid], {}
        while frontier and len(found) < cap:
            kids = [r[0] for r in db.conn.execute(
                f"SELECT id FROM threads t WHERE parent_thread_id IN (SELECT value FROM json_each(?)) AND {_IS_FORK}",
                (json.dumps(frontier),))]  # fmt: skip
            frontier = [k for k in kids if k not in found and k != tid]
            for k in frontier:
                found[k] = set(inherited_ids(db.conn, k))
        if found:
            out[tid] = found
    return out


# ---------------------------------------------------------------- threads

def _norm_sums() -> str:
    """Sums over usage_responses, whose rows are already in the four disjoint buckets."""
    return (
        "count(*) AS responses, sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens, "
        "sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens, "
        "sum(reasoning_tokens) AS reasoning_tokens"
    )


TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


# a thread continuing its parent's conversation (projection.fork_of), not a subagent
_IS_FORK = "(t.origin_message_id IS NOT NULL AND json_extract(t.metadata, '$.forkedFrom') IS t.parent_thread_id)"

# What a *session* is, everywhere (`threads`, the web list, their counts): a thread that is
# not a subagent, i.e. a top-level thread, a fork or a hand-off. A subagent's messages and
# usage count with the session it belongs to. A session is *empty* when neither it nor its
# subagents hold a message; lists leave empty sessions out unless asked (`threads --empty`).


def is_fork_sql(alias: str = "t") -> str:
    return _IS_FORK.replace("t.", f"{alias}.")


def is_session_sql(alias: str = "t") -> str:
    return f"({alias}.parent_thread_id IS NULL OR {is_fork_sql(alias)})"


def session_root_sql(alias: str = "t") -> str:
    """The session a thread's messages and usage count with: itself, or a subagent's parent."""
    return f"(CASE WHEN {is_session_sql(alias)} THEN {alias}.id ELSE {alias}.parent_thread_id END)"


def threads(db: Database, f: Filters = Filters(), *, limit: int | None = 50,
            ids: Iterable[str] | None = None, top_level: bool = False, include_empty: bool = True,
            prices: PriceTable | None = None, offset: int = 0) -> list[dict[str, Any]]:  # fmt: skip
    """Threads, most recent activity first (``offset``: skip that many).

    Each: ``id, title, label, provider, project, model, parent_thread_id, created_at,
    first_ts, last_ts, messages, children, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens, total_tokens, forked_from, inherited_messages, inherited_tokens``
    (normalised tokens, the thread's own; a fork's inherited history counted apart; ``label`` is the title or else
    the first typed user prompt, never harness markup). Time filters keep threads active
    in the window; ``ids`` keeps only those threads; ``top_level`` leaves out child threads
    (subagents: their parent's ``children`` counts them); ``include_empty=False`` leaves out
    threads without messages. With ``prices``, also ``cost_usd`` (None when no response is
    priced) and ``unpriced_models`` (models of the thread without a price)."""
    static, params = _where(f, ts=None, project="coalesce(t.cwd, p.cwd)")
    if top_level:  # a fork is a session of its own, listed with the others
        static.append(f"(t.parent_thread_id IS NULL OR {_IS_FORK})")
    if ids is not None:
        static.append("t.id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(ids)))
    where: list[str] = [] if include_empty else [
        "(ms.messages > 0 OR EXISTS (SELECT 1 FROM threads c JOIN messages cm ON cm.thread_id = c.id "
        f"WHERE c.parent_thread_id = t.id AND NOT {is_fork_sql('c')}))"]
    if f.since:
        where.append("ms.last_ts >= ?")
        params.append(_bound(f.since, tz=f.tz))
    if f.until:
        where.append("ms.first_ts < ?")
        params.append(_bound(f.until, end=True, tz=f.tz))
    # the per-thread aggregates only over the threads that pass the static filters, so
    # `show` (one thread) does not aggregate the whole archive
    sql = f"""
        WITH ids AS (SELECT t.id FROM threads t LEFT JOIN threads p ON p.id = t.parent_thread_id
                     {'WHERE ' + ' AND '.join(static) if static else ''}),
             ms AS (SELECT thread_id, min(ts) AS first_ts, max(ts) AS last_ts, count(*) AS messages
                    FROM messages WHERE thread_id IN (SELECT id FROM ids) GROUP BY thread_id),
             us AS (SELECT thread_id, {_norm_sums()} FROM usage_responses
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
        ORDER BY coalesce(ms.last_ts, t.created_at, '') DESC, t.id
        LIMIT ? OFFSET ?"""
    params += [-1 if limit is None else max(limit, 0), max(offset, 0)]
    rows = _rows(db.conn, sql, params)
    labels = first_prompts(db.conn, (r["id"] for r in rows if not r["title"]))
    costs = _thread_costs(db, [r["id"] for r in rows], prices) if prices is not None else {}
    out = []
    forks = _fork_rows(db, [r["id"] for r in rows])
    for r in rows:
        r["total_tokens"] = sum(r[k] for k in TOKEN_FIELDS)
        r["label"] = r["title"] or labels.get(r["id"])
        r["forked_from"], r["inherited_messages"], r["inherited_tokens"], r["lineage"] = forks.get(r["id"], (None, 0, 0, None))
        row = {k: r[k] for k in THREAD_KEYS}
        if prices is not None:
            row["cost_usd"], row["unpriced_models"] = costs.get(r["id"], (None, []))
        out.append(row)
    return out


def _fork_rows(db: Database, ids: list[str]) -> dict[str, tuple[str, int, int, str]]:
    """For each fork among ``ids``: (parent, inherited messages, tokens of the inherited
    responses, ``fork`` or ``handoff``: ``projection.lineage_of``). A response is counted in the thread it was first written in; a fork shows
    what it inherited apart, never in its own totals."""
    out = {}
    for tid, parent, emitted in db.conn.execute(
        "SELECT id, parent_thread_id, json_extract(metadata, '$.emittedFrom') FROM threads WHERE id IN (SELECT value FROM json_each(?)) "
        "AND origin_message_id IS NOT NULL AND json_extract(metadata, '$.forkedFrom') = parent_thread_id",
        (json.dumps(ids),),
    ).fetchall():
        got = inherited_ids(db.conn, tid)
        tokens = db.conn.execute(
            "SELECT coalesce(sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens), 0) "
            "FROM usage_responses WHERE message_id IN (SELECT value FROM json_each(?)) AND thread_id != ?",
            (json.dumps(got), tid),
        ).fetchone()[0]
        out[tid] = (parent, len(got), tokens, "handoff" if emitted else "fork")
    return out


def _thread_costs(db: Database, ids: list[str], prices: PriceTable) -> dict[str, tuple[float | None, list[str]]]:
    """Each thread's cost (its own responses, each priced by its model) and unpriced models."""
    acc: dict[str, list[Any]] = {}
    for r in _rows(db.conn, f"SELECT thread_id, model, {_norm_sums()} FROM usage_responses "
                   "WHERE thread_id IN (SELECT value FROM json_each(?)) GROUP BY 1, 2", [json.dumps(ids)]):  # fmt: skip
        a = acc.setdefault(r["thread_id"], [None, set()])
        hit = prices.lookup(r["model"])
        if hit is None:
            a[1].add(r["model"] or "")
        else:
            a[0] = (a[0] or 0.0) + cost(hit[1], *(r[f] or 0 for f in TOKEN_FIELDS))
    return {k: (None if c is None else round(c, 8), sorted(u)) for k, (c, u) in acc.items()}


def short_ids(db: Database, ids: Iterable[str], min_len: int = 8) -> dict[str, str]:
    """The shortest prefix (at least ``min_len``) of each id that ``show`` resolves to it:
    no other thread starts with it, except the id's own children (``<id>/…``)."""
    out: dict[str, str] = {}
    for tid in ids:
        n = min(min_len, len(tid))
        while n < len(tid):
            prefix = tid[:n]
            other = db.conn.execute(
                "SELECT 1 FROM threads WHERE id LIKE ? ESCAPE '\\' AND id != ? AND NOT id LIKE ? ESCAPE '\\' LIMIT 1",
                (_like_prefix(prefix), tid, _like_prefix(tid + "/")),
            ).fetchone()  # fmt: skip
            if other is None:
                break
            n += 4
        out[tid] = tid[: max(n, 1)]
    return out


THREAD_KEYS = (
    "id", "title", "label", "provider", "project", "model", "parent_thread_id", "created_at", "first_ts",
    "last_ts", "messages", "children", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "total_tokens", "forked_from", "lineage", "inherited_messages", "inherited_tokens",
)  # fmt: skip


# ---------------------------------------------------------------- show


def resolve_thread(db: Database, ref: str) -> str:
    """The thread id ``ref`` names: the exact id, else the only id starting with it, else
    the one starting with it that every other such id extends with ``/`` (a parent whose
    children are named after it). Several: ``AmbiguousThread`` listing them (at most 20)."""
    ref = ref.strip()
    if not ref:
        raise ThreadNotFound("empty thread id")
    if db.conn.execute("SELECT 1 FROM threads WHERE id = ?", (ref,)).fetchone():
        return ref
    ids = [r[0] for r in db.conn.execute(
        "SELECT id FROM threads WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 21", (_like_prefix(ref),))]  # fmt: skip
    if not ids:
        raise ThreadNotFound(f"no thread id starts with {ref!r} (see `sesh-archive threads`)")
    if len(ids) > 20:
        # more children than the list holds: the parent is the one match without a "/"
        # after the prefix, if every other match is below it
        roots = [r[0] for r in db.conn.execute(
            "SELECT id FROM threads WHERE id LIKE ? ESCAPE '\\' AND instr(substr(id, ?), '/') = 0 LIMIT 2",
            (_like_prefix(ref), len(ref) + 1))]  # fmt: skip
        if len(roots) == 1 and not db.conn.execute(
            "SELECT 1 FROM threads WHERE id LIKE ? ESCAPE '\\' AND id != ? AND NOT id LIKE ? ESCAPE '\\' LIMIT 1",
            (_like_prefix(ref), roots[0], _like_prefix(roots[0] + "/"))).fetchone():  # fmt: skip
            return roots[0]
    # child threads named ``<parent>/…``: a prefix of the parent also prefixes them,
    # and then means the parent.
    roots = [i for i in ids if all(j == i or j.startswith(i + "/") for j in ids)]
    if len(ids) > 1 and len(ids) <= 20 and len(roots) == 1:
        return roots[0]
    if len(ids) > 1:
        found = {r["id"]: r for r in threads(db, ids=ids[:20], limit=None)}
        raise AmbiguousThread(ref, [found[i] for i in ids if i in found])
    return ids[0]


# ---------------------------------------------------------------- stats


def _iso_week(day: str | None) -> str | None:
    if not day:
        return None
    try:
        y, w, _ = dt.date.fromisoformat(day).isocalendar()
    except ValueError:
        return None
    return f"{y}-W{w:02d}"


def stats(db: Database, by: str, prices: PriceTable, *, since: str | None = None, until: str | None = None,
          provider: str | None = None, tz: str | None = None, thread: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Token and cost totals grouped ``by`` day|week|month|model|project|provider|thread,
    or tool call counts ``by`` tool (neutral kinds) | vendor-tool (vendor names). Shape:
    ``{by, tz, since, until, thread, prices, rows, total, unpriced_models}`` (README "stats").

    Days, weeks and months are those of ``tz`` (None: UTC): a response at 23:30 UTC is on
    the next day in Paris. ``thread`` (id or prefix) keeps that thread and its child
    threads."""
    if by not in STATS_BY:
        raise QueryError(f"cannot group by {by!r}; one of {', '.join(STATS_BY)}")
    z = zone(tz)
    tz_name = UTC if z is dt.timezone.utc else str(tz)
    tids = _thread_family(db, thread) if thread else None
    if by in ("tool", "vendor-tool"):
        return _tool_stats(db, by, since=since, until=until, provider=provider, tz=tz, tids=tids)
    sb = _bound(since, tz=tz) if since else None
    ub = _bound(until, end=True, tz=tz) if until else None
    local_days = by in ("day", "week", "month") and z is not dt.timezone.utc
    whole = [None if v is None else _whole_local_day(v, z, end) for v, end in ((since, False), (until, True))]
    whole_days = all(w is not None for v, w in zip((since, until), whole) if v is not None)
    to_day: Any = None
    raw: list[dict[str, Any]] | None = None
    if tids is None and not local_days and by != "thread" and all(v is None or _DATE.fullmatch(v) for v in (sb, ub)):
        sql, params = _totals_sql(by, sb, ub, provider)
    elif tids is None and z is not dt.timezone.utc and whole_days and by != "thread":
        # local days from the daily totals, moving only the responses between a UTC
        # midnight and the local one (see _local_totals)
        raw = _local_totals(db, z, provider, whole[0], whole[1], project=by == "project")
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
        where, params = _where(Filters(provider=provider), ts=None, project="project", provider="provider")
        if sb:
            where.append("ts >= ?")
            params.append(sb)
        if ub:
            where.append("ts < ?")
            params.append(ub)
        if tids is not None:
            where.append("thread_id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(tids))
        sql = (
            f"SELECT {key} AS key, provider, model, {_norm_sums()} FROM usage_responses "
            f"{'WHERE ' + ' AND '.join(where) if where else ''} GROUP BY 1, 2, 3"
        )
    if raw is None:
        raw = _rows(db.conn, sql, params)
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
        labels = _labels(db, [r["key"] for r in rows if r["key"]])
        forks = _fork_rows(db, [r["key"] for r in rows if r["key"]])
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


def _local_totals(db: Database, z: dt.tzinfo, provider: str | None, since: dt.date | None,
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
    lo_hi = db.conn.execute("SELECT min(day), max(day) FROM usage_totals WHERE day != ''").fetchone()
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
        for r in db.conn.execute(
            f"SELECT u.day, u.provider, nullif(u.model, ''), {pj}, {sums} FROM usage_totals u{joins} "
            f"WHERE u.day >= ? AND u.day <= ?{pf} GROUP BY 1, 2, 3, 4",
            (first.isoformat(), last.isoformat(), *([provider] if provider else []))):  # fmt: skip
            add(base[r[0]], r[1:], 1)
        sums_r = ", ".join(f"sum(u.{c})" for c in ("1", *_SUMS[1:])).replace("sum(u.1)", "count(*)")
        for lo, hi, src, dst in moves:
            for r in db.conn.execute(
                f"SELECT u.provider, u.model, {'u.project' if project else 'NULL'}, {sums_r} FROM usage_responses u "
                f"WHERE u.ts >= ? AND u.ts < ?{pf} GROUP BY 1, 2, 3", (lo, hi, *([provider] if provider else []))):  # fmt: skip
                add(src, r, -1)
                add(dst, r, 1)
    if since is None and until is None:
        for r in db.conn.execute(f"SELECT u.provider, nullif(u.model, ''), {pj}, {sums} FROM usage_totals u{joins} "
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


def _thread_family(db: Database, ref: str) -> list[str]:
    """The thread ``ref`` names, then its child threads (subagents) and theirs; not its forks
    (sessions of their own, whose tokens are theirs)."""
    tid = resolve_thread(db, ref)
    out, todo = [tid], [tid]
    while todo:
        kids = [r[0] for r in db.conn.execute(
            f"SELECT id FROM threads t WHERE parent_thread_id IN (SELECT value FROM json_each(?)) AND NOT {_IS_FORK} ORDER BY id",
            (json.dumps(todo),))]  # fmt: skip
        kids = [k for k in kids if k not in out]
        out += kids
        todo = kids
    return out


def _labels(db: Database, ids: list[str]) -> dict[str, str]:
    """Title, else first typed prompt, of each thread."""
    out = {r[0]: r[1] for r in db.conn.execute(
        "SELECT id, title FROM threads WHERE id IN (SELECT value FROM json_each(?)) AND title IS NOT NULL",
        (json.dumps(ids),))}  # fmt: skip
    out.update(first_prompts(db.conn, [i for i in ids if i not in out]))
    return out


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _totals_sql(by: str, since: str | None, until: str | None, provider: str | None) -> tuple[str, list[Any]]:
    """The stats query over ``usage_totals`` (one row per thread, UTC day and model, kept by
    triggers): the same figures as over usage_responses when the bounds are whole UTC days
    (``since``/``until`` here are parse_time's bounds: bare dates, ``until`` exclusive)."""
    key = {"day": "nullif(u.day, '')", "week": "nullif(u.day, '')", "month": "nullif(substr(u.day, 1, 7), '')",
           "model": "nullif(u.model, '')", "project": "coalesce(t.cwd, p.cwd)", "provider": "u.provider"}[by]  # fmt: skip
    where: list[str] = []
    params: list[Any] = []
    if provider:
        where.append("u.provider = ?")
        params.append(provider)
    if since:
        where.append("u.day >= ?")
        params.append(since)
    if until:
        where.append("u.day != '' AND u.day < ?")
        params.append(until)
    joins = (" LEFT JOIN threads t ON t.id = u.thread_id LEFT JOIN threads p ON p.id = t.parent_thread_id"
             if by == "project" else "")  # fmt: skip
    sums = ", ".join(f"sum(u.{c}) AS {c}" for c in ("responses", *TOKEN_FIELDS, "reasoning_tokens"))
    sql = (
        f"SELECT {key} AS key, u.provider AS provider, nullif(u.model, '') AS model, {sums} "
        f"FROM usage_totals u{joins} {'WHERE ' + ' AND '.join(where) if where else ''} GROUP BY 1, 2, 3"
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


def _tool_stats(db: Database, by: str, *, since: str | None, until: str | None, provider: str | None,
                tz: str | None, tids: list[str] | None) -> dict[str, Any]:  # fmt: skip
    """Tool calls, errors and calls without a result, per neutral tool kind (``by`` tool:
    the adapters' ``tool_kinds``, e.g. Bash, shell, exec_command -> shell; a name no adapter
    maps keeps its own name) or per vendor tool name (``by`` vendor-tool)."""
    where, params = _where(Filters(provider=provider, since=since, until=until, tz=tz), ts="tc.call_ts", project="",
                           provider="t.provider")  # fmt: skip
    if tids is not None:
        where.append("tc.thread_id IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(tids))
    sql = f"""
        SELECT t.provider AS provider, tc.tool_name AS name, count(*) AS calls,
               sum(CASE WHEN tc.is_error = 1 THEN 1 ELSE 0 END) AS errors,
               sum(CASE WHEN tc.result_block_id IS NULL THEN 1 ELSE 0 END) AS no_result
        FROM tool_calls tc LEFT JOIN threads t ON t.id = tc.thread_id
        {'WHERE ' + ' AND '.join(where) if where else ''}
        GROUP BY 1, 2"""
    groups: dict[Any, dict[str, Any]] = {}
    for r in _rows(db.conn, sql, params):
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
