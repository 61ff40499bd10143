#!/usr/bin/env python3
"""What the file index and the signals answer on an archive, recomputed from scratch, as
lines to compare between two versions of the code (issue 42: a faster index must give the
same answers).

    python scripts/derived_digest.py ARCHIVE [--src TREE] [--out FILE] [--as-ingested]

Empties ``file_touches``, queues every thread, recomputes ``file_touches`` and
``thread_signals`` with the code of ``TREE`` (default: this checkout; e.g. a ``git archive``
of the base commit), then writes the table's schema (its indexes), every ``file_touches``
row and every ``thread_signals`` row, sorted, and the JSON of ``files`` (``file_history``,
limit 50, with diffs) for the most touched names, their first paths, two-component suffixes
and an extension glob. The archive is not changed (the recomputation is rolled back).
Prints the sha256 of the output and the recomputation's CPU seconds. Compare two runs with
``diff`` or by their digests. ``--as-ingested``: the rows as they are, not recomputed (what
an ingest computed while it wrote the threads, ``derived.Live``, against a recomputation).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive", type=Path)
    ap.add_argument("--src", type=Path, default=REPO, help="the tree whose archive/ package recomputes")
    ap.add_argument("--out", type=Path, help="write the lines here")
    ap.add_argument("--queries", type=int, default=20, help="how many of the most touched names to query")
    ap.add_argument("--as-ingested", action="store_true", help="digest the rows as they are, without recomputing")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.src.resolve()))
    from archive import derived
    from archive.db import open_db
    from archive.file_touches import file_history

    db = open_db(args.archive)
    conn = db.conn
    conn.execute("BEGIN IMMEDIATE")
    cpu = time.process_time()
    if args.as_ingested:
        n = conn.execute("SELECT count(*) FROM thread_signals").fetchone()[0]
    else:
        conn.execute("DELETE FROM file_touches")  # from scratch, as a first ingest fills it
        conn.execute("INSERT OR IGNORE INTO _derived_dirty SELECT id FROM threads")
        n = derived.refresh(conn)
    cpu = time.process_time() - cpu
    h = hashlib.sha256()
    out = args.out.open("w") if args.out else None

    def emit(line: str) -> None:
        h.update(line.encode("utf-8", "surrogatepass") + b"\n")
        if out:
            out.write(line + "\n")

    for r in conn.execute("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'file_touches' ORDER BY name"):
        emit("schema\t" + json.dumps(r))
    for r in conn.execute("SELECT * FROM file_touches ORDER BY thread_id, message_id, position, seq"):
        emit("touch\t" + json.dumps(r))
    for r in conn.execute("SELECT * FROM thread_signals ORDER BY thread_id"):
        emit("signal\t" + json.dumps(r))
    names = [r[0] for r in conn.execute("SELECT name FROM file_touches GROUP BY name ORDER BY count(*) DESC, name LIMIT ?",
                                        (args.queries,))]  # fmt: skip
    queries: list[str] = []
    for name in names:
        path = conn.execute("SELECT min(path) FROM file_touches WHERE name = ?", (name,)).fetchone()[0]
        queries += [name, path, "/".join(path.rsplit("/", 2)[-2:])]
        if "." in name:
            queries.append("*." + name.rsplit(".", 1)[-1])
    for q in dict.fromkeys(queries):
        emit("files\t" + q + "\t" + json.dumps(file_history(db, q, limit=50), sort_keys=True))
    touches = conn.execute("SELECT count(*) FROM file_touches").fetchone()[0]
    conn.execute("ROLLBACK")
    if out:
        out.close()
    print(json.dumps({"threads": n, "file_touches": touches, "cpu_seconds": round(cpu, 2), "sha256": h.hexdigest()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
