"""Kilo Code CLI with the real client (issue 36, ``-m clients``): what ``emit --to kilo``
writes is imported and resumed by ``kilo`` itself, and comes back as a hand-off of the
thread it was written from; a Kilo thread handed to Claude Code is resumed by ``claude``.

CI budget: one Kilo run in all (import, then one ``kilo run --session`` against the mock),
shared by the module's tests through a module-scoped fixture. Kilo 7.7.7 spends most of a
run starting up (about 1-2 minutes on these machines).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.store import SqliteMessageStore
from clients import runner
from clients.kilo import find_kilo, kilo_data, kilo_db, kilo_import, run_kilo, write_kilo_config
from clients.mock_servers import AnthropicMock, ChatCompletionsMock, Script, Text
from clients.scenarios import RESUME_PROMPT

pytestmark = pytest.mark.clients

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
CLAUDE_BASH = RECORDED / "claude-code-2.1.197" / "bash"
KILO_DOC = Path(__file__).parent / "fixtures" / "kilo" / "session.jsonl"


def cli_run(*args: str, env: dict[str, str | None] | None = None) -> str:
    res = CliRunner().invoke(cli, list(args), env=env)
    assert res.exit_code == 0, res.output
    return res.stdout


def home_env(home: Path) -> dict[str, str | None]:
    return {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config"), "KILO_DB": None}


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A Claude Code recording archived, emitted to Kilo and installed, imported with
    ``kilo import``, resumed with ``kilo run --session`` (one prompt), then Kilo's database
    ingested again into the same archive."""
    exe = find_kilo()
    if exe is None:
        pytest.skip("kilo not found (scripts/install_clients.sh installs @kilocode/cli)")
    tmp = tmp_path_factory.mktemp("kilo")
    home, cwd, src = tmp / "home", tmp / "work", tmp / "src"
    cwd.mkdir()
    for d in CLAUDE_BASH.iterdir():
        if d.is_dir():
            shutil.copytree(d, src / d.name)
    db = str(tmp / "archive.db")
    cli_run("--db", db, "ingest", "-q", str(src))
    original = json.loads((CLAUDE_BASH / "scenario.json").read_text())["session_id"]
    store = SqliteMessageStore(db)
    view = store.get_messages(original)
    store.conn.close()
    write_kilo_config(home, "http://127.0.0.1:9")  # the user's config: emit takes its provider/model
    report = json.loads(cli_run("--db", db, "emit", original, "--to", "kilo", "--install", "--cwd", str(cwd),
                                "--json-report", env=home_env(home)))
    written = kilo_data(home) / "kilo-import" / f"{report['target_id']}.json"
    assert written.exists() and report["resume"].startswith("kilo import "), report
    kilo_import(exe, home, cwd, written)
    with ChatCompletionsMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        res = run_kilo(exe, home, cwd, mock.url, RESUME_PROMPT, resume=report["target_id"]).check()
        sent = [r.body for r in mock.model_requests()]
    cli_run("--db", db, "ingest", "-q", str(kilo_db(home)))
    return {"db": db, "original": original, "view": view, "report": report, "sent": sent, "stdout": res.stdout}


def test_kilo_resumes_what_emit_wrote(resumed: dict) -> None:
    """Kilo sent the archived history (the Claude Code conversation) with the new prompt."""
    (body,) = resumed["sent"]
    texts = json.dumps(body["messages"])
    assert "failed as expected" in texts and RESUME_PROMPT in texts


def test_the_resumed_session_is_a_handoff(resumed: dict) -> None:
    store = SqliteMessageStore(resumed["db"])
    new = [t for t in store.list_threads() if (t.metadata or {}).get("emittedFrom") == resumed["original"]]
    assert len(new) == 1
    assert store.conn.execute("SELECT provider FROM threads WHERE id = ?", (new[0].id,)).fetchone() == ("kilo",)
    got = store.get_messages(new[0].id)
    assert got[: len(resumed["view"])] == resumed["view"]  # the history stored once, inherited
    texts = [b.text for m in got[len(resumed["view"]):] for b in m.content if hasattr(b, "text")]
    assert RESUME_PROMPT in texts and "OK." in texts
    assert store.conn.execute("SELECT kind FROM thread_lineage WHERE thread_id = ?", (new[0].id,)).fetchone() == ("handoff",)


def test_claude_code_resumes_a_kilo_thread(tmp_path: Path) -> None:
    """The other way: a recorded Kilo thread emitted to Claude Code and resumed by ``claude``."""
    exe = runner.find_client("claude")
    if exe is None:
        pytest.skip("claude not found")
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    db = str(tmp_path / "a.db")
    copy = tmp_path / "src" / KILO_DOC.name
    copy.parent.mkdir()
    copy.write_bytes(KILO_DOC.read_bytes())
    cli_run("--db", db, "ingest", "-q", str(copy))
    thread = json.loads(KILO_DOC.read_bytes().split(b"\n", 1)[0])["aggregate"]
    report = json.loads(cli_run("--db", db, "emit", thread, "--to", "claude-code", "--install", "--cwd", str(cwd),
                                "--json-report", env=home_env(home)))
    with AnthropicMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        runner.run_claude(exe, home, cwd, mock.url, RESUME_PROMPT, resume=report["target_id"]).check()
        (body,) = [r.body for r in mock.model_requests()]
    sent = json.dumps(body["messages"])
    assert "hello-from-bash" in sent and "I thought about it: 42." in sent and RESUME_PROMPT in sent
    cli_run("--db", db, "ingest", "-q", str(home / ".claude"))
    store = SqliteMessageStore(db)
    new = [t for t in store.list_threads() if (t.metadata or {}).get("emittedFrom") == thread]
    assert len(new) == 1
