"""Read-only queries behind ``search``, ``threads`` and ``stats`` (a thread as ``show`` prints it:
``archive/thread_view.py``).

SQL lives here and in archive/query_core.py, not in cli.py; every function takes an open
archive and returns plain values (dicts of JSON types, or canonical model objects), whose
shapes are the commands' ``--json`` output and are kept stable. The queries the team
database answers too are written once in archive/query_core.py (issue 34) and called here
with the SQLite dialect (archive/sql_dialect.py); what only the local archive has (short ids,
the message pages with companion outputs) stays here.

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

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from sqlite_utils import Database

from .pricing import PriceTable
from . import query_core as core
from .sql_dialect import SQLITE, fts_literal, fts_query  # noqa: F401  re-exported
from .sql_dialect import MARK_END, MARK_START  # noqa: F401  re-exported

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
from .query_core import (  # noqa: F401  re-exported: the queries written once for both backends
    _DATE,
    STATS_BY,
    THREAD_KEYS,
    TOKEN_FIELDS,
    _add,
    _empty_group,
    _finish,
    _iso_week,
    _split_snippet,
    is_fork_sql,
    is_session_sql,
    session_root_sql,
    tool_kind,
)

_IS_FORK = is_fork_sql("t")


# ---------------------------------------------------------------- search


def search(db: Database, query: str, f: Filters = Filters(), *, limit: int | None = 20, literal: bool = False,
           tokens: int = 16, offset: int = 0, kinds: Iterable[str] = ()) -> list[dict[str, Any]]:  # fmt: skip
    """Blocks matching an FTS5 ``query``, best match first (bm25).

    Each hit: ``thread_id, thread_title, provider, project, message_id, role, ts,
    block_type, tool_name, snippet, matches, also_in`` (``matches``: ``[start, end)`` character
    ranges of the highlighted terms in ``snippet``; ``also_in``: the forks whose conversation
    holds the message too, inherited from ``thread_id``). A query FTS5 rejects raises
    ``QueryError``; with ``literal`` the words are quoted first and never rejected. ``kinds``
    keeps blocks of those types (text, tool_call, ...); ``offset`` skips that many hits."""
    try:
        return core.search_rows(SQLITE, db.conn, query, f, limit=limit, literal=literal, tokens=tokens,
                                offset=offset, kinds=kinds)  # fmt: skip
    except sqlite3.OperationalError as e:
        raise QueryError(
            f"invalid search query {query!r} ({e}); FTS5 syntax: words, \"quoted phrases\", AND/OR/NOT, "
            "prefix*, NEAR(a b); use --literal to search the words as typed"
        ) from None


def _inheritors(db: Database, thread_ids: set[str], cap: int = 200) -> dict[str, dict[str, set[str]]]:
    """For each thread, its forks (and theirs) with the message ids each inherits."""
    return core.inheritors(SQLITE, db.conn, thread_ids, cap)


# ---------------------------------------------------------------- threads


def _norm_sums() -> str:
    return core.norm_sums(SQLITE)


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
    return core.thread_rows(SQLITE, db.conn, f, limit=limit, ids=ids, top_level=top_level,
                            include_empty=include_empty, prices=prices, offset=offset)  # fmt: skip


def _fork_rows(db: Database, ids: list[str]) -> dict[str, tuple[str, int, int, str]]:
    return core.fork_rows(SQLITE, db.conn, ids)


def _thread_costs(db: Database, ids: list[str], prices: PriceTable) -> dict[str, tuple[float | None, list[str]]]:
    return core.thread_costs(SQLITE, db.conn, ids, prices)


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


# ---------------------------------------------------------------- show


def resolve_thread(db: Database, ref: str) -> str:
    """The thread id ``ref`` names (``query_core.resolve_thread``)."""
    return core.resolve_thread(SQLITE, db.conn, ref)


# ---------------------------------------------------------------- stats


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
    zone(tz)  # an unknown zone is an error before any thread is looked up
    tids = _thread_family(db, thread) if thread else None
    return core.stats(SQLITE, db.conn, by, prices, since=since, until=until, provider=provider, tz=tz, tids=tids)


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


