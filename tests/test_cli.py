"""CLI: ingest, status, rebuild, restore, --version, exit codes, JSON output (CliRunner)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from click.testing import CliRunner

from archive import __version__
from archive.cli import cli
from tests.vendor_home import build_home, vendor_env


def run(*args, env=None, ok=True):
    result = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result


def test_version_and_help():
    assert __version__ in run("--version").output
    out = run("--help").output
    for command in ("ingest", "status", "rebuild", "restore", "emit", "serve"):
        assert command in out


def test_ingest_default_locations_json_and_rerun(tmp_path):
    home = tmp_path / "home"
    build_home(home)
    env = vendor_env(home)
    db = str(tmp_path / "a.db")
    first = run("--db", db, "ingest", "--json", env=env)
    summary = json.loads(first.stdout)
    assert summary["files_changed"] >= 30 and summary["messages_added"] > 300 and summary["failed"] == 0
    assert "ingest:" in first.stderr and "messages added" in first.stderr
    again = json.loads(run("--db", db, "ingest", "--json", env=env).stdout)
    assert again["files_changed"] == 0 and again["messages_added"] == 0 and again["lines"] == 0
    only = json.loads(run("--db", db, "ingest", "--json", "--provider", "clm", env=env).stdout)
    assert only["files_seen"] == len(list((home / ".local/state/clm").glob("*.jsonl")))
    status = json.loads(run("--db", db, "status", "--json").stdout)
    assert {p["provider"] for p in status["providers"]} >= {"claude-code", "codex", "clm"}
    assert status["last_run"]["command"] == "ingest"
    text = run("--db", db, "status").stdout
    assert "claude-code:" in text and "last run:" in text


def test_env_var_selects_database(tmp_path):
    # issue 22: only ingest creates an archive; status reads the one $SESH_ARCHIVE_DB names
    db = tmp_path / "env.db"
    run("status", env={"SESH_ARCHIVE_DB": str(db)}, ok=False)
    assert not db.exists()
    run("ingest", "--json", env={"SESH_ARCHIVE_DB": str(db)})
    assert db.exists()
    assert json.loads(run("status", "--json", env={"SESH_ARCHIVE_DB": str(db)}).stdout)["database"] == str(db)


def test_usage_error_exit_code(tmp_path):
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "ingest", "--provider", "nope"])
    assert result.exit_code == 2


def test_unrecognised_file_is_a_problem_not_a_failure(tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    result = run("--db", str(tmp_path / "a.db"), "ingest", "--json", str(junk))
    assert json.loads(result.stdout)["problems"][0]["problem"] == "no adapter recognises this file"


def test_rebuild_and_restore(tmp_path):
    home = tmp_path / "home"
    placed = build_home(home)
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", env=vendor_env(home))
    rebuilt = json.loads(run("--db", db, "rebuild", "--json").stdout)
    assert rebuilt["command"] == "rebuild" and rebuilt["files_seen"] >= 30
    run("--db", db, "rebuild", "--provider", "clm")
    out = tmp_path / "restored"
    files = json.loads(run("--db", db, "restore", str(out), "--json").stdout)
    by_sha = {hashlib.sha256(p.read_bytes()).hexdigest() for p in placed.values()}
    assert files and all(f["sha256"] in by_sha for f in files)
    for f in files:
        assert Path(f["path"]).read_bytes() and Path(f["path"]).is_relative_to(out)
    again = CliRunner().invoke(cli, ["--db", db, "restore", str(out)])
    assert again.exit_code == 1 and "never overwrites" in again.output
    missing = CliRunner().invoke(cli, ["--db", db, "rebuild", "--source", "no-such-source"])
    assert missing.exit_code == 1


def test_module_entry_point(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    out = subprocess.run([sys.executable, "-m", "archive", "--version"], capture_output=True, text=True, env=env)
    assert out.returncode == 0 and __version__ in out.stdout
