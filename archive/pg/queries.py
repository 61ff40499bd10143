"""``search``, ``threads``, ``show`` and ``stats`` against the team database
(``--db postgresql://...``): the queries of archive/query_core.py, written once for both
backends (issue 34), called with the PostgreSQL dialect (archive/sql_dialect.py) over the
PostgreSQL schema (archive/pg/schema.py); same arguments and result shapes as
archive/queries.py.

Differences, each because PostgreSQL or the team database is not the local archive:

* ``search`` takes PostgreSQL web-search syntax (words, "quoted phrases", ``OR``,
  ``-word``) over the ``simple`` text configuration, ranked by ``ts_rank``; a query it
  cannot read matches nothing instead of failing.
* Text is compared and ordered with the C collation, as SQLite does.
* Times are read in UTC: the team database's days are UTC days (``tz`` is not asked).
* ``stats`` and ``threads`` accept ``machine`` (a machine id or name): only the rows that
  machine owns (archive/pg/schema.py says which).
* ``annotate`` gives ``threads`` rows the keys the local ``threads --json`` has (issue 42):
  the user's marks (``tags``, ``starred``, ``note``) as every machine pushed them, and the
  ``signals`` of the machine whose copy of the thread reaches furthest (archive/push_marks.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

from .. import query_core as core
from ..marks import apply_marks
from ..model import Message, Thread
from ..pricing import PriceTable
from ..projection import _usage_from_rows as usage_from_rows
from ..projection import block_from_row, dumps, message_from_row, thread_from_row
from ..push_marks import SIGNAL_COLUMNS
from ..queries import Filters, QueryError, _like_prefix
from ..signals import outcome_sql
from ..sql_dialect import POSTGRES
from ..thread_view import ThreadView
from . import nul_restore

ORDER = POSTGRES.message_order


def _rows(conn: Any, sql: str, params: Iterable[Any] = ()) -> list[dict[str, Any]]:
    """Run ``sql`` (``%s`` placeholders) on the team database; readers hold no transaction open."""
    from psycopg.rows import dict_row

    with conn.cursor(row_factory=dict_row) as cur:
        cur.execute(sql, tuple(params))
        out = cur.fetchall()
    conn.commit()
    return out


def _utc(f: Filters) -> Filters:
    return dataclasses.replace(f, tz=None)


def machine_id(conn: Any, machine: str | None) -> str | None:
    """The id of the machine named or identified by ``machine`` (None: every machine)."""
    if machine is None:
        return None
    rows = POSTGRES.rows(conn, "SELECT id FROM machines WHERE id = ? OR name = ? OR id LIKE ? ORDER BY id",
                         (machine, machine, _like_prefix(machine)))  # fmt: skip
    if len(rows) != 1:
        raise QueryError(f"{'no' if not rows else len(rows)} machines match {machine!r}")
    return str(rows[0]["id"])


def _scope(conn: Any, machine: str | None, condition: str) -> core.Scope | None:
    mid = machine_id(conn, machine)
    return None if mid is None else (condition, [mid])


# ---------------------------------------------------------------- loading canonical objects


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
    """As ``archive.queries.first_prompts``."""
    from ..filters import first_prompts as shared

    return shared(conn, thread_ids, width, candidates, d=POSTGRES)


# ---------------------------------------------------------------- the queries


def search(conn: Any, query: str, f: Filters = Filters(), *, limit: int | None = 20, literal: bool = False,
           tokens: int = 16, offset: int = 0, kinds: Iterable[str] = ()) -> list[dict[str, Any]]:  # fmt: skip
    return core.search_rows(POSTGRES, conn, query, _utc(f), limit=limit, literal=literal, tokens=tokens,
                            offset=offset, kinds=kinds)  # fmt: skip


def threads(conn: Any, f: Filters = Filters(), *, limit: int | None = 50, ids: Iterable[str] | None = None,
            machine: str | None = None, top_level: bool = False, include_empty: bool = True,
            prices: PriceTable | None = None, offset: int = 0) -> list[dict[str, Any]]:  # fmt: skip
    """archive.queries.threads over the team database; ``machine``: threads that machine has."""
    scope = _scope(conn, machine, "t.id IN (SELECT thread_id FROM machine_threads WHERE machine_id = ?)")
    return core.thread_rows(POSTGRES, conn, _utc(f), limit=limit, ids=ids, top_level=top_level,
                            include_empty=include_empty, prices=prices, offset=offset, scope=scope)  # fmt: skip


def resolve_thread(conn: Any, ref: str) -> str:
    """archive.queries.resolve_thread over the team database."""
    return core.resolve_thread(POSTGRES, conn, ref)


def show(conn: Any, ref: str) -> ThreadView:
    tid = resolve_thread(conn, ref)
    (thread,) = load_threads(conn, "id = %s", (tid,))
    own, children = core.show_summary(POSTGRES, conn, tid)
    # the thread's view, as the local archive's: a fork's inherited history first
    ids = core.inherited_ids(POSTGRES, conn, tid)
    found = {m.id: m for m in load_messages(conn, "m.id = ANY(%s)", (ids,))} if ids else {}
    inherited = [found[i] for i in ids if i in found]
    return ThreadView(thread, own, inherited + load_messages(conn, "m.thread_id = %s", (tid,)), children)


def stats(conn: Any, by: str, prices: PriceTable, *, since: str | None = None, until: str | None = None,
          provider: str | None = None, machine: str | None = None) -> dict[str, Any]:  # fmt: skip
    """archive.queries.stats over the team database (same shape, UTC days); ``machine``: the
    usage rows that machine owns."""
    if by not in core.STATS_BY:
        raise QueryError(f"cannot group by {by!r}; one of {', '.join(core.STATS_BY)}")
    column = "tc.machine_id" if by in ("tool", "vendor-tool") else "machine_id"
    return core.stats(POSTGRES, conn, by, prices, since=since, until=until, provider=provider,
                      scope=_scope(conn, machine, f"{column} = ?"))  # fmt: skip


def annotate(conn: Any, rows: list[dict[str, Any]], key: str = "id") -> list[dict[str, Any]]:
    """As ``archive.marks.annotate``, over every machine's pushes: each thread's ``signals``
    (with its ``outcome``; from the machine whose copy of the thread reaches furthest),
    ``tags`` (any machine's), ``starred`` (by any machine) and ``note`` (the one written last)."""
    ids = [r[key] for r in rows]
    sig: dict[str, dict[str, Any]] = {}
    cols = ", ".join(f"s.{c}" for c in SIGNAL_COLUMNS)
    for r in POSTGRES.rows(
        conn,
        f"SELECT DISTINCT ON (s.thread_id) {cols}, {outcome_sql('s', POSTGRES)} AS outcome FROM thread_signals s "
        'WHERE s.thread_id = ANY(?) ORDER BY s.thread_id, s.last_ts COLLATE "C" DESC NULLS LAST, s.machine_id COLLATE "C"',
        (ids,),
    ):  # fmt: skip
        sig[r.pop("thread_id")] = r
    tags: dict[str, list[str]] = {}
    for r in POSTGRES.rows(conn, 'SELECT thread_id, tag FROM thread_tags WHERE thread_id = ANY(?) GROUP BY thread_id, tag '
                           'ORDER BY tag COLLATE "C"', (ids,)):  # fmt: skip
        tags.setdefault(r["thread_id"], []).append(r["tag"])
    notes: dict[str, tuple[int, str | None]] = {}
    for r in POSTGRES.rows(conn, "SELECT thread_id, starred, note FROM thread_notes WHERE thread_id = ANY(?) "
                           'ORDER BY updated_at COLLATE "C", machine_id COLLATE "C"', (ids,)):  # fmt: skip
        s, n = notes.get(r["thread_id"], (0, None))
        notes[r["thread_id"]] = (s or r["starred"], r["note"] if r["note"] is not None else n)
    return apply_marks(rows, key, sig, tags, notes)
