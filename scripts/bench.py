#!/usr/bin/env python3
"""Benchmark sesh-archive on a synthetic corpus (scripts/gen_corpus.py); issue 11.

One run reports: first ingest MB/s and lines/s with a phase breakdown (read, parse,
compress, insert, fts, commit: ``IngestOptions.timings``); a parse-only baseline
(``orjson.loads`` over the same lines) and the ratio to it; a no-op rerun; two append
reruns (1 MiB and 4 MiB over 10 files) showing the rerun scales with the bytes appended;
peak RSS of the ingest (run in a child process, ``os.wait4``); database size over corpus
size; FTS latency p50/p95 over a fixed query set with the marker counts checked against
the corpus manifest; the latency of 30-day usage statistics; the web pages (issue 21) served by ``sesh-archive
serve`` in a child process: the conversation page of the largest thread (first page, and the
last page reached through a block link), the sessions home, usage and search, with the
server's peak RSS (``VmHWM``). ``--web-only DB`` measures only the pages, on an existing
archive. Peak RSS of an ingest whose first file holds each bad value of issue 16 (a usage
count of 2**63, nesting 320 deep, a lone surrogate, a 100 MB line: ``--poison-mb``) and the
rerun after it. ``--peers`` runs agentsview and
claude-code-to-sqlite (each in its own venv under /tmp) over the same corpus and reports
their MB/s, or why they could not run.

The corpus is copied into a work folder first (the append step grows files), unless
``--in-place``. Usage:

    python scripts/bench.py --corpus /tmp/corpus-1g --size 1GB [--peers] [--json]
    python scripts/bench.py --web-only /path/to/archive.db
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from archive.db import open_db, open_readonly  # noqa: E402
from archive.ingest import PHASES, IngestOptions, discover, ingest_paths  # noqa: E402
from archive.ingest.reader import _LineReader, _open_stream  # noqa: E402
from archive.vendors import VENDORS  # noqa: E402
from archive.vendors.base import RECORDS, SNAPSHOT  # noqa: E402
from archive.vendors.layouts import LAYOUTS  # noqa: E402

# The secret rules are imported at the archive's first scan (archive/secrets.py), not with it:
# imported here, before any clock starts, as every other module an ingest uses, so that a
# timed ingest is the ingest's work and not an import (0.05-0.06 s) that moved into it.
import archive.secret_rules  # noqa: E402,F401

MARKERS = ("zanzibar", "velvet thunder", "xylophone", "quokka")
COMMON = ("error", "config", "test", "function", "database", "run", "file", "update")
PEER_DIR = Path("/tmp/sesh-bench-peers")
MB = 1e6


# every variable that could send a run elsewhere than the corpus: each vendor's own (VIBE_HOME,
# KIMI_SHARE_DIR...), those of the layouts the archive names but does not read, and XDG_*
_ELSEWHERE = frozenset(
    {v for a in VENDORS for v in a.env_vars}
    | {v for layout in LAYOUTS for v in layout.env_vars}
    | {"XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"}
)


def vendor_env(home: Path) -> dict[str, str]:
    """The environment of a run over the corpus ``home``: every vendor at its default place
    under it, whatever the caller's variables (a user's VIBE_HOME, a test's) point at."""
    env = {k: v for k, v in os.environ.items() if k not in _ELSEWHERE}
    env["HOME"] = str(home)
    return env


# ---------------------------------------------------------------- child: one ingest


TIMELESS = "SESH_BENCH_TIMELESS"  # set by ``counted``: the child commits by bytes, never by the clock


def child_ingest(db: str, home: str, scan: bool = True, providers: tuple[str, ...] = ()) -> None:
    timings: dict[str, float] = {}
    started = time.perf_counter()
    options = IngestOptions(env=vendor_env(Path(home)), timings=timings, scan_secrets=scan, providers=providers)
    if os.environ.get(TIMELESS):
        options.commit_seconds = float("inf")
    s = ingest_paths(open_db(db), None, options)
    elapsed = time.perf_counter() - started
    out = s.to_dict()
    out["wall_seconds"] = elapsed
    out["timings"] = timings
    print(json.dumps(out))


