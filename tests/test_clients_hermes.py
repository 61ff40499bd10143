"""Hermes Agent with the real client (marker ``clients``; issue 35), offline against the
chat-completions mock.

One session is recorded per module (``recorded``: a prompt with a ``terminal`` call, its
result and a reasoning answer, then ``--resume``; about 40 s a run here, so every test reads
that recording and Hermes runs once more, for the hand-off): archived whole from
``state.db`` and its WAL, restored byte-exact; a Claude Code thread emitted to Hermes,
imported with Hermes's own ``import_sessions`` and resumed by ``hermes --resume`` comes back
as a hand-off; the Hermes thread emitted to Claude Code is resumed by ``claude --resume``
and comes back as a hand-off too.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_paths
from archive.projection import load_messages
from archive.readonly import ReadOnlyDatabase
from archive.vendors.hermes import ADAPTER
from clients import hermes_client as hc
from clients import runner
from clients.mock_servers import AnthropicMock, ChatCompletionsMock, Script, Text
from ingest_helpers import NEVER_IDLE

pytestmark = pytest.mark.clients

CLAUDE_BASH = Path(__file__).parent / "fixtures" / "recorded" / "claude-code-2.1.197" / "bash"


def cli_run(*args: str, env: dict[str, str | None] | None = None) -> str:
    res = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    exe = hc.find_hermes()
    if exe is None:
        pytest.skip(f"hermes {hc.HERMES_VERSION} not found under $SESH_CLIENTS_OLD_DIR or <clients>/old; "
                    "run scripts/install_clients.sh")
    base = tmp_path_factory.mktemp("hermes")
    home, cwd = base / "home", base / "work"
    cwd.mkdir(parents=True)
    with ChatCompletionsMock(hc.script()) as mock:
        t = time.monotonic()
        sid = hc.record_session(exe, home, cwd, mock.url)
        seconds = time.monotonic() - t
        requests = [r for r in mock.requests if r.path.endswith("/chat/completions")]
    return SimpleNamespace(exe=exe, home=home, cwd=cwd, sid=sid, requests=requests, seconds=seconds)


def test_the_recorded_session_is_archived_whole_and_restored_byte_exact(recorded: SimpleNamespace,
                                                                         tmp_path: Path) -> None:
    # the resume sent the whole history back: Hermes continued the session from state.db
    last = recorded.requests[-1].body["messages"]
    sent = [m.get("content") for m in last if m.get("role") in ("user", "tool")]
    assert sent[-1] == hc.RESUME_PROMPT and hc.BASH_PROMPT in sent[0]
    assert any("hello-from-terminal" in (c or "") for c in sent)
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, [hc.hermes_home(recorded.home)], NEVER_IDLE)
    assert summary.failed == 0
    msgs = load_messages(db.conn, "m.thread_id = ?", (recorded.sid,))
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    kinds = [type(b).__name__ for m in msgs for b in m.content]
    assert kinds.count("ToolCall") == 1 and kinds.count("ToolResult") == 1 and "Reasoning" in kinds
    assert db.conn.execute("SELECT sum(input_tokens) > 0, sum(output_tokens) > 0 FROM usage").fetchone() == (1, 1)
    bad = db.conn.execute("SELECT kind, reason FROM reports WHERE kind IN ('unknown', 'parse_error', 'invalid', "
                          "'unexplained', 'adapter_error')").fetchall()  # fmt: skip
    assert bad == []
    # restore: the documents, byte for byte as the database gives them now
    out = tmp_path / "restored"
    cli_run("--db", str(tmp_path / "a.db"), "restore", str(out))
    restored = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with ReadOnlyDatabase(hc.state_db(recorded.home)) as ro:
        docs = {Path(d.path).name: d.data for d in ADAPTER.documents(hc.state_db(recorded.home), ro.query)}
    assert docs and all(restored[name] == data for name, data in docs.items())


def test_a_claude_thread_emitted_to_hermes_is_resumed_by_hermes_as_a_hand_off(recorded: SimpleNamespace,
                                                                               tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(CLAUDE_BASH / "projects", src / "projects")
    db_path = str(tmp_path / "a.db")
    cli_run("--db", db_path, "ingest", "-q", str(src))
    claude_sid = json.loads((CLAUDE_BASH / "scenario.json").read_text())["session_id"]
    db = open_db(db_path)
    history = load_messages(db.conn, "m.thread_id = ?", (claude_sid,))
    count = db.conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    db.conn.close()
    home = recorded.home
    env = {"HOME": str(home), "HERMES_HOME": str(hc.hermes_home(home))}
    report = json.loads(cli_run("--db", db_path, "emit", claude_sid, "--to", "hermes", "--install", "--cwd",
                                str(recorded.cwd), "--json-report", env=env))  # fmt: skip
    (export,) = report["written"]
    new_id = report["target_id"]
    assert "import_sessions" in report["resume"] and f"hermes --resume {new_id}" in report["resume"]
    imported = hc.import_session(recorded.exe, home, recorded.cwd, Path(export)).check()
    assert "'ok': True" in imported.stdout
    with ChatCompletionsMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        hc.run_hermes(recorded.exe, home, recorded.cwd, mock.url, hc.RESUME_PROMPT, resume=new_id).check()
        sent = [r.body["messages"] for r in mock.requests if r.path.endswith("/chat/completions")
                and isinstance(r.body, dict) and r.body.get("tools")][-1]  # fmt: skip
    # Hermes sent the Claude history (the Bash calls and their results) before the new prompt
    assert sum(1 for m in sent if m.get("role") == "tool") >= 1 and sent[-1]["content"] == hc.RESUME_PROMPT
    cli_run("--db", db_path, "ingest", "-q", str(hc.hermes_home(home)))
    db = open_db(db_path)
    (row,) = db.conn.execute("SELECT id, metadata FROM threads WHERE id = ?", (new_id,)).fetchall()
    assert json.loads(row[1])["emittedFrom"] == claude_sid
    own = load_messages(db.conn, "m.thread_id = ?", (new_id,))
    assert [m.role for m in own] == ["user", "assistant"]  # the history is the original's, stored once
    assert db.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == count + 2 + 6  # + the recorded session
    assert db.conn.execute("SELECT kind FROM thread_lineage WHERE thread_id = ?", (new_id,)).fetchone() == ("handoff",)
    assert load_messages(db.conn, "m.thread_id = ?", (claude_sid,)) == history


def test_the_hermes_thread_emitted_to_claude_code_is_resumed_by_claude(recorded: SimpleNamespace,
                                                                        tmp_path: Path) -> None:
    claude = runner.find_client("claude")
    if claude is None:
        pytest.skip("claude CLI not found; run scripts/install_clients.sh")
    db_path = str(tmp_path / "a.db")
    cli_run("--db", db_path, "ingest", "-q", str(hc.hermes_home(recorded.home)))
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir(parents=True)
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    report = json.loads(cli_run("--db", db_path, "emit", recorded.sid, "--to", "claude-code", "--install", "--cwd",
                                str(cwd), "--json-report", env=env))  # fmt: skip
    with AnthropicMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        runner.run_claude(claude, home, cwd, mock.url, hc.RESUME_PROMPT, resume=report["target_id"]).check()
    cli_run("--db", db_path, "ingest", "-q", str(home / ".claude"))
    db = open_db(db_path)
    resumed = [r[0] for r in db.conn.execute("SELECT id FROM threads WHERE json_extract(metadata, '$.emittedFrom') = ?",
                                             (recorded.sid,))]  # fmt: skip
    assert len(resumed) == 1
    texts = [b.text for m in load_messages(db.conn, "m.thread_id = ?", (resumed[0],)) for b in m.content
             if hasattr(b, "text")]  # fmt: skip
    assert "OK." in texts
