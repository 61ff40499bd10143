#!/usr/bin/env python3
"""How far a first ingest is from its floors, and from agentsview, in one run (issue 24).

Per round, each in a child process, interleaved so that the machine's load falls on all:

* ``ingest``: this checkout's first ingest of the corpus (``bench.py``'s child);
* ``sqlite floor``: the tables that ingest wrote, copied into an empty database with the
  same schema by one ``INSERT ... SELECT`` per table in one transaction, the full-text
  index built once at the end, then a checkpoint. No Python at all: the least time any
  writer of these exact tables needs on one core (SQLite takes one writer per database);
* ``producer``: the Python work of the same ingest without a database: read the line
  files, run the adapters, build the rows (``message_columns``, ``block_row``), compress
  the raw lines in 2 MiB batches, run the secret scan over the block text. This is what a
  second process could take off the writer;
* ``agentsview``: ``agentsview sync --full`` on the same corpus (``bench.py --peers``'s
  install).

The issue's target is an ingest in at most half agentsview's time. The report says how much
of that half the SQLite floor leaves to everything else.

    python scripts/bench_floor.py --corpus /tmp/corpus-300m --rounds 3
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pickle
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_spec = importlib.util.spec_from_file_location("bench", REPO / "scripts" / "bench.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

MB = 1e6


# ---------------------------------------------------------------- children


def child_floor(src: str, dst: str) -> None:
    """Copy the finished tables of ``src`` into a new database ``dst`` (see the module doc)."""
    for f in (dst, f"{dst}-wal", f"{dst}-shm"):
        if os.path.exists(f):
            os.unlink(f)
    started = time.perf_counter()
    conn = sqlite3.connect(dst, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -8192")  # the ingest's own setting
    source = sqlite3.connect(f"file:{src}?mode=ro", uri=True)
    objects = source.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "AND type IN ('table', 'index')"
    ).fetchall()
    source.close()
    # an FTS5 table's shadow tables (_data, _idx, _docsize, _config) are made with it
    shadows = {f"{name}_{part}" for kind, name, sql in objects if "VIRTUAL TABLE" in sql.upper()
               for part in ("data", "idx", "docsize", "config", "content")}  # fmt: skip
    objects = [o for o in objects if o[1] not in shadows]
    fts = [name for kind, name, sql in objects if kind == "table" and "VIRTUAL TABLE" in sql.upper()]
    tables = [name for kind, name, sql in objects if kind == "table" and name not in fts]
    for _kind, _name, sql in objects:
        conn.execute(sql)
    conn.execute("ATTACH ? AS o", (src,))
    phases: dict[str, float] = {}
    conn.execute("BEGIN")
    for name in tables:
        t = time.perf_counter()
        conn.execute(f'INSERT INTO main."{name}" SELECT * FROM o."{name}"')
        phases[name] = time.perf_counter() - t
    for name in fts:
        t = time.perf_counter()
        conn.execute(f"INSERT INTO \"{name}\"(\"{name}\") VALUES ('rebuild')")
        phases[f"{name} (rebuilt)"] = time.perf_counter() - t
    t = time.perf_counter()
    conn.execute("COMMIT")
    phases["commit"] = time.perf_counter() - t
    verify_copy(conn, tables, fts)
    conn.execute("DETACH o")
    t = time.perf_counter()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    phases["checkpoint"] = time.perf_counter() - t
    conn.close()
    print(json.dumps({"seconds": time.perf_counter() - started, "phases": phases}))


def verify_copy(conn: sqlite3.Connection, tables: list[str], fts: list[str]) -> None:
    """The copy is whole: each table in ``main`` holds as many rows as in the attached ``o``,
    and each full-text index (external content on ``blocks``) a row per block."""
    for name in tables:
        mine, theirs = (conn.execute(f'SELECT count(*) FROM {db}."{name}"').fetchone()[0] for db in ("main", "o"))
        if mine != theirs:
            raise SystemExit(f"floor copy of {name}: {mine} rows, the ingest wrote {theirs}")
    for name in fts:
        indexed = conn.execute(f'SELECT count(*) FROM main."{name}_docsize"').fetchone()[0]
        blocks = conn.execute("SELECT count(*) FROM main.blocks").fetchone()[0]
        if indexed != blocks:
            raise SystemExit(f"floor copy: {name} indexes {indexed} rows of {blocks} blocks")


def child_producer(home: str) -> None:
    """The ingest's Python work without a database (see the module doc)."""
    from archive import secrets
    from archive.ingest import BATCH_BYTES, discover
    from archive.ingest.reader import _LineReader, _open_stream
    from archive.lines import Codec
    from archive.projection import block_row, message_columns
    from archive.vendors import VENDORS
    from archive.vendors.base import LINES, MessageRow, SourceInfo, stable_id

    env = bench.vendor_env(Path(home))
    codec = Codec()
    t_parse = t_rows = t_pack = t_scan = t_pickle = 0.0
    pickled = 0
    nbytes = skipped = 0
    texts: list[str] = []

    def scan() -> float:
        t = time.perf_counter()
        secrets.find_many(texts)
        texts.clear()
        return time.perf_counter() - t

    started = time.perf_counter()
    cpu = time.process_time()
    for cand in discover(None, list(VENDORS), env, []):
        if cand.kind != LINES:
            skipped += cand.path.stat().st_size if cand.path.exists() else 0
            continue
        adapter = cand.adapter
        parser = adapter.parser(SourceInfo(stable_id(adapter.name, str(cand.path)), adapter.name, str(cand.path)), None)
        batch: list[bytes] = []
        size = 0
        with _open_stream(cand.path) as f:
            reader = _LineReader(f, 0)
            for offset, line in reader:
                if type(line) is not bytes:
                    continue
                t = time.perf_counter()
                rows = list(parser.feed(offset, line)) if line.strip() else []
                t2 = time.perf_counter()
                t_parse += t2 - t
                built: list[Any] = []
                for r in rows:
                    if isinstance(r, MessageRow):
                        built.append(message_columns(r.message))
                        for i, b in enumerate(r.message.content):
                            row = block_row(r.message.id, i, b, None)
                            built.append(row)
                            texts.extend(v for v in (row["text"], row["patch"]) if isinstance(v, str) and v)
                t3 = time.perf_counter()
                t_rows += t3 - t2
                # what a pipe to a writer process would carry: the line and its built rows
                pickled += len(pickle.dumps((offset, line, built), pickle.HIGHEST_PROTOCOL))
                t_pickle += time.perf_counter() - t3
                batch.append(line)
                size += len(line) + 1
                if size >= BATCH_BYTES:
                    t = time.perf_counter()
                    codec.pack(b"\n".join(batch) + b"\n")
                    t_pack += time.perf_counter() - t
                    batch, size = [], 0
                if len(texts) >= secrets.SCAN_BATCH:
                    t_scan += scan()
            nbytes += reader.bytes_read
        if batch:
            t = time.perf_counter()
            codec.pack(b"\n".join(batch) + b"\n")
            t_pack += time.perf_counter() - t
    t_scan += scan()
    print(json.dumps({
        "seconds": time.perf_counter() - started, "cpu_seconds": time.process_time() - cpu, "bytes": nbytes,
        "bytes_not_lines": skipped, "pickled_bytes": pickled,
        "phases": {"adapters": t_parse, "rows": t_rows, "zstd": t_pack, "secret scan": t_scan, "pickle": t_pickle},
    }))  # fmt: skip


