"""The vector scan of search by meaning (issue 40, latency): WordLlama's first 128 dimensions,
one cached float32 matrix of the stored rows, and hybrid search reading the rows of the hits it
keeps only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from archive import semantic, semantic_search
from archive.db import open_db, open_readonly
from archive.ingest import ingest_paths

FIX = Path(__file__).parent / "fixtures"
MIXED = [FIX / "claude-code" / "recorded", FIX / "codex" / "recorded", FIX / "pi"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scan") / "archive.db"
    db = open_db(path)
    ingest_paths(db, MIXED)
    semantic.update(db)
    db.conn.close()
    return path


def test_the_index_is_one_float32_matrix_of_the_stored_rows(archive: Path) -> None:
    db = open_readonly(archive)
    semantic_search._CACHE.clear()
    ix = semantic_search._index(db.conn)
    dim = db.conn.execute("SELECT dim FROM semantic_state").fetchone()[0]
    assert dim == semantic.DIMS == 128  # half the model's 256: half the bytes a query reads
    stored = b"".join(r[0] for r in db.conn.execute("SELECT vectors FROM semantic_segments ORDER BY id"))
    assert ix.mat.dtype == np.float32 and ix.mat.flags.c_contiguous and ix.mat.shape == (len(stored) // (2 * dim), dim)
    assert ix.mat.astype(np.float16).tobytes() == stored
    assert semantic_search._index(db.conn) is ix  # cached until the index changes
    q = semantic.model().embed(["count the files"])[0]
    exact = ix.mat @ q
    rows, cos = ix.nearest(q, 5)
    assert rows.tolist() == sorted(range(len(exact)), key=lambda i: (-exact[i], i))[:5]
    assert cos.tolist() == exact[rows].tolist()


def test_the_dimensions_are_the_models_and_another_number_rebuilds(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """WordLlama's first ``DIMS`` dimensions: a text's vector is the mean of its tokens' first
    128 dimensions, of unit length (WordLlama's own truncation); a changed setting is another
    model, whose vectors replace every one stored."""
    m = semantic.model()
    ids = m._ids(["count the files with a helper"])[0]
    import wordllama
    from safetensors import safe_open

    weights = Path(wordllama.__file__).parent / "weights" / "l2_supercat_256.safetensors"
    with safe_open(str(weights), framework="np") as f:
        table = f.get_tensor("embedding.weight").astype(np.float32)
    want = table[ids].mean(axis=0)[:128]
    assert np.allclose(m.embed(["count the files with a helper"])[0], want / np.linalg.norm(want), atol=1e-5)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, MIXED[:1])
    first = semantic.update(db)
    assert db.conn.execute("SELECT model, dim FROM semantic_state").fetchone() == (first.model, 128)
    n = db.conn.execute("SELECT count(*) FROM semantic_chunks").fetchone()[0]
    monkeypatch.setattr(semantic, "DIMS", 64)
    monkeypatch.setattr(semantic, "_MODEL", None)
    assert semantic.state(db.conn)["model_changed"]  # status says the next ingest rebuilds
    u = semantic.update(db)
    assert u.rebuilt and u.model.endswith("/l2_supercat_64") and u.chunks == n
    assert db.conn.execute("SELECT dim, count(*) FROM semantic_chunks, semantic_state").fetchone() == (64, n)
    assert {len(v) for (v,) in db.conn.execute("SELECT vectors FROM semantic_segments")} == {n * 64 * 2}


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
