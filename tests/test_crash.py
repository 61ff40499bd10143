"""Crash safety: an ingest killed with SIGKILL at random moments, then rerun, gives the
database an uninterrupted run gives (DESIGN.md "Crash-safe")."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from archive.db import open_db
from tests.ingest_helpers import canonical_lines, portable_dump, write_lines
from tests.vendor_home import build_home, vendor_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
KILLS = 20


def run_ingest(db: Path, home: Path, corpus: Path) -> subprocess.Popen:
    env = {**os.environ, **vendor_env(home), "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "archive", "--db", str(db), "ingest", "-q", "--idle", "1e9", str(home), str(corpus)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def test_sigkill_at_random_moments_then_rerun_equals_uninterrupted(tmp_path):
    home = tmp_path / "home"
    build_home(home)
    corpus = tmp_path / "corpus"
    for i in range(7):  # about 6 MB of canonical sessions with some long lines
        write_lines(corpus / f"s{i}.jsonl", canonical_lines(f"t{i}", 1500, seed=i, big=2000))
    assert sum(p.stat().st_size for p in corpus.iterdir()) > 5_000_000

    started = time.monotonic()
    ref = run_ingest(tmp_path / "ref.db", home, corpus)
    assert ref.wait(300) == 0, ref.stderr.read()
    full = time.monotonic() - started
    expected = portable_dump(open_db(tmp_path / "ref.db"))

    rnd = random.Random(20261130)
    interrupted = 0
    for k in range(KILLS):
        db = tmp_path / f"crash{k}.db"
        proc = run_ingest(db, home, corpus)
        time.sleep(rnd.uniform(0.05, full))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            interrupted += 1
        proc.wait(60)
        again = run_ingest(db, home, corpus)
        assert again.wait(300) == 0, again.stderr.read()
        assert portable_dump(open_db(db)) == expected, f"kill {k}"
        db.unlink()
    assert interrupted >= KILLS // 2, f"only {interrupted} runs were still going when killed"
