"""Smoke test of scripts/bench_floor.py on a 2 MB corpus: the floor copy holds every row the
ingest wrote (checked here from the files, not only by the script), the producer reads the
corpus's line files, the least-work child reads every file and indexes every block, and the
report has its rows."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], check=True, capture_output=True, text=True, timeout=300, cwd=ROOT)


def counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    names = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'blocks_fts%'"
    )]  # fmt: skip
    out = {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    out["fts rows"] = conn.execute("SELECT count(*) FROM blocks_fts_docsize").fetchone()[0]
    conn.close()
    return out


def test_floor_copy_and_report(tmp_path):
    corpus = tmp_path / "corpus"
    run(str(SCRIPTS / "gen_corpus.py"), str(corpus), "--size", "2MB")
    # the floor child on an ingest of the corpus: same rows in every table, every block indexed
    db = tmp_path / "ingest.db"
    run(str(SCRIPTS / "bench.py"), "--_ingest", str(db), str(corpus))
    ingested = counts(db)
    assert ingested["blocks"] > 100 and ingested["messages"] > 100 and ingested["source_lines"] > 100
    floor = json.loads(run(str(SCRIPTS / "bench_floor.py"), "--_floor", str(db), str(tmp_path / "floor.db")).stdout)
    copied = counts(tmp_path / "floor.db")
    assert copied == ingested
    assert copied["fts rows"] == copied["blocks"]
    assert floor["seconds"] > 0 and "blocks_fts (rebuilt)" in floor["phases"]
    # the whole bench, without the peer (it would install from PyPI)
    out = run(str(SCRIPTS / "bench_floor.py"), "--corpus", str(corpus), "--rounds", "1", "--no-peers", "--json", "--halves")
    report, _, rounds_json = out.stdout.partition("\n[")
    (r,) = json.loads("[" + rounds_json)
    # the producer reads exactly the line files the ingest read (documents of a database have
    # a virtual path with '#', snapshots are not line files)
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    line_bytes = conn.execute(
        "SELECT sum(p.size) FROM source_paths p JOIN sources s ON s.id = p.source_id "
        "WHERE s.kind = 'lines' AND p.path NOT LIKE '%#%'"
    ).fetchone()[0]
    conn.close()
    assert r["producer"]["bytes"] == line_bytes > 1_000_000
    assert r["producer"]["pickled_bytes"] > 0
    assert set(r["producer"]["phases"]) == {"adapters", "rows", "zstd", "secret scan", "pickle"}
    assert r["ingest"]["process_seconds"] > 0 and r["floor"]["seconds"] > 0
    # the least work of any store: the files discovery finds (databases too), one row for each
    # message and block the ingest made, each block indexed (the child checks it too)
    least = r["least"]
    all_bytes = sum(p.stat().st_size for p in corpus.rglob("*") if p.is_file() and p.name != "corpus-manifest.json")
    assert line_bytes < least["bytes"] <= all_bytes  # the line files and the vendors' databases
    assert (least["messages"], least["blocks"]) == (ingested["messages"], ingested["blocks"])
    assert least["chunks"] >= 1 and least["text_bytes"] > 100_000
    assert set(least["phases"]) == {"read and decode", "zstd", "secret scan", "rows", "fts"}
    assert abs(least["python_seconds"] + least["sqlite_seconds"] - least["seconds"]) < 1e-6
    assert not r["agentsview"]["ok"]
    halves = r["halves"]
    assert len(halves["each"]) == 2 and max(halves["each"]) <= halves["seconds"] and halves["copy_seconds"] > 0
    assert "| two halves at once" in report
    for row in ("first ingest", "SQLite floor", "producer", "least work, any store", "  of which Python", "  of which SQLite"):
        assert f"| {row}" in report
    assert "agentsview sync" not in report  # no peer, no ratio to it


def test_verify_copy_refuses_a_short_copy(tmp_path):
    """The floor's own check can fail: a table copied short, or a block left out of the index."""
    import importlib.util

    import pytest

    spec = importlib.util.spec_from_file_location("bench_floor", SCRIPTS / "bench_floor.py")
    assert spec is not None and spec.loader is not None
    bench_floor = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench_floor)
    src = sqlite3.connect(tmp_path / "src.db")
    src.execute("CREATE TABLE blocks (id INTEGER PRIMARY KEY, text TEXT)")
    src.executemany("INSERT INTO blocks (text) VALUES (?)", [("a",), ("b",), ("c",)])
    src.commit()
    src.close()
    conn = sqlite3.connect(tmp_path / "dst.db", isolation_level=None)
    conn.execute("CREATE TABLE blocks (id INTEGER PRIMARY KEY, text TEXT)")
    conn.execute("CREATE VIRTUAL TABLE blocks_fts USING fts5(text, content='blocks', content_rowid='id')")
    conn.execute("ATTACH ? AS o", (str(tmp_path / "src.db"),))
    conn.execute("INSERT INTO main.blocks SELECT * FROM o.blocks WHERE id < 3")
    with pytest.raises(SystemExit, match="floor copy of blocks: 2 rows, the ingest wrote 3"):
        bench_floor.verify_copy(conn, ["blocks"], ["blocks_fts"])
    conn.execute("INSERT INTO main.blocks SELECT * FROM o.blocks WHERE id = 3")
    with pytest.raises(SystemExit, match="blocks_fts indexes 0 rows of 3 blocks"):
        bench_floor.verify_copy(conn, ["blocks"], ["blocks_fts"])
    conn.execute("INSERT INTO blocks_fts(blocks_fts) VALUES ('rebuild')")
    bench_floor.verify_copy(conn, ["blocks"], ["blocks_fts"])  # whole: no error


def test_halves_share_every_file_once(tmp_path):
    """``make_halves``: every file of the home in exactly one half, by a hard link; a session
    file and the folder of its stem (subagents) in the same half; both halves hold some."""
    sys.path.insert(0, str(SCRIPTS))
    import bench_floor

    home = tmp_path / "home"
    for p in range(6):
        folder = home / ".claude" / "projects" / f"-proj-{p}"
        for s in range(4):
            (folder / f"s{s}" / "subagents").mkdir(parents=True)
            (folder / f"s{s}.jsonl").write_bytes(b"x" * (1000 * (p + 1)))
            (folder / f"s{s}" / "subagents" / "agent-1.jsonl").write_bytes(b"y" * 500)
    (home / ".codex" / "sessions").mkdir(parents=True)
    (home / ".codex" / "sessions" / "rollout-1.jsonl").write_bytes(b"z" * 3000)
    halves = bench_floor.make_halves(home, tmp_path / "out")
    placed = {}
    for i, half in enumerate(halves):
        for f in half.rglob("*"):
            if f.is_file():
                rel = f.relative_to(half)
                assert rel not in placed
                assert f.stat().st_ino == (home / rel).stat().st_ino
                placed[rel] = i
    assert set(placed) == {f.relative_to(home) for f in home.rglob("*") if f.is_file()}
    assert set(placed.values()) == {0, 1}
    for rel, i in placed.items():
        if rel.name == "agent-1.jsonl":
            assert placed[rel.parent.parent.parent / f"{rel.parent.parent.name}.jsonl"] == i
