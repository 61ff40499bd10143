"""The vector scan of search by meaning (issue 40, latency): one float16 matrix of the stored
vectors and a float32 head of their first dimensions, scanned whole; a shortlist ranked at full
dimension."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from archive import semantic, semantic_search
from archive.db import open_db, open_readonly
from archive.ingest import ingest_paths

FIX = Path(__file__).parent / "fixtures"
MIXED = [FIX / "claude-code" / "recorded", FIX / "codex" / "recorded", FIX / "pi"]


def _unit(a: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=-1, keepdims=True)).astype(np.float32)


def _index(full: np.ndarray) -> semantic_search.Index:
    n = len(full)
    f16 = full.astype(np.float16)
    head = _unit(f16[:, :semantic_search.HEAD_DIMS].astype(np.float32))
    return semantic_search.Index(1, f16, head, np.zeros(n, np.int64), np.arange(n), [str(i) for i in range(n)])


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scan") / "archive.db"
    db = open_db(path)
    ingest_paths(db, MIXED)
    semantic.update(db)
    db.conn.close()
    return path


def test_the_index_is_one_float16_matrix_and_a_unit_float32_head(archive: Path) -> None:
    db = open_readonly(archive)
    semantic_search._CACHE.clear()
    ix = semantic_search._index(db.conn)
    dim = db.conn.execute("SELECT dim FROM semantic_state").fetchone()[0]
    stored = b"".join(r[0] for r in db.conn.execute("SELECT vectors FROM semantic_segments ORDER BY id"))
    # the rows as stored (no float32 copy of them all), contiguous
    assert ix.full.dtype == np.float16 and ix.full.flags.c_contiguous and ix.full.shape == (len(stored) // (2 * dim), dim)
    assert ix.full.tobytes() == stored
    assert ix.head.dtype == np.float32 and ix.head.shape == (len(ix.full), semantic_search.HEAD_DIMS)
    norms = np.linalg.norm(ix.head, axis=1)
    assert np.allclose(norms[norms > 0], 1, atol=1e-5)
    assert np.allclose(ix.head, _unit(ix.full[:, :semantic_search.HEAD_DIMS].astype(np.float32)), atol=1e-6)
    assert semantic_search._index(db.conn) is ix  # cached until the index changes


def test_nearest_ranks_the_heads_shortlist_at_full_dimension(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    full = _unit(rng.normal(size=(3000, 256)))
    ix = _index(full)
    q = _unit(rng.normal(size=256))
    exact = ix.full.astype(np.float32) @ q
    # an archive no larger than the shortlist is ranked whole: the exact order
    monkeypatch.setattr(semantic_search, "SHORTLIST", 10**6)
    rows, cos = ix.nearest(q, 10)
    assert rows.tolist() == np.argsort(-exact, kind="stable")[:10].tolist()
    assert np.allclose(cos, exact[rows], atol=1e-6)
    # a larger one: the best rows by the head's cosine, then by the full cosine
    monkeypatch.setattr(semantic_search, "SHORTLIST", 100)
    head = ix.head @ _unit(q[:semantic_search.HEAD_DIMS])
    short = set(np.argsort(-head)[:100].tolist())
    rows, cos = ix.nearest(q, 10)
    assert set(rows.tolist()) <= short
    assert rows.tolist() == sorted(short, key=lambda i: (-exact[i], i))[:10]
    assert np.allclose(cos, exact[rows], atol=1e-6)
    # never fewer than 4 x the rows asked for
    assert len(set(ix.nearest(q, 50)[0].tolist()) - short) > 0


class _Recording:
    """A connection noting each statement and its parameters."""

    def __init__(self, conn, seen: list) -> None:  # noqa: ANN001
        self.conn, self.seen = conn, seen

    def execute(self, sql: str, params: tuple = ()):  # noqa: ANN201
        self.seen.append((sql, params))
        return self.conn.execute(sql, params)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.conn, name)


def test_hybrid_reads_the_rows_of_the_semantic_hits_it_keeps_only(archive: Path) -> None:
    """The semantic leg ranks on the cached rows' message ids; only the fused hits kept read
    their chunk's row (100 rows a query at 1 GB were 17 ms under load): the same hits."""
    import orjson

    db = open_readonly(archive)
    q = "delegate the counting to a subagent"
    seen: list[tuple] = []
    real = db.conn
    db.conn = _Recording(real, seen)
    try:
        hits = semantic_search.hybrid_search(db, q, limit=3)
    finally:
        db.conn = real
    reads = [orjson.loads(p[0]) for s, p in seen if "JOIN semantic_chunks c" in s]
    assert len(reads) == 1 and len(reads[0]) <= 3, [len(r) for r in reads]
    meaning = {h["message_id"]: h for h in semantic_search.semantic_search(db, q, limit=semantic_search.FUSE_DEPTH)}
    assert len(hits) == 3
    for h in hits:
        if h["message_id"] in meaning and h["matches"] == []:
            assert h == dict(meaning[h["message_id"]], score=h["score"])


def test_hybrid_ranks_again_when_a_kept_chunk_is_gone(archive: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """A block deleted after the index was read (before the next ``settle``): the join drops its
    chunk, and hybrid ranks again through the rows, without it."""
    import shutil

    path = tmp_path / "copy.db"
    shutil.copy(archive, path)
    db = open_db(path)
    q = "delegate the counting to a subagent"
    first = semantic_search.hybrid_search(db, q, limit=3)
    gone = next(h for h in first if h["matches"] == [])  # a hit of the semantic leg
    db.conn.execute("DELETE FROM blocks WHERE id = ?", (gone["block_id"],))
    calls: list[bool] = []
    real = semantic_search._semantic_ranking
    monkeypatch.setattr(semantic_search, "_semantic_ranking", lambda *a, **k: calls.append(k.get("read", True)) or real(*a, **k))
    again = semantic_search.hybrid_search(db, q, limit=3)
    assert calls == [False, True]  # ranked on the cached ids, then again through the rows
    assert len(again) == 3 and gone["message_id"] not in {h["message_id"] for h in again}
