#!/usr/bin/env python3
"""The embedding step's share of a first ingest (issue 40), in one window: first ingests of
the same corpus without the step (A) and with it (B, ingest then ``semantic.update`` as
``sesh-archive ingest`` runs it), alternated A B A B, each in a fresh process and a fresh
archive, with the load average before each run.

Usage: python scripts/bench_embed_share.py CORPUS [--rounds 2] [--workdir DIR] [--json]

Per round: ``share = embed_s / (B's ingest_s + embed_s)`` (the step's part of an ingest with
it), ``over_plain = (B's total - A's ingest_s) / A's ingest_s`` (what the step adds to an
ingest without it). Never part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def one(corpus: Path, db_path: Path, embed: bool) -> dict:
    """One first ingest (this process): its time, and the embedding step's."""
    sys.path.insert(0, str(REPO))
    from archive import semantic
    from archive.db import open_db
    from archive.ingest import ingest_paths

    for suffix in ("", "-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    out: dict = {"embed": embed, "load_before": os.getloadavg()[0]}
    db = open_db(db_path)
    t0 = time.perf_counter()
    ingest_paths(db, [corpus])
    out["ingest_s"] = round(time.perf_counter() - t0, 1)
    if embed:
        t0 = time.perf_counter()
        u = semantic.update(db)  # loads the model, as the ingest's step does
        out["embed_s"] = round(time.perf_counter() - t0, 1)
        out.update(blocks=u.blocks, chunks=u.chunks)
    out["total_s"] = round(out["ingest_s"] + out.get("embed_s", 0.0), 1)
    out["load_after"] = os.getloadavg()[0]
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    db.conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(db_path) + suffix).unlink(missing_ok=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--one", choices=("plain", "embed"), help=argparse.SUPPRESS)  # a child run
    a = ap.parse_args()
    work = a.workdir or Path(tempfile.mkdtemp(prefix="sesh-bench-share-"))
    work.mkdir(parents=True, exist_ok=True)
    if a.one:
        print(json.dumps(one(a.corpus, work / f"{a.one}.db", a.one == "embed")))
        return
    runs = []
    for r in range(a.rounds):
        pair = {}
        for kind in ("plain", "embed"):
            got = subprocess.run([sys.executable, __file__, str(a.corpus), "--one", kind, "--workdir", str(work)],
                                 check=True, capture_output=True, text=True)  # fmt: skip
            pair[kind] = json.loads(got.stdout.strip().splitlines()[-1])
            print(f"round {r + 1} {kind}: {pair[kind]}", file=sys.stderr, flush=True)
        e = pair["embed"]
        pair["share"] = round(e["embed_s"] / e["total_s"], 3)
        pair["over_plain"] = round((e["total_s"] - pair["plain"]["ingest_s"]) / pair["plain"]["ingest_s"], 3)
        runs.append(pair)
    out = {"corpus": str(a.corpus), "rounds": runs}
    print(json.dumps(out, indent=1) if a.json else "\n".join(
        f"round {i + 1}: plain {p['plain']['ingest_s']} s; with the step {p['embed']['ingest_s']} + "
        f"{p['embed']['embed_s']} s; share {p['share']:.1%}; over plain {p['over_plain']:.1%}" for i, p in enumerate(runs)))


if __name__ == "__main__":
    main()
