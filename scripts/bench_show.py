#!/usr/bin/env python3
"""Peak memory and time of reading the archive's largest thread: ``show`` (text folded and
``--full``, Markdown, JSON) and, with ``--emit TARGET``, ``emit``.

    python scripts/bench_show.py ARCHIVE.db [--thread ID] [--emit codex] [--emit-exact claude-code] [--json]

Each command runs in a child process (``python -m archive``, output to /dev/null; an emit
writes its files under a temporary folder, removed after); its peak
RSS comes from ``wait4``, so the figure is the command's own, imports included. Without
``--thread`` the thread with the most messages is measured. A tool for people, not imported
by the package: the README's benchmark table quotes its output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def largest_thread(db: Path) -> tuple[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = conn.execute("SELECT thread_id, count(*) FROM messages GROUP BY 1 ORDER BY 2 DESC LIMIT 1").fetchone()
    finally:
        conn.close()
    if row is None:
        raise SystemExit(f"{db}: no messages")
    return row[0], row[1]


def measure(args: list[str]) -> dict[str, float]:
    out_dir = None
    if "emit" in args:  # a session with subagents is several files: -o DIR
        out_dir = tempfile.mkdtemp(prefix="bench-emit-")
        args = [*args, "-o", out_dir]
    try:
        return _measure(args)
    finally:
        if out_dir:
            shutil.rmtree(out_dir, ignore_errors=True)


def _measure(args: list[str]) -> dict[str, float]:
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(os.devnull, "wb") as null:
        proc = subprocess.Popen([sys.executable, "-m", "archive", *args], stdout=null, stderr=subprocess.PIPE, env=env)
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(args)} failed: {err.decode(errors='replace')[-500:]}")
    return {"seconds": round(time.perf_counter() - started, 2), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("db", type=Path)
    ap.add_argument("--thread", help="thread id (default: the one with the most messages)")
    ap.add_argument("--emit", action="append", default=[], metavar="TARGET", help="also time emit --to TARGET")
    ap.add_argument("--emit-exact", action="append", default=[], metavar="TARGET",
                    help="also time emit --to TARGET without --rebuild-format (the byte-exact copy, for the thread's own vendor)")
    ap.add_argument("--no-show", action="store_true", help="only the emit runs")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    tid, n = (a.thread, -1) if a.thread else largest_thread(a.db)
    db = ["--db", str(a.db)]
    runs = {
        "show": ["show", tid, "--no-pager"],
        "show --full": ["show", tid, "--full", "--no-pager"],
        "show --format markdown --full": ["show", tid, "--format", "markdown", "--full"],
        "show --format json": ["show", tid, "--format", "json"],
    }
    if a.no_show:
        runs = {}
    for target in a.emit:
        runs[f"emit --to {target}"] = ["emit", tid, "--to", target, "--rebuild-format"]
    for target in a.emit_exact:
        runs[f"emit --to {target} (byte-exact)"] = ["emit", tid, "--to", target]
    out = {"thread": tid, "messages": n, "runs": {name: measure(db + args) for name, args in runs.items()}}
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"thread {tid} ({n:,} messages)")
        for name, r in out["runs"].items():
            print(f"  {name:32s} {r['peak_rss_mb']:8.1f} MB peak RSS  {r['seconds']:7.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
