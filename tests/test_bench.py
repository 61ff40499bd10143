"""Smoke test of scripts/bench.py on a 2 MB corpus: every figure is there and the markers
the generator planted are found by full-text search."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_bench_smoke(tmp_path):
    corpus = tmp_path / "corpus"
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--corpus", str(corpus), "--size", "2MB", "--json",
         "--workdir", str(tmp_path / "work"), "--poison-mb", "2", "--poison-files", "5", "--secrets"],
        capture_output=True, check=True, timeout=120,
        env={**os.environ, "SESH_ARCHIVE_MAX_LINE": "1M"},  # the 2 MB line of the poison run is over it
    )  # fmt: skip
    r = json.loads(out.stdout)
    first = r["first_ingest"]
    # every byte of the line and document files is read; a database's file holds pages and
    # indexes besides its rows, so its rows' bytes are not its size (the generator's Hermes,
    # OpenCode and OpenClaw stores carry their clients' indexes)
    stores = sum(f.stat().st_size for f in corpus.rglob("*")
                 if f.is_file() and f.open("rb").read(16) == b"SQLite format 3\x00")  # fmt: skip
    assert r["corpus"]["bytes"] > 1_000_000 and 0 < stores < r["corpus"]["bytes"] / 2
    assert first["bytes_read"] >= r["corpus"]["bytes"] - stores
    assert first["lines"] >= r["corpus"]["lines"]
    assert set(first["timings"]) == {"read", "parse", "compress", "insert", "derived", "fts", "secrets", "commit"}
    # the secret scan (issue 23): its phase, and an ingest without it in the same run
    sec = r["secrets"]
    assert sec["runs"] == 1 and sec["median_off"] > 0 and sec["median_on"] == first["wall_seconds"]
    assert sec["scan_phase_seconds"] == first["timings"]["secrets"] > 0
    assert sum(first["timings"].values()) <= first["wall_seconds"] * 1.05
    assert 0 < first["peak_rss_mb"] < 1000
    assert r["baseline"]["mb_per_s"] > 0 and r["ratio_to_baseline"] > 0
    assert r["noop"]["bytes_read"] == 0 and r["noop"]["files_changed"] == 0
    small, big = r["appends"]
    for a in (small, big):
        assert a["bytes_read"] == a["appended_bytes"]  # only the new bytes are read
    assert big["appended_bytes"] > 3 * small["appended_bytes"]
    assert r["db_bytes"] > 0
    assert all(m["ok"] for m in r["fts"]["markers"].values()), r["fts"]["markers"]
    assert r["fts"]["p50_ms"] >= 0 and r["usage_30d"]["day"]["rows"] > 0
    assert "peers" not in r
    # bad values in the first file cost only their lines (issue 16)
    p = r["poison"]
    assert p["failed"] == 0 and p["files_archived"] == p["files"] == 6
    assert p["reports"]["refused"] == 1 and p["reports"]["invalid"] == 2 and p["reports"]["warning"] >= 1
    assert p["rerun_bytes_read"] == 0 and 0 < p["peak_rss_mb"] < 1000
    # the corpus itself was copied, not grown
    manifest = json.loads((corpus / "corpus-manifest.json").read_text())
    assert manifest["appends"] == []


@pytest.mark.slow
def test_bench_vendor_shares(tmp_path):
    """--shares-only (issue 35): every vendor's MB/s alone, and the first ingest with and without
    the six newest vendors, their share of the bytes against their share of the time."""
    corpus = tmp_path / "corpus"
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--corpus", str(corpus), "--size", "2MB", "--json",
         "--workdir", str(tmp_path / "work"), "--shares-only", "--shares-runs", "2"],
        capture_output=True, check=True, timeout=600,
    )  # fmt: skip
    s = json.loads(out.stdout)["shares"]
    manifest = json.loads((corpus / "corpus-manifest.json").read_text())
    assert set(s["vendors"]) == {v.replace("_", "-") for v in manifest["vendors"]} >= set(s["new_vendors"])
    assert s["bytes"] == sum(v["bytes"] for v in manifest["vendors"].values())
    assert 0.05 < s["new_byte_share"] < 0.2  # the six's shares of the generator: 10 %
    assert all(v["mb_per_s"] > 0 and v["bytes"] > 0 for v in s["vendors"].values())
    # times measured, not compared: on 2 MB the two medians are within the machine's noise
    assert s["median_with"] > 0 and s["median_without"] > 0 and s["fixed_seconds"] > 0
    # every run kept, so the spread is reported: the difference pair by pair, each vendor's runs
    assert len(s["with_seconds"]) == len(s["without_seconds"]) == len(s["differences"]) == 2
    assert all(len(v["runs_seconds"]) == 2 for v in s["vendors"].values())
    # the cost per message beside the cost per byte (a vendor of small rows has more messages a byte)
    assert s["messages"] == sum(v["messages"] for v in s["vendors"].values()) > 0
    assert all(v["ms_per_message"] > 0 and v["message_ratio_to_corpus"] > 0 for v in s["vendors"].values())
    # and per file: every source pays the same statements, and some vendors spread a session over many
    assert s["files"] == sum(v["files"] for v in s["vendors"].values()) > len(s["vendors"])
    assert all(v["ms_per_file"] > 0 for v in s["vendors"].values())
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    text = bench.fmt_shares(s)
    assert "difference, pair by pair" in text and "ms each" in text and "ms a message" in text and "ms a file" in text


@pytest.mark.slow
def test_bench_vendor_shares_in_instructions(tmp_path):
    """--shares-instructions (issue 35): the same with/without comparison counted in
    instructions under callgrind, which the machine's load does not move."""
    corpus = tmp_path / "corpus"
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--corpus", str(corpus), "--size", "2MB", "--json",
         "--workdir", str(tmp_path / "work"), "--shares-instructions", "--shares-per-vendor"],
        capture_output=True, check=True, timeout=1800,
    )  # fmt: skip
    s = json.loads(out.stdout)["shares_instructions"]
    ins = s["instructions"]
    # each run does more work than the one with less to read: every vendor, all but six, none
    assert ins["with"] > ins["without"] > ins["empty"] > 10**8
    assert 0 < s["new_messages"] < s["messages"] and 0.05 < s["new_byte_share"] < 0.2
    assert 0 < s["new_instruction_share"] < 1 and s["new_instruction_share_gross"] < s["new_instruction_share"]
    assert s["per_mb"]["new"] > 0 and s["per_message"]["rest"] > 0
    # what the archives hold: the home without the six holds less of everything, and the
    # shares of content and sessions are the six's part of it
    held = s["holdings"]
    for unit in ("sessions", "messages", "content_bytes", "file_bytes"):
        assert held["with"][unit] > held["without"][unit] > 0, unit
    assert held["with"]["messages"] == s["messages"]
    assert s["new_content_bytes_share"] == pytest.approx(1 - held["without"]["content_bytes"] / held["with"]["content_bytes"])
    assert 0.02 < s["new_sessions_share"] < 0.5
    # each vendor alone: its holdings add up to the whole home's, its instructions are its own
    vendors = s["vendors"]
    assert set(vendors) >= {"claude-code", "codex", "vibe", "kimi", "cline"}
    for unit in ("sessions", "messages", "content_bytes", "file_bytes"):
        assert sum(v[unit] for v in vendors.values()) == held["with"][unit], unit
    assert all(v["instructions"] > 0 for v in vendors.values())
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    text = bench.fmt_shares_counted(s)
    assert "of the instructions" in text and "of the content" in text and "each vendor alone" in text


