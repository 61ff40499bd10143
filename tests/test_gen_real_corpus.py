"""scripts/gen_real_corpus.py: every copy of the real fixtures is found and read by ingest
(named as each vendor names its files), and each copy of a session whose id is a UUID is a
session of its own (nothing deduplicated across copies), and so is each copy of a Cline CLI
session (ids ``<epoch ms>_<characters>``, replaced too) and of a Mistral Vibe 2.x session (its folder
named by the start of its UUID). Other ids that are not UUIDs (clm's
content-hash ids, a fixture's trimmed id) may stay shared between copies."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
MS_ID = re.compile(r"(?<![0-9A-Za-z])[0-9]{13}_[0-9a-z]{5,6}(?![0-9A-Za-z])")  # Cline CLI's
SHORT_ID = re.compile(r"[0-9a-f]{8}")


def ingest_corpus(tmp: Path, name: str, size: str) -> tuple[Path, sqlite3.Connection]:
    home = tmp / name
    subprocess.run([sys.executable, str(SCRIPTS / "gen_real_corpus.py"), str(home), "--size", size],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    db = tmp / f"{name}.db"
    subprocess.run([sys.executable, str(SCRIPTS / "bench.py"), "--_ingest", str(db), str(home)],
                   check=True, capture_output=True, timeout=300, cwd=ROOT)  # fmt: skip
    return home, sqlite3.connect(db)


def figures(home: Path, conn: sqlite3.Connection) -> dict[str, Any]:
    files = [p for p in home.rglob("*") if p.is_file()]
    return {
        "files": len(files),
        "bytes": sum(p.stat().st_size for p in files),
        "paths read": conn.execute("SELECT count(*) FROM source_paths").fetchone()[0],
        "bytes read": conn.execute("SELECT sum(size) FROM source_paths").fetchone()[0],
        "uuid threads": sum(1 for (i,) in conn.execute("SELECT id FROM threads") if UUID.search(i)),
        "ms-id threads": sum(1 for (i,) in conn.execute("SELECT id FROM threads") if MS_ID.search(i)),
        "adapter errors": conn.execute("SELECT count(*) FROM reports WHERE kind = 'adapter_error'").fetchone()[0],
        # Mistral Vibe 2.x: a thread named by the first 8 characters of its session's UUID
        "short-id threads": sum(1 for (i,) in conn.execute("SELECT id FROM threads") if SHORT_ID.fullmatch(i)),
        # folders of sessions the run passed over (a copy named so that no reader takes it)
        "unread": [u["path"] for (p,) in conn.execute("SELECT problems FROM ingest_runs") for u in json.loads(p)["unread"]],
    }


def test_every_copy_is_read_as_a_session_of_its_own(tmp_path):
    one = figures(*ingest_corpus(tmp_path, "one", "1B"))  # the fixtures once
    assert one["files"] > 20 and one["uuid threads"] > 20
    assert one["paths read"] > 20  # (companion files, a subagent's meta.json, are read beside their logs)
    three = figures(*ingest_corpus(tmp_path, "three", f"{2 * one['bytes'] + 1}B"))  # three copies
    assert three["files"] == 3 * one["files"]
    # the copies are named so that discovery finds them: every file read three times over
    assert three["paths read"] == 3 * one["paths read"]
    assert three["bytes read"] == 3 * one["bytes read"] and three["bytes"] == 3 * one["bytes"]
    assert three["uuid threads"] == 3 * one["uuid threads"]
    assert one["ms-id threads"] > 0 and three["ms-id threads"] == 3 * one["ms-id threads"]
    assert three["adapter errors"] == one["adapter errors"] == 0
    assert three["unread"] == one["unread"] == []
    assert one["short-id threads"] > 0 and three["short-id threads"] == 3 * one["short-id threads"]
