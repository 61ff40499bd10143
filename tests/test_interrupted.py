"""An interrupted run ends as ``interrupted`` with what it did, and every reader copes with a run
that never finished (issue 32, defect 1): Ctrl-C or SIGTERM during ``ingest``/``rebuild`` closes
the run's row; a run killed outright (its row left ``running``, counts NULL) is read as
interrupted by ``status`` unless an ingest holds the lock right now."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_lock, ingest_paths, rebuild
from tests.ingest_helpers import canonical_lines, portable_dump, write_lines

REPO = Path(__file__).resolve().parents[1]


def _corpus(root: Path, files: int, lines: int = 30) -> list[Path]:
    return [write_lines(root / f"t{i:04d}.jsonl", canonical_lines(f"t{i:04d}", lines, seed=i)) and root / f"t{i:04d}.jsonl"
            for i in range(files)]


def _runs(db_path: Path) -> list[tuple]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT command, status, files_seen, messages_added, finished_at FROM ingest_runs ORDER BY id").fetchall()
    finally:
        conn.close()


class _StopAfter:
    """A progress callback that raises KeyboardInterrupt (Ctrl-C) after ``n`` files."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, path: str, done: int) -> None:
        self.n -= 1
        if self.n == 0:
            raise KeyboardInterrupt


def test_ctrl_c_ends_the_run_as_interrupted_with_what_it_did(tmp_path):
    files = _corpus(tmp_path / "src", 6)
    db_path = tmp_path / "a.db"
    db = open_db(db_path)
    with pytest.raises(KeyboardInterrupt):
        ingest_paths(db, [tmp_path / "src"], IngestOptions(idle_seconds=10**9, progress=_StopAfter(3)))
    (run,) = _runs(db_path)
    assert run[0] == "ingest" and run[1] == "interrupted"
    assert run[2] == 3 and run[3] > 0 and run[4] is not None  # three files were read and committed
    # the next run continues and ends where an uninterrupted run ends
    ingest_paths(db, [tmp_path / "src"], IngestOptions(idle_seconds=10**9))
    whole = open_db(tmp_path / "b.db")
    ingest_paths(whole, files, IngestOptions(idle_seconds=10**9))
    assert portable_dump(db) == portable_dump(whole)
    assert [r[1] for r in _runs(db_path)] == ["interrupted", "ok"]


def test_status_after_an_interrupted_ingest(tmp_path):
    _corpus(tmp_path / "src", 4)
    db_path = tmp_path / "a.db"
    with pytest.raises(KeyboardInterrupt):
        ingest_paths(open_db(db_path), [tmp_path / "src"], IngestOptions(idle_seconds=10**9, progress=_StopAfter(2)))
    result = CliRunner().invoke(cli, ["--db", str(db_path), "status"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "(interrupted)" in result.output and "2 files changed" in result.output


def _killed_run(db_path: Path) -> None:
    """The row a run leaves when it is killed outright (SIGKILL, power loss): running, no counts."""
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute("INSERT INTO ingest_runs (command, started_at, status) VALUES ('ingest', '2026-12-01T03:17:00+00:00', 'running')")
    conn.close()


def test_status_copes_with_a_run_killed_before_it_finished(tmp_path):
    _corpus(tmp_path / "src", 2)
    db_path = tmp_path / "a.db"
    ingest_paths(open_db(db_path), [tmp_path / "src"], IngestOptions(idle_seconds=10**9))
    _killed_run(db_path)
    runner = CliRunner()
    result = runner.invoke(cli, ["--db", str(db_path), "status"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "last run: ingest at 2026-12-01T03:17:00+00:00 (interrupted): no counts recorded" in result.output
    info = orjson.loads(runner.invoke(cli, ["--db", str(db_path), "status", "--json"], catch_exceptions=False).output)
    assert info["last_run"]["status"] == "interrupted" and info["last_run"]["files_changed"] is None
    # while an ingest holds the lock, the same row is a run in progress
    with ingest_lock(db_path, wait=None):
        result = runner.invoke(cli, ["--db", str(db_path), "status"], catch_exceptions=False)
    assert "(running): no counts recorded" in result.output
    # and the next ingest closes it as interrupted for good
    ingest_paths(open_db(db_path), [tmp_path / "src"], IngestOptions(idle_seconds=10**9))
    assert [r[1] for r in _runs(db_path)] == ["ok", "interrupted", "ok"]


def test_an_interrupted_rebuild_keeps_the_archive_and_says_so(tmp_path):
    _corpus(tmp_path / "src", 3)
    db_path = tmp_path / "a.db"
    db = open_db(db_path)
    ingest_paths(db, [tmp_path / "src"], IngestOptions(idle_seconds=10**9))
    before = portable_dump(db)
    import archive.ingest.rederive as ingest_mod

    real = ingest_mod.fold_thread

    def fold(conn, tid):
        raise KeyboardInterrupt

    ingest_mod.fold_thread = fold
    try:
        with pytest.raises(KeyboardInterrupt):
            rebuild(db)
    finally:
        ingest_mod.fold_thread = real
    assert portable_dump(db) == before  # one transaction: nothing half-done
    run = _runs(db_path)[-1]
    assert run[:4] == ("rebuild", "interrupted", 0, 0) and run[4] is not None


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signalled_ingest_exits_130_and_records_the_run(tmp_path, sig):
    """The command as cron or a terminal runs it: Ctrl-C (SIGINT) or systemd stopping the unit
    (SIGTERM) while it reads; one line on stderr, exit 130, the run interrupted."""
    _corpus(tmp_path / "src", 400, lines=60)
    db_path = tmp_path / "a.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "archive", "--db", str(db_path), "ingest", "-q", str(tmp_path / "src")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until the run is recorded, then signal it
        if db_path.exists():
            try:
                if any(r[1] == "running" for r in _runs(db_path)):
                    break
            except sqlite3.Error:
                pass
        time.sleep(0.02)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, err)
    assert b"ingest: interrupted" in err and b"Traceback" not in err and b"Aborted!" not in err
    (run,) = _runs(db_path)
    assert run[1] == "interrupted" and run[2] is not None and run[4] is not None


def _ingest_on_a_terminal(db_path: Path, src: Path) -> str:
    """Run `ingest` with stderr on a pseudo-terminal (the progress bar shows only there)."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "160"}
    proc = subprocess.Popen([sys.executable, "-m", "archive", "--db", str(db_path), "ingest", str(src)],
                            stdout=subprocess.DEVNULL, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=120)
    os.close(master)
    assert proc.returncode == 0
    return b"".join(chunks).decode(errors="replace")


def test_the_progress_bar_ends_at_100_percent(tmp_path):
    """Issue 32: the bar ended at '97% 42/42 files' (unchanged files are never read, so the
    bytes read fall short of the pre-scanned total); a finished run ends at 100%."""
    files = _corpus(tmp_path / "src", 5)
    db_path = tmp_path / "a.db"
    first = _ingest_on_a_terminal(db_path, tmp_path / "src")
    with files[0].open("ab") as f:  # one file grows; four are unchanged
        f.write(canonical_lines("t0000", 33, seed=99)[-1] + b"\n")
    second = _ingest_on_a_terminal(db_path, tmp_path / "src")
    for out in (first, second):
        frames = [f for f in out.replace("\r", "\n").splitlines() if "%" in f]
        assert frames and "100%" in frames[-1] and "5/5 files" in frames[-1], frames[-3:]
