#!/usr/bin/env python3
"""File history and signals on the bench corpus (issue 42): what the index costs a first
ingest, and how fast ``files`` and the signals answer.

    python scripts/bench_files.py --size 1GB [--corpus DIR] [--db ARCHIVE] [--reps 7] [--json]

Generates the synthetic corpus (scripts/gen_corpus.py) when DIR holds none and ingests it
into ARCHIVE when that does not exist (a child process, as scripts/bench.py does, with the
ingest's phase timings: ``derived`` is the file index and the signals, so its share of the
wall time is the index's cost). Then, in this process, on the archive:

* ``files``: ``file_touches.file_history`` (limit 50, with diffs) for the most touched base
  name, an absolute path, a two-component suffix, a glob on an extension and a name that is
  not there; p50/p95 over the repetitions;
* signals: ``marks.annotate`` of a ``threads`` page (50 threads: signals, outcome, tags),
  and the web list's outcome filter (``web.files.filter_ids``).

The first run of each query is a warm-up and is not counted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench import percentile, run_ingest  # noqa: E402

from archive.db import open_db  # noqa: E402
from archive.file_touches import file_history  # noqa: E402
from archive.marks import annotate  # noqa: E402
from archive.queries import threads  # noqa: E402
from archive.web.files import filter_ids  # noqa: E402


def _time(fn: Any, reps: int) -> dict[str, Any]:
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000)
    return {"p50_ms": round(statistics.median(times), 2), "p95_ms": round(percentile(times, 95), 2),
            "rows": len(out) if hasattr(out, "__len__") else None}  # fmt: skip


def measure(db_path: Path, reps: int) -> dict[str, Any]:
    db = open_db(db_path)
    conn = db.conn
    touches = conn.execute("SELECT count(*) FROM file_touches").fetchone()[0]
    top = conn.execute("SELECT name, count(*) FROM file_touches GROUP BY name ORDER BY 2 DESC LIMIT 1").fetchone()
    path = conn.execute("SELECT path FROM file_touches WHERE name = ? LIMIT 1", (top[0],)).fetchone()[0] if top else "/x"
    suffix = "/".join(path.rsplit("/", 2)[-2:])
    ext = "*." + top[0].rsplit(".", 1)[-1] if top and "." in top[0] else "*.py"
    queries = {"basename": top[0] if top else "x", "absolute": path, "suffix": suffix, "glob": ext,
               "absent": "no/such/file.txt"}  # fmt: skip
    out: dict[str, Any] = {"file_touches": touches, "threads": conn.execute("SELECT count(*) FROM threads").fetchone()[0],
                           "files": {}}  # fmt: skip
    for k, q in queries.items():
        out["files"][k] = {"query": q, **_time(lambda q=q: file_history(db, q, limit=50), reps)}
    page = threads(db, limit=50, top_level=True)
    out["signals"] = {
        "threads_page": _time(lambda: annotate(conn, [dict(r) for r in page]), reps),
        "threads_page_with_query": _time(lambda: annotate(conn, threads(db, limit=50, top_level=True)), reps),
        "outcome_filter": _time(lambda: filter_ids(conn, "abandoned") or [], reps),
    }
    all_p50 = [v["p50_ms"] for v in out["files"].values()] + [v["p50_ms"] for v in out["signals"].values()]
    out["worst_p50_ms"] = max(all_p50)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GB", help="corpus size to generate when --corpus holds none (default 1GB)")
    ap.add_argument("--corpus", type=Path, help="corpus folder (default: a temp folder)")
    ap.add_argument("--db", type=Path, help="archive to measure (ingested from the corpus when absent)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    say = (lambda m: print(m, file=sys.stderr)) if args.json else print  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        db = args.db or work / "archive.db"
        result: dict[str, Any] = {}
        if not db.exists():
            corpus = args.corpus or work / "corpus"
            if not (corpus / "corpus-manifest.json").exists():
                say(f"generating a {args.size} corpus at {corpus}")
                subprocess.run([sys.executable, str(REPO / "scripts" / "gen_corpus.py"), str(corpus), "--size", args.size],
                               check=True, stdout=subprocess.DEVNULL)  # fmt: skip
            say(f"ingesting {corpus} into {db}")
            ing = run_ingest(db, corpus)
            derived = ing["timings"].get("derived", 0.0)
            result["first_ingest"] = {"wall_seconds": round(ing["wall_seconds"], 2), "derived_seconds": round(derived, 2),
                                      "derived_share": round(derived / ing["wall_seconds"], 4),
                                      "bytes_read": ing["bytes_read"], "timings": ing["timings"]}  # fmt: skip
        result.update(measure(db, args.reps))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        if "first_ingest" in result:
            f = result["first_ingest"]
            print(f"first ingest {f['wall_seconds']} s; file index and signals {f['derived_seconds']} s "
                  f"({f['derived_share']:.1%})")
        print(f"{result['file_touches']:,} file touches, {result['threads']:,} threads")
        for k, v in {**result["files"], **result["signals"]}.items():
            print(f"  {k:<26} p50 {v['p50_ms']:>8.2f} ms  p95 {v['p95_ms']:>8.2f} ms  rows {v['rows']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
