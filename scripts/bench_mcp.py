#!/usr/bin/env python3
"""Latency of the MCP server's tool calls (issue 39): search and session pages, p50 and p95.

    python scripts/bench_mcp.py --size 1GB [--corpus DIR] [--db ARCHIVE] [--reps 5] [--json]

Generates the synthetic corpus (scripts/gen_corpus.py) when DIR holds none, ingests it
into ARCHIVE when that does not exist (as scripts/bench.py does: a child process, HOME =
the corpus), then starts the real ``sesh-archive mcp`` on stdio and drives it with the
SDK's client, timing each call end to end (request, tool, JSON result, reply):

* search: the corpus's marker words and common words (the FTS query set of bench.py),
  plain words and a vendor filter, 2,000-token results;
* session pages: read_session of the largest thread (first, middle and last page) and of
  the first page of 10 other threads, 4,000-token pages;
* the other tools once each (list_sessions, session_overview, file_sessions, usage).

The first call of each kind is a warm-up (page cache, price tables) and is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
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

from bench import COMMON, MARKERS, percentile, run_ingest  # noqa: E402

from archive.db import open_readonly  # noqa: E402


def _threads(db: Path) -> tuple[tuple[str, int], list[str]]:
    """The largest thread (id, messages) and 10 others spread over the listing."""
    conn = open_readonly(db).conn
    rows = conn.execute("SELECT thread_id, count(*) FROM messages GROUP BY 1 ORDER BY 2 DESC").fetchall()
    conn.close()
    step = max(len(rows) // 10, 1)
    return (rows[0][0], rows[0][1]), [r[0] for r in rows[1::step]][:10]


async def _measure(db: Path, reps: int) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "archive", "--db", str(db), "mcp", "--utc"])
    (big, n), others = _threads(db)
    times: dict[str, list[float]] = {"search": [], "read_session": []}
    sizes: dict[str, list[int]] = {"search": [], "read_session": []}
    async with Client(params, mode="legacy") as c:

        async def call(kind: str, name: str, args: dict[str, Any], count: bool = True) -> dict[str, Any]:
            t = time.perf_counter()
            r = await c.call_tool(name, args)
            dt = time.perf_counter() - t
            text = "".join(x.text for x in r.content if getattr(x, "type", "") == "text")
            if r.is_error:
                raise SystemExit(f"{name} {args}: {text}")
            if count:
                times.setdefault(kind, []).append(dt)
                if kind in sizes:
                    sizes[kind].append(len(text))
            return json.loads(text)

        await call("search", "search", {"query": "warmup"}, count=False)
        await call("read_session", "read_session", {"session": others[0]}, count=False)
        queries = [{"query": q} for q in (*MARKERS, *COMMON)] + [{"query": q, "vendor": "codex"} for q in COMMON[:3]]
        found = {}
        for _ in range(reps):
            for q in queries:
                r = await call("search", "search", {**q, "max_tokens": 2000})
                found[q["query"]] = r["sessions_found"]
        pages = [{"session": big, "start": s} for s in (0, n // 2, max(n - 20, 0))] + [{"session": t} for t in others]
        for _ in range(reps):
            for p in pages:
                await call("read_session", "read_session", {**p, "max_tokens": 4000})
        for name, args in (("list_sessions", {}), ("session_overview", {"session": big}), ("usage", {"by": "model"}),
                           ("file_sessions", {"path": "README.md"})):  # fmt: skip
            await call(name, name, args)

    def stat(xs: list[float]) -> dict[str, float]:
        return {"calls": len(xs), "p50_ms": percentile(xs, 0.5) * 1000, "p95_ms": percentile(xs, 0.95) * 1000,
                "max_ms": max(xs) * 1000}  # fmt: skip

    return {
        "largest_thread": {"id": big, "messages": n},
        "search": {**stat(times["search"]), "median_result_chars": statistics.median(sizes["search"]),
                   "sessions_found": found},
        "read_session": {**stat(times["read_session"]), "median_result_chars": statistics.median(sizes["read_session"])},
        "once_ms": {k: v[0] * 1000 for k, v in times.items() if k not in ("search", "read_session")},
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GB", help="corpus size to generate when --corpus holds none (default 1GB)")
    ap.add_argument("--corpus", type=Path, help="corpus folder (default: a temp folder)")
    ap.add_argument("--db", type=Path, help="archive to measure (ingested from the corpus when absent)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    def say(msg: str) -> None:
        print(f"bench_mcp: {msg}", file=sys.stderr, flush=True)

    work = Path(tempfile.mkdtemp(prefix="sesh-bench-mcp-"))
    db = args.db or work / "bench.db"
    out: dict[str, Any] = {"size": args.size}
    if not db.exists():
        corpus = args.corpus or work / "corpus"
        if not (corpus / "corpus-manifest.json").exists():
            say(f"generating a {args.size} corpus at {corpus}")
            subprocess.run([sys.executable, str(REPO / "scripts" / "gen_corpus.py"), str(corpus), "--size", args.size],
                           check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        say(f"ingesting {corpus} into {db}")
        ing = run_ingest(db, corpus)
        out["ingest_seconds"] = ing["process_seconds"]
        out["corpus_bytes"] = ing.get("bytes_read")
    out["db_bytes"] = db.stat().st_size
    say(f"measuring {db}")
    out.update(asyncio.run(_measure(db, args.reps)))
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    s, p = out["search"], out["read_session"]
    print(f"archive {out['db_bytes'] / 1e6:,.0f} MB; largest thread {out['largest_thread']['messages']:,} messages")
    print(f"search: p50 {s['p50_ms']:.1f} ms, p95 {s['p95_ms']:.1f} ms, max {s['max_ms']:.1f} ms over {s['calls']} calls "
          f"(median result {s['median_result_chars']:,.0f} chars)")
    print(f"read_session: p50 {p['p50_ms']:.1f} ms, p95 {p['p95_ms']:.1f} ms, max {p['max_ms']:.1f} ms over {p['calls']} calls "
          f"(median page {p['median_result_chars']:,.0f} chars)")
    print("once: " + ", ".join(f"{k} {v:.0f} ms" for k, v in out["once_ms"].items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
