"""Integer message keys against text ones (issue 37): the per-row statements of a first ingest
replayed from an ingested archive into the current schema and into one whose rows name their
message by an integer key.

The rows of ``messages``, ``message_occurrences``, ``blocks`` and ``usage`` are read from
``ARCHIVE`` in the order ingest wrote them and written again, in flush-sized batches (the
statements ``Projector.flush`` runs, the same pragmas as ingest, a commit every ten batches),
into two fresh archives:

* ``text``: the current schema (``messages.id`` a TEXT primary key, every other table naming the
  message by that text);
* ``int``: ``messages.mid INTEGER PRIMARY KEY`` beside ``id TEXT UNIQUE``, and ``blocks``,
  ``message_occurrences`` and ``usage`` naming the message by ``mid`` (given as the row is
  built, as a counter would be, not looked up). Indexes and triggers are the same.

The report gives each statement's CPU seconds, the total, the bytes the process wrote while
replaying (``/proc/self/io``'s ``wchar``: the WAL pages the commits wrote, and any checkpoint)
and the database's size once checkpointed. Rounds alternate the two variants.
Nothing here changes the project's code paths: it measures a candidate.

    python scripts/bench_keys.py ARCHIVE.db [--rounds 2] [--batch 1500] [--work DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from archive.db import open_db
from archive.ingest.options import _INGEST_PRAGMAS
from archive.projection import (
    _BLOCK_COLS,
    _BLOCK_INSERT,
    _MSG_COLS,
    _MSG_MARKS,
    _USAGE_UPSERT,
)

USAGE_COLS = ("key", "thread_id", "message_id", "provider", "model", "ts", "input_tokens", "output_tokens",
              "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "extra", "source_id", "generation", "offset")  # fmt: skip
TABLES = ("messages", "message_occurrences", "blocks", "usage")


def _cols(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


def load(archive: Path, batch: int) -> dict[str, Any]:
    """The rows of ``archive`` in ingest order, cut into batches of ``batch`` messages, each with
    the blocks, occurrences and usage naming its messages."""
    src = sqlite3.connect(archive)
    ocols = _cols(src, "message_occurrences")
    # the columns and statements Projector.flush writes (projection.py)
    msgs = src.execute(f"SELECT {_MSG_COLS} FROM messages ORDER BY rowid").fetchall()
    mid_of = {m[0]: i + 1 for i, m in enumerate(msgs)}
    n = max(1, (len(msgs) + batch - 1) // batch)
    batches: list[dict[str, list[Any]]] = [{"m": [], "b": [], "o": [], "u": []} for _ in range(n)]

    def at(message_id: Any) -> dict[str, list[Any]]:
        i = mid_of.get(message_id)
        return batches[(i - 1) // batch] if i else batches[-1]

    for m in msgs:
        at(m[0])["m"].append(m)
    for b in src.execute(f"SELECT {_BLOCK_COLS} FROM blocks ORDER BY id"):
        at(b[0])["b"].append(b)
    for o in src.execute("SELECT * FROM message_occurrences ORDER BY rowid"):
        at(o[4])["o"].append(o)
    for u in src.execute(f"SELECT {', '.join(USAGE_COLS)} FROM usage ORDER BY rowid"):
        at(u[2])["u"].append(u)
    out = {
        "ocols": ocols, "mid_of": mid_of, "batches": batches,
        "sources": src.execute("SELECT id, uid, provider, kind FROM sources").fetchall(),
        "tcols": _cols(src, "threads"), "threads": src.execute("SELECT * FROM threads").fetchall(),
        "counts": {t: src.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES},
    }  # fmt: skip
    src.close()
    return out


def _written() -> int:
    """Bytes this process has written (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/io") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("wchar:"))
    except (OSError, StopIteration):
        return 0


def integer_keys(conn: sqlite3.Connection) -> None:
    """The four tables made again with integer message keys, their indexes and triggers as they were."""
    objs = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE tbl_name IN (?, ?, ?, ?) AND sql IS NOT NULL", TABLES
    ).fetchall()
    conn.execute("PRAGMA foreign_keys = OFF")
    for t in ("blocks", "message_occurrences", "usage", "messages"):
        conn.execute(f"DROP TABLE {t}")
    changes = {
        "messages": ("id TEXT PRIMARY KEY", "mid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE"),
        "blocks": ("message_id TEXT NOT NULL REFERENCES messages(id)", "message_id INTEGER NOT NULL REFERENCES messages(mid)"),
        "message_occurrences": ("message_id TEXT NOT NULL", "message_id INTEGER NOT NULL"),
        "usage": ("message_id TEXT,", "message_id INTEGER,"),
    }
    for typ, name, sql in objs:
        if typ == "table":
            old, new = changes[name]
            assert old in sql, (name, sql)
            conn.execute(sql.replace(old, new, 1))
    for typ, _name, sql in objs:
        if typ in ("index", "trigger"):
            conn.execute(sql)
    conn.execute("PRAGMA foreign_keys = ON")


