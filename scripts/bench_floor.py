#!/usr/bin/env python3
"""How far a first ingest is from its floors, and from agentsview, in one run (issues 24, 37).

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
* ``least``: the least work of any store that keeps the guarantees (issue 37 frees the
  store): read and decode every line, zstd the lines and store them, the secret scan, one
  row a message and a block with a primary key only, the FTS5 index over the same text
  built once (``child_least``);
* ``agentsview``: ``agentsview sync --full`` on the same corpus (``bench.py --peers``'s
  install);
* ``halves`` (``--halves``): the corpus's session folders dealt into two homes of about the
  same bytes and files (hard links), each ingested by this checkout into an archive of its
  own, both at once; then the lighter half's tables copied into an empty database as
  ``sqlite floor`` does, the least that merging it into the other would cost. The most a second core gives
  today's per-file code with no change to it: links between sessions of different folders
  are not resolved, and nothing is merged.

Issue 37's target is an ingest at ``--target`` times agentsview's speed (1.5 on the synthetic
corpus, 3 on replicated real sessions). The report says what of that time the floors take:
this store's, and any store's on one core and split perfectly over two.

    python scripts/bench_floor.py --corpus /tmp/corpus-300m --rounds 3
    python scripts/bench_floor.py --corpus /tmp/corpus-real-300m --rounds 3 --target 3
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson

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


def child_least(home: str, archive: str, dst: str) -> None:
    """The least work any archive keeping this one's guarantees must do for the corpus, with
    the store free to change (issue 37), on one core:

    * read every file and decode every JSON line (``orjson``; no adapter, no rows built);
    * keep the lines losslessly: zstd at the ingest's level over 2 MiB batches;
    * the secret scan over the block text (``secrets`` answers the same questions);
    * the packed lines stored, one row a batch;
    * search over every block, tool output included: one row per message and per block in
      tables with a primary key only (no secondary index, no trigger, no usage, lineage or
      provenance), and the FTS5 index over the block text built once at the end.

    The text to scan and index is the ingest's own (read from ``archive`` before the clock
    starts, held in memory: about twice the block text), so the floor indexes exactly what
    the archive makes searchable."""
    from archive import secrets
    from archive.ingest import BATCH_BYTES, discover
    from archive.lines import Codec
    from archive.vendors import VENDORS
    from archive.vendors.base import LINES

    src = sqlite3.connect(f"file:{archive}?mode=ro", uri=True)
    texts = [t for (t,) in src.execute("SELECT text FROM blocks WHERE text IS NOT NULL AND text != ''")]
    messages = src.execute("SELECT id, thread_id, role, ts FROM messages").fetchall()
    blocks = src.execute("SELECT id, message_id, position, type, text FROM blocks").fetchall()
    src.close()
    candidates = list(discover(None, list(VENDORS), bench.vendor_env(Path(home)), []))
    for f in (dst, f"{dst}-wal", f"{dst}-shm"):
        if os.path.exists(f):
            os.unlink(f)
    phases: dict[str, float] = {}
    nbytes = nlines = 0
    codec = Codec()
    started = time.perf_counter()
    cpu = time.process_time()
    t_decode = t_pack = 0.0
    chunks: list[tuple[int, bytes]] = []
    for cand in candidates:
        t = time.perf_counter()
        data = cand.path.read_bytes()
        nbytes += len(data)
        if cand.kind == LINES:
            for line in data.split(b"\n"):
                if line.strip():
                    try:
                        orjson.loads(line)
                    except orjson.JSONDecodeError:
                        pass
                    nlines += 1
        t2 = time.perf_counter()
        chunks += [codec.pack(data[i : i + BATCH_BYTES]) for i in range(0, len(data), BATCH_BYTES)]
        t_decode, t_pack = t_decode + t2 - t, t_pack + time.perf_counter() - t2
    phases["read and decode"], phases["zstd"] = t_decode, t_pack
    t = time.perf_counter()
    for i in range(0, len(texts), secrets.SCAN_BATCH):
        secrets.find_many(texts[i : i + secrets.SCAN_BATCH])
    phases["secret scan"] = time.perf_counter() - t
    python = time.perf_counter() - started
    t = time.perf_counter()
    conn = sqlite3.connect(dst, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA cache_size = -8192")
    conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, codec INTEGER, data BLOB)")
    conn.execute("CREATE TABLE messages (id TEXT PRIMARY KEY, thread_id TEXT, role TEXT, ts TEXT)")
    conn.execute("CREATE TABLE blocks (id INTEGER PRIMARY KEY, message_id TEXT, position INTEGER, type TEXT, text TEXT)")
    conn.execute("CREATE VIRTUAL TABLE blocks_fts USING fts5(text, content='blocks', content_rowid='id')")
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO chunks (codec, data) VALUES (?, ?)", chunks)
    conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?)", messages)
    conn.executemany("INSERT INTO blocks VALUES (?, ?, ?, ?, ?)", blocks)
    conn.execute("COMMIT")
    phases["rows"] = time.perf_counter() - t
    t = time.perf_counter()
    conn.execute("BEGIN")
    conn.execute("INSERT INTO blocks_fts(blocks_fts) VALUES ('rebuild')")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    phases["fts"] = time.perf_counter() - t
    seconds = time.perf_counter() - started
    indexed = conn.execute("SELECT count(*) FROM blocks_fts_docsize").fetchone()[0]
    conn.close()
    if indexed != len(blocks):
        raise SystemExit(f"least: blocks_fts indexes {indexed} rows of {len(blocks)} blocks")
    size = os.path.getsize(dst)
    print(json.dumps({
        "seconds": seconds, "cpu_seconds": time.process_time() - cpu,
        "python_seconds": python, "sqlite_seconds": seconds - python, "chunks": len(chunks),
        "bytes": nbytes, "lines": nlines, "messages": len(messages), "blocks": len(blocks),
        "text_bytes": sum(len(x.encode()) for x in texts), "database_bytes": size, "phases": phases,
    }))  # fmt: skip


# ---------------------------------------------------------------- parent


def _units(home: Path, parts: int) -> list[tuple[int, list[Path]]]:
    """``home``'s files in units of about a ``parts``-th of its bytes at most: a folder larger
    than that is opened into its entries, a session file and the folder of the same stem
    beside it (Claude Code's subagents) kept in one unit. (bytes, files) each."""

    def files(p: Path) -> list[Path]:
        return [p] if p.is_file() else [f for f in sorted(p.rglob("*")) if f.is_file()]

    def size(ps: list[Path]) -> int:
        return sum(f.stat().st_size for p in ps for f in files(p))

    limit = size([home]) / parts
    units, out = [[home]], []
    while units:
        unit = units.pop()
        if len(unit) == 1 and unit[0].is_dir() and size(unit) > limit:
            groups: dict[str, list[Path]] = {}
            for entry in sorted(unit[0].iterdir()):
                groups.setdefault(entry.name.split(".")[0] if entry.name[:1] != "." else entry.name, []).append(entry)
            units += groups.values()
        else:
            fs = [f for p in unit for f in files(p)]
            out.append((sum(f.stat().st_size for f in fs), fs))
    return out


def make_halves(home: Path, into: Path) -> tuple[Path, Path]:
    """Two homes under ``into`` sharing ``home``'s files by hard links, the units
    (``_units``) dealt largest first to the lighter home, by their share of the bytes plus
    their share of the files."""
    halves = [into / "half-1", into / "half-2"]
    units = _units(home, 16)
    total_bytes, total_files = sum(u[0] for u in units) or 1, sum(len(u[1]) for u in units) or 1
    load = [0.0, 0.0]
    # bytes and files weigh alike: on real sessions a file's fixed cost is most of its work
    for weight, fs in sorted(((n / total_bytes + len(fs) / total_files, fs) for n, fs in units), key=lambda u: -u[0]):
        i = load.index(min(load))
        load[i] += weight
        for f in fs:
            target = halves[i] / f.relative_to(home)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.link(f, target)
    return halves[0], halves[1]


def run_halves(halves: tuple[Path, Path], dbs: tuple[Path, Path], copy_db: Path) -> dict[str, Any]:
    """Both halves ingested at once, each into its own archive; then the lighter one's tables
    copied (``child_floor``)."""
    for db in dbs:
        for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            f.unlink(missing_ok=True)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(bench.run_ingest, dbs, halves))
    wall = time.perf_counter() - started
    lighter = min(range(2), key=lambda i: runs[i]["process_seconds"])
    copy = _child("--_floor", str(dbs[lighter]), str(copy_db))
    return {"seconds": wall, "each": [r["process_seconds"] for r in runs], "copy_seconds": copy["seconds"]}


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
    if argv[:1] == ["--_least"]:
        child_least(argv[1], argv[2], argv[3])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, required=True, help="a home made by gen_corpus.py or gen_real_corpus.py")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the rounds as JSON too")
    ap.add_argument("--no-peers", action="store_true", help="without agentsview (it installs from PyPI)")
    ap.add_argument("--halves", action="store_true",
                    help="also ingest two halves of the corpus at once, an archive each (the most a second core gives today's code)")
    ap.add_argument("--target", type=float, default=1.5,
                    help="the speed to reach, as a multiple of agentsview's (issue 37: 1.5 synthetic, 3 real)")
    args = ap.parse_args(argv)
    corpus_bytes = sum(p.stat().st_size for p in args.corpus.rglob("*") if p.is_file() and p.name != "corpus-manifest.json")
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-floor-") as tmp:
        db, floor_db, least_db = Path(tmp) / "ingest.db", Path(tmp) / "floor.db", Path(tmp) / "least.db"
        halves = make_halves(args.corpus, Path(tmp)) if args.halves else None
        for n in range(1, args.rounds + 1):
            r: dict[str, Any] = {"load_before": _load()}
            for f in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
                f.unlink(missing_ok=True)
            r["ingest"] = bench.run_ingest(db, args.corpus)
            r["floor"] = _child("--_floor", str(db), str(floor_db))
            r["producer"] = _child("--_producer", str(args.corpus))
            r["least"] = _child("--_least", str(args.corpus), str(db), str(least_db))
            if halves:
                r["halves"] = run_halves(halves, (Path(tmp) / "half-1.db", Path(tmp) / "half-2.db"), floor_db)
            r["agentsview"] = (
                {"ok": False, "error": "not run (--no-peers)"} if args.no_peers
                else bench.run_peer("agentsview", args.corpus, corpus_bytes)
            )  # fmt: skip
            r["load_after"] = _load()
            rounds.append(r)
            print(
                f"round {n}: ingest {r['ingest']['process_seconds']:.1f} s, sqlite floor {r['floor']['seconds']:.1f} s, "
                f"producer {r['producer']['seconds']:.1f} s, least {r['least']['seconds']:.1f} s, agentsview "
                + (f"{r['agentsview']['seconds']:.1f} s" if r["agentsview"].get("ok") else r["agentsview"].get("error", "?"))
                + (f", halves at once {r['halves']['seconds']:.1f} s (+ copy {r['halves']['copy_seconds']:.1f} s)" if halves else "")
                + f" (load {r['load_before']:.1f} -> {r['load_after']:.1f})",
                file=sys.stderr,
            )
    print(report(rounds, corpus_bytes, args.corpus, args.target))
    if args.json:
        print(json.dumps(rounds, indent=1))
    return 0


