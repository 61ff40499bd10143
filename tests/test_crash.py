"""Crash safety: an ingest killed with SIGKILL at random moments, then rerun, gives the
database an uninterrupted run gives (DESIGN.md "Crash-safe")."""

from __future__ import annotations

import json
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
    # a 4 MiB line limit: the corpus's 20 MB line is refused and stored in pieces
    env = {**os.environ, **vendor_env(home), "PYTHONPATH": str(ROOT), "SESH_ARCHIVE_MAX_LINE": "4M"}
    return subprocess.Popen(
        [sys.executable, "-m", "archive", "--db", str(db), "ingest", "-q", "--idle", "1e9", str(home), str(corpus)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip


def poisoned_canonical() -> list[bytes]:
    lines = canonical_lines("p", 300, seed=99, big=2000)
    deep: object = "leaf"
    for _ in range(320):
        deep = {"a": deep}
    bad = [
        {"v": 1, "id": "p-usage", "threadId": "p", "role": "assistant", "ts": None,
         "content": [{"type": "text", "text": "big usage"}], "usage": {"inputTokens": 1, "outputTokens": 2**63}},
        {"v": 1, "id": "p-deep", "threadId": "p", "role": "assistant", "ts": None,
         "content": [{"type": "tool_call", "callId": "p-deep-c", "name": "Bash", "input": {"deep": deep}}]},
        {"v": 1, "id": "p-long", "threadId": "p", "role": "user", "ts": None,
         "content": [{"type": "text", "text": "L" * (20 << 20)}]},
    ]  # fmt: skip
    for n, record in enumerate(bad):
        lines.insert(50 + 100 * n, json.dumps(record, separators=(",", ":")).encode())
    lines.insert(120, b'{"v":1,"id":"p-cut","threadId":"p","role":"user","ts":null,"content":[{"type":"text","text":"cut \\ud83d"}]}')
    return lines


def test_sigkill_at_random_moments_then_rerun_equals_uninterrupted(tmp_path):
    home = tmp_path / "home"
    build_home(home)
    corpus = tmp_path / "corpus"
    for i in range(7):  # about 6 MB of canonical sessions with some long lines
        write_lines(corpus / f"s{i}.jsonl", canonical_lines(f"t{i}", 1500, seed=i, big=2000))
    # and the bad values of issue 16, in the first file read: a usage count of 2**63, a tool
    # input nested 320 deep, a lone surrogate escape, a 20 MB line over the limit
    write_lines(corpus / "a-poison.jsonl", poisoned_canonical())
    assert sum(p.stat().st_size for p in corpus.iterdir()) > 25_000_000

    started = time.monotonic()
    ref = run_ingest(tmp_path / "ref.db", home, corpus)
    assert ref.wait(300) == 0, ref.stderr.read()
    full = time.monotonic() - started
    expected = portable_dump(open_db(tmp_path / "ref.db"))
    kinds = {(r[0], r[1]) for r in open_db(tmp_path / "ref.db").execute("SELECT kind, reason FROM reports")}
    assert {("invalid", "integer out of range"), ("invalid", "nested too deep"), ("refused", "line too long")} <= kinds

    rnd = random.Random(20261130)
    interrupted = 0
    for k in range(KILLS):
        db = tmp_path / f"crash{k}.db"
        proc = run_ingest(db, home, corpus)
        delay = rnd.uniform(0.05, full)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            interrupted += 1
        else:
            # this run was faster than the reference (a warm cache, a quieter machine): aim
            # the next kills inside the time a run actually takes
            full = max(0.1, min(full, delay))
        proc.wait(60)
        again = run_ingest(db, home, corpus)
        assert again.wait(300) == 0, again.stderr.read()
        assert portable_dump(open_db(db)) == expected, f"kill {k}"
        db.unlink()
    assert interrupted >= KILLS // 2, f"only {interrupted} runs were still going when killed"