def run_ingest(db: Path, home: Path, scan: bool = True, providers: tuple[str, ...] = ()) -> dict[str, Any]:
    """Ingest in a child process; its own peak RSS comes from ``wait4``. ``providers``: only
    these vendors' roots are walked (as ``ingest --provider``), the others' files are not seen."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_ingest", str(db), str(home)] + ([] if scan else ["--no-scan"])
    cmd += [f"--providers={','.join(providers)}"] if providers else []
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=REPO)
    assert proc.stdout is not None
    data = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"ingest failed (exit {proc.returncode})")
    out = json.loads(data)
    out["process_seconds"] = wall
    out["peak_rss_mb"] = usage.ru_maxrss / 1024  # kilobytes on Linux
    out["cpu_seconds"] = usage.ru_utime + usage.ru_stime  # the child's own CPU time, imports included
    return out


# ---------------------------------------------------------------- measurements


def counted(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd``, a child printing its JSON report, under callgrind: the report with
    ``instructions``, the instructions the process executed. Unlike seconds, the count is the
    same whatever else the machine does (two runs of the same ingest differ by about 0.3 %),
    so a share measured in instructions needs no rounds; it counts the work, not the cache
    misses and I/O waits a bigger archive adds (the seconds of the same runs tell those).
    ``PYTHONHASHSEED`` is fixed so that set and dict orders, and the work, repeat, and the
    child commits by bytes only (``TIMELESS``): 60x slower under callgrind, its 5-second
    commits fell at other files in each run, and moved a count by up to 0.6% (29 M
    instructions of a 5.1 G run, a tenth of the six newest vendors' share on real
    recordings). About 60x slower than the run itself: a 100 MB first ingest takes 10-15
    minutes."""
    env = {**os.environ, "PYTHONHASHSEED": "0", TIMELESS: "1"}
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
                          capture_output=True, env=env, cwd=REPO)  # fmt: skip
    found = re.search(rb"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"counted run failed (exit {proc.returncode}): {cmd}\n{proc.stderr[-2000:].decode(errors='replace')}")
    out = json.loads(proc.stdout)
    out["instructions"] = int(found.group(1))
    return out


def counted_all(cmds: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """``counted`` for each command, as many at once as there are cores (the counts do not
    depend on it)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        futures = {name: pool.submit(counted, cmd) for name, cmd in cmds.items()}
        return {name: f.result() for name, f in futures.items()}


def corpus_files(home: Path) -> list[Path]:
    return [
        c.path for c in discover(None, list(VENDORS), vendor_env(home), []) if c.kind != SNAPSHOT
    ]


def parse_baseline(home: Path) -> dict[str, Any]:
    """Read every line file and ``orjson.loads`` each line: the floor for any JSON ingest. A
    vendor's database (``RECORDS``: OpenCode, Hermes, OpenClaw) is read whole, not split into
    lines: its bytes count, its line breaks (inside compressed rows, pages) do not."""
    lines = nbytes = 0
    started = time.perf_counter()
    stores = {str(c.path) for c in discover(None, list(VENDORS), vendor_env(home), []) if c.kind == RECORDS}
    for path in corpus_files(home):
        if str(path) in stores:
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    nbytes += len(chunk)
            continue
        with _open_stream(path) as f:
            reader = _LineReader(f, 0)
            for _off, line in reader:
                lines += 1
                try:
                    orjson.loads(line)
                except orjson.JSONDecodeError:
                    pass
            nbytes += reader.bytes_read
    elapsed = time.perf_counter() - started
    return {"bytes": nbytes, "lines": lines, "seconds": elapsed, "mb_per_s": nbytes / MB / elapsed}


def db_bytes(db: Path) -> int:
    conn = open_db(db).conn
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return sum(p.stat().st_size for p in (db, Path(f"{db}-wal")) if p.exists())


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def fts_latency(db: Path, manifest: dict[str, Any], reps: int = 5) -> dict[str, Any]:
    conn = open_readonly(db).conn
    sql = (
        "SELECT b.message_id, snippet(blocks_fts, 0, '[', ']', '...', 12) FROM blocks_fts "
        "JOIN blocks b ON b.id = blocks_fts.rowid WHERE blocks_fts MATCH ? ORDER BY rank LIMIT 20"
    )
    times: list[float] = []
    per_query: dict[str, float] = {}
    for word in MARKERS + COMMON:
        q = f'"{word}"'
        mine = []
        for _ in range(reps):
            t = time.perf_counter()
            conn.execute(sql, (q,)).fetchall()
            mine.append(time.perf_counter() - t)
        per_query[word] = statistics.median(mine) * 1000
        times += mine
    markers = {}
    for m in MARKERS:
        blocks, occ = conn.execute(
            "SELECT count(*), coalesce(sum((length(b.text) - length(replace(lower(b.text), ?, ''))) / ?), 0) "
            "FROM blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid WHERE blocks_fts MATCH ?",
            (m, len(m), f'"{m}"'),
        ).fetchone()
        expected = manifest.get("markers", {}).get(m, {}).get("occurrences")
        # the manifest counts every written copy; a message copied into several files
        # (Claude Code resume/fork) is stored once, so the archive may hold fewer
        markers[m] = {"blocks": blocks, "occurrences": occ, "manifest": expected,
                      "ok": expected is None or 0 < occ <= expected}  # fmt: skip
    conn.close()
    return {
        "queries": len(per_query), "reps": reps,
        "p50_ms": percentile(times, 0.5) * 1000, "p95_ms": percentile(times, 0.95) * 1000,
        "per_query_ms": per_query, "markers": markers,
    }  # fmt: skip


def usage_latency(db: Path, manifest: dict[str, Any], reps: int = 5) -> dict[str, Any]:
    """``sesh-archive stats --since <30 days before the last response> --by day|model|project``,
    timed through the function the command calls (``queries.stats``, prices applied)."""
    from archive.pricing import load_prices
    from archive.queries import stats

    archive = open_readonly(db)
    last = (manifest.get("time_range") or {}).get("last")
    if last is None:
        last = archive.execute("SELECT max(ts) FROM usage").fetchone()[0] or "1970-01-01"
    since = (datetime.fromisoformat(last[:10]) - timedelta(days=29)).date().isoformat()
    prices = load_prices(env={})
    out: dict[str, Any] = {"since": since}
    for by in ("day", "model", "project"):
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            report = stats(archive, by, prices, since=since)
            times.append(time.perf_counter() - t)
        out[by] = {"rows": len(report["rows"]), "responses": report["total"]["responses"],
                   "p50_ms": statistics.median(times) * 1000}  # fmt: skip
    out["total_p50_ms"] = sum(out[n]["p50_ms"] for n in ("day", "model", "project"))
    archive.conn.close()
    return out


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _status_kb(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def web_pages(db: Path, reps: int = 3) -> dict[str, Any]:
    """Each page through the real server, ``reps`` times (the first is cold); issue 21's targets
    are the largest thread's conversation page under 2 s with the server under 200 MB."""
    import urllib.parse
    import urllib.request

    archive = open_readonly(db)
    largest, count = archive.execute(
        "SELECT thread_id, count(*) FROM messages GROUP BY thread_id ORDER BY 2 DESC LIMIT 1").fetchone()  # fmt: skip
    last_block = archive.execute(
        "SELECT b.id FROM messages m JOIN blocks b ON b.message_id = m.id WHERE m.thread_id = ? "
        "ORDER BY m.source_id DESC, m.generation DESC, m.offset DESC, m.sub DESC LIMIT 1", (largest,)).fetchone()[0]  # fmt: skip
    archive.conn.close()
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "archive", "--db", str(db), "serve", "--port", str(port)],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    thread = f"{base}/-/sesh/thread/{urllib.parse.quote(largest, safe='/')}"
    pages = {
        "conversation, first page": thread,
        "conversation, last page (block link)": f"{thread}?block={last_block}",
        "all prompts of the thread": f"{base}/-/sesh/prompts?thread={urllib.parse.quote(largest)}",
        "sessions (home)": base + "/",
        "sessions by cost": base + "/-/sesh/sessions?sort=cost",
        "usage dashboard": base + "/-/sesh/usage",
        "search 'zanzibar'": base + "/-/sesh/search?q=zanzibar",
        "search 'error' by date": base + "/-/sesh/search?q=error&sort=date",
    }
    out: dict[str, Any] = {"thread": largest, "messages": count, "pages": {}}
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/-/versions.json", timeout=5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("serve did not start") from None
                time.sleep(0.2)
        out["rss_start_mb"] = (_status_kb(proc.pid, "VmRSS") or 0) / 1024
        for name, url in pages.items():
            times, size = [], 0
            for _ in range(reps):
                t = time.perf_counter()
                with urllib.request.urlopen(url, timeout=120) as r:
                    size = len(r.read())
                times.append(time.perf_counter() - t)
            out["pages"][name] = {"first_s": times[0], "p50_s": statistics.median(times), "max_s": max(times),
                                  "bytes": size}  # fmt: skip
        out["rss_peak_mb"] = (_status_kb(proc.pid, "VmHWM") or 0) / 1024
    finally:
        proc.terminate()
        proc.wait(10)
    return out


def fmt_web(w: dict[str, Any]) -> list[str]:
    lines = [f"web pages (largest thread {w['thread']}, {w['messages']:,} messages; server RSS "
             f"{w['rss_start_mb']:.0f} MB at start, peak {w['rss_peak_mb']:.0f} MB):"]  # fmt: skip
    for name, p in w["pages"].items():
        lines.append(f"  {name}: first {p['first_s']:.2f} s, p50 {p['p50_s']:.2f} s, max {p['max_s']:.2f} s, "
                     f"{p['bytes'] / MB:.2f} MB")  # fmt: skip
    return lines


def append_and_rerun(db: Path, home: Path, mb: float, files: int) -> dict[str, Any]:
    gen = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "gen_corpus.py"), str(home), "--append-mb", str(mb),
         "--append-files", str(files)],
        capture_output=True, check=True,
    )  # fmt: skip
    del gen
    manifest = json.loads((home / "corpus-manifest.json").read_text())
    appended = manifest["appends"][-1]
    grown = sum((home / r["path"]).stat().st_size for r in appended["files"])
    r = run_ingest(db, home)
    return {
        "appended_bytes": appended["bytes"], "files": len(appended["files"]), "grown_files_bytes": grown,
        "bytes_read": r["bytes_read"], "seconds": r["wall_seconds"], "lines": r["lines"],
    }  # fmt: skip