# ---------------------------------------------------------------- parent


def _child(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], check=True, capture_output=True, cwd=REPO)
    return json.loads(out.stdout)


def _load() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_floor"]:
        child_floor(argv[1], argv[2])
        return 0
    if argv[:1] == ["--_producer"]:
        child_producer(argv[1])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True, help="a home made by gen_corpus.py or gen_real_corpus.py")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the rounds as JSON too")
    ap.add_argument("--no-peers", action="store_true", help="without agentsview (it installs from PyPI)")
    args = ap.parse_args(argv)
    corpus_bytes = sum(p.stat().st_size for p in args.corpus.rglob("*") if p.is_file() and p.name != "corpus-manifest.json")
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        db, floor_db = Path(tmp) / "ingest.db", Path(tmp) / "floor.db"
        for n in range(1, args.rounds + 1):
            r: dict[str, Any] = {"load_before": _load()}
            for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
                f.unlink(missing_ok=True)
            r["ingest"] = bench.run_ingest(db, args.corpus)
            r["floor"] = _child("--_floor", str(db), str(floor_db))
            r["producer"] = _child("--_producer", str(args.corpus))
            r["agentsview"] = (
                {"ok": False, "error": "not run (--no-peers)"} if args.no_peers
                else bench.run_peer("agentsview", args.corpus, corpus_bytes)
            )  # fmt: skip
            r["load_after"] = _load()
            rounds.append(r)
            print(
                f"round {n}: ingest {r['ingest']['process_seconds']:.1f} s, sqlite floor {r['floor']['seconds']:.1f} s, "
                f"producer {r['producer']['seconds']:.1f} s, agentsview "
                + (f"{r['agentsview']['seconds']:.1f} s" if r["agentsview"].get("ok") else r["agentsview"].get("error", "?"))
                + f" (load {r['load_before']:.1f} -> {r['load_after']:.1f})",
                file=sys.stderr,
            )
    print(report(rounds, corpus_bytes, args.corpus))
    if args.json:
        print(json.dumps(rounds, indent=1))
    return 0


