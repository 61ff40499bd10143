#!/usr/bin/env python3
"""The cost of search by meaning (issue 40) on a synthetic corpus (scripts/gen_corpus.py),
all ratios from one run: first ingest time, then the embedding step's time (its share of the
two), blocks and chunks embedded and their throughput, database growth, query latency p50/p95
of lexical, semantic and hybrid search (warm, as the web page and the MCP server run them, and
a first query in a fresh process, as the CLI runs it), peak RSS.

Usage: python scripts/bench_semantic.py --corpus /tmp/corpus-300m --size 300MB [--json]
       python scripts/bench_semantic.py --db ARCHIVE [--json] [--surfaces] [--no-cli] [--rounds N]
       (queries only, on an archive already ingested and embedded: the 1 GB one is built once;
       wall and CPU time per query and per phase, the load average beside each mode)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from archive import semantic, semantic_search  # noqa: E402
from archive.db import open_db, open_readonly  # noqa: E402
from archive.ingest import ingest_paths  # noqa: E402

QUERIES = [
    "the tests fail after the database migration", "why is the build broken", "configure the web server port",
    "refactor the function that parses dates", "a memory leak in the worker", "deploy to production",
    "update the dependencies", "the login page shows an error", "write documentation for the API",
    "speed up the slow query", "fix the flaky test", "add a command line option", "rename the config file",
    "the cache returns stale data", "handle a timeout from the network", "count the lines in each file",
    "review my pull request", "set up continuous integration", "the docker container exits", "undo the last change",
]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _pcts(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50_ms": round(statistics.median(xs) * 1000, 1), "p95_ms": round(xs[int(0.95 * (len(xs) - 1))] * 1000, 1)}


def _load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def _timed(run, qs: list[str]) -> dict:
    """Wall and CPU p50/p95 of ``run(q)`` over ``qs`` (one warm-up first), the load beside."""
    run(qs[0])
    wall, cpu = [], []
    load = _load()
    for q in qs:
        t0, c0 = time.perf_counter(), time.process_time()
        run(q)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    c = _pcts(cpu)
    return {**_pcts(wall), "cpu_p50_ms": c["p50_ms"], "cpu_p95_ms": c["p95_ms"], "load": f"{load} -> {_load()}"}


def queries(db_path: Path, *, surfaces: bool = False, cli: bool = True, rounds: int = 1) -> dict:
    """Matrix load, warm wall and CPU p50/p95 of each mode over ``QUERIES`` (and, where this code
    records them, of each phase of a query), peak RSS; with ``surfaces`` the MCP search tool and
    the web page's first page of hits too; with ``cli`` the CLI's cold query."""
    out: dict = {}
    ro = open_readonly(db_path)
    t0 = time.perf_counter()
    semantic_search._index(ro.conn)
    out["matrix_load_s"] = round(time.perf_counter() - t0, 2)
    semantic.model()
    qs = QUERIES * rounds
    lat: dict[str, dict] = {}
    for mode in ("lexical", "semantic", "hybrid"):
        recording = hasattr(semantic_search, "PHASES") and mode != "lexical"
        if recording:
            semantic_search.PHASES = {}
        lat[mode] = _timed(lambda q: semantic_search.search(ro, q, mode=mode, limit=20, literal=True), qs)
        if recording:
            phases = semantic_search.PHASES or {}
            semantic_search.PHASES = None
            for name, xs in phases.items():
                xs = xs[len(xs) - len(qs):] if len(xs) > len(qs) else xs  # the warm-up's left out
                w, c = _pcts([x[0] for x in xs]), _pcts([x[1] for x in xs])
                lat[mode].setdefault("phases", {})[name] = {"p50_ms": w["p50_ms"], "p95_ms": w["p95_ms"],
                                                            "cpu_p50_ms": c["p50_ms"], "cpu_p95_ms": c["p95_ms"]}
    out["warm_query"] = lat
    if surfaces:
        from archive import agent_tools
        from archive.web.search import SearchRequest, meaning_rows

        out["mcp_search_tool"] = {mode: _timed(lambda q: agent_tools.search_sessions(ro, q, mode=mode), qs)
                                  for mode in ("semantic", "hybrid")}
        out["web_search_page"] = {mode: _timed(lambda q: meaning_rows(ro.conn, SearchRequest(q=q, mode=mode)), qs)
                                  for mode in ("semantic", "hybrid")}
    out["peak_rss_mb_after_queries"] = round(_rss_mb())
    if cli:
        cold = []
        for q in QUERIES[:3]:  # the CLI: a new process loads the model and the vectors for one query
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "archive", "search", "--db", str(db_path), "--hybrid", q],
                           check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
            cold.append(time.perf_counter() - t0)
        out["cli_hybrid_query_s"] = [round(x, 2) for x in cold]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, help="synthetic home folder (generated if absent)")
    ap.add_argument("--db", type=Path, help="only the queries, on this archive (ingested and embedded)")
    ap.add_argument("--size", default="300MB")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--surfaces", action="store_true", help="also the MCP search tool and the web search page")
    ap.add_argument("--no-cli", action="store_true", help="without the CLI's cold queries")
    ap.add_argument("--rounds", type=int, default=1, help="times the query set is run per mode")
    a = ap.parse_args()
    if a.db:
        out = {"db_bytes": a.db.stat().st_size, **queries(a.db, surfaces=a.surfaces, cli=not a.no_cli, rounds=a.rounds)}
        print(json.dumps(out, indent=1) if a.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
        return
    if a.corpus is None:
        ap.error("--corpus or --db is required")
    if not a.corpus.exists():
        subprocess.run([sys.executable, str(REPO / "scripts" / "gen_corpus.py"), str(a.corpus), "--size", a.size], check=True)
    corpus_bytes = sum(p.stat().st_size for p in a.corpus.rglob("*") if p.is_file())
    work = a.workdir or Path(tempfile.mkdtemp(prefix="sesh-bench-sem-"))
    work.mkdir(parents=True, exist_ok=True)
    db_path = work / "archive.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    out: dict = {"corpus_bytes": corpus_bytes}
    db = open_db(db_path)
    t0 = time.perf_counter()
    ingest_paths(db, [a.corpus])
    out["ingest_s"] = round(time.perf_counter() - t0, 1)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = db_path.stat().st_size
    t0 = time.perf_counter()
    semantic.model()
    out["model_load_s"] = round(time.perf_counter() - t0, 2)
    u = semantic.update(db)
    out["embed_s"] = round(u.seconds, 1)
    out["embed_share_of_first_ingest"] = round(u.seconds / (u.seconds + out["ingest_s"]), 3)
    out["embed_over_ingest"] = round(u.seconds / out["ingest_s"], 3)
    text_chars = db.conn.execute("SELECT coalesce(sum(c.length), 0) FROM semantic_chunks c").fetchone()[0]
    out.update(blocks=u.blocks, chunks=u.chunks, chars_embedded=text_chars,
               chars_per_s=round(text_chars / max(u.seconds, 1e-9)), chunks_per_s=round(u.chunks / max(u.seconds, 1e-9)))
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    after = db_path.stat().st_size
    out.update(db_bytes_before=before, db_bytes_after=after, db_growth=round(after / before - 1, 4),
               vectors_bytes=db.conn.execute("SELECT sum(length(vectors)) FROM semantic_segments").fetchone()[0])
    out["peak_rss_mb_ingest_and_embed"] = round(_rss_mb())
    db.conn.close()
    out.update(queries(db_path))
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