# ---------------------------------------------------------------- poison values (issue 16)


def _claude_record(sid: str, n: int, role: str, content: Any, usage: dict[str, Any] | None = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        msg.update(model="claude-opus-4-6", id=f"msg_bench{n:04d}", type="message",
                   usage=usage or {"input_tokens": 3, "output_tokens": 10})  # fmt: skip
    return {"parentUuid": f"00000000-0000-4000-8000-{n - 1:012d}" if n else None, "isSidechain": False,
            "userType": "external", "cwd": "/home/dev/poison", "sessionId": sid, "version": "2.1.38",
            "type": role, "message": msg, "uuid": f"00000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-11-30T10:00:{n:02d}.000Z"}  # fmt: skip


def poison_session(path: Path, long_mb: float) -> dict[str, int]:
    """A Claude Code session holding each bad value of issue 16, one per line, between good
    lines: a usage count of 2**63, a tool input nested 320 deep, a lone surrogate escape,
    and a user message of ``long_mb`` MB on one line. Written a piece at a time."""
    sid = "00000000-0000-4000-8000-5e5510000000"
    deep: Any = "leaf"
    for _ in range(320):
        deep = {"a": deep}
    recs = [
        _claude_record(sid, 0, "user", "start"),
        _claude_record(sid, 1, "assistant", [{"type": "text", "text": "ok"}],
                       {"input_tokens": 3, "output_tokens": 2**63}),
        _claude_record(sid, 2, "assistant", [{"type": "tool_use", "id": "toolu_bench_deep", "name": "Bash",
                                              "input": {"deep": deep}}]),
        _claude_record(sid, 3, "user", "cut emoji CUT"),
        _claude_record(sid, 4, "user", "LONG"),
        _claude_record(sid, 5, "assistant", [{"type": "text", "text": "still here"}]),
    ]  # fmt: skip
    long_bytes = int(long_mb * MB)
    with open(path, "wb") as f:
        for r in recs:
            line = json.dumps(r, separators=(",", ":")).encode()  # orjson refuses 320 levels
            line = line.replace(b"CUT", b"\\ud83d")
            if b'"LONG"' in line:
                head, tail = line.split(b"LONG", 1)
                f.write(head)
                block = b"x" * (1 << 20)
                for _ in range(long_bytes // len(block)):
                    f.write(block)
                f.write(b"x" * (long_bytes % len(block)))
                line = tail
            f.write(line + b"\n")
    return {"bytes": path.stat().st_size, "lines": len(recs)}


def poison_run(work: Path, home: Path, long_mb: float, files: int) -> dict[str, Any]:
    """Peak RSS of an ingest whose first file holds every bad value (poison_session), with
    ``files`` corpus files after it (hard links into the corpus copy), then the rerun."""
    phome = work / "poison-home"
    shutil.rmtree(phome, ignore_errors=True)
    first = phome / ".claude" / "projects" / "-0-poison" / "00000000-0000-4000-8000-5e5510000000.jsonl"
    first.parent.mkdir(parents=True)
    planted = poison_session(first, long_mb)
    others = [p for p in corpus_files(home) if "/.claude/" in str(p)][:files]
    for src in others:
        dst = phome / src.relative_to(home)
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(src, dst)
        except OSError:
            shutil.copyfile(src, dst)
    db = work / "poison.db"
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    r = run_ingest(db, phome)
    again = run_ingest(db, phome)
    conn = open_readonly(db).conn
    archived = conn.execute("SELECT count(*) FROM source_paths").fetchone()[0]
    conn.close()
    shutil.rmtree(phome, ignore_errors=True)
    return {
        "long_line_mb": long_mb, "poison_file_bytes": planted["bytes"], "files": len(others) + 1,
        "files_archived": archived, "seconds": r["wall_seconds"], "peak_rss_mb": r["peak_rss_mb"],
        "reports": r["reports"], "failed": r["failed"],
        "rerun_bytes_read": again["bytes_read"], "rerun_peak_rss_mb": again["peak_rss_mb"],
    }  # fmt: skip


# ---------------------------------------------------------------- peers


def _venv_tool(name: str, package: str, exe: str) -> Path:
    venv = PEER_DIR / name
    tool = venv / "bin" / exe
    if not tool.exists():
        PEER_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", package], check=True, capture_output=True)
    return tool


def run_peer(name: str, home: Path, corpus_bytes: int) -> dict[str, Any]:
    try:
        if name == "agentsview":
            tool = _venv_tool(name, "agentsview", "agentsview")
            data_dir = home / ".agentsview"
            existed = data_dir.exists()
            env = vendor_env(home) | {"AGENTSVIEW_NO_DAEMON": "1"}
            cmd, covers = [str(tool), "sync", "--full"], "whole corpus (the vendors it knows)"
        else:
            tool = _venv_tool(name, "claude-code-to-sqlite", "claude-code-to-sqlite")
            data_dir = Path(tempfile.mkdtemp(prefix="cc2sqlite-"))
            existed = False
            env = vendor_env(home)
            cmd = [str(tool), "sessions", str(data_dir / "out.db"), str(home / ".claude" / "projects"),
                   "--include-agents", "--silent"]  # fmt: skip
            covers = "Claude Code files only"
        started = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, timeout=3600, stdin=subprocess.DEVNULL)
        elapsed = time.perf_counter() - started
        if not existed:
            shutil.rmtree(data_dir, ignore_errors=True)
        if proc.returncode != 0:
            return {"ok": False, "error": f"exit {proc.returncode}: {proc.stderr.decode(errors='replace')[-300:]}"}
        return {"ok": True, "seconds": elapsed, "mb_per_s": corpus_bytes / MB / elapsed, "covers": covers}
    except Exception as e:  # a peer that cannot install or run is a result, not a crash
        return {"ok": False, "error": f"{type(e).__name__}: {e}"[:300]}


# ---------------------------------------------------------------- report


def fmt_report(r: dict[str, Any]) -> str:
    f = r["first_ingest"]
    lines = [
        f"corpus: {r['corpus']['bytes'] / MB:,.1f} MB, {r['corpus']['files']} files, {r['corpus']['lines']:,} lines",
        f"first ingest: {f['wall_seconds']:.1f} s, {f['mb_per_s']:.1f} MB/s, {f['lines_per_s']:,.0f} lines/s, "
        f"peak RSS {f['peak_rss_mb']:.0f} MB",
        "  phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in f["timings"].items()),
        f"parse-only baseline: {r['baseline']['mb_per_s']:.1f} MB/s; ingest is {r['ratio_to_baseline']:.2f}x of it",
        f"no-op rerun: {r['noop']['seconds']:.3f} s over {r['noop']['files_seen']} files",
    ]
    for a in r["appends"]:
        lines.append(
            f"append rerun: {a['appended_bytes'] / MB:.2f} MB appended to {a['files']} files "
            f"({a['grown_files_bytes'] / MB:.1f} MB in those files): {a['seconds']:.2f} s, read {a['bytes_read'] / MB:.2f} MB"
        )
    lines.append(f"database after the first ingest: {r['db_bytes'] / MB:,.1f} MB = {r['db_ratio']:.2f}x corpus")
    fts = r["fts"]
    lines.append(f"FTS: p50 {fts['p50_ms']:.1f} ms, p95 {fts['p95_ms']:.1f} ms over {fts['queries']} queries")
    for m, d in fts["markers"].items():
        lines.append(f"  {m!r}: {d['occurrences']} in {d['blocks']} blocks (manifest {d['manifest']}) "
                     f"{'ok' if d['ok'] else 'MISMATCH'}")  # fmt: skip
    u = r["usage_30d"]
    lines.append(f"30-day stats (since {u['since']}, {u['day']['responses']:,} responses): by day "
                 f"{u['day']['p50_ms']:.1f} ms, by model {u['model']['p50_ms']:.1f} ms, "
                 f"by project {u['project']['p50_ms']:.1f} ms")  # fmt: skip
    if "web" in r:
        lines += fmt_web(r["web"])
    if "poison" in r:
        p = r["poison"]
        lines.append(f"poison values in the first of {p['files']} files (with a {p['long_line_mb']:.0f} MB line): "
                     f"peak RSS {p['peak_rss_mb']:.0f} MB, {p['files_archived']} files archived, "
                     f"{p['seconds']:.1f} s; reports " + ", ".join(f"{k} {v}" for k, v in sorted(p["reports"].items()))
                     + f"; rerun read {p['rerun_bytes_read']} bytes")  # fmt: skip
    if "secrets" in r:
        lines.append(fmt_secrets(r["secrets"]))
    if "shares" in r:
        lines.append(fmt_shares(r["shares"]))
    for name, p in r.get("peers", {}).items():
        if p["ok"]:
            lines.append(f"peer {name}: {p['seconds']:.1f} s, {p['mb_per_s']:.1f} MB/s ({p['covers']})")
        else:
            lines.append(f"peer {name}: not run: {p['error']}")
    return "\n".join(lines)


def secrets_compare(work: Path, home: Path, runs: int, say: Any, scanned: dict[str, Any] | None = None) -> dict[str, Any]:
    """First ingests with the secret scan on and off into fresh databases, alternated so the
    machine's noise falls on both; the scan's own phase (``timings["secrets"]``) and the
    difference in wall time, each as a share of the scanning ingest."""
    on, off = ([scanned] if scanned else []), []
    for i in range(runs):
        for scan in ((True, False) if not scanned else (False,)):
            db = work / f"bench-secrets-{'on' if scan else 'off'}-{i}.db"
            for suffix in ("", "-wal", "-shm", ".lock"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            say(f"first ingest, secret scan {'on' if scan else 'off'} ({i + 1}/{runs})")
            (on if scan else off).append(run_ingest(db, home, scan=scan))
            if scan:
                conn = open_db(db).conn
                on[-1]["findings"] = conn.execute("SELECT count(*) FROM secret_findings").fetchone()[0]
                on[-1]["by_rule"] = dict(conn.execute(
                    "SELECT rule, count(*) FROM secret_findings GROUP BY rule ORDER BY 2 DESC").fetchall())  # fmt: skip
                conn.close()
            for suffix in ("", "-wal", "-shm", ".lock"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
    wall_on = statistics.median(r["wall_seconds"] for r in on)
    wall_off = statistics.median(r["wall_seconds"] for r in off)
    phase = statistics.median(r["timings"].get("secrets", 0.0) for r in on)
    return {
        "runs": len(off), "bytes_read": on[0]["bytes_read"],
        "wall_on": [round(r["wall_seconds"], 2) for r in on], "wall_off": [round(r["wall_seconds"], 2) for r in off],
        "median_on": wall_on, "median_off": wall_off, "scan_phase_seconds": phase,
        "scan_phase_share": phase / wall_on, "wall_share": (wall_on - wall_off) / wall_on,
        "findings": on[0].get("findings"), "by_rule": on[0].get("by_rule"),
    }  # fmt: skip


# the vendors issue 35 added: their share of a first ingest is measured by --shares
NEW_VENDORS = ("openclaw", "vibe", "factory-droid", "kimi", "hermes", "cline")


def _fresh(db: Path) -> Path:
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    return db


def _share_arms(work: Path, manifest: dict[str, Any]) -> tuple[dict[str, str], tuple[str, ...], tuple[str, ...], Path]:
    """The corpus's vendor names (manifest key -> provider), every vendor, every vendor but
    ``NEW_VENDORS``, and an empty home (the fixed cost of a run)."""
    names = {v: v.replace("_", "-") for v in manifest["vendors"]}
    everyone = tuple(names.values())
    empty = work / "empty-home"
    empty.mkdir(exist_ok=True)
    return names, everyone, tuple(n for n in everyone if n not in NEW_VENDORS), empty


def vendor_shares(work: Path, home: Path, manifest: dict[str, Any], runs: int, say: Any) -> dict[str, Any]:
    """Each vendor's cost in a first ingest (issue 35: a vendor should cost no more than its
    share of the bytes). Definitions, all first ingests into a fresh database:

    Times are the ingest process's CPU seconds (user + system, ``wait4``): on a shared, loaded
    machine wall time mostly measures the neighbours; a first ingest is one process, so its CPU
    time is its cost (I/O waits aside: the corpus is in the page cache after the first run).

    * ``with`` / ``without``: every vendor of the corpus, and every vendor but the six of
      ``NEW_VENDORS`` (their roots are not walked: the home as it would be without their files,
      the other vendors' bytes the same); alternated ``runs`` times, medians. The six's share
      of the bytes is compared with their share of the time, ``(with - without) / with``.
    * per vendor: an ingest of that vendor alone; its MB/s is its files' bytes (the manifest's
      count, database files included) over its time less the fixed cost of a run (an ingest
      of an empty home: opening and migrating the database). A vendor whose MB/s is below the
      corpus's (all bytes over ``with`` less the same fixed cost) costs more than its share.
      Its cost per message beside it (ms per message added): a store of small rows holds more
      messages a byte, and the generic per-message work (insert, FTS, derive) is paid per row.
      And per file (ms per source read: a file, or a database's session): every source pays
      the same statements, so a vendor that spreads a session over many files (a Mistral Vibe
      3.x session is 17) pays them more often for the same messages.

    Every run is kept (``with_seconds``, ``differences`` pair by pair, each vendor's
    ``runs_seconds``) so the report gives the spread (min / median / max) of ``runs`` rounds,
    each round holding one run of every kind."""
    names, everyone, rest, empty = _share_arms(work, manifest)
    fixed: list[float] = []
    with_: list[float] = []
    without: list[float] = []
    alone: dict[str, list[dict[str, Any]]] = {n: [] for n in everyone}
    for i in range(runs):
        # one round holds every kind of run once (with, without, each vendor alone, the empty
        # home), so a change of load over the session falls on every figure alike
        say(f"shares: round {i + 1}/{runs}: every vendor, all but the new six, each vendor alone")
        everything = run_ingest(_fresh(work / "share.db"), home, providers=everyone)
        with_.append(everything["cpu_seconds"])
        without.append(run_ingest(_fresh(work / "share.db"), home, providers=rest)["cpu_seconds"])
        for n in everyone:
            alone[n].append(run_ingest(_fresh(work / "share.db"), home, providers=(n,)))
        fixed += [run_ingest(_fresh(work / "share.db"), empty, providers=everyone)["cpu_seconds"] for _ in range(3)]
    base = statistics.median(fixed)
    total = sum(d["bytes"] for d in manifest["vendors"].values())
    new_bytes = sum(d["bytes"] for v, d in manifest["vendors"].items() if names[v] in NEW_VENDORS)
    t_with, t_without = statistics.median(with_), statistics.median(without)
    vendors = {}
    for v, d in manifest["vendors"].items():
        runs_ = alone[names[v]]
        cpu = statistics.median(r["cpu_seconds"] for r in runs_)
        net = max(cpu - base, 1e-3)
        messages, files = runs_[0]["messages_added"], runs_[0]["files_changed"]
        vendors[names[v]] = {"bytes": d["bytes"], "seconds": cpu, "runs_seconds": [r["cpu_seconds"] for r in runs_],
                             "messages": messages, "ms_per_message": 1000 * net / max(messages, 1),
                             "files": files, "ms_per_file": 1000 * net / max(files, 1),
                             "wall_seconds": statistics.median(r["wall_seconds"] for r in runs_), "net_seconds": net,
                             "mb_per_s": d["bytes"] / MB / net, "byte_share": d["bytes"] / total}
    _fresh(work / "share.db")
    corpus_mb_s = total / MB / max(t_with - base, 1e-3)
    corpus_ms_message = 1000 * max(t_with - base, 1e-3) / max(everything["messages_added"], 1)
    corpus_ms_file = 1000 * max(t_with - base, 1e-3) / max(everything["files_changed"], 1)
    for d in vendors.values():
        d["ratio_to_corpus"] = d["mb_per_s"] / corpus_mb_s
        d["message_ratio_to_corpus"] = corpus_ms_message / d["ms_per_message"]
    return {
        "runs": runs, "bytes": total, "new_vendors": list(NEW_VENDORS), "new_bytes": new_bytes,
        "fixed_seconds": base, "messages": everything["messages_added"], "corpus_ms_per_message": corpus_ms_message,
        "files": everything["files_changed"], "corpus_ms_per_file": corpus_ms_file,
        "with_seconds": with_, "without_seconds": without,
        "median_with": t_with, "median_without": t_without, "corpus_mb_per_s": corpus_mb_s,
        "differences": [w - o for w, o in zip(with_, without)], "fixed_runs": fixed,
        "new_byte_share": new_bytes / total, "new_time_share": (t_with - t_without) / t_with,
        "new_mb_per_s": new_bytes / MB / max(t_with - t_without, 1e-3), "vendors": vendors,
        "new_alone_seconds": sum(vendors[n]["net_seconds"] for n in NEW_VENDORS if n in vendors),
    }  # fmt: skip


def holdings(db: Path) -> dict[str, int]:
    """What an archive holds, measured as the archive stores it rather than as each vendor's
    files spell it: its sessions (threads, subagents included), its messages, and its content
    (the UTF-8 bytes of every block's text, tool input and tool output). The same
    conversation written by two vendors is the same content and sessions, whatever bytes each
    format spends around it (Claude Code repeats the session id, cwd and version on every
    line; Vibe 3.x keeps 16 snapshot files beside its journal). ``file_bytes``: the bytes of
    the files it read, for comparison."""
    conn = open_readonly(db).conn
    try:
        sessions, messages, content, files = conn.execute(
            "SELECT (SELECT count(*) FROM threads), (SELECT count(*) FROM messages), (SELECT coalesce(sum("
            "coalesce(length(CAST(text AS BLOB)), 0) + coalesce(length(CAST(input AS BLOB)), 0) + "
            "coalesce(length(CAST(output AS BLOB)), 0)), 0) FROM blocks), "
            "(SELECT coalesce(sum(size), 0) FROM source_paths)"
        ).fetchone()
    finally:
        conn.close()
    return {"sessions": sessions, "messages": messages, "content_bytes": content, "file_bytes": files}


def vendor_shares_counted(work: Path, home: Path, manifest: dict[str, Any], say: Any, per_vendor: bool = False) -> dict[str, Any]:
    """The six newest vendors' share of a first ingest in instructions (``counted``): one
    first ingest of every vendor, one of every vendor but the six, one of an empty home (the
    fixed cost: interpreter, imports, migrations), each into a fresh database. Their share
    is ``(with - without) / (with - empty)``, beside their share of what the home holds:
    its file bytes, its messages, its content and its sessions (``holdings``); and per unit
    of each, what they add against what the other vendors cost on average (``without -
    empty`` over the other vendors' holdings). File bytes measure each format's verbosity
    as much as what it holds: the generator writes comparable content a message for every
    vendor, and Claude Code's and Codex's files spend 1.3-2.3x the bytes the newer formats
    spend on a message. ``per_vendor``: each vendor alone as well (net of the empty home), its cost per
    unit of each holding."""
    names, everyone, rest, empty = _share_arms(work, manifest)
    me = [sys.executable, str(Path(__file__).resolve()), "--_ingest"]
    arms = {"with": (home, everyone), "without": (home, rest), "empty": (empty, everyone)}
    if per_vendor:
        arms.update({f"alone:{n}": (home, (n,)) for n in everyone})
    dbs = {k: _fresh(work / f"count-{k.replace(':', '-')}.db") for k in arms}
    cmds = {k: [*me, str(dbs[k]), str(h), f"--providers={','.join(p)}"] for k, (h, p) in arms.items()}
    say("shares in instructions: every vendor, all but the new six, an empty home"
        + (", each vendor alone" if per_vendor else "") + " (under callgrind)")
    runs = counted_all(cmds)
    held = {k: holdings(dbs[k]) for k in arms if k != "empty"}
    for db in dbs.values():
        _fresh(db)
    ins = {k: r["instructions"] for k, r in runs.items()}
    msgs = {k: r["messages_added"] for k, r in runs.items()}
    total = sum(d["bytes"] for d in manifest["vendors"].values())
    new_bytes = sum(d["bytes"] for v, d in manifest["vendors"].items() if names[v] in NEW_VENDORS)
    net_with, net_without = ins["with"] - ins["empty"], ins["without"] - ins["empty"]
    added = ins["with"] - ins["without"]
    new_msgs = msgs["with"] - msgs["without"]
    out: dict[str, Any] = {
        "bytes": total, "new_bytes": new_bytes, "messages": msgs["with"], "new_messages": new_msgs,
        "instructions": {k: ins[k] for k in ("with", "without", "empty")},
        "new_byte_share": new_bytes / total, "new_message_share": new_msgs / max(msgs["with"], 1),
        "new_instruction_share": added / net_with, "new_instruction_share_gross": added / ins["with"],
        "per_mb": {"new": added / (new_bytes / MB), "rest": net_without / ((total - new_bytes) / MB)},
        "per_message": {"new": added / max(new_msgs, 1), "rest": net_without / max(msgs["without"], 1)},
        "wall_seconds_under_callgrind": {k: round(r["wall_seconds"], 1) for k, r in runs.items()},
    }  # fmt: skip
    for unit in ("content_bytes", "sessions"):
        w, wo = held["with"][unit], held["without"][unit]
        out[f"new_{unit}_share"] = (w - wo) / max(w, 1)
        out[f"per_{unit}"] = {"new": added / max(w - wo, 1), "rest": net_without / max(wo, 1)}
    out["holdings"] = {k: held[k] for k in ("with", "without")}
    if per_vendor:
        out["vendors"] = {k.split(":", 1)[1]: {**held[k], "instructions": ins[k] - ins["empty"]}
                          for k in held if k.startswith("alone:")}
    return out


def fmt_shares_counted(s: dict[str, Any]) -> str:
    pm, pmsg = s["per_mb"], s["per_message"]
    return "\n".join([
        f"vendor shares in instructions (callgrind; first ingests less an empty home's {s['instructions']['empty'] / 1e9:.2f} G): "
        f"every vendor {(s['instructions']['with'] - s['instructions']['empty']) / 1e9:.2f} G, all but the new six "
        f"{(s['instructions']['without'] - s['instructions']['empty']) / 1e9:.2f} G",
        f"  the six hold {100 * s['new_byte_share']:.1f}% of the bytes and {100 * s['new_message_share']:.1f}% of the messages "
        f"({s['new_messages']:,} of {s['messages']:,}) and add {100 * s['new_instruction_share']:.1f}% of the instructions "
        f"({100 * s['new_instruction_share_gross']:.1f}% of the whole run's)",
        f"  they add {pm['new'] / 1e6:.0f} M instructions a MB ({pm['new'] / pm['rest']:.2f}x what the other vendors cost a MB) and "
        f"{pmsg['new'] / 1e3:.0f} k a message ({pmsg['new'] / pmsg['rest']:.2f}x the others' per message)",
        f"  they hold {100 * s['new_content_bytes_share']:.1f}% of the content (block text, tool input and output) and "
        f"{100 * s['new_sessions_share']:.1f}% of the sessions: "
        f"{s['per_content_bytes']['new'] / s['per_content_bytes']['rest']:.2f}x the others' instructions a content byte, "
        f"{s['per_sessions']['new'] / s['per_sessions']['rest']:.2f}x a session",
        *_fmt_vendors_counted(s.get("vendors") or {}),
    ])  # fmt: skip


def _fmt_vendors_counted(vendors: dict[str, dict[str, Any]]) -> list[str]:
    if not vendors:
        return []
    lines = ["  each vendor alone (M instructions net of an empty home; per message, per MB of files, per MB of content, "
             "per session):"]
    for name, v in sorted(vendors.items(), key=lambda kv: -kv[1]["instructions"]):
        m = v["instructions"] / 1e6
        lines.append(f"    {name:14s}{' (new)' if name in NEW_VENDORS else '      '} {m:8.1f} M  "
                     f"{m / max(v['messages'], 1):6.2f} /msg  {m / max(v['file_bytes'] / MB, 1e-9):7.0f} /file MB  "
                     f"{m / max(v['content_bytes'] / MB, 1e-9):7.0f} /content MB  {m / max(v['sessions'], 1):6.1f} /session")
    return lines


def _spread(xs: list[float]) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}"


def fmt_shares(s: dict[str, Any]) -> str:
    lines = [
        f"vendor shares (first ingests, CPU seconds, median of {s['runs']}): every vendor {s['median_with']:.1f} s, without the new six "
        f"{s['median_without']:.1f} s; the six hold {100 * s['new_byte_share']:.1f}% of the bytes and take "
        f"{100 * s['new_time_share']:.1f}% of the time ({s['new_mb_per_s']:.1f} MB/s vs the corpus's "
        f"{s['corpus_mb_per_s']:.1f} MB/s, {s['corpus_ms_per_message']:.2f} ms a message, {s['corpus_ms_per_file']:.2f} ms a "
        f"file; fixed cost of a run "
        f"{s['fixed_seconds']:.2f} s)",
    ]
    lines.append(f"  the six alone, each less the fixed cost, sum to {s['new_alone_seconds']:.1f} s "
                 f"({100 * s['new_alone_seconds'] / max(s['median_with'] - s['fixed_seconds'], 1e-3):.1f}% of every "
                 "vendor's run less the fixed cost)")
    if s["runs"] > 1:
        lines.append("  spread (min / median / max, CPU s): " + "; ".join(
            f"{label} {_spread(xs)}" for label, xs in (("every vendor", s["with_seconds"]),
            ("all but the six", s["without_seconds"]), ("difference, pair by pair", s["differences"]))))
    for name, d in sorted(s["vendors"].items(), key=lambda kv: kv[1]["mb_per_s"]):
        new = " (new)" if name in s["new_vendors"] else ""
        lines.append(f"  {name}{new}: {d['bytes'] / MB:,.1f} MB in {d['net_seconds']:.2f} s = {d['mb_per_s']:.1f} MB/s "
                     f"({d['ratio_to_corpus']:.2f}x the corpus's); {d['messages']:,} messages, "
                     f"{d['ms_per_message']:.2f} ms each ({d['message_ratio_to_corpus']:.2f}x the corpus's speed per message); "
                     f"{d['files']:,} files, {d['ms_per_file']:.2f} ms each"
                     + (f"; runs {_spread(d['runs_seconds'])} s" if len(d.get("runs_seconds", ())) > 1 else ""))  # fmt: skip
    return "\n".join(lines)


def fmt_secrets(s: dict[str, Any], corpus: dict[str, Any] | None = None) -> str:
    head = f"corpus: {corpus['bytes'] / MB:,.1f} MB\n" if corpus else ""
    return head + (
        f"secret scan: first ingest {s['median_on']:.1f} s with it, {s['median_off']:.1f} s without "
        f"(median of {s['runs']}; on {s['wall_on']}, off {s['wall_off']}); its phase {s['scan_phase_seconds']:.1f} s "
        f"= {100 * s['scan_phase_share']:.1f}% of the ingest (wall difference {100 * s['wall_share']:.1f}%); "
        f"{s['findings']} findings: " + ", ".join(f"{k} {v}" for k, v in (s["by_rule"] or {}).items())
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_ingest"]:
        chosen = next((a.split("=", 1)[1] for a in argv if a.startswith("--providers=")), "")
        child_ingest(argv[1], argv[2], scan="--no-scan" not in argv, providers=tuple(p for p in chosen.split(",") if p))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, help="synthetic home folder (generated if absent)")
    ap.add_argument("--web-only", type=Path, metavar="DB", help="only time the web pages, on this existing archive")
    ap.add_argument("--size", default="1GB", help="corpus size when generating (default 1GB)")
    ap.add_argument("--peers", action="store_true", help="also run agentsview and claude-code-to-sqlite")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of text")
    ap.add_argument("--in-place", action="store_true", help="append to the corpus itself instead of a copy")
    ap.add_argument("--workdir", type=Path, help="where the database and corpus copy go (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder")
    ap.add_argument("--poison-mb", type=float, default=100,
                    help="size of the long line in the poison run (default 100; 0 skips the run)")
    ap.add_argument("--poison-files", type=int, default=200, help="corpus files ingested after the poisoned one")
    ap.add_argument("--secrets", action="store_true",
                    help="also a first ingest with the secret scan off (issue 23): the scan's share of ingest time")
    ap.add_argument("--secrets-only", action="store_true",
                    help="only the two first ingests, scan on and off, alternated (--secrets-runs pairs)")
    ap.add_argument("--secrets-runs", type=int, default=1, help="pairs of ingests for --secrets-only (default 1)")
    ap.add_argument("--shares", action="store_true",
                    help="also each vendor's MB/s alone and a first ingest without the six newest vendors (issue 35)")
    ap.add_argument("--shares-only", action="store_true", help="only the --shares measurement")
    ap.add_argument("--shares-runs", type=int, default=1, help="with/without pairs for --shares (default 1)")
    ap.add_argument("--shares-instructions", action="store_true",
                    help="only the six newest vendors' share, counted in instructions under callgrind (deterministic, ~60x slower)")
    ap.add_argument("--shares-per-vendor", action="store_true",
                    help="with --shares-instructions: each vendor alone too, its cost per message, file MB, content MB and session")
    args = ap.parse_args(argv)

    def say(msg: str) -> None:
        print(f"bench: {msg}", file=sys.stderr, flush=True)

    if args.web_only:
        web = web_pages(args.web_only)
        print(json.dumps({"web": web}, indent=2) if args.json else "\n".join(fmt_web(web)))
        return 0
    if args.corpus is None:
        ap.error("--corpus is required (or --web-only DB)")

    if not (args.corpus / "corpus-manifest.json").exists():
        say(f"generating a {args.size} corpus at {args.corpus}")
        subprocess.run([sys.executable, str(REPO / "scripts" / "gen_corpus.py"), str(args.corpus), "--size", args.size],
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    work = args.workdir or Path(tempfile.mkdtemp(prefix="sesh-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    home = args.corpus
    if not args.in_place:
        home = work / "home"
        say(f"copying the corpus to {home}")
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(args.corpus, home, symlinks=True)
    manifest = json.loads((home / "corpus-manifest.json").read_text())
    db = work / "bench.db"
    for suffix in ("", "-wal", "-shm", ".lock"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    try:
        report: dict[str, Any] = {"date": datetime.now().isoformat(timespec="seconds"), "python": sys.version.split()[0],
                                  "cpus": os.cpu_count()}  # fmt: skip
        if args.shares_instructions:
            report["shares_instructions"] = vendor_shares_counted(work, home, manifest, say, args.shares_per_vendor)
            print(json.dumps(report, indent=2) if args.json else fmt_shares_counted(report["shares_instructions"]))
            return 0
        if args.shares_only:
            report["shares"] = vendor_shares(work, home, manifest, args.shares_runs, say)
            print(json.dumps(report, indent=2) if args.json else fmt_shares(report["shares"]))
            return 0
        if args.secrets_only:
            report["secrets"] = secrets_compare(work, home, args.secrets_runs, say)
            report["corpus"] = {"bytes": report["secrets"]["bytes_read"], "path": str(args.corpus)}
            print(json.dumps(report, indent=2) if args.json else fmt_secrets(report["secrets"], report["corpus"]))
            return 0
        say("parse-only baseline")
        base = parse_baseline(home)
        report["corpus"] = {"bytes": base["bytes"], "files": len(corpus_files(home)), "lines": base["lines"],
                            "path": str(args.corpus)}  # fmt: skip
        report["baseline"] = base
        say("first ingest")
        first = run_ingest(db, home)
        first["mb_per_s"] = first["bytes_read"] / MB / first["wall_seconds"]
        first["lines_per_s"] = first["lines"] / first["wall_seconds"]
        first["timings"] = {k: round(first["timings"].get(k, 0.0), 3) for k in PHASES}
        report["first_ingest"] = {k: first[k] for k in ("wall_seconds", "process_seconds", "mb_per_s", "lines_per_s",
                                  "bytes_read", "lines", "files_seen", "peak_rss_mb", "timings", "reports")}  # fmt: skip
        report["ratio_to_baseline"] = first["mb_per_s"] / base["mb_per_s"]
        if args.secrets:
            say("first ingest with the secret scan off")
            report["secrets"] = secrets_compare(work, home, 1, say, scanned=first)
        if args.shares:
            report["shares"] = vendor_shares(work, home, manifest, args.shares_runs, say)
        report["db_bytes"] = db_bytes(db)
        report["db_ratio"] = report["db_bytes"] / base["bytes"]
        say("no-op rerun")
        noop = run_ingest(db, home)
        report["noop"] = {"seconds": noop["wall_seconds"], "files_seen": noop["files_seen"],
                          "files_changed": noop["files_changed"], "bytes_read": noop["bytes_read"]}  # fmt: skip
        say("append reruns")
        report["appends"] = [append_and_rerun(db, home, mb, 10) for mb in (1, 4)]
        say("queries")
        report["fts"] = fts_latency(db, manifest)
        report["usage_30d"] = usage_latency(db, manifest)
        say("web pages")
        report["web"] = web_pages(db)
        if args.poison_mb > 0:
            say(f"poison values, with a {args.poison_mb:g} MB line")
            report["poison"] = poison_run(work, home, args.poison_mb, args.poison_files)
        if args.peers:
            report["peers"] = {}
            for name in ("agentsview", "claude-code-to-sqlite"):
                say(f"peer {name}")
                report["peers"][name] = run_peer(name, home, base["bytes"])
    finally:
        if not args.keep:
            if args.workdir is None:
                shutil.rmtree(work, ignore_errors=True)
            elif not args.in_place:
                shutil.rmtree(work / "home", ignore_errors=True)
    print(json.dumps(report, indent=2) if args.json else fmt_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
