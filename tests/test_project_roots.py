"""Project-local logs (issue 36, archive/project_roots.py): a plain ``ingest`` finds the files
vendors write inside projects (Aider's ``.aider.chat.history.md``) in every folder another
archived session ran in (and its parents), in the roots named with ``ingest --root`` (kept,
listed by ``status`` and ``roots``, removable), and nowhere else; a rerun opens nothing.

The Claude Code session is the real fixture marot__spotter__short.jsonl with its cwd moved
to a temp project; the Aider files are the recording of aider 0.86.2 (tests/fixtures/aider)."""

from __future__ import annotations

import importlib

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive import project_roots
from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude-code" / "marot__spotter__short.jsonl"
CLAUDE_CWD = b"/home/marco/projects/spotter"
CLAUDE_SESSION = "55604662-cf2a-4331-851a-ec234028f8ca"
AIDER = FIXTURES / "aider" / "recorded-0.86.2.aider.chat.history.md"
AIDER_INPUT = FIXTURES / "aider" / "recorded-0.86.2.aider.input.history"


def _claude_session(home: Path, cwd: Path) -> Path:
    data = CLAUDE.read_bytes().replace(CLAUDE_CWD, str(cwd).encode())
    target = home / ".claude" / "projects" / "-spotter" / f"{CLAUDE_SESSION}.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target


def _aider_project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(AIDER, folder / ".aider.chat.history.md")
    shutil.copyfile(AIDER_INPUT, folder / ".aider.input.history")
    return folder


def _aider_paths(db) -> set[str]:
    return {r[0] for r in db.execute(
        "SELECT p.path FROM source_paths p JOIN sources s ON s.id = p.source_id WHERE s.provider = 'aider'")}


def _opens(monkeypatch) -> list[str]:
    opened: list[str] = []
    from archive.ingest import reader

    real = reader._open_stream

    def counting(path):
        opened.append(str(path))
        return real(path)

    for name in ("discovery", "engine", "generations", "reader", "writer"):  # every module that opens a file
        module = importlib.import_module(f"archive.ingest.{name}")
        if hasattr(module, "_open_stream"):
            monkeypatch.setattr(module, "_open_stream", counting)
    return opened


def test_a_plain_ingest_finds_aider_where_other_sessions_ran(tmp_path, isolated_home, monkeypatch):
    repo = _aider_project(tmp_path / "work" / "spotter")
    _claude_session(isolated_home, repo / "src")  # started in a subfolder of the repository
    _aider_project(tmp_path / "elsewhere")  # no session ran there: never looked at
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions())
    assert summary.failed == 0
    assert _aider_paths(db) == {str(repo / ".aider.chat.history.md"), str(repo / ".aider.input.history")}
    runs = db.execute("SELECT id, created_at, cwd, model FROM threads WHERE provider = 'aider' ORDER BY created_at").fetchall()
    assert [r[2] for r in runs] == [str(repo), str(repo)]  # the history's folder is the project
    assert [r[1] for r in runs] == ["2026-12-02T04:23:39", "2026-12-02T04:23:59"]  # the headings, no zone
    assert {r[3] for r in runs} == {"openai/mock-model"}
    prompts = db.execute("SELECT project, prompt FROM prompt_history WHERE provider = 'aider' ORDER BY ts").fetchall()
    assert prompts == [(str(repo), "Create hello.txt containing hello"), (str(repo), "What did you write?")]
    before = db.execute("SELECT count(*) FROM messages").fetchone()[0]

    opened = _opens(monkeypatch)
    again = ingest_paths(db, None, IngestOptions())
    assert again.files_changed == 0 and opened == []  # a rerun opens nothing
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == before

    # Aider appends a run: only the new bytes are read
    with open(repo / ".aider.chat.history.md", "ab") as f:
        f.write(b"\n# aider chat started at 2026-12-02 05:00:00\n\n#### one more  \n\nYes.\n\n")
    third = ingest_paths(db, None, IngestOptions())
    assert third.files_changed == 1 and set(opened) == {str(repo / ".aider.chat.history.md")}
    assert db.execute("SELECT count(*) FROM threads WHERE provider = 'aider'").fetchone()[0] == 3