def report(rounds: list[dict[str, Any]], corpus_bytes: int, corpus: Path) -> str:
    med = statistics.median
    ingest = med(r["ingest"]["process_seconds"] for r in rounds)
    floor = med(r["floor"]["seconds"] for r in rounds)
    prod = med(r["producer"]["seconds"] for r in rounds)
    peers = [r["agentsview"]["seconds"] for r in rounds if r["agentsview"].get("ok")]
    lines = [
        (f"corpus {corpus}: {corpus_bytes / MB:,.1f} MB; medians of {len(rounds)} interleaved rounds "
         f"(load {min(r['load_before'] for r in rounds):.1f}-{max(r['load_after'] for r in rounds):.1f})"),
        "",
        "| part | seconds | MB/s | of agentsview's time |",
        "| --- | --- | --- | --- |",
    ]
    av = med(peers) if peers else None

    def row(name: str, s: float) -> str:
        return f"| {name} | {s:.1f} | {corpus_bytes / MB / s:.1f} | " + (f"{s / av:.2f}x |" if av else "- |")

    lines.append(row("first ingest (this checkout, one process)", ingest))
    lines.append(row("SQLite floor: its tables copied, FTS built once, no Python", floor))
    lines.append(row("producer: adapters, rows, zstd, secret scan, pickling the rows; no database", prod))
    if av:
        lines.append(row("agentsview sync --full", av))
        bound = (floor + prod) / 2
        lines += [
            "",
            f"Target (issue 24): ingest <= 0.5x agentsview = {av / 2:.1f} s. The SQLite floor alone takes "
            f"{floor / av:.2f}x of agentsview's time. Floor and producer shared perfectly by two cores: at least "
            f"({floor:.1f} + {prod:.1f}) / 2 = {bound:.1f} s = {bound / av:.2f}x agentsview "
            + ("(under the target)." if bound <= av / 2 else "(over the target: not reachable by splitting this work)."),
        ]
    ph: dict[str, list[float]] = {}
    for r in rounds:
        for part in ("floor", "producer"):
            for k, v in r[part]["phases"].items():
                ph.setdefault(f"{part}: {k}", []).append(v)
    top = sorted(((k, med(v)) for k, v in ph.items()), key=lambda kv: -kv[1])
    lines += ["", "phases (medians, s): " + ", ".join(f"{k} {v:.1f}" for k, v in top if v >= 0.1)]
    timings: dict[str, list[float]] = {}
    for r in rounds:
        for k, v in r["ingest"].get("timings", {}).items():
            timings.setdefault(k, []).append(v)
    lines.append("ingest phases (medians, s): " + ", ".join(f"{k} {med(v):.1f}" for k, v in timings.items()))
    lines.append(f"ingest peak RSS {med(r['ingest']['peak_rss_mb'] for r in rounds):.0f} MB")
    pickled = med(r["producer"]["pickled_bytes"] for r in rounds)
    lines.append(f"rows a writer process would be sent: {pickled / MB:,.1f} MB pickled")
    not_lines = med(r["producer"]["bytes_not_lines"] for r in rounds)
    if not_lines:
        lines.append(f"(the producer reads line files only: {not_lines / MB:.1f} MB of databases and snapshots are not in it)")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
