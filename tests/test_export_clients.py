"""``sesh-archive resume`` (issue 41) run by the real clients (marker ``clients``), offline
against the loopback mock model: the command it prints is run as printed (``sesh-archive``
from this environment, the archive named by ``$SESH_ARCHIVE_DB``), with only the flags the
harness adds to every run for a non-interactive client (tests/clients/runner.py), and the
client must continue the archived session: the first request it sends holds the recorded
conversation, then the new prompt.

* Claude Code: the session's file was deleted by the client (the archive alone has it): the
  printed command installs the archived copy (``emit --install``), then ``claude --resume``.
* Codex: the rollout is still in place: ``codex resume ID`` alone.
* ``--to codex``: a Claude Code session handed to Codex (installed, then ``codex resume``).

One client run each, on the existing recordings (tests/fixtures/recorded/)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_clients import client, mock_for, resent, sent_conversation

from clients import conversation as conv
from clients import recordings as rec_mod
from clients import runner
from clients.mock_servers import Script, Text
from clients.scenarios import RESUME_PROMPT

pytestmark = pytest.mark.clients

SCRIPT = Script(turns={"[resume-check]": [[Text("OK.")]]})
BIN = Path(sys.executable).parent  # where the editable install put sesh-archive


def _recording(vendor: str, scenario: str = "text") -> rec_mod.Recording:
    found = [r for r in rec_mod.recordings(vendor) if r.meta["scenario"] == scenario]
    return max(found, key=lambda r: tuple(int(x) for x in r.version.split(".")))


def _env(vendor: str, home: Path, db: Path, url: str) -> dict[str, str]:
    env = runner.claude_env(home, url) if vendor == "claude-code" else runner.codex_env(home)
    env["PATH"] = f"{BIN}{os.pathsep}{env['PATH']}"
    env["SESH_ARCHIVE_DB"] = str(db)
    return env


def _archive(rec: rec_mod.Recording, home: Path, db: Path) -> Path:
    """The recording installed in ``home`` for its own recorded folder, and ingested."""
    cwd = Path(rec.meta["cwd"])
    cwd.mkdir(parents=True, exist_ok=True)
    rec_mod.install(rec, home, cwd)
    res = subprocess.run([sys.executable, "-m", "archive", "--db", str(db), "ingest", "-q",
                          str(home / runner.HOMES[rec.vendor][0])], capture_output=True, text=True)  # fmt: skip
    assert res.returncode == 0, res.stderr
    return cwd


def _sesh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    res = subprocess.run(["sesh-archive", *args], env=env, capture_output=True, text=True)
    assert res.returncode == 0, (args, res.stdout, res.stderr)
    return res


def _run_printed(command: str, vendor: str, home: Path, env: dict[str, str], url: str) -> runner.RunResult:
    """Run the printed command step by step as a shell would (``cd DIR && sesh-archive ...
    && CLIENT ...``): the client's step gets the harness's non-interactive flags."""
    cwd = Path.cwd()
    result = None
    for step in command.split(" && "):
        argv = shlex.split(step)
        if argv[0] == "cd":
            cwd = Path(argv[1])
        elif argv[0] == "sesh-archive":
            res = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
            assert res.returncode == 0, (step, res.stderr)
        elif argv[0] == "claude":
            args = [str(client(vendor)), *argv[1:], "-p", RESUME_PROMPT, "--permission-mode", "acceptEdits",
                    "--output-format", "json", "--model", runner.CLAUDE_MODEL]  # fmt: skip
            result = runner._run(args, cwd, env, 120)
        elif argv[0] == "codex":
            runner.write_codex_config(home, url)  # the mock's port, as every harness run does
            args = [str(client(vendor)), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                    *argv[1:], RESUME_PROMPT]  # fmt: skip
            result = runner._run(args, cwd, env, 120)
        else:
            raise AssertionError(f"unexpected step {step!r} in {command!r}")
    assert result is not None, command
    return result.check()


def _continues(vendor: str, rec: rec_mod.Recording, mock: object) -> None:
    first = mock.model_requests()[0]  # type: ignore[attr-defined]
    expected = resent(vendor, rec.conversation) + [conv.Turn("user", "text", None, RESUME_PROMPT)]
    conv.assert_same(expected, sent_conversation(vendor, first.body))


def test_claude_code_resumes_a_session_it_deleted(tmp_path: Path) -> None:
    client("claude-code")
    rec = _recording("claude-code")
    home, db = tmp_path / "home", tmp_path / "archive.db"
    cwd = _archive(rec, home, db)
    shutil.rmtree(home / ".claude" / "projects")  # the client's cleanup: only the archive has it
    with mock_for("claude-code", SCRIPT) as mock:
        env = _env("claude-code", home, db, mock.url)
        printed = _sesh(env, "resume", rec.session_id[:8])
        command = printed.stdout.strip()
        assert command == (f"sesh-archive emit {rec.session_id} --to claude-code --install && "
                           f"cd {cwd} && claude --resume {rec.session_id}"), command  # fmt: skip
        assert "gone from disk" in printed.stderr
        _run_printed(command, "claude-code", home, env, mock.url)
        _continues("claude-code", rec, mock)


def test_codex_resumes_with_the_printed_command(tmp_path: Path) -> None:
    client("codex")
    rec = _recording("codex")
    home, db = tmp_path / "home", tmp_path / "archive.db"
    _archive(rec, home, db)
    with mock_for("codex", SCRIPT) as mock:
        env = _env("codex", home, db, mock.url)
        command = _sesh(env, "resume", rec.session_id).stdout.strip()
        assert command == f"codex resume {rec.session_id}"
        _run_printed(command, "codex", home, env, mock.url)
        _continues("codex", rec, mock)


def test_a_claude_code_session_handed_to_codex_resumes_there(tmp_path: Path) -> None:
    client("codex")
    rec = _recording("claude-code")
    src_home, home, db = tmp_path / "src-home", tmp_path / "home", tmp_path / "archive.db"
    _archive(rec, src_home, db)
    runner.write_codex_config(home, "http://127.0.0.1:9")  # the user's Codex configuration (provider "mock")
    with mock_for("codex", SCRIPT) as mock:
        env = _env("codex", home, db, mock.url)
        res = _sesh(env, "resume", rec.session_id, "--to", "codex")
        command = res.stdout.strip()
        assert command.startswith("codex resume ") and "wrote " in res.stderr, (command, res.stderr)
        _run_printed(command, "codex", home, env, mock.url)
        sent = sent_conversation("codex", mock.model_requests()[0].body)
    texts = [t.value for t in sent if t.kind == "text"]
    recorded = [t.value for t in rec.conversation if t.kind == "text" and t.role == "user"]
    assert all(r in texts for r in recorded) and texts[-1] == RESUME_PROMPT, texts
