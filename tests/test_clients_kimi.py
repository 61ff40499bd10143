"""Kimi CLI with the real client (``-m clients``; kimi-cli 1.51.0 from scripts/install_clients.sh,
tests/clients/kimi_client.py): one session recorded once for the module (a prompt answered with
reasoning and a Shell call, an Agent call whose coder subagent answers, a final answer), archived whole (the subagent as a child thread, each
response's usage once) and restored byte for byte; the recorded session emitted to Kimi and to
Claude Code is resumed by each client, and a Claude Code session emitted to Kimi is resumed by
kimi (the model is sent the archived conversation, and the marks bring the resumed lines back
as a hand-off).

Each kimi run takes ~25 s on this machine (2 shared cores; most of it starting Python): three
runs in all. The committed recording (tests/fixtures/recorded/kimi-1.51.0) also holds a
``--session`` resume of the client's own session."""

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


def run(*args: str, env: dict[str, str | None] | None = None) -> str:
    res = CliRunner().invoke(cli, list(args), env=env)
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory):
    from clients.kimi_client import find_kimi, kimi_home, run_kimi
    from clients.mock_servers import ChatCompletionsMock, Script, Text, Thinking, Tool

    exe = find_kimi()
    if exe is None:
        pytest.skip("kimi-cli not installed (scripts/install_clients.sh)")
    tmp = tmp_path_factory.mktemp("kimi")
    home, cwd = tmp / "home", tmp / "proj"
    home.mkdir()
    cwd.mkdir()
    script = Script(turns={
        "[tools]": [
            [Thinking("I should run the command."), Text("Running a command."), Tool("Shell", {"command": "echo hello-from-shell"})],
            [Tool("Agent", {"description": "Say hi", "prompt": "[sub] Say hi.", "subagent_type": "coder"})],
            [Text("The command printed hello-from-shell and the agent said hi.")],
        ],
        "[sub]": [[Text("hi from the subagent")]],
    })
    with ChatCompletionsMock(script) as mock:
        run_kimi(exe, home, cwd, mock.url, "[tools] Run echo hello-from-shell, then ask a coder agent to say hi.").check()
        (session,) = [p for p in (kimi_home(home) / "sessions").glob("*/*") if p.is_dir()]
        usage = [r.usage for r in mock.requests if r.path.endswith("/chat/completions")]
    return {"exe": exe, "home": home, "cwd": cwd, "session": session, "usage": usage, "tmp": tmp}


def _ingest(db, home: Path):  # type: ignore[no-untyped-def]
    from clients.kimi_client import kimi_home

    return ingest_paths(db, None, IngestOptions(env={"HOME": str(home), "KIMI_SHARE_DIR": str(kimi_home(home))},
                                                idle_seconds=0))


