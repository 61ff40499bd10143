"""Failures the user must see, and never a hole for someone else to use (issue 16 item 7):
the data folder is private from its creation, an unreadable folder fails the run like an
unreadable file, a full disk gives one clear error and a run marked failed, and restore's
temporary file never follows a planted link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from click.testing import CliRunner

import archive.cli
import archive.ingest.discovery
from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from tests.ingest_helpers import canonical_lines, portable_dump, write_lines
from tests.vendor_home import build_home, vendor_env


def invoke(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_default_data_folder_is_private_from_the_start(tmp_path, monkeypatch):
    data = tmp_path / "xdg" / "data"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    home = tmp_path / "home"
    build_home(home)
    old = os.umask(0o022)  # the usual umask: what a plain mkdir would have used
    try:
        result = invoke("ingest", "-q", env={**vendor_env(home), "XDG_DATA_HOME": str(data)})
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    folder = data / "sesh-archive"
    assert mode(folder) == 0o700 and mode(data) == 0o700
    for f in folder.iterdir():  # archive.db, its -wal/-shm, the lock
        assert mode(f) == 0o600, f


def _unreadable(monkeypatch, path: Path) -> None:
    """scandir refuses ``path`` as it would for a folder without read permission (tests
    may run as root, for whom chmod 000 changes nothing)."""
    real = os.scandir

    def scandir(p):
        if str(p) == str(path):
            raise PermissionError(13, "Permission denied", str(p))
        return real(p)

    monkeypatch.setattr(archive.ingest.discovery.os, "scandir", scandir)


def test_unreadable_folder_under_a_vendor_root_fails_the_run(tmp_path, monkeypatch):
    home = tmp_path / "home"
    placed = build_home(home)
    folder = next(p for p in placed.values() if ".codex" in str(p)).parent
    with monkeypatch.context() as m:  # undoing only this patch: the test's home isolation stays
        _unreadable(m, folder)
        result = invoke("--db", str(tmp_path / "a.db"), "ingest", "-q", env=vendor_env(home))
    assert result.exit_code == 1
    assert f"problem: {folder}: unreadable folder" in result.stderr
    db = open_db(tmp_path / "a.db")
    assert db.execute("SELECT status FROM ingest_runs ORDER BY id DESC").fetchone()[0] == "failed"
    # the other vendors' files are archived all the same
    assert db.execute("SELECT count(DISTINCT provider) FROM sources").fetchone()[0] >= 2
    assert invoke("--db", str(tmp_path / "a.db"), "ingest", "-q", env=vendor_env(home)).exit_code == 0


def test_folder_vanishing_during_the_walk_is_not_a_failure(tmp_path, monkeypatch):
    home = tmp_path / "home"
    placed = build_home(home)
    folder = next(p for p in placed.values() if ".codex" in str(p)).parent
    real = os.scandir
    monkeypatch.setattr(
        archive.ingest.discovery.os, "scandir",
        lambda p: (_ for _ in ()).throw(FileNotFoundError(2, "gone", str(p))) if str(p) == str(folder) else real(p),
    )  # fmt: skip
    result = invoke("--db", str(tmp_path / "a.db"), "ingest", "-q", env=vendor_env(home))
    assert result.exit_code == 0
    assert f"problem: {folder}: vanished during ingest" in result.stderr


def test_disk_full_is_one_clear_error_and_a_failed_run(tmp_path, monkeypatch):
    corpus = tmp_path / "corpus"
    files = [write_lines(corpus / f"s{i}.jsonl", canonical_lines(f"t{i}", 300, seed=i, big=500)) and corpus / f"s{i}.jsonl"
             for i in range(4)]  # fmt: skip
    db_path = tmp_path / "a.db"
    pages = open_db(db_path).execute("PRAGMA page_count").fetchone()[0]
    real_open = archive.cli.open_archive

    def small_disk(path, **kw):
        db = real_open(path, **kw)
        db.execute(f"PRAGMA max_page_count = {pages + 40}")  # SQLITE_FULL: "database or disk is full"
        return db

    with monkeypatch.context() as m:
        m.setattr(archive.cli, "open_archive", small_disk)
        result = invoke("--db", str(db_path), "ingest", "-q", "--idle", "1e9", *map(str, files))
    assert result.exit_code == 1
    message = result.stderr.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("Error: cannot write the archive: database or disk is full")
    assert "Traceback" not in result.output
    db = open_db(db_path)
    assert db.execute("SELECT status FROM ingest_runs ORDER BY id DESC").fetchone()[0] == "failed"
    # room again: the next run continues and ends where an uninterrupted run ends
    assert invoke("--db", str(db_path), "ingest", "-q", "--idle", "1e9", *map(str, files)).exit_code == 0
    whole = open_db(tmp_path / "whole.db")
    ingest_paths(whole, files, IngestOptions(idle_seconds=10**9))
    assert portable_dump(open_db(db_path)) == portable_dump(whole)


def test_restore_never_follows_a_link_planted_at_the_temporary_name(tmp_path):
    a = tmp_path / "in" / "a.jsonl"
    data = write_lines(a, canonical_lines("t", 5))
    db = open_db(tmp_path / "x.db")
    ingest_paths(db, [a], IngestOptions(idle_seconds=10**9))
    out = tmp_path / "out"
    target = out / str(a).lstrip("/")
    target.parent.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    planted = target.with_name(f".{target.name}.restoring")
    planted.symlink_to(victim)
    (f,) = restore(db, out)
    assert victim.read_bytes() == b"precious\n"
    assert planted.is_symlink() and f.path == target and target.read_bytes() == data
    assert mode(target) == 0o600 and not target.is_symlink()
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == [planted.name]  # no temp left