def report(rounds: list[dict[str, Any]], corpus_bytes: int, corpus: Path, target: float = 1.5) -> str:
    med = statistics.median
    ingest = med(r["ingest"]["process_seconds"] for r in rounds)
    floor = med(r["floor"]["seconds"] for r in rounds)
    prod = med(r["producer"]["seconds"] for r in rounds)
    least = med(r["least"]["seconds"] for r in rounds)
    least_py = med(r["least"]["python_seconds"] for r in rounds)
    least_sql = med(r["least"]["sqlite_seconds"] for r in rounds)
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
    lines.append(row("least work, any store: read, decode, zstd, scan, one row a message and block, FTS", least))
    lines.append(row("  of which Python (read, decode, zstd, scan)", least_py))
    lines.append(row("  of which SQLite (rows, FTS built once, checkpoint)", least_sql))
    if "halves" in rounds[0]:
        both = med(r["halves"]["seconds"] for r in rounds)
        copy = med(r["halves"]["copy_seconds"] for r in rounds)
        lines.append(row("two halves at once, an archive each (this checkout, two processes, nothing merged)", both))
        lines.append(row("  and the lighter half's tables copied (the least a merge costs)", both + copy))
    if av:
        lines.append(row("agentsview sync --full", av))
        goal = av / target
        bound = (floor + prod) / 2
        split = max(least_py, least_sql)
        lines += [
            "",
            (f"Target (issue 37): ingest at {target:g}x agentsview's speed = {goal:.1f} s; this checkout "
             f"{av / ingest:.2f}x ({ingest / goal:.1f}x the time allowed)."),
            (f"* This store: its SQLite floor alone takes {floor / goal:.2f}x the time allowed; floor and producer "
             f"shared perfectly by two cores {bound:.1f} s = {bound / goal:.2f}x it."),
            f"* Any store: the least work takes {least:.1f} s on one core ({least / goal:.2f}x the time allowed) and "
            f"{split:.1f} s split perfectly over two ({split / goal:.2f}x). "
            + ("The floor does not stop the target: what stands between is this archive's own work per line and row "
               f"({ingest - least:.1f} s above the least)." if split <= goal
               else "The target is under the floor of any store on this machine."),
        ]
    ph: dict[str, list[float]] = {}
    for r in rounds:
        for part in ("floor", "producer", "least"):
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
