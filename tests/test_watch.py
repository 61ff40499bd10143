"""The watcher behind ``serve`` (issue 41, archive/watch.py): what a vendor writes is ingested
by the ingest engine under its lock; a tick with nothing changed does nothing; a tick while
another writer (a CLI ingest) holds the lock waits for the next; ``serve`` runs it and
``serve --no-watch`` does not; the pages' poll (``/-/sesh/live``) sees the new messages.

The session file is written line by line in Claude Code's transcript format (the fields of
tests/fixtures/claude-code/oneryalcin__fasthooks__sample_agent_sidechain.jsonl, 2.0.76), as a
running client appends it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from archive import serve as serve_mod
from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_lock
from archive.watch import Watcher, listing

ROOT = Path(__file__).resolve().parent.parent
SESSION = "5f0c1d9e-3a47-4c1b-9d2e-7b8a6c5d4e3f"


class Transcript:
    """A Claude Code session file under ``home``, appended one line at a time."""

    def __init__(self, home: Path, session: str = SESSION) -> None:
        self.path = home / ".claude" / "projects" / "-work-live" / f"{session}.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.session, self.parent, self.n = session, None, 0

    def append(self, text: str | None = None) -> str:
        self.n += 1
        me = str(uuid.uuid4())
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{self.n % 1000:03d}Z"
        line = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": "/work/live",
                "sessionId": self.session, "version": "2.0.76", "gitBranch": "", "type": "user",
                "message": {"role": "user", "content": text or f"live line {self.n}"}, "uuid": me, "timestamp": ts}  # fmt: skip
        with self.path.open("a") as f:
            f.write(json.dumps(line) + "\n")
        self.parent = me
        return me


def messages(db_path: Path) -> int:
    db = open_db(db_path)
    try:
        return db.execute("SELECT count(*) FROM messages WHERE thread_id LIKE ?", [f"%{SESSION}%"]).fetchone()[0]
    finally:
        db.conn.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return Path(os.environ["HOME"])  # the conftest's isolated home for this test


def test_a_change_is_ingested_and_an_idle_tick_does_nothing(home: Path, tmp_path: Path):
    t = Transcript(home)
    t.append("first prompt")
    db_path = tmp_path / "archive.db"
    w = Watcher(db_path, env=os.environ, full_seconds=3600)
    assert w.tick() and w.status.passes == 1
    assert messages(db_path) == 1
    assert not w.tick() and w.status.passes == 1  # nothing changed: no pass
    t.append()
    t.append()
    assert str(t.path) in listing(db_path, os.environ)
    assert w.tick() and w.status.passes == 2
    assert messages(db_path) == 3
    runs = open_db(db_path).execute("SELECT count(*) FROM ingest_runs").fetchone()[0]
    assert runs == 2  # the engine's own runs: the same ingest as the CLI's


def test_the_lock_is_honoured_while_a_cli_ingest_holds_it(home: Path, tmp_path: Path):
    t = Transcript(home)
    t.append()
    db_path = tmp_path / "archive.db"
    w = Watcher(db_path, env=os.environ, full_seconds=3600)
    assert w.tick()
    t.append()
    # another process holds the archive's write lock, as `sesh-archive ingest` does while it runs
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom archive.ingest import ingest_lock\n"
                               f"with ingest_lock({str(db_path)!r}):\n    print('held', flush=True)\n    sys.stdin.read()"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "held"  # type: ignore[union-attr]
        assert not w.tick() and w.status.skipped_locked == 1
        assert messages(db_path) == 1  # nothing written under someone else's lock
    finally:
        holder.communicate("", timeout=30)
    assert w.tick() and messages(db_path) == 2  # the change is still pending, taken on the next tick


def test_a_lock_held_in_process_is_honoured_too(home: Path, tmp_path: Path):
    t = Transcript(home)
    t.append()
    db_path = tmp_path / "archive.db"
    open_db(db_path).conn.close()
    w = Watcher(db_path, env=os.environ)
    with ingest_lock(db_path, None):
        assert not w.tick()
    assert w.tick() and messages(db_path) == 1


def test_serve_runs_the_watcher_and_no_watch_turns_it_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(serve_mod, "run_server", lambda db_path, **kw: calls.append(kw))
    db = tmp_path / "a.db"
    open_db(db).conn.close()
    CliRunner().invoke(cli, ["--db", str(db), "serve"], catch_exceptions=False)
    CliRunner().invoke(cli, ["--db", str(db), "serve", "--no-watch"], catch_exceptions=False)
    assert [c["watch"] for c in calls] == [True, False]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(db_path: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "archive", "--db", str(db_path), "serve", "-p", str(port), *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"serve did not start: {proc.communicate()[0]}")
            time.sleep(0.1)


def _live(url: str, thread: str = "") -> dict[str, Any]:
    q = f"?thread={thread}" if thread else ""
    with urllib.request.urlopen(f"{url}-/sesh/live{q}", timeout=5) as r:
        return json.load(r)


@pytest.mark.slow
def test_served_archive_follows_appends_and_no_watch_does_not(home: Path, tmp_path: Path):
    t = Transcript(home)
    t.append("before serve")
    db_path = tmp_path / "archive.db"
    Watcher(db_path, env=os.environ).tick()
    thread = open_db(db_path).execute("SELECT thread_id FROM messages").fetchone()[0]
    proc, url = _serve(db_path)
    try:
        before = _live(url, thread)
        assert before["messages"] == 1 and before["writing"] is True  # its file changed moments ago
        t.append("while serving")
        deadline = time.monotonic() + 20
        while _live(url, thread)["messages"] < 2:
            assert time.monotonic() < deadline, "the append was not ingested within 20 s"
            time.sleep(0.2)
        assert _live(url, thread)["version"] != before["version"]
    finally:
        proc.terminate()
        proc.wait(10)
    proc, url = _serve(db_path, "--no-watch")
    try:
        t.append("not watched")
        time.sleep(4)  # several of the watcher's ticks
        assert _live(url, thread)["messages"] == 2
    finally:
        proc.terminate()
        proc.wait(10)
    assert messages(db_path) == 2


def test_the_watcher_reads_the_environment_it_is_given(home: Path, tmp_path: Path):
    from conftest import isolation_env

    other = tmp_path / "other-home"
    env = {k: v for k, v in {**os.environ, **isolation_env(other)}.items() if v is not None}
    Transcript(other, session="0b7e4c2a-1d3f-4e5a-8b6c-9d0e1f2a3b4c").append("in the other home")
    Transcript(home).append("in the process's home")
    db_path = tmp_path / "archive.db"
    assert Watcher(db_path, env=env).tick()
    db = open_db(db_path)
    assert [r[0] for r in db.execute("SELECT b.text FROM blocks b")] == ["in the other home"]
    db.conn.close()
