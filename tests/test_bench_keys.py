"""Smoke test of scripts/bench_keys.py on a 1 MB corpus: both replayed archives hold every row
of the four tables (checked from the files), the integer variant names messages by integer, and
the report has its rounds."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
TABLES = ("messages", "message_occurrences", "blocks", "usage")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], check=True, capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_both_variants_replay_every_row(tmp_path):
    corpus, db, work = tmp_path / "corpus", tmp_path / "ingest.db", tmp_path / "work"
    run(str(SCRIPTS / "gen_corpus.py"), str(corpus), "--size", "1MB")
    run(str(SCRIPTS / "bench.py"), "--_ingest", str(db), str(corpus))
    src = sqlite3.connect(db)
    expected = {t: src.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    assert min(expected.values()) > 10
    report = json.loads(run(str(SCRIPTS / "bench_keys.py"), str(db), "--rounds", "1", "--batch", "50",
                            "--work", str(work), "--json").stdout)  # fmt: skip
    assert report["rows"] == expected
    assert sorted(r["variant"] for r in report["runs"]) == ["int", "text"]
    for r in report["runs"]:
        assert r["counts"] == expected and r["statements_cpu"] > 0
    for variant, kind in (("text", "TEXT"), ("int", "INTEGER")):
        conn = sqlite3.connect(work / f"keys-{variant}.db")
        assert {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES} == expected
        types = {t: {r[1]: r[2] for r in conn.execute(f"PRAGMA table_info({t})")}["message_id"]
                 for t in ("blocks", "message_occurrences", "usage")}  # fmt: skip
        assert set(types.values()) == {kind}, variant
        # every block names the message it named in the ingested archive
        if variant == "int":
            named = conn.execute("SELECT m.id, b.position FROM blocks b JOIN messages m ON m.mid = b.message_id").fetchall()
        else:
            named = conn.execute("SELECT message_id, position FROM blocks").fetchall()
        assert sorted(named) == sorted(src.execute("SELECT message_id, position FROM blocks").fetchall())
