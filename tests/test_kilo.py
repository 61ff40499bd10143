"""Kilo Code CLI (issue 36): OpenCode's readers and emitter serve it under its own name.
Its database (``kilo.db``, ``KILO_DB``, channel builds' ``kilo-<channel>.db``) is read as
OpenCode's is; rows, usage keys and provenance name ``kilo``; ``emit --to kilo`` writes what
``kilo import`` reads (the real client resumes it: tests/test_clients_kilo.py)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from pathlib import Path

import orjson
import pytest

from archive.db import dump_tables, open_db
from archive.emit import emit_thread
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.vendors import get
from archive.vendors.layouts import LAYOUTS
from ingest_helpers import NEVER_IDLE
from opencode_writer import SCHEMA, events, write

KILO = Path(__file__).parent / "fixtures" / "kilo" / "session.jsonl"
OPENCODE = Path(__file__).parent / "fixtures" / "opencode" / "bash.jsonl"
ADAPTER = get("kilo")


def make_db(path: Path, document: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA)
    for ev in events(document):
        write(conn, *ev)
    conn.close()
    # written a minute ago: a file changed within the last instant is looked at again on the
    # next run (its mtime is not trusted yet), which would make the rerun's dump differ
    old = time.time() - 60
    os.utime(path, (old, old))


def test_where_kilo_keeps_its_databases(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local" / "share" / "kilo"
    assert ADAPTER.default_roots({}, home) == [data]
    assert ADAPTER.default_roots({"KILO_DB": "/elsewhere/kilo.db"}, home) == [Path("/elsewhere/kilo.db"), data]
    assert ADAPTER.default_roots({"KILO_DB": "kilo-beta.db"}, home) == [data]  # a name in the data folder
    for name in ("kilo.db", "kilo-beta.db", "kilo-dev.db"):
        assert ADAPTER.classify(data / name) == "records"
    assert ADAPTER.classify(data / "opencode.db") is None and get("opencode").classify(data / "kilo.db") is None
    assert "kilo" not in {layout.name for layout in LAYOUTS}  # no longer named as unread


def test_detect_tells_kilo_from_opencode() -> None:
    kilo, opencode = KILO.read_bytes()[:65536], OPENCODE.read_bytes()[:65536]
    assert ADAPTER.detect(kilo) and not ADAPTER.detect(opencode)
    assert get("opencode").detect(kilo)  # the same rows: Kilo goes first in VENDORS


def test_default_location_rerun_and_restore(tmp_path: Path) -> None:
    """A home holding kilo.db and OpenCode's opencode.db: each session is its own vendor's
    thread, usage keys name the vendor, a rerun reads nothing, restore is byte-exact."""
    home = tmp_path / "home"
    make_db(home / ".local" / "share" / "kilo" / "kilo.db", KILO)
    make_db(home / ".local" / "share" / "opencode" / "opencode.db", OPENCODE)
    env = {"HOME": str(home)}
    db = open_db(tmp_path / "a.db")
    diff = home / ".local" / "share" / "kilo" / "storage" / "session_diff" / f"{events(KILO)[0][0]}.json"
    diff.parent.mkdir(parents=True)
    diff.write_text("[]")  # what 7.7.7 writes beside kilo.db: bookkeeping, not named as unread
    first = ingest_paths(db, None, IngestOptions(providers=("kilo", "opencode"), env=env))
    assert first.failed == 0 and first.files_changed == 2 and not first.unread
    threads = dict(db.execute("SELECT id, provider FROM threads").fetchall())
    kilo_session, opencode_session = events(KILO)[0][0], events(OPENCODE)[0][0]
    assert threads == {kilo_session: "kilo", opencode_session: "opencode"}
    keys = {k.split(":")[0] for (k,) in db.execute("SELECT key FROM usage")}
    assert keys == {"kilo", "opencode"}
    assert db.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (kilo_session,)).fetchone()[0] > 5
    before = dump_tables(db)
    again = ingest_paths(db, None, IngestOptions(providers=("kilo", "opencode"), env=env))
    assert again.files_changed == 0 and again.lines == 0 and dump_tables(db) == before
    digests = {r.sha256 for r in restore(db, tmp_path / "out") if r.path.name.endswith(".jsonl")}
    assert hashlib.sha256(KILO.read_bytes()).hexdigest() in digests


def test_kilo_db_named_by_kilo_db(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "kilo-nightly.db"
    make_db(elsewhere, KILO)
    db = open_db(tmp_path / "a.db")
    s = ingest_paths(db, None, IngestOptions(providers=("kilo",), env={"HOME": str(tmp_path / "home"),
                                                                        "KILO_DB": str(elsewhere)}))
    assert s.failed == 0 and s.files_changed == 1
    assert db.execute("SELECT provider FROM threads").fetchall() == [("kilo",)]


@pytest.mark.parametrize("source", [KILO, OPENCODE])
def test_emit_to_kilo_writes_what_kilo_import_reads(tmp_path: Path, source: Path) -> None:
    """Kilo's own thread keeps its ids and responses; an OpenCode thread is written under
    Kilo's folder and command too."""
    db = open_db(tmp_path / "a.db")
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    ingest_paths(db, [copy], NEVER_IDLE)
    thread = events(source)[0][0]
    out = emit_thread(db, thread, "kilo")
    (name, data), = out.files.items()
    assert name == f"kilo/kilo-import/{thread}.json"
    exported = orjson.loads(data)
    assert exported["info"]["id"] == thread
    hint = out.resume_hint or ""
    assert hint.startswith("kilo import ") and f"kilo --session {thread}" in hint and "opencode import" not in hint
    if source == KILO:
        finishes = [p["id"] for m in exported["messages"] for p in m["parts"] if p["type"] == "step-finish"]
        recorded = [orjson.loads(raw)["part"]["id"] for _a, _s, _e, _k, raw in events(source)
                    if b'"type":"step-finish"' in raw]
        assert finishes == recorded  # the same responses, by the same ids (usage keys kilo:<part>)


def test_opencode_files_in_a_folder_given_by_hand_stay_opencode(tmp_path):
    """Kilo's files have OpenCode's names and layout: in a folder walk (files taken by name),
    only those below a ``kilo`` data folder, or a ``kilo*.db``, are Kilo's."""
    from archive.ingest import IngestOptions, ingest_paths

    legacy = Path(__file__).parent / "fixtures" / "recorded" / "opencode-0.1.174"
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [legacy], IngestOptions(idle_seconds=10**9))
    providers = {r[0] for r in db.execute("SELECT DISTINCT provider FROM threads")}
    assert providers == {"opencode"}
    kilo = get("kilo")
    assert kilo.classify(tmp_path / "kilo" / "storage" / "session" / "info" / "ses_x.json") == \
        get("opencode").classify(tmp_path / "opencode" / "storage" / "session" / "info" / "ses_x.json")
