"""Mistral Vibe with the real client (``-m clients``; vibe 3.0.3 from scripts/install_clients.sh,
tests/clients/vibe_client.py): one session recorded once for the module (a prompt answered
with reasoning and a bash call, its result, a final answer), archived whole and restored byte
for byte; a Claude Code session emitted to Vibe is resumed by vibe (the model is sent the
archived conversation); the recorded Vibe session emitted to Claude Code is resumed by claude.

Each vibe run takes ~50 s on the CI machine (the Rust CLI starts a Python app server): two
runs in all."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.projection import load_messages

pytestmark = pytest.mark.clients

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
CLAUDE_BASH = RECORDED / "claude-code-2.1.197" / "bash"
VERSION = "3.0.3"


def run(*args: str, env: dict[str, str | None] | None = None) -> str:
    res = CliRunner().invoke(cli, list(args), env=env)
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory):
    from clients.mock_servers import ChatCompletionsMock, Script, Text, Thinking, Tool
    from clients.vibe_client import find_vibe, run_vibe, vibe_home

    exe = find_vibe(VERSION)
    if exe is None:
        pytest.skip(f"vibe {VERSION} not installed (scripts/install_clients.sh)")
    tmp = tmp_path_factory.mktemp("vibe")
    home, cwd = tmp / "home", tmp / "proj"
    home.mkdir()
    cwd.mkdir()
    script = Script(turns={"[tools]": [
        [Thinking("I should run the command."), Text("Running a command."), Tool("bash", {"command": "echo hello-from-bash"})],
        [Text("The command printed hello-from-bash.")],
    ]})
    with ChatCompletionsMock(script) as mock:
        run_vibe(exe, home, cwd, mock.url, "[tools] Run echo hello-from-bash.", extra=("--auto-approve", "--trust")).check()
        usage = [r.usage for r in mock.model_requests()]
    (session,) = [p for p in (vibe_home(home) / "logs" / "session" / "unified").iterdir() if p.is_dir()]
    return {"exe": exe, "home": home, "cwd": cwd, "session": session, "usage": usage, "tmp": tmp}


def test_a_recorded_session_is_archived_whole_and_restored_byte_exact(recorded, tmp_path: Path) -> None:
    from clients.vibe_client import vibe_home

    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(recorded["home"]),
                                                        "VIBE_HOME": str(vibe_home(recorded["home"]))}, idle_seconds=0))
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("unknown")
    sid = recorded["session"].name
    messages = load_messages(db.conn, "m.thread_id = ?", (sid,))
    kinds = [(m.role, [type(b).__name__ for b in m.content]) for m in messages]
    assert kinds == [("user", ["Text"]), ("assistant", ["Reasoning", "Text", "ToolCall"]), ("tool", ["ToolResult"]),
                     ("assistant", ["Text"])], kinds
    call, result = messages[1].content[2], messages[2].content[0]
    assert call.name == "bash" and call.input == {"command": "echo hello-from-bash"} and result.call_id == call.call_id
    assert "hello-from-bash" in json.dumps(result.output)
    # each response once, as the mock reported it (cached input counted inside prompt_tokens)
    rows = db.execute("SELECT input_tokens, cache_read_tokens, output_tokens FROM usage WHERE thread_id = ? "
                      "ORDER BY ts, key", (sid,)).fetchall()  # fmt: skip
    want = sorted((u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"],
                   u["prompt_tokens_details"]["cached_tokens"], u["completion_tokens"]) for u in recorded["usage"])
    assert sorted(tuple(r) for r in rows) == want
    # every file archived comes back byte for byte
    back = list(restore(db, tmp_path / "out"))
    restored = {str(r.path).split(f"/{sid}/", 1)[1]: r.sha256 for r in back if f"/{sid}/" in str(r.path)}
    files = {str(p.relative_to(recorded["session"])): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in recorded["session"].rglob("*") if p.is_file() and p.stat().st_size}
    assert restored == files
    # and the prompt history the TUI keeps beside the sessions (issue 38), when it wrote one
    history = vibe_home(recorded["home"]) / "vibehistory"
    side = {r.path.name: r.sha256 for r in back if f"/{sid}/" not in str(r.path)}
    assert side == ({"vibehistory": hashlib.sha256(history.read_bytes()).hexdigest()} if history.is_file() else {})


def test_a_claude_session_emitted_to_vibe_is_resumed_by_vibe(recorded, tmp_path: Path) -> None:
    from clients.mock_servers import ChatCompletionsMock, Script, Text
    from clients.vibe_client import VIBE_ALIAS, run_vibe, vibe_home, write_vibe_config

    src = tmp_path / "src"
    for d in CLAUDE_BASH.iterdir():
        if d.is_dir():
            shutil.copytree(d, src / d.name)
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", str(src))
    original = json.loads((CLAUDE_BASH / "scenario.json").read_text())["session_id"]
    home, cwd = tmp_path / "home", tmp_path / "proj"
    cwd.mkdir()
    write_vibe_config(home, "http://127.0.0.1:9")  # the user's own config: emit names its active model
    report = json.loads(run("--db", db, "emit", original, "--to", "vibe", "--install", "--cwd", str(cwd), "--json-report",
                            env={"HOME": str(home), "VIBE_HOME": str(vibe_home(home))}))
    assert not report["exact"]
    (meta,) = (vibe_home(home) / "logs" / "session").glob("session_*/meta.json")
    assert json.loads(meta.read_text())["config"] == {"active_model": VIBE_ALIAS}
    session_id = report["resume"].rsplit(" ", 1)[1]
    with ChatCompletionsMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        res = run_vibe(recorded["exe"], home, cwd, mock.url, "[resume-check] One more thing: reply OK.",
                       resume=session_id, extra=("--auto-approve", "--trust")).check()
        (req,) = mock.model_requests()
    assert "OK." in res.stdout
    sent = req.body["messages"]
    roles = [m["role"] for m in sent if m["role"] != "system"]
    # the archived conversation, then the new prompt: Claude's two Bash calls and their results
    assert roles.count("tool") == 2 and roles[-1] == "user", roles
    assert "Run two commands" in json.dumps(sent[1:]) and "failed as expected" in json.dumps(sent)


def test_the_vibe_session_emitted_to_claude_code_is_resumed_by_claude(recorded, tmp_path: Path) -> None:
    from clients import runner
    from clients.mock_servers import AnthropicMock, Script, Text
    from clients.vibe_client import vibe_home

    exe = runner.find_client("claude")
    if exe is None:
        pytest.skip("claude not installed")
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", str(vibe_home(recorded["home"]) / "logs" / "session"))
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    report = json.loads(run("--db", db, "emit", recorded["session"].name, "--to", "claude-code", "--install", "--cwd",
                            str(cwd), "--json-report", env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}))
    with AnthropicMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        runner.run_claude(exe, home, cwd, mock.url, "[resume-check] One more thing: reply OK.",
                          resume=report["target_id"]).check()
        (req,) = mock.model_requests()
    sent = json.dumps(req.body["messages"])
    assert "Run echo hello-from-bash" in sent and "hello-from-bash" in sent and "The command printed" in sent
