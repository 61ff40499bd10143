#!/usr/bin/env python3
"""Benchmark ``sesh-archive push`` (issue 25) on a synthetic corpus (scripts/gen_corpus.py).

One run: a local ingest of the corpus into a fresh archive (the reference: push should be
faster than it); a first push into a fresh PostgreSQL server (tests/pg_server.py, on this
machine, fsync on as a real server has it) with MB/s over the corpus bytes and rows/s; a
no-op re-push (target < 1 s); an append of about 1 MiB to 10 files, ingested and pushed;
then ``--with-sources`` (the source layer on top of the canonical rows); the database sizes.

    python scripts/bench_push.py --corpus /tmp/corpus-200m --size 200MB [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from pg_server import PgServer, missing

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.push import PushOptions, push

MB = 1e6


def corpus_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and p.name != "corpus-manifest.json")


def use_home(home: Path) -> None:
    for k in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "SESH_ARCHIVE_DB"):
        os.environ.pop(k, None)
    os.environ["HOME"] = str(home)


LOADS: list[float] = []


def timed(fn: Any) -> tuple[float, Any]:
    """(seconds, result); the 1-minute load average after the step goes to LOADS (the machine is shared)."""
    t = time.perf_counter()
    out = fn()
    LOADS.append(round(os.getloadavg()[0], 1))
    return time.perf_counter() - t, out


def run(args: argparse.Namespace) -> dict[str, Any]:
    why = missing()
    if why:
        raise SystemExit(f"cannot benchmark push: {why}")
    if not args.corpus.exists():
        subprocess.run([sys.executable, str(REPO / "scripts" / "gen_corpus.py"), str(args.corpus), "--size", args.size],
                       check=True)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="sesh-bench-push-", dir=args.workdir))
    home = work / "home"
    shutil.copytree(args.corpus, home)
    size = corpus_bytes(home)
    use_home(home)
    db_path = work / "archive.db"
    out: dict[str, Any] = {"corpus_bytes": size}
    load0 = os.getloadavg()[0]
    t, s = timed(lambda: ingest_paths(open_db(db_path), None, IngestOptions()))
    out["ingest"] = {"seconds": round(t, 2), "mb_per_s": round(size / MB / t, 2), "messages": s.messages_added,
                     "load_before": round(load0, 1), "load_after": LOADS[-1]}  # fmt: skip
    server = PgServer(fsync=True).start()
    try:
        url = server.new_database()
        t, s = timed(lambda: push(open_db(db_path), url))
        rows = sum(s.rows.values())
        out["push"] = {"seconds": round(t, 2), "mb_per_s": round(size / MB / t, 2), "rows": rows,
                       "rows_per_s": round(rows / t), "batches": s.batches, "rows_by_table": s.rows,
                       "vs_ingest": round(out["ingest"]["seconds"] / t, 2), "load_after": LOADS[-1]}  # fmt: skip
        t, s = timed(lambda: push(open_db(db_path), url))
        out["noop_push"] = {"seconds": round(t, 3), "rows": sum(s.rows.values())}
        subprocess.run([sys.executable, str(REPO / "scripts" / "gen_corpus.py"), str(home), "--append-mb", "1",
                        "--append-files", "10"], check=True, capture_output=True)  # fmt: skip
        t_ing, _ = timed(lambda: ingest_paths(open_db(db_path), None, IngestOptions()))
        t, s = timed(lambda: push(open_db(db_path), url))
        out["append_1mib"] = {"ingest_seconds": round(t_ing, 3), "push_seconds": round(t, 3), "rows": sum(s.rows.values())}
        t, s = timed(lambda: push(open_db(db_path), url, PushOptions(with_sources=True)))
        out["with_sources"] = {"seconds": round(t, 2), "lines": s.rows.get("source_lines", 0),
                               "mb_per_s": round(size / MB / t, 2)}  # fmt: skip
        import psycopg

        with psycopg.connect(url) as conn:
            out["server_bytes"] = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
        out["archive_bytes"] = db_path.stat().st_size
    finally:
        server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, type=Path, help="synthetic home folder (generated if absent)")
    ap.add_argument("--size", default="200MB", help="corpus size when generating (default 200MB)")
    ap.add_argument("--workdir", type=Path, help="where the archive and the corpus copy go (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of text")
    args = ap.parse_args()
    r = run(args)
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print(f"corpus            {r['corpus_bytes'] / MB:,.1f} MB")
    print(f"local ingest      {r['ingest']['seconds']:.1f} s  {r['ingest']['mb_per_s']:.2f} MB/s  {r['ingest']['messages']:,} messages"
          f"  (load {r['ingest']['load_before']} -> {r['ingest']['load_after']})")
    p = r["push"]
    print(f"first push        {p['seconds']:.1f} s  {p['mb_per_s']:.2f} MB/s  {p['rows']:,} rows ({p['rows_per_s']:,}/s), "
          f"{p['batches']} batches; {p['vs_ingest']:.2f}x the ingest's speed (load after {p['load_after']})")
    print(f"no-op push        {r['noop_push']['seconds']:.3f} s  ({r['noop_push']['rows']} rows)")
    a = r["append_1mib"]
    print(f"append ~1 MiB     ingest {a['ingest_seconds']:.2f} s, push {a['push_seconds']:.2f} s ({a['rows']:,} rows)")
    w = r["with_sources"]
    print(f"--with-sources    {w['seconds']:.1f} s  {w['lines']:,} lines")
    print(f"sizes             archive {r['archive_bytes'] / MB:,.0f} MB, server database {r['server_bytes'] / MB:,.0f} MB")


if __name__ == "__main__":
    main()