def replay(rows: dict[str, Any], variant: str, path: Path) -> dict[str, Any]:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    conn = open_db(path).conn
    if variant == "int":
        integer_keys(conn)
    for pragma in (*_INGEST_PRAGMAS, "temp_store = MEMORY"):  # as ingest's file loop (engine.py)
        conn.execute(f"PRAGMA {pragma}")
    ocols, mid_of = rows["ocols"], rows["mid_of"]
    conn.execute("BEGIN")
    conn.executemany("INSERT INTO sources (id, uid, provider, kind) VALUES (?, ?, ?, ?)", rows["sources"])
    tcols = rows["tcols"]
    conn.executemany(f"INSERT INTO threads ({', '.join(tcols)}) VALUES ({', '.join('?' * len(tcols))})", rows["threads"])
    conn.execute("COMMIT")
    if variant == "int":
        insert_m = f"INSERT INTO messages (mid, {_MSG_COLS}) VALUES (?, {_MSG_MARKS})"
        upsert = _USAGE_UPSERT.replace("m.id = ", "m.mid = ")
    else:
        insert_m = f"INSERT INTO messages ({_MSG_COLS}) VALUES ({_MSG_MARKS})"
        upsert = _USAGE_UPSERT
    insert_o = f"INSERT OR IGNORE INTO message_occurrences ({', '.join(ocols)}) VALUES ({', '.join('?' * len(ocols))})"
    secs = dict.fromkeys(("messages", "occurrences", "blocks", "usage", "commit"), 0.0)

    def timed(name: str, sql: str, args: list[Any]) -> None:
        t = time.process_time()
        conn.executemany(sql, args)
        secs[name] += time.process_time() - t

    started, wrote = time.process_time(), _written()
    conn.execute("BEGIN")
    for i, b in enumerate(rows["batches"]):
        if variant == "int":  # built before the clock runs for each statement, as ingest builds its rows
            m = [(mid_of[r[0]], *r) for r in b["m"]]
            bl = [(mid_of[r[0]], *r[1:]) for r in b["b"]]
            oc = [(*r[:4], mid_of.get(r[4], 0), *r[5:]) for r in b["o"]]
            us = [(*r[:2], mid_of.get(r[2]) if r[2] else None, *r[3:]) for r in b["u"]]
        else:
            m, bl, oc, us = b["m"], b["b"], b["o"], b["u"]
        timed("messages", insert_m, m)
        timed("occurrences", insert_o, oc)
        timed("blocks", _BLOCK_INSERT, bl)
        timed("usage", upsert, us)
        if i % 10 == 9:
            t = time.process_time()
            conn.execute("COMMIT")
            conn.execute("BEGIN")
            secs["commit"] += time.process_time() - t
    t = time.process_time()
    conn.execute("COMMIT")
    secs["commit"] += time.process_time() - t
    statements = sum(secs.values())
    total_cpu = time.process_time() - started
    wal = _written() - wrote
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return {"variant": variant, "statements_cpu": statements, "cpu": total_cpu, "seconds": secs,
            "written_bytes": wal, "db_bytes": path.stat().st_size, "counts": counts}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archive", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1500, help="messages a flush (default 1500)")
    ap.add_argument("--work", type=Path, help="where the two archives go (default: a temp dir, removed)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    rows = load(a.archive, a.batch)
    with tempfile.TemporaryDirectory() as tmp:
        work = a.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        runs: list[dict[str, Any]] = []
        for r in range(a.rounds):
            for v in ("text", "int") if r % 2 == 0 else ("int", "text"):
                runs.append(out := {"round": r, **replay(rows, v, work / f"keys-{v}.db")})
                if not a.json:
                    s = out["seconds"]
                    print(f"round {r} {v:4s}: statements {out['statements_cpu']:6.2f} s CPU ("
                          + ", ".join(f"{k} {x:.2f}" for k, x in s.items())
                          + f"), wrote {out['written_bytes'] / 1e6:.1f} MB, archive {out['db_bytes'] / 1e6:.1f} MB", flush=True)
    med = {v: statistics.median(x["statements_cpu"] for x in runs if x["variant"] == v) for v in ("text", "int")}
    report = {"archive": str(a.archive), "rows": rows["counts"], "runs": runs, "median_statements_cpu": med,
              "ratio": med["int"] / med["text"] if med["text"] else None}  # fmt: skip
    if a.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"median statement CPU: text {med['text']:.2f} s, int {med['int']:.2f} s ({report['ratio']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
