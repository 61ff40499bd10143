"""The side files' views on the team database (issue 38): ``push`` sends each machine's
prompt histories and side files (archive/push_side.py, pg migration p060), and ``lost
--db postgresql://...`` lists what ``lost`` lists locally. Marker ``postgres`` (a real
server: tests/pg_server.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths

pytestmark = pytest.mark.postgres

FIXTURES = Path(__file__).parent / "fixtures" / "side-files"


def _home(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A Claude Code home with a session (and lost ones), a TypeScript Codex history whose
    rollout is gone, and a Copilot command history with its session."""
    home = tmp / "home"
    shutil.copytree(FIXTURES / "claude-code-2.1.332" / ".claude", home / ".claude")
    shutil.copytree(FIXTURES / "codex-0.1.2505172129" / ".codex", home / ".codex")
    shutil.rmtree(home / ".codex" / "sessions")
    shutil.copytree(FIXTURES / "copilot-1.0.102" / ".copilot", home / ".copilot")
    with (home / ".claude" / "history.jsonl").open("ab") as f:
        f.write(orjson.dumps({"display": "a prompt of a deleted session", "pastedContents": {}, "timestamp": 1796000000000,
                              "project": "/tmp/gone", "sessionId": "0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3"}) + b"\n")
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "COPILOT_HOME": str(home / ".copilot")}
    return home, env


def test_lost_on_the_team_database_is_lost_of_the_local_archive(tmp_path: Path, pg_url: str) -> None:
    home, env = _home(tmp_path)
    db_path = tmp_path / "a.db"
    db = open_db(db_path)
    ingest_paths(db, None, IngestOptions(providers=("claude-code", "codex", "copilot"), env=env, idle_seconds=0))
    db.conn.close()
    runner = CliRunner()
    local = ["--db", str(db_path)]
    r = runner.invoke(cli, [*local, "push", pg_url, "--machine", "a", "--json"], env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["rows"]
    assert rows["prompt_history"] >= 4 and rows["side_files"] >= 1
    mine = json.loads(runner.invoke(cli, [*local, "lost", "--json", "--limit", "0"], env=env, catch_exceptions=False).stdout)
    theirs = runner.invoke(cli, ["--db", pg_url, "lost", "--json", "--limit", "0"], env=env, catch_exceptions=False)
    assert theirs.exit_code == 0, theirs.output
    assert {r["provider"] for r in mine} == {"claude-code", "codex"} and len(mine) == 2
    assert json.loads(theirs.stdout) == mine
    for args in (["lost"], ["lost", "--provider", "codex"]):
        assert runner.invoke(cli, ["--db", pg_url, *args], env=env).stdout == runner.invoke(cli, [*local, *args], env=env).stdout
    # unchanged: nothing sent again; a new prompt: the machine's rows replaced
    r = runner.invoke(cli, [*local, "push", pg_url, "--machine", "a", "--json"], env=env, catch_exceptions=False)
    assert "prompt_history" not in json.loads(r.stdout)["rows"]
    history = home / ".codex" / "history.json"
    grown = orjson.loads(history.read_bytes()) + [{"command": "deploy with AKIAQWERTYUIOPASDFGH", "timestamp": 1796199700000}]
    history.write_bytes(orjson.dumps(grown, option=orjson.OPT_INDENT_2))
    db = open_db(db_path)
    ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    db.conn.close()
    r = runner.invoke(cli, [*local, "push", pg_url, "--machine", "a", "--redact", "--json"], env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    theirs = json.loads(runner.invoke(cli, ["--db", pg_url, "lost", "--json", "--provider", "codex"], env=env).stdout)
    assert theirs[0]["prompts"] == 3
    assert "deploy with [REDACTED aws-access-key]" in [p["prompt"] for p in theirs[0]["history"]]
    r = runner.invoke(cli, ["--db", pg_url, "lost", "--redact"], env=env)
    assert r.exit_code == 2 and "push with --redact" in r.output