def test_a_named_root_is_kept_searched_listed_and_removable(tmp_path, isolated_home):
    src = tmp_path / "src"
    repo = _aider_project(src / "team" / "tool")
    hidden = _aider_project(src / "node_modules" / "pkg")  # dependencies are not projects
    db_path = str(tmp_path / "a.db")
    r = CliRunner().invoke(cli, ["--db", db_path, "ingest", "--root", str(src), "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    db = open_db(db_path)
    assert _aider_paths(db) == {str(repo / ".aider.chat.history.md"), str(repo / ".aider.input.history")}
    assert str(hidden) not in {p.rsplit("/", 1)[0] for p in _aider_paths(db)}
    assert [x["path"] for x in project_roots.list_roots(db)] == [str(src)]

    # a later plain run keeps looking there
    late = _aider_project(src / "later")
    r = CliRunner().invoke(cli, ["--db", db_path, "ingest", "--json"], catch_exceptions=False)
    assert r.exit_code == 0
    assert str(late / ".aider.chat.history.md") in _aider_paths(db)

    status = json.loads(CliRunner().invoke(cli, ["--db", db_path, "status", "--json"]).stdout)
    assert [x["path"] for x in status["project_roots"]["roots"]] == [str(src)]
    assert status["project_roots"]["project_folders"] >= 2  # the Aider runs' own folders
    text = CliRunner().invoke(cli, ["--db", db_path, "status"]).stdout
    assert f"  root {src}" in text

    r = CliRunner().invoke(cli, ["--db", db_path, "roots", "--remove", str(src)], catch_exceptions=False)
    assert r.exit_code == 0 and r.stdout == ""
    assert project_roots.list_roots(db) == []
    r = CliRunner().invoke(cli, ["--db", db_path, "roots", "--remove", str(src)])
    assert r.exit_code == 1 and "not a named root" in r.output
    r = CliRunner().invoke(cli, ["--db", db_path, "roots", "--add", str(src), "--json"], catch_exceptions=False)
    assert [x["path"] for x in json.loads(r.stdout)] == [str(src)]


def test_known_folders_stop_below_home_and_root(tmp_path):
    db = open_db(tmp_path / "a.db")
    home = tmp_path / "home"
    db.execute("INSERT INTO threads (id, provider, cwd) VALUES ('a', 'x', ?), ('b', 'x', 'relative/p'), ('c', 'x', NULL)",
               (str(home / "code" / "p"),))  # fmt: skip
    assert project_roots.known_folders(db, home) == [str(home / "code"), str(home / "code" / "p")]
    db.execute("INSERT INTO threads (id, provider, cwd) VALUES ('d', 'x', '/srv/app')")
    assert "/srv" in project_roots.known_folders(db, home) and "/" not in project_roots.known_folders(db, home)


@pytest.mark.parametrize("provider", ["claude-code"])
def test_provider_filter_leaves_project_files_to_their_adapter(tmp_path, isolated_home, provider):
    repo = _aider_project(tmp_path / "p")
    _claude_session(isolated_home, repo)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, IngestOptions(providers=(provider,)))
    assert _aider_paths(db) == set()
    ingest_paths(db, None, IngestOptions(providers=("aider",)))  # the cwd archived before counts
    assert len(_aider_paths(db)) == 2


def test_a_plain_ingest_finds_crush_and_aider_in_one_project_and_restores_them(tmp_path, isolated_home, monkeypatch):
    """Issue 36's home: a Claude Code session ran in a project holding Aider's history and a
    Crush database (written from Crush's schema: tests/crush_writer.py), and a second project
    is named with ``--root``; one plain ingest archives all of it, the rerun opens nothing,
    and every file comes back byte for byte."""
    import os
    import time

    from crush_writer import write as write_crush

    from archive.ingest import restore

    repo = _aider_project(tmp_path / "work" / "spotter")
    crush_db = write_crush(repo)
    _claude_session(isolated_home, repo)
    named = tmp_path / "src" / "tool"
    _aider_project(named)
    for name in (".aider.chat.history.md", ".aider.input.history"):  # another project's own history
        (named / name).write_bytes(b"# another project\n" + (named / name).read_bytes())
    crush_named = write_crush(named)
    for db_file in (crush_db, crush_named):
        old = time.time() - 60  # not changed within the last instant: its stats are trusted
        os.utime(db_file, (old, old))
    db_path = str(tmp_path / "a.db")
    r = CliRunner().invoke(cli, ["--db", db_path, "ingest", "--root", str(tmp_path / "src"), "--json"],
                           catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    db = open_db(db_path)
    found = {(p, prov) for p, prov in db.execute(
        "SELECT DISTINCT p.path, s.provider FROM source_paths p JOIN sources s ON s.id = p.source_id "
        "WHERE s.provider IN ('aider', 'crush')")}  # fmt: skip
    paths = {p for p, _ in found}
    assert {prov for _, prov in found} == {"aider", "crush"}
    for project in (repo, named):
        assert str(project / ".aider.chat.history.md") in paths
        assert any(p.startswith(str(project / ".crush" / "crush.db")) for p in paths)
    crush_threads = db.execute("SELECT DISTINCT cwd FROM threads WHERE provider = 'crush'").fetchall()
    assert {c for (c,) in crush_threads} == {str(repo), str(named)}

    opened = _opens(monkeypatch)
    again = ingest_paths(db, None, IngestOptions())
    assert again.files_changed == 0 and opened == []  # a rerun opens nothing

    out = tmp_path / "restored"
    files = restore(db, out, all_generations=True)
    restored = {str(f.path): f for f in files}
    for project in (repo, named):
        for name in (".aider.chat.history.md", ".aider.input.history"):
            back = next((p for p in restored if p.endswith(str(project / name))), None)
            assert back is not None, sorted(restored)
            assert Path(back).read_bytes() == (project / name).read_bytes()
    assert {f.source_uid for f in files} >= {r[0] for r in db.execute(
        "SELECT uid FROM sources WHERE provider IN ('aider', 'crush')")}  # fmt: skip
