"""Search by meaning (issue 40): the brute-force search over the vectors ``semantic.py``
keeps, and its fusion with the lexical search (reciprocal rank fusion)."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from .db import ArchiveError
from . import semantic
from .semantic import EMBED_TYPES


# ---------------------------------------------------------------- reading

MODES = ("lexical", "semantic", "hybrid")
RRF_K = 60  # reciprocal rank fusion's constant (Cormack et al. 2009), as agentsview and cass use
FUSE_DEPTH = 100  # hits of each ranking fused

_CACHE: dict[str, Index] = {}
_CACHE_LOCK = threading.Lock()
PHASES: dict[str, list[tuple[float, float]]] | None = None  # a bench's: (wall, CPU) seconds per phase


@contextmanager
def _phase(name: str) -> Iterator[None]:
    if PHASES is None:
        yield
        return
    w, c = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        PHASES.setdefault(name, []).append((time.perf_counter() - w, time.process_time() - c))


@dataclass
class Index:
    """Every vector of one ``semantic_state.version``, as a long-lived reader keeps them (the
    CLI: once per call): ``mat``, the stored float16 rows as one contiguous float32 matrix
    (BLAS multiplies float32; numpy has no float16 product), ``seg_of``/``row_of``, where each
    row is stored, ``msg_of``, its message id ("" for a zeroed row)."""

    version: int
    mat: Any
    seg_of: Any
    row_of: Any
    msg_of: list[str]

    def nearest(self, q: Any, k: int) -> tuple[Any, Any]:
        """The ``k`` rows nearest to the unit vector ``q``, best first, and their cosines: the
        product with every row (exact, memory-bound: ``semantic.DIMS`` x 4 bytes a row)."""
        np = _np()
        scores = self.mat @ q
        k = min(k, len(scores))
        top = np.sort(np.argpartition(-scores, k - 1)[:k])
        top = top[np.argsort(-scores[top], kind="stable")]  # equal cosines (the same text): lower row first
        return top, scores[top]


def _np() -> Any:
    import numpy

    return numpy


def _index(conn: sqlite3.Connection) -> Index:
    """Every vector and each row's message id (the chunks' table as it was at that version),
    cached per database file and ``semantic_state.version``."""
    np = _np()
    path = next((r[2] for r in conn.execute("PRAGMA database_list") if r[1] == "main"), "") or f"mem:{id(conn)}"
    try:
        version, dim = conn.execute("SELECT version, dim FROM semantic_state").fetchone()
    except sqlite3.OperationalError:  # opened read-only before an ingest migrated it
        raise ArchiveError("this archive has no semantic index yet: run sesh-archive ingest") from None
    with _CACHE_LOCK:
        hit = _CACHE.get(path)
        if hit is not None and hit.version == version:
            return hit
    # one read transaction: the vectors and the chunks of the same version
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        version = conn.execute("SELECT version FROM semantic_state").fetchone()[0]
        segs = conn.execute("SELECT id, rows, vectors FROM semantic_segments ORDER BY id").fetchall()
        chunks = conn.execute("SELECT segment, row, message_id FROM semantic_chunks").fetchall()
    finally:
        if own:
            conn.execute("COMMIT")
    dim = dim or 1
    n = sum(s[1] for s in segs)
    mat = np.empty((n, dim), dtype=np.float32)
    at = 0
    for _id, rows, blob in segs:  # into one matrix, without a joined copy of every blob
        mat[at:at + rows] = np.frombuffer(blob, dtype="<f2").reshape(rows, dim)
        at += rows
    seg_of = np.repeat(np.array([s[0] for s in segs], np.int64), [s[1] for s in segs])
    row_of = np.concatenate([np.arange(s[1], dtype=np.int64) for s in segs]) if segs else np.zeros(0, np.int64)
    first = dict(zip((s[0] for s in segs), np.concatenate(([0], np.cumsum([s[1] for s in segs])))[:-1].tolist()))
    msg_of: list[str] = [""] * n  # "": a zeroed row, no chunk
    for seg, row, mid in chunks:
        if seg in first:
            msg_of[first[seg] + row] = mid
    ix = Index(version, mat, seg_of, row_of, msg_of)
    with _CACHE_LOCK:
        _CACHE[path] = ix
    return ix


def semantic_search(db: Database, query: str, f: Any = None, *, limit: int | None = 20,
                    kinds: Iterable[str] = ()) -> list[dict[str, Any]]:  # fmt: skip
    """Messages nearest in meaning to ``query``, best first: one hit per message (its best
    chunk), shaped like ``queries.search``'s hits (``snippet`` is the chunk, ``matches``
    empty) plus ``score`` (cosine). Filters apply to the best ``max(50 * limit, 2000)`` chunks
    (without filters, ``4 * limit + 50``: room for a message's several chunks)."""
    hits = _semantic_ranking(db, query, f, limit=limit, kinds=kinds)
    with _phase("snippets"):
        return _finish_semantic(db, hits)


def _semantic_ranking(db: Database, query: str, f: Any = None, *, limit: int | None = 20,
                      kinds: Iterable[str] = (), read: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """``semantic_search``'s hits in its order, before their snippet, label and forks are read
    (``start`` and ``length`` say where the chunk is). Without ``read`` and without filters,
    the hits are ``{"message_id", "chunk"}`` only (``chunk``: its segment, row and cosine, for
    ``_read``): hybrid search reads the rows of the hits it keeps."""
    from .queries import Filters, QueryError, _where

    if not query.strip():
        raise QueryError("empty search query")
    f = f or Filters()
    kinds = tuple(kinds)
    if kinds and not set(kinds) & set(EMBED_TYPES):
        return []
    m = semantic.model()  # first: without the extra (numpy, wordllama) it says how to get it
    conn = db.conn
    ix = _index(conn)
    if not len(ix.mat):
        return []
    with _phase("embed query"):
        q = m.embed([query])[0]
    filtered = bool(kinds or any(getattr(f, k) for k in ("provider", "role", "thread", "project", "since", "until")))
    want = max(50 * (limit or 200), 2000) if filtered else 4 * (limit or 500) + 50
    with _phase("vector scan"):
        rows, cosines = ix.nearest(q, want)
    chunk = {i: (int(ix.seg_of[i]), int(ix.row_of[i]), c) for i, c in zip(rows.tolist(), cosines.tolist()) if c > 0}
    where, params = _where(f, ts="m.ts", project="coalesce(t.cwd, p.cwd)", provider="t.provider",
                           thread="m.thread_id", role="m.role")  # fmt: skip
    if kinds:
        where.append("b.type IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(kinds)))
    if not filtered and limit:
        # each message's best chunk, from the rows' message ids: the SQL reads ``limit`` chunks,
        # not ``4 * limit + 50`` (the same hits; a chunk the joins drop falls back below)
        msg_of = ix.msg_of
        best: dict[str, int] = {}
        for i in chunk:
            if msg_of[i] and msg_of[i] not in best:
                best[msg_of[i]] = i
                if len(best) >= limit:
                    break
        if not read:
            return [{"message_id": mid, "chunk": chunk[i]} for mid, i in best.items()]
        with _phase("semantic rows"):
            hits = _candidates(conn, [chunk[i] for i in best.values()], [], [], limit)
        if len(hits) == len(best):
            return hits
    with _phase("semantic rows"):
        return _candidates(conn, list(chunk.values()), where, params, limit)


def _candidates(conn: sqlite3.Connection, chunks: list[tuple[int, int, float]], where: list[str], params: list[Any],
                limit: int | None) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of these (segment, row, cosine) chunks (best first) that pass ``where``, one per
    message, at most ``limit``."""
    wanted = json.dumps(chunks)
    sql = f"""
        SELECT m.thread_id, t.title AS thread_title, t.provider, coalesce(t.cwd, p.cwd) AS project,
               m.id AS message_id, m.role, m.ts, b.type AS block_type, b.tool_name, c.block_id,
               NULL AS snippet, w.value ->> 2 AS score, c.start, c.length
        FROM json_each(?) w
        JOIN semantic_chunks c ON c.segment = w.value ->> 0 AND c.row = w.value ->> 1
        JOIN blocks b ON b.id = c.block_id
        JOIN messages m ON m.id = c.message_id
        LEFT JOIN threads t ON t.id = m.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        {'WHERE ' + ' AND '.join(where) if where else ''}
        ORDER BY w.key"""
    cur = conn.execute(sql, (wanted, *params))
    names = [d[0] for d in cur.description]
    hits: list[dict[str, Any]] = []
    seen: set[str] = set()
    for r in cur:
        h = dict(zip(names, r))
        if h["message_id"] in seen:
            continue
        seen.add(h["message_id"])
        hits.append(h)
        if limit and len(hits) >= limit:
            break
    return hits


def _finish_semantic(db: Database, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The snippet (the chunk, one line), label and forks of the hits kept only: reading the
    chunks' text was most of a query."""
    from .queries import _inheritors, first_prompts

    conn = db.conn
    for h in hits:
        start, length = h.pop("start"), h.pop("length")
        got = conn.execute("SELECT substr(text, ? + 1, ?) FROM blocks WHERE id = ?", (start, length, h["block_id"])).fetchone()
        h["snippet"] = " ".join(((got[0] if got else None) or "").split())[:300]
        h["matches"] = []
    labels = first_prompts(conn, (h["thread_id"] for h in hits if not h["thread_title"]))
    forks = _inheritors(db, {h["thread_id"] for h in hits})
    for h in hits:
        h["thread_title"] = h["thread_title"] or labels.get(h["thread_id"])
        h["also_in"] = sorted(x for x, ids in forks.get(h["thread_id"], {}).items() if h["message_id"] in ids)
    return hits


def lexical_any(query: str) -> str:
    """The query's words as an FTS5 OR of quoted terms (bm25 over any word, as keyword rankers
    rank): the lexical leg ``hybrid_search(any_word=True)`` measured against (docs/semantic.md)."""
    words = [w for w in re.findall(r"[\w\u0080-\U0010ffff]+", query) if len(w) > 1]
    return " OR ".join('"' + w + '"' for w in words)


def hybrid_search(db: Database, query: str, f: Any = None, *, limit: int | None = 20,
                  kinds: Iterable[str] = (), literal: bool = False, any_word: bool = False) -> list[dict[str, Any]]:  # fmt: skip
    """Lexical and semantic rankings fused by reciprocal rank (``sum 1 / (RRF_K + rank)``), one
    hit per message; a message both rankings found keeps the lexical hit's highlights.

    The lexical leg reads the query as ``search`` does (every word, FTS5 syntax; a query FTS5
    rejects is taken literally): on the paraphrase set an any-word leg (``any_word``) lowered
    MRR from the semantic ranking's, while an every-word leg adds exact matches on top of it.

    Both legs rank without snippets, labels or forks; only the fused hits kept read theirs
    (the lexical leg's 300 snippets were most of a hybrid query on 1 GB: docs/semantic.md).
    The hits are those ``search`` and ``semantic_search`` would give, field for field."""
    from .queries import Filters
    from .query_core import SQLITE, finish_hits, search_ranking, snippets_of

    f = f or Filters()
    lexical: list[dict[str, Any]] = []
    words = lexical_any(query) if any_word else query
    if words:
        with _phase("lexical ranking"):
            try:
                lexical = search_ranking(SQLITE, db.conn, words, f, limit=FUSE_DEPTH * 3, kinds=kinds, literal=literal)
            except sqlite3.OperationalError:  # what ``search`` raises as QueryError
                literal = True
                lexical = search_ranking(SQLITE, db.conn, words, f, limit=FUSE_DEPTH * 3, kinds=kinds, literal=True)
    meaning = _semantic_ranking(db, query, f, limit=FUSE_DEPTH, kinds=kinds, read=False)
    while True:
        with _phase("fusion"):
            fused, best, from_lexical = _fuse(_per_message(lexical)[:FUSE_DEPTH], meaning)
            order = sorted(fused, key=lambda mid: -fused[mid])
            kept = order[:limit] if limit else order
            words_hits = [best[mid] for mid in kept if mid in from_lexical]
        unread = [mid for mid in kept if "chunk" in best[mid]]
        if not unread:
            break
        with _phase("semantic rows"):  # the rows of the semantic hits kept only
            rows = _candidates(db.conn, [best[mid]["chunk"] for mid in unread], [], [], None)
        if [h["message_id"] for h in rows] == unread:
            best.update((h["message_id"], h) for h in rows)
            break
        # a chunk the joins dropped (its block is gone since the index was read): rank as before
        meaning = _semantic_ranking(db, query, f, limit=FUSE_DEPTH, kinds=kinds)
    with _phase("snippets"):
        snippets = snippets_of(SQLITE, db.conn, words, [h["block_id"] for h in words_hits], literal=literal)
        for h in words_hits:
            h["snippet"] = snippets.get(h.pop("block_id"))
        finish_hits(SQLITE, db.conn, words_hits)
        _finish_semantic(db, [best[mid] for mid in kept if mid not in from_lexical])
    out = []
    for mid in kept:
        h = dict(best[mid])
        h["score"] = round(fused[mid], 6)
        out.append(h)
    return out


def _fuse(lexical: list[dict[str, Any]], meaning: list[dict[str, Any]]
          ) -> tuple[dict[str, float], dict[str, dict[str, Any]], set[str]]:  # fmt: skip
    """Each message's reciprocal-rank sum, its first hit (the lexical one when both have it),
    and the messages whose hit is lexical."""
    fused: dict[str, float] = {}
    best: dict[str, dict[str, Any]] = {}
    from_lexical: set[str] = set()
    for ranking in (lexical, meaning):
        for rank, h in enumerate(ranking, 1):
            fused[h["message_id"]] = fused.get(h["message_id"], 0.0) + 1.0 / (RRF_K + rank)
            if h["message_id"] not in best:
                best[h["message_id"]] = h
                if ranking is not meaning:
                    from_lexical.add(h["message_id"])
    return fused, best, from_lexical


def _per_message(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out = []
    for h in hits:
        if h["message_id"] not in seen:
            seen.add(h["message_id"])
            out.append(h)
    return out


def search(db: Database, query: str, f: Any = None, *, mode: str = "lexical", limit: int | None = 20,
           literal: bool = False, kinds: Iterable[str] = ()) -> list[dict[str, Any]]:  # fmt: skip
    """One entry for the CLI, the web page and the MCP tool: ``mode`` lexical (FTS5,
    ``queries.search``), semantic or hybrid."""
    from .queries import Filters, QueryError
    from .queries import search as lexical_search

    f = f or Filters()
    if mode == "lexical":
        return lexical_search(db, query, f, limit=limit, literal=literal, kinds=kinds)
    if mode == "semantic":
        return semantic_search(db, query, f, limit=limit, kinds=kinds)
    if mode == "hybrid":
        return hybrid_search(db, query, f, limit=limit, kinds=kinds, literal=literal)
    raise QueryError(f"unknown search mode {mode!r} (one of {', '.join(MODES)})")
