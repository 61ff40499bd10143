"""One definition of each count, the same everywhere (issue 32): files seen and changed by
`ingest` and `rebuild` (sources: each file, and each session a vendor database holds), and
sessions listed by `threads` and the web's session list (threads that are not subagents, not
empty unless asked)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
from click.testing import CliRunner

from archive.cli import cli
from archive.pricing import bundled
from archive.web.sessions import SessionFilters, sessions
from tests.vendor_home import build_home, vendor_env


def run(*args: str, env: dict[str, str]) -> tuple[str, str]:
    r = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.stdout, r.stderr


def test_files_and_sessions_are_counted_alike_everywhere(tmp_path: Path) -> None:
    home = tmp_path / "home"
    placed = build_home(home)
    assert any("opencode.db" in str(p) for p in placed.values())  # a database of several sessions
    env = vendor_env(home)
    db = str(tmp_path / "a.db")
    first = orjson.loads(run("--db", db, "ingest", "--json", env=env)[0])
    conn = sqlite3.connect(db)
    sources = conn.execute("SELECT count(*) FROM sources WHERE kind != 'store'").fetchone()[0]
    # every source was new: seen = changed = the sources the archive now holds
    assert first["files_seen"] == first["files_changed"] == sources
    again = orjson.loads(run("--db", db, "ingest", "--json", env=env)[0])
    assert again["files_seen"] == sources and again["files_changed"] == 0
    rebuilt = orjson.loads(run("--db", db, "rebuild", "--json", env=env)[0])
    assert rebuilt["files_seen"] == sources

    listed = orjson.loads(run("--db", db, "threads", "--json", "--limit", "0", env=env)[0])
    with_empty = orjson.loads(run("--db", db, "threads", "--json", "--limit", "0", "--empty", env=env)[0])
    every = orjson.loads(run("--db", db, "threads", "--json", "--limit", "0", "--all", env=env)[0])
    web = sessions(conn, SessionFilters(), bundled())
    assert web["total"] == len(listed) and web["total"] > 0
    assert sorted(r["id"] for r in listed) == sorted(r["id"] for r in _every_page(conn))
    assert len(every) == conn.execute("SELECT count(*) FROM threads").fetchone()[0]
    subagents = [r for r in every if r["parent_thread_id"] and not r["forked_from"]]
    assert subagents  # the home holds subagents: folded, never counted as sessions
    assert len(listed) <= len(with_empty) <= len(every) - len(subagents)
    _out, err = run("--db", db, "threads", "--limit", "0", env=env)
    assert err.startswith(f"{len(listed)} sessions;")


def _every_page(conn: sqlite3.Connection) -> list[dict]:
    rows, page = [], 1
    while True:
        got = sessions(conn, SessionFilters(page=page), bundled())
        rows += got["rows"]
        if page >= got["pages"]:
            return rows
        page += 1


def test_neutral_tool_kinds_apply_to_every_vendor(tmp_path: Path) -> None:
    """Issue 32: Copilot's and pi's `bash` and Gemini's `run_shell_command` were rows of their
    own in `stats --by tool` while OpenCode's `bash` was `shell`."""
    home = tmp_path / "home"
    build_home(home)
    env = vendor_env(home)
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", env=env)
    kinds = {r["key"]: r["calls"] for r in orjson.loads(run("--db", db, "stats", "--by", "tool", "--json", env=env)[0])["rows"]}
    conn = sqlite3.connect(db)
    shell_names = conn.execute(
        "SELECT t.provider, b.tool_name, count(*) FROM blocks b JOIN messages m ON m.id = b.message_id "
        "JOIN threads t ON t.id = m.thread_id WHERE b.type = 'tool_call' AND b.tool_name IN "
        "('Bash', 'shell', 'shell_command', 'exec_command', 'shell_exec', 'bash', 'run_shell_command', 'run_commands', 'Shell') "
            "GROUP BY 1, 2").fetchall()
    providers = {p for p, _n, _c in shell_names}
    assert {"copilot", "pi", "gemini", "qwen", "opencode", "claude-code", "codex", "cline"} <= providers  # every vendor ran a shell
    assert kinds["shell"] == sum(c for _p, _n, c in shell_names)
    assert not set(kinds) & {"bash", "run_shell_command", "view", "task"}