def test_a_recorded_session_is_archived_whole_and_restored_byte_exact(recorded, tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    summary = _ingest(db, recorded["home"])
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("unknown")
    assert not summary.warnings, summary.warnings
    sid = recorded["session"].name
    messages = load_messages(db.conn, "m.thread_id = ?", (sid,))
    kinds = [(m.role, [type(b).__name__ for b in m.content]) for m in messages]
    assert kinds == [("user", ["Text"]), ("assistant", ["Reasoning", "Text", "ToolCall"]), ("tool", ["ToolResult"]),
                     ("assistant", ["ToolCall"]), ("tool", ["ToolResult"]), ("assistant", ["Text"])], kinds
    call, result = messages[1].content[2], messages[2].content[0]
    assert call.name == "Shell" and call.input == {"command": "echo hello-from-shell"} and result.call_id == call.call_id
    assert "hello-from-shell" in json.dumps(result.output)
    thread = db.execute("SELECT title, metadata FROM threads WHERE id = ?", (sid,)).fetchone()
    assert thread[0].startswith("[tools] Run echo") and json.loads(thread[1])["cwd"] == str(recorded["cwd"])
    # the coder subagent is a child thread with its own messages
    (child, parent) = db.execute("SELECT id, parent_thread_id FROM threads WHERE id != ?", (sid,)).fetchone()
    assert parent == sid and child.startswith(sid + "/")
    assert "hi from the subagent" in json.dumps([m.to_dict() for m in load_messages(db.conn, "m.thread_id = ?", (child,))])
    # each response once, as the mock reported it (cached input counted inside prompt_tokens),
    # the subagent's read from its own wire and from the parent's: once
    rows = db.execute("SELECT input_tokens, cache_read_tokens, output_tokens FROM usage").fetchall()
    want = sorted((u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"],
                   u["prompt_tokens_details"]["cached_tokens"], u["completion_tokens"])
                  for u in recorded["usage"] if u is not None)
    assert sorted(tuple(r) for r in rows) == want
    restored = {str(r.path).split(f"/{sid}/", 1)[1]: r.sha256 for r in restore(db, tmp_path / "out")}
    files = {str(p.relative_to(recorded["session"])): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in recorded["session"].rglob("*") if p.is_file() and p.stat().st_size
             and p.name not in ("prompt.txt", "output")}
    assert restored == files


def _resume(recorded, home: Path, cwd: Path, session_id: str):  # type: ignore[no-untyped-def]
    from clients.kimi_client import run_kimi
    from clients.mock_servers import ChatCompletionsMock, Script, Text

    with ChatCompletionsMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        res = run_kimi(recorded["exe"], home, cwd, mock.url, "[resume-check] One more thing: reply OK.",
                       session=session_id).check()
        (req,) = [r for r in mock.model_requests() if "[resume-check]" in json.dumps(r.body["messages"][-1])]
    assert "OK." in res.stdout
    return req.body["messages"]


def test_a_claude_session_emitted_to_kimi_is_resumed_by_kimi(recorded, tmp_path: Path) -> None:
    from clients.kimi_client import kimi_home

    src = tmp_path / "src"
    for d in CLAUDE_BASH.iterdir():
        if d.is_dir():
            shutil.copytree(d, src / d.name)
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", str(src))
    original = json.loads((CLAUDE_BASH / "scenario.json").read_text())["session_id"]
    home, cwd = tmp_path / "home", tmp_path / "proj"
    cwd.mkdir()
    # the user's own index, naming another folder: the emit adds the session's folder to it
    kimi_home(home).mkdir(parents=True)
    (kimi_home(home) / "kimi.json").write_text(json.dumps({"work_dirs": [{"path": "/elsewhere", "kaos": "local",
                                                                          "last_session_id": None}]}))
    env = {"HOME": str(home), "KIMI_SHARE_DIR": str(kimi_home(home))}
    report = json.loads(run("--db", db, "emit", original, "--to", "kimi", "--install", "--cwd", str(cwd),
                            "--json-report", env=env))
    assert not report["exact"]
    index = json.loads((kimi_home(home) / "kimi.json").read_text())
    assert [d["path"] for d in index["work_dirs"]] == ["/elsewhere", str(cwd)]
    sent = _resume(recorded, home, cwd, report["target_id"])
    roles = [m["role"] for m in sent if m["role"] != "system"]
    # the archived conversation, then the new prompt: Claude's two Bash calls and their results
    assert roles.count("tool") == 2 and roles[-1] == "user", roles
    assert "Run two commands" in json.dumps(sent) and "failed as expected" in json.dumps(sent)
    # the resumed session comes back as a hand-off of the Claude thread: its messages once
    run("--db", db, "ingest", "-q", str(kimi_home(home) / "sessions"))
    conn = open_db(Path(db))
    (tid,) = [r[0] for r in conn.execute("SELECT id FROM threads WHERE provider = 'kimi'")]
    meta = json.loads(conn.execute("SELECT metadata FROM threads WHERE id = ?", (tid,)).fetchone()[0])
    assert meta["emittedFrom"] == original
    own = load_messages(conn.conn, "m.thread_id = ?", (tid,))
    assert [m.role for m in own] == ["user", "assistant"] and "resume-check" in json.dumps(own[0].to_dict())


def test_the_kimi_session_emitted_to_kimi_and_to_claude_code_is_resumed_by_both(recorded, tmp_path: Path) -> None:
    from clients import runner
    from clients.kimi_client import kimi_home
    from clients.mock_servers import AnthropicMock, Script, Text

    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", str(kimi_home(recorded["home"]) / "sessions"))
    sid = recorded["session"].name
    # to Kimi itself, built from the canonical model (not the byte-exact copy)
    home, cwd = tmp_path / "khome", tmp_path / "kwork"
    cwd.mkdir()
    env = {"HOME": str(home), "KIMI_SHARE_DIR": str(kimi_home(home))}
    report = json.loads(run("--db", db, "emit", sid, "--to", "kimi", "--rebuild-format", "--install", "--cwd", str(cwd),
                            "--json-report", env=env))
    sent = json.dumps(_resume(recorded, home, cwd, report["target_id"]))
    assert "Run echo hello-from-shell" in sent and "hello-from-shell" in sent and "the agent said hi" in sent
    # to Claude Code
    exe = runner.find_client("claude")
    if exe is None:
        pytest.skip("claude not installed")
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    report = json.loads(run("--db", db, "emit", sid, "--to", "claude-code", "--install", "--cwd",
                            str(cwd), "--json-report", env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}))
    with AnthropicMock(Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        runner.run_claude(exe, home, cwd, mock.url, "[resume-check] One more thing: reply OK.",
                          resume=report["target_id"]).check()
        (req,) = mock.model_requests()
    sent = json.dumps(req.body["messages"])
    assert "Run echo hello-from-shell" in sent and "hello-from-shell" in sent and "The command printed" in sent
