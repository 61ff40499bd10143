"""Write an OpenCode database the way OpenCode 1.18.33 does, from a recorded session document.

    python tests/opencode_writer.py DOCUMENT DB [--delay SECONDS] [--from N] [--to N]
                                    [--pause-after N --until FILE]

Each event line of DOCUMENT (the archive's per-session document of ``event`` rows) is
written in its own transaction, as the client writes it: the row of the ``part``,
``message`` or ``session`` table updated in place (an upsert of the new version) and the
event appended (``event_sequence`` bumped), in WAL mode, with ``--delay`` seconds between
transactions. The ``data`` column gets the recorded bytes exactly; ``--pause-after N`` stops
after N events until FILE exists (at most a minute), so a test sees the database part-way
whatever the machine's load. Used by tests/test_opencode.py as the second process of an ingest
while the client writes.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import time
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS event_sequence (aggregate_id text PRIMARY KEY, seq integer NOT NULL, owner_id text);
CREATE TABLE IF NOT EXISTS event (id text PRIMARY KEY, aggregate_id text NOT NULL, seq integer NOT NULL,
    type text NOT NULL, data text NOT NULL);
CREATE TABLE IF NOT EXISTS session (id text PRIMARY KEY, data text NOT NULL);
CREATE TABLE IF NOT EXISTS message (id text PRIMARY KEY, session_id text NOT NULL, data text NOT NULL);
CREATE TABLE IF NOT EXISTS part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
    data text NOT NULL);
"""


def events(document: Path) -> list[tuple[str, int, str, str, bytes]]:
    """(aggregate, seq, id, type, data bytes) of each line; ``data`` cut out of the line as it is."""
    out = []
    for line in document.read_bytes().splitlines():
        d = json.loads(line)
        raw = line[line.index(b',"data":') + len(b',"data":'):-1]
        out.append((d["aggregate"], d["seq"], d["id"], d["type"], raw))
    return out


def write(conn: sqlite3.Connection, aggregate: str, seq: int, eid: str, kind: str, raw: bytes) -> None:
    data = json.loads(raw)
    text = raw.decode()
    conn.execute("BEGIN IMMEDIATE")
    if kind.startswith("message.part.updated"):
        p = data["part"]
        conn.execute("INSERT OR REPLACE INTO part VALUES (?, ?, ?, ?)", (p["id"], p["messageID"], aggregate, json.dumps(p)))
    elif kind.startswith("message.updated"):
        i = data["info"]
        conn.execute("INSERT OR REPLACE INTO message VALUES (?, ?, ?)", (i["id"], aggregate, json.dumps(i)))
    elif kind.startswith("session."):
        conn.execute("INSERT OR REPLACE INTO session VALUES (?, ?)", (aggregate, json.dumps(data.get("info"))))
    conn.execute("INSERT INTO event_sequence VALUES (?, ?, NULL) ON CONFLICT(aggregate_id) DO UPDATE SET seq = excluded.seq",
                 (aggregate, seq))
    conn.execute("INSERT INTO event VALUES (?, ?, ?, ?, ?)", (eid, aggregate, seq, kind, text))
    conn.execute("COMMIT")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("document", type=Path)
    ap.add_argument("db", type=Path)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--from", dest="start", type=int, default=0)
    ap.add_argument("--to", dest="stop", type=int, default=None)
    ap.add_argument("--pause-after", type=int, default=None)
    ap.add_argument("--until", type=Path, default=None)
    a = ap.parse_args()
    conn = sqlite3.connect(a.db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA)
    for n, ev in enumerate(events(a.document)[a.start:a.stop], 1):
        write(conn, *ev)
        if n == a.pause_after and a.until:
            deadline = time.monotonic() + 60
            while not a.until.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        if a.delay:
            time.sleep(a.delay)
    conn.close()


if __name__ == "__main__":
    main()
