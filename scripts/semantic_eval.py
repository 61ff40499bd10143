"""Quality of search by meaning (issue 40): recall@5 and MRR of lexical, semantic and hybrid
search on the paraphrase queries of tests/fixtures/semantic/queries.json.

Usage: python scripts/semantic_eval.py [--db ARCHIVE] [--json]
Without --db, tests/fixtures is ingested whole into a temporary archive (as the query set's
sessions were judged on). A hit counts for its session (a subagent's hit for the session that
spawned it); recall@5 is the share of a query's sessions in the first 5 distinct sessions (of at
most 5 sessions: a query answered by 29 sessions needs only 5 of them), MRR the mean of
1 / rank of the first answering session (0 when none is in the first 100 hits).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from archive import semantic, semantic_search  # noqa: E402
from archive.db import open_db  # noqa: E402
from archive.queries import QueryError, search  # noqa: E402

QUERIES = ROOT / "tests" / "fixtures" / "semantic" / "queries.json"
MODES = ("lexical", "lexical-any", "semantic", "hybrid", "hybrid-any")


def _roots(db) -> dict[str, str]:
    parent = dict(db.conn.execute("SELECT id, parent_thread_id FROM threads").fetchall())
    out = {}
    for t in parent:
        r, seen = t, set()
        while parent.get(r) and r not in seen:
            seen.add(r)
            r = parent[r]
        out[t] = r
    return out


def ranked_sessions(db, query: str, mode: str, roots: dict[str, str]) -> list[str]:
    if mode == "lexical":  # as `search` reads what people type: every word must occur
        try:
            hits = search(db, query, limit=100)
        except QueryError:
            hits = search(db, query, limit=100, literal=True)
    elif mode == "lexical-any":  # bm25 over any word (the hybrid's lexical leg alone)
        hits = search(db, semantic_search.lexical_any(query), limit=100) if semantic_search.lexical_any(query) else []
    elif mode == "hybrid-any":  # the fusion with an any-word lexical leg
        hits = semantic_search.hybrid_search(db, query, limit=100, any_word=True)
    else:
        hits = semantic_search.search(db, query, mode=mode, limit=100)
    out: list[str] = []
    for h in hits:
        r = roots.get(h["thread_id"], h["thread_id"])
        if r not in out:
            out.append(r)
    return out


def evaluate(db, queries: list[dict]) -> dict[str, dict[str, float]]:
    roots = _roots(db)
    result = {}
    for mode in MODES:
        recall = rr = 0.0
        t0 = time.perf_counter()
        for q in queries:
            rel = set(q["sessions"])
            got = ranked_sessions(db, q["query"], mode, roots)
            recall += len(rel & set(got[:5])) / min(len(rel), 5)
            rr += next((1 / i for i, s in enumerate(got, 1) if s in rel), 0.0)
        n = len(queries)
        result[mode] = {"recall@5": round(recall / n, 3), "mrr": round(rr / n, 3),
                        "ms_per_query": round((time.perf_counter() - t0) * 1000 / n, 1)}
    return result


def fixture_archive(folder: Path):
    from archive.ingest import ingest_paths

    db = open_db(folder / "eval.db")
    ingest_paths(db, [ROOT / "tests" / "fixtures"])
    semantic.update(db)
    return db


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    queries = json.loads(QUERIES.read_text())["queries"]
    with tempfile.TemporaryDirectory() as d:
        db = open_db(a.db) if a.db else fixture_archive(Path(d))
        semantic.model()  # loaded once, outside the timings
        res = evaluate(db, queries)
    if a.json:
        print(json.dumps(res, indent=1))
        return
    print(f"{len(queries)} queries")
    print("| mode | recall@5 | MRR | ms/query |\n| --- | --- | --- | --- |")
    for mode, r in res.items():
        print(f"| {mode} | {r['recall@5']:.3f} | {r['mrr']:.3f} | {r['ms_per_query']} |")


if __name__ == "__main__":
    main()
