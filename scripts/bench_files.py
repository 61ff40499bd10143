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

    python scripts/bench_files.py --ab 2 --corpus DIR [--json]

measures the index's share of a first ingest by difference, in one window: ``--ab N`` pairs
of first ingests of the same corpus into fresh archives, with the file index and signals and
without them (the ``derived`` triggers dropped, the projector's queue, what it computes as it
writes (``derived.Live``) and the run's refresh skipped), alternated
A B B A A B ... so that a drift in the machine's speed weighs on both arms alike
(``--before TREE``: a third arm, the code of TREE). The share is (median with -
median without) / median with, in wall and in CPU seconds of the child (``wait4``), beside
the ``derived`` phase's share of the wall and, per run, its CPU seconds against the run's
(``process_time`` in the child: on a loaded machine the difference between two runs is
noise, the ratio inside one run much less). Each child ingests with its own tree's code.
The machine's load (``os.getloadavg``) is recorded before and after each run.

    python scripts/bench_files.py --instructions --corpus DIR [--json]
    python scripts/bench_files.py --in-run N --corpus DIR [--json]

counts the same two arms (and an empty home's run, the fixed cost) in instructions under
callgrind (``bench.counted``): one run each, the same count whatever the machine does; it
counts the work the index adds, not the cache misses or I/O of its rows (the seconds do).
``--in-run N`` times the index inside each of N first ingests (``child_ingest_in_run``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# an ``--ab`` child ingests with the code of the tree it is given (``--before``'s or this one)
SRC = Path(sys.argv[2]).resolve() if sys.argv[1:2] in (["--_ingest-timed"], ["--_ingest-in-run"]) else REPO
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(SRC / "scripts"))

from bench import child_ingest, counted_all, percentile, run_ingest  # noqa: E402

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


def child_ingest_bare(db: str, home: str) -> None:
    """A first ingest without the file index and signals: the baseline of ``--ab``."""
    from archive.ingest import engine

    conn = open_db(db).conn
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'derived_%'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    conn.close()
    engine.refresh_derived = lambda conn, *args: 0  # type: ignore[assignment]
    from archive import projection

    if hasattr(projection, "queue_derived"):  # a tree whose projector queues the threads it writes (m138)
        projection.queue_derived = lambda conn, threads: None  # type: ignore[assignment]
    if hasattr(engine, "Live"):  # and computes their rows as it writes them (derived.Live)
        engine.Live = lambda conn: None  # type: ignore[assignment]
    child_ingest(db, home)


def child_ingest_timed(db: str, home: str, bare: bool) -> None:
    """A first ingest (``bare``: without the file index and signals) whose report also
    gives the CPU seconds of the whole run and of its ``derived`` phase (``process_time``)."""
    import contextlib
    import io

    from archive.ingest import engine

    refresh, cpu = engine.refresh_derived, {"derived": 0.0}

    def timed(conn: Any, *args: Any) -> int:  # (a tree whose engine hands it the run's ``derived.Live``)
        t = time.process_time()
        try:
            return refresh(conn, *args)
        finally:
            cpu["derived"] += time.process_time() - t

    engine.refresh_derived = timed  # type: ignore[assignment]
    started, out = time.process_time(), io.StringIO()
    with contextlib.redirect_stdout(out):
        (child_ingest_bare if bare else child_ingest)(db, home)
    report = json.loads(out.getvalue())
    report["process_cpu_seconds"] = time.process_time() - started
    report["derived_cpu_seconds"] = cpu["derived"]
    print(json.dumps(report))


def child_ingest_in_run(db: str, home: str) -> None:
    """A first ingest whose report also gives what the index took inside it: the wall time
    of its five entry points (``derived.Live.message``, ``flush`` and ``write``, the
    projector's ``queue_derived``, the run's ``refresh_derived``; none calls another), read
    with ``perf_counter_ns`` (not ``process_time``, a system call of 0.5-1 us here, which
    inflated the first in-run figures), less what the wrapper itself takes between its two
    clock reads (a no-op through the same wrapper), against the run's wall and CPU time."""
    import contextlib
    import io

    from archive import derived, projection
    from archive.ingest import engine

    spent: dict[str, int] = {}
    calls: dict[str, int] = {}
    clock = time.perf_counter_ns

    def wrap(owner: Any, name: str, key: str) -> None:
        fn = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] = spent.get(key, 0) + clock() - t
                calls[key] = calls.get(key, 0) + 1

        setattr(owner, name, timed)

    class _NoOp:
        def call(self, *args: Any) -> None:
            return None

    wrap(_NoOp, "call", "noop")
    probe = _NoOp()
    for _ in range(100_000):
        probe.call(1, 2, 3)
    wrapper_ns = spent.pop("noop") / calls.pop("noop")
    for owner, name in ((derived.Live, "message"), (derived.Live, "flush"), (derived.Live, "write"),
                        (projection, "queue_derived"), (engine, "refresh_derived")):  # fmt: skip
        wrap(owner, name, name)
    cpu0, wall0, out = time.process_time(), time.perf_counter(), io.StringIO()
    with contextlib.redirect_stdout(out):
        child_ingest(db, home)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    report = json.loads(out.getvalue())
    index = (sum(spent.values()) - wrapper_ns * sum(calls.values())) / 1e9
    report["in_run"] = {"index_seconds": index, "wall_seconds": wall, "cpu_seconds": cpu, "share_wall": index / wall,
                        "share_cpu": index / cpu, "wrapper_ns": wrapper_ns, "calls": calls,
                        "seconds": {k: v / 1e9 for k, v in spent.items()}}  # fmt: skip
    print(json.dumps(report))


def _child(cmd: list[str]) -> dict[str, Any]:
    """One ingest in a child process: its report, with its CPU seconds (``wait4``)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, cwd=REPO)
    assert proc.stdout is not None
    data = proc.stdout.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"ingest failed: {cmd}")
    out = json.loads(data)
    out["cpu_seconds"] = usage.ru_utime + usage.ru_stime
    return out


def ab(corpus: Path, pairs: int, work: Path, say: Any, before: Path | None = None) -> dict[str, Any]:
    """``pairs`` rounds of first ingests of ``corpus``: with the index, without it (and with
    the index as the code of the tree ``before`` builds it), alternated."""
    here = str(Path(__file__).resolve())
    arms = {"with": [sys.executable, here, "--_ingest-timed", str(REPO), "with"],
            "without": [sys.executable, here, "--_ingest-timed", str(REPO), "without"]}  # fmt: skip
    if before:
        arms = {"before": [sys.executable, here, "--_ingest-timed", str(before.resolve()), "with"], **arms}
    runs: dict[str, list[dict[str, Any]]] = {m: [] for m in arms}
    for i in range(pairs):
        order = list(arms.items())
        for mode, cmd in order if i % 2 == 0 else order[::-1]:  # A B, B A, A B ...
            db = work / f"ab-{mode}-{i}.db"
            load = os.getloadavg()[0]
            ing = _child([*cmd, str(db), str(corpus)])
            touches = open_db(db).conn.execute("SELECT count(*) FROM file_touches").fetchone()[0]
            r = {"wall_seconds": round(ing["wall_seconds"], 2), "cpu_seconds": round(ing["cpu_seconds"], 2),
                 "derived_seconds": round(ing["timings"].get("derived", 0.0), 2),
                 "derived_cpu_seconds": round(ing["derived_cpu_seconds"], 2),
                 "derived_cpu_share": round(ing["derived_cpu_seconds"] / ing["process_cpu_seconds"], 4),
                 "load": round(load, 1), "load_after": round(os.getloadavg()[0], 1), "file_touches": touches}  # fmt: skip
            runs[mode].append(r)
            say(f"  {mode:<8} wall {r['wall_seconds']:8.2f} s  cpu {r['cpu_seconds']:7.2f} s  derived {r['derived_seconds']:6.2f} s"
                f"  derived cpu {r['derived_cpu_seconds']:6.2f} s ({r['derived_cpu_share']:.1%})  touches {touches}"
                f"  load {load:.1f}-{r['load_after']:.1f}")  # fmt: skip
            for f in work.glob(f"ab-{mode}-{i}.db*"):
                f.unlink()
    res: dict[str, Any] = {"corpus": str(corpus), "runs": runs}
    for k in ("wall_seconds", "cpu_seconds"):
        med = {m: statistics.median(r[k] for r in rs) for m, rs in runs.items()}
        res[k] = {m: round(v, 2) for m, v in med.items()}
        res[k]["share"] = {m: round((med[m] - med["without"]) / med[m], 4) for m in med if m != "without"}
    # per round, with against without in the same round: a slow drift of the machine cancels
    res["cpu_round_differences"] = {m: [round(a["cpu_seconds"] - b["cpu_seconds"], 2) for a, b in zip(rs, runs["without"])]
                                     for m, rs in runs.items() if m != "without"}  # fmt: skip
    res["derived_share"] = {m: round(statistics.median(r["derived_seconds"] / r["wall_seconds"] for r in rs), 4)
                            for m, rs in runs.items() if m != "without"}  # fmt: skip
    # the phase's CPU against its own run's: both measured in one process, so the machine's
    # load moves them together (the difference with the runs without it does not cancel it)
    res["derived_cpu_share"] = {m: [r["derived_cpu_share"] for r in rs] for m, rs in runs.items() if m != "without"}
    return res


def ab_counted(corpus: Path, work: Path, say: Any) -> dict[str, Any]:
    """The index's share of a first ingest in instructions (``bench.counted``: callgrind,
    the same count whatever the machine's load), with it and without it as ``ab`` runs them,
    and an ingest of an empty home (the fixed cost of a run) to give the share net of it."""
    here = str(Path(__file__).resolve())
    empty = work / "empty-home"
    empty.mkdir(exist_ok=True)
    arms = {"with": ("with", corpus), "without": ("without", corpus), "empty": ("with", empty)}
    say("the index's share in instructions: with it, without it, an empty home (under callgrind)")
    runs = counted_all({k: [sys.executable, here, "--_ingest-timed", str(REPO), mode, str(work / f"count-{k}.db"), str(home)]
                        for k, (mode, home) in arms.items()})  # fmt: skip
    ins = {k: r["instructions"] for k, r in runs.items()}
    index = ins["with"] - ins["without"]
    return {"corpus": str(corpus), "instructions": ins, "share": round(index / ins["with"], 4),
            "share_net": round(index / (ins["with"] - ins["empty"]), 4),
            "derived_cpu_share": round(runs["with"]["derived_cpu_seconds"] / runs["with"]["process_cpu_seconds"], 4)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--_ingest-bare"]:
        child_ingest_bare(argv[1], argv[2])
        return 0
    if argv[:1] == ["--_ingest-in-run"]:
        child_ingest_in_run(argv[2], argv[3])
        return 0
    if argv[:1] == ["--_ingest-timed"]:
        child_ingest_timed(argv[3], argv[4], bare=argv[2] == "without")
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1GB", help="corpus size to generate when --corpus holds none (default 1GB)")
    ap.add_argument("--corpus", type=Path, help="corpus folder (default: a temp folder)")
    ap.add_argument("--db", type=Path, help="archive to measure (ingested from the corpus when absent)")
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--before", type=Path, metavar="TREE", help="with --ab: also ingest with the code of TREE (a git archive)")
    ap.add_argument("--ab", type=int, metavar="N", help="only the index's share: N pairs of ingests of --corpus, with and without it")
    ap.add_argument("--in-run", type=int, metavar="N",
                    help="only the index's share timed inside each of N first ingests of --corpus (its entry points' wall time)")
    ap.add_argument("--instructions", action="store_true",
                    help="only the index's share, counted in instructions under callgrind (one run of each arm: deterministic)")
    args = ap.parse_args(argv)
    say = (lambda m: print(m, file=sys.stderr)) if args.json else print  # noqa: E731
    if args.in_run:
        if not args.corpus:
            ap.error("--in-run needs --corpus")
        runs = []
        with tempfile.TemporaryDirectory(dir=args.db.parent if args.db else None) as tmp:
            for i in range(args.in_run):
                r = _child([sys.executable, str(Path(__file__).resolve()), "--_ingest-in-run", str(REPO),
                            str(Path(tmp) / f"in-run-{i}.db"), str(args.corpus)])["in_run"]  # fmt: skip
                say(f"  run {i + 1}: the index {r['index_seconds']:.2f} s of {r['wall_seconds']:.2f} s wall "
                    f"({r['share_wall']:.2%}), {r['share_cpu']:.2%} of {r['cpu_seconds']:.2f} s CPU")
                runs.append(r)
        res = {"corpus": str(args.corpus), "runs": runs,
               "share_wall": statistics.median(r["share_wall"] for r in runs),
               "share_cpu": statistics.median(r["share_cpu"] for r in runs)}  # fmt: skip
        print(json.dumps(res, indent=2) if args.json else
              f"the index's share timed inside a first ingest, median of {len(runs)}: {res['share_wall']:.2%} of the wall, "
              f"{res['share_cpu']:.2%} of the CPU")
        return 0
    if args.instructions:
        if not args.corpus:
            ap.error("--instructions needs --corpus")
        with tempfile.TemporaryDirectory(dir=args.db.parent if args.db else None) as tmp:
            res = ab_counted(args.corpus, Path(tmp), say)
        if args.json:
            print(json.dumps(res, indent=2))
        else:
            i = res["instructions"]
            print(f"the index's share of a first ingest in instructions: {res['share']:.2%} of the run "
                  f"({(i['with'] - i['without']) / 1e9:.3f} G of {i['with'] / 1e9:.3f} G), {res['share_net']:.2%} net of an "
                  f"empty home's {i['empty'] / 1e9:.3f} G; its derived phase {res['derived_cpu_share']:.2%} of the run's CPU")
        return 0
    if args.ab:
        if not args.corpus:
            ap.error("--ab needs --corpus")
        with tempfile.TemporaryDirectory(dir=args.db.parent if args.db else None) as tmp:
            res = ab(args.corpus, args.ab, Path(tmp), say, args.before)
        if args.json:
            print(json.dumps(res, indent=2))
        else:
            for m in res["derived_share"]:
                print(f"{m}: the index's share of a first ingest, by difference with the runs without it: wall "
                      f"{res['wall_seconds']['share'][m]:.1%}, CPU {res['cpu_seconds']['share'][m]:.1%} (per round "
                      + ", ".join(f"{d:+.2f} s" for d in res["cpu_round_differences"][m]) + "); "
                      f"its derived phase {res['derived_share'][m]:.1%} of the wall, of the CPU "
                      + ", ".join(f"{x:.1%}" for x in res["derived_cpu_share"][m]))
        return 0
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