@pytest.mark.slow
def test_counted_runs_repeat(tmp_path):
    """Two counted first ingests of one corpus count the same instructions, to a few in a
    million: the child commits by bytes, not every 5 s of a run that callgrind slows 60x
    (``bench.TIMELESS``), so the commits fall after the same files in every run."""
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_corpus.py"), str(corpus), "--size", "3MB"],
                   check=True, capture_output=True)  # fmt: skip
    spec = importlib.util.spec_from_file_location("bench", ROOT / "scripts" / "bench.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    me = [sys.executable, str(ROOT / "scripts" / "bench.py"), "--_ingest"]
    runs = bench.counted_all({k: [*me, str(tmp_path / f"{k}.db"), str(corpus)] for k in ("a", "b")})
    a, b = runs["a"]["instructions"], runs["b"]["instructions"]
    assert runs["a"]["messages_added"] == runs["b"]["messages_added"] > 0
    assert abs(a - b) / a < 2e-5, (a, b)


@pytest.mark.slow
def test_bench_files_index_share_in_instructions(tmp_path):
    """scripts/bench_files.py --instructions (issue 42): the file index's and signals' share of
    a first ingest, counted under callgrind with them and without them."""
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_corpus.py"), str(corpus), "--size", "2MB"],
                   check=True, capture_output=True)  # fmt: skip
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_files.py"), "--instructions", "--corpus", str(corpus), "--json"],
        capture_output=True, check=True, timeout=900,
    )  # fmt: skip
    r = json.loads(out.stdout)
    ins = r["instructions"]
    assert ins["with"] > ins["without"] > ins["empty"] > 10**8
    assert 0 < r["share"] < r["share_net"] < 1 and r["derived_cpu_share"] > 0


@pytest.mark.slow
def test_bench_files_index_share_in_run(tmp_path):
    """scripts/bench_files.py --in-run (issue 42): the index timed inside a first ingest at its
    entry points, less the wrapper's own cost, against the run's wall and CPU time."""
    corpus = tmp_path / "corpus"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_corpus.py"), str(corpus), "--size", "2MB"],
                   check=True, capture_output=True)  # fmt: skip
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_files.py"), "--in-run", "2", "--corpus", str(corpus), "--json"],
        capture_output=True, check=True, timeout=600,
    )  # fmt: skip
    r = json.loads(out.stdout)
    assert len(r["runs"]) == 2
    for run in r["runs"]:
        # every entry point was reached, the index's time is inside the run's
        assert set(run["calls"]) == {"message", "flush", "write", "queue_derived", "refresh_derived"}
        assert run["calls"]["message"] > 0 and run["seconds"]["message"] > 0
        assert 0 < run["index_seconds"] < run["wall_seconds"] and 0 < run["share_wall"] < 1 and run["wrapper_ns"] > 0
