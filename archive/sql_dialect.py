"""The differences between the local archive's SQLite and the team database's PostgreSQL,
in one place (issue 34): the read queries (archive/query_core.py, archive/filters.py) are
written once, in SQLite's spelling with ``?`` placeholders, and ask a ``Dialect`` for every
piece the two spell differently.

Invariants:

* A query text is written with ``?`` placeholders only. ``Dialect.rows`` runs it; the
  PostgreSQL dialect turns each ``?`` outside quotes into ``%s`` and doubles every ``%``
  (psycopg's format style), so a ``LIKE`` pattern or a ``printf`` format in the text keeps
  its meaning. No query uses PostgreSQL's jsonb ``?`` operators.
* Text is compared and ordered byte-wise on both: SQLite's BINARY collation, PostgreSQL's
  ``"C"`` (``Dialect.c``), so ids, timestamps and days sort the same.
* Sums of integer columns come back as Python ints on both (``Dialect.int_sum``:
  PostgreSQL's ``sum(bigint)`` is numeric).
* Where the two schemas differ (the thread order of messages, a tool call's result column,
  the daily usage totals) the dialect names the column: that is the only schema knowledge
  here.
* The full-text search syntax is the backend's own: SQLite FTS5's, with what people type
  made safe (``fts_query``), or PostgreSQL's web-search syntax over the ``simple``
  configuration, where a query it cannot read matches nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MARK_START, MARK_END = "\x02", "\x03"  # snippet markers; control characters never in indexed text


# ---------------------------------------------------------------- FTS5 query text (SQLite)


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


@dataclass(frozen=True)
class FullText:
    """The pieces of a full-text search, in the order they appear in the query text."""

    cte: str  # a WITH clause before SELECT, or ""
    cte_params: list[Any]
    snippet: str  # the highlighted excerpt (MARK_START/MARK_END around the terms)
    snippet_params: list[Any]
    source: str  # FROM ..., ending with the blocks as ``b``
    match: str  # the WHERE condition
    match_params: list[Any]
    order: str  # best match first, then a stable order


# ---------------------------------------------------------------- the dialects


@lru_cache(maxsize=512)
def _format_style(sql: str) -> str:
    """``?`` outside quotes -> ``%s``; every ``%`` -> ``%%`` (psycopg reads % everywhere)."""
    out: list[str] = []
    quote = ""
    for ch in sql:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "?":
            out.append("%s")
            continue
        out.append("%%" if ch == "%" else ch)
    return "".join(out)


@dataclass(frozen=True)
class Dialect:
    name: str
    # the thread order of messages (alias m): the local store's source order, the team
    # database's per machine (its sources are numbered per machine)
    message_order: str
    # a tool call without a result: the local tool_calls keep the result block, the team's its message
    no_result: str
    # per-day usage totals: the local triggers' table (a row per thread, day, model), or the
    # team database's responses themselves; the project of such a row, and the joins it needs
    totals_table: str
    totals_responses: str
    totals_project: str
    totals_project_joins: str

    @property
    def postgres(self) -> bool:
        return self.name == "postgresql"

    def c(self, expr: str) -> str:
        """``expr`` compared and ordered byte-wise."""
        return f'{expr} COLLATE "C"' if self.postgres else expr

    def int_sum(self, expr: str) -> str:
        return f"sum({expr})::bigint" if self.postgres else f"sum({expr})"

    def contains(self, haystack: str, needle: str = "?") -> str:
        """Where ``needle`` occurs in ``haystack`` (1-based; 0: nowhere)."""
        return f"strpos({haystack}, {needle})" if self.postgres else f"instr({haystack}, {needle})"

    def json_text(self, column: str, key: str) -> str:
        """The text of a top-level key of a JSON column (SQL NULL when absent)."""
        return f"({column}->>'{key}')" if self.postgres else f"json_extract({column}, '$.{key}')"

    def same(self, a: str, b: str) -> str:
        """``a`` equals ``b``, NULL equal to NULL."""
        return f"{a} IS NOT DISTINCT FROM {b}" if self.postgres else f"{a} IS {b}"

    def since_minutes_ago(self, ts: str, minutes: int) -> str:
        """The recorded timestamp ``ts`` is at most ``minutes`` old. SQLite reads it as a time
        (julianday); PostgreSQL compares the text with now's UTC ``…T…`` text, right for the
        UTC ``…Z`` stamps every current vendor writes, and never failing on another text."""
        if self.postgres:
            return (f"{ts} >= to_char(now() AT TIME ZONE 'UTC' - interval '{int(minutes)} minutes', "
                    "'YYYY-MM-DD\"T\"HH24:MI:SS') COLLATE \"C\"")  # fmt: skip
        return f"julianday({ts}) >= julianday('now', '-{int(minutes)} minutes')"

    def in_list(self, column: str, values: Iterable[Any]) -> tuple[str, Any]:
        """``column`` is one of ``values``: the condition and its one parameter."""
        if self.postgres:
            return f"{column} = ANY(?)", list(values)
        return f"{column} IN (SELECT value FROM json_each(?))", json.dumps(list(values))

    def limit(self, limit: int | None, offset: int = 0) -> tuple[str, list[Any]]:
        """``LIMIT ? OFFSET ?`` and its parameters; None: no limit."""
        n = None if limit is None else max(limit, 0)
        if n is None and not self.postgres:
            n = -1  # SQLite's "no limit"; PostgreSQL reads LIMIT NULL as LIMIT ALL
        return "LIMIT ? OFFSET ?", [n, max(offset, 0)]

    def full_text(self, query: str, *, literal: bool, tokens: int) -> FullText:
        words = max(1, min(tokens, 64))
        if self.postgres:
            tsq = "plainto_tsquery('simple', ?)" if literal else "websearch_to_tsquery('simple', ?)"
            options = f"StartSel={MARK_START}, StopSel={MARK_END}, MaxWords={words}, MinWords={max(1, words // 2)}"
            return FullText(
                cte=f"WITH q AS (SELECT {tsq} AS q)", cte_params=[" ".join(query.split()) if literal else query],
                snippet="ts_headline('simple', left(b.text, 100000), q.q, ?)", snippet_params=[options],
                source="q, blocks b", match="b.tsv @@ q.q", match_params=[],
                order='ts_rank(b.tsv, q.q) DESC, m.ts COLLATE "C", b.message_id COLLATE "C", b.position',
            )  # fmt: skip
        return FullText(
            cte="", cte_params=[],
            snippet="snippet(blocks_fts, 0, ?, ?, '…', ?)", snippet_params=[MARK_START, MARK_END, words],
            source="blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid",
            match="blocks_fts MATCH ?", match_params=[fts_literal(query) if literal else fts_query(query)],
            order="blocks_fts.rank, m.ts, b.id",
        )  # fmt: skip

    def each(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Iterator[dict[str, Any]]:
        """``rows``, read as they are used: on SQLite, a caller that stops early reads no
        further row (``first_prompts`` stops at the first typed prompt of up to 12)."""
        if self.postgres:
            yield from self.rows(conn, sql, params)
            return
        cur = conn.execute(sql, tuple(params))
        names = [d[0] for d in cur.description]
        for r in cur:
            yield dict(zip(names, r))

    def rows(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run ``sql`` (``?`` placeholders) on ``conn``; the rows as dicts."""
        if self.postgres:
            from psycopg.rows import dict_row

            with conn.cursor(row_factory=dict_row) as cur:
                cur.execute(_format_style(sql), tuple(params))
                out = cur.fetchall()
            conn.commit()  # readers hold no transaction open between calls
            return out
        cur = conn.execute(sql, tuple(params))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]


SQLITE = Dialect(
    name="sqlite",
    message_order="m.source_id, m.generation, m.offset, m.sub",
    no_result="tc.result_block_id IS NULL",
    totals_table="usage_totals",
    totals_responses="sum(u.responses)",
    totals_project="coalesce(t.cwd, p.cwd)",
    totals_project_joins=" LEFT JOIN threads t ON t.id = u.thread_id LEFT JOIN threads p ON p.id = t.parent_thread_id",
)

POSTGRES = Dialect(
    name="postgresql",
    message_order='m.machine_id COLLATE "C", m.source_no, m.generation, m."offset", m.sub',
    no_result="tc.result_message_id IS NULL",
    totals_table="usage_responses",
    totals_responses="count(*)",
    totals_project="u.project",
    totals_project_joins="",
)
