"""Older releases with the real clients (marker ``clients``, issue 33), offline against the
mock model servers: one release of each old layout the archive reads.

* pi 0.27.9 (session format v1): a session written by it is read whole, and after the
  current pi migrates the file in place (when installed) it is the same thread, no message
  twice.
* Copilot CLI 0.0.370 (flat ``session-state/<uuid>.jsonl``): a recorded flat session,
  archived and restored byte for byte into a fresh home, is resumed by 0.0.370, which sends
  the archived prompts to the model again; the lines it appends are read incrementally.
  (0.0.370's ``-p`` stores no conversation, so a session is only made in its TUI: the
  recording in tests/fixtures/copilot/.)
* Codex TypeScript CLI 0.1.2505172129 (``rollout-*.json``): its TUI, driven through a
  pseudo-terminal (``-q`` writes no rollout), saves a session the archive reads whole and
  restores byte for byte, and its prompt history ``~/.codex/history.json`` (a side file).

Releases are installed pinned by scripts/install_clients.sh (``<clients>/old/``) and found by
``runner.find_old_client``; a test skips when its release is absent.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import shutil
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.model import Text
from archive.projection import load_messages, load_threads
from clients import runner
from clients.mock_servers import ChatCompletionsMock, Script, Text as Say, Thinking, Tool

pytestmark = pytest.mark.clients

FIXTURES = Path(__file__).parent / "fixtures"
PI_OLD = "0.27.9"
COPILOT_OLD = "0.0.370"
CODEX_OLD = "0.1.2505172129"
COPILOT_FLAT = FIXTURES / "copilot" / "copilot-0.0.370-flat.jsonl"
COPILOT_SID = "391d7039-4c83-4d20-9ca9-fb2aac2121a7"
SCRIPT = Script(turns={"hello": [[Thinking("Thinking about hello."), Say("Hello back from the mock.")]],
                       "list": [[Say("Running ls."), Tool("bash", {"command": "ls", "description": "list"})],
                                [Say("Listed.")]]})


def old_client(vendor: str, version: str) -> Path:
    exe = runner.find_old_client(vendor, version)
    if exe is None:
        pytest.skip(f"{vendor} {version} not found (scripts/install_clients.sh installs it under <clients>/old/)")
    return exe


def node(script: Path) -> list[str]:
    return [str(runner.node22() or "node"), str(script)]


def ingest_home(db_path: Path, home: Path, env: dict[str, str] | None = None):
    db = open_db(db_path)
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(home), **(env or {})}, idle_seconds=10**9))
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    return db, summary


def texts(messages) -> list[str]:
    return [b.text for m in messages for b in m.content if isinstance(b, Text)]


def run_pi_old(exe: Path, home: Path, cwd: Path, url: str, prompt: str, session: Path | None = None):
    runner.write_pi_config(home, url)
    args = node(exe) + ["--provider", runner.PI_PROVIDER, "--model", runner.PI_MODEL]
    if session is not None:
        args += ["--session", str(session)]
    return runner._run(args + ["-p", prompt], cwd, runner.pi_env(home), 120).check()


def test_pi_v1_session_is_archived_and_stays_one_thread_when_pi_migrates_it(tmp_path: Path) -> None:
    exe = old_client("pi", PI_OLD)
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir(parents=True)
    with ChatCompletionsMock(SCRIPT) as mock:
        run_pi_old(exe, home, cwd, mock.url, "say hello")
        (session,) = runner.pi_sessions(home)
        run_pi_old(exe, home, cwd, mock.url, "please list the files", session)
    assert "version" not in session.read_text().splitlines()[0]  # format v1
    db, _ = ingest_home(tmp_path / "a.db", home)
    (thread,) = load_threads(db.conn, "provider = 'pi'")
    assert thread.id == runner.pi_session_id(session) and thread.metadata["sessionFormat"] == "v1"
    first = load_messages(db.conn, "m.thread_id = ?", (thread.id,))
    assert texts(first) == ["say hello", "Hello back from the mock.", "please list the files", "Running ls.", "Listed."]
    (restored,) = restore(db, tmp_path / "restored")
    assert Path(restored.path).read_bytes() == session.read_bytes()
    current = runner.find_client("pi")
    if current is None:
        return
    with ChatCompletionsMock(SCRIPT) as mock:  # the current pi rewrites the file it resumes
        runner.run_pi(current, home, cwd, mock.url, "say hello again", resume=str(session)).check()
    assert '"version":3' in session.read_text().splitlines()[0]
    db, _ = ingest_home(tmp_path / "a.db", home)
    (thread,) = load_threads(db.conn, "provider = 'pi'")
    after = load_messages(db.conn, "m.thread_id = ?", (thread.id,))
    assert [m.id for m in after[: len(first)]] == [m.id for m in first]
    assert texts(after)[len(texts(first)):] == ["say hello again", "Hello back from the mock."]
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == len(after)


def copilot_old_env(home: Path, url: str) -> dict[str, str]:
    """0.0.3xx has no BYOK variables; its hidden API-key login (``tryApiKeyLogin``) takes an
    OpenAI-compatible server, and ``COPILOT_AGENT_MODEL`` picks the model without asking
    GitHub for a model list."""
    env = runner.base_env(home)
    env.update({"COPILOT_ENABLE_ALT_PROVIDERS": "true", "OPENAI_API_KEY": "sk-mock-key",
                "OPENAI_BASE_URL": f"{url}/v1", "COPILOT_AGENT_MODEL": "sweagent-openai:gpt-4.1",
                "COPILOT_AUTO_UPDATE": "false"})
    return env


def test_copilot_flat_session_restored_from_the_archive_resumes(tmp_path: Path) -> None:
    exe = old_client("copilot", COPILOT_OLD)
    src = tmp_path / "src" / ".copilot" / "session-state" / f"{COPILOT_SID}.jsonl"
    src.parent.mkdir(parents=True)
    shutil.copyfile(COPILOT_FLAT, src)
    db, _ = ingest_home(tmp_path / "a.db", tmp_path / "src")
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir(parents=True)
    (restored,) = restore(db, tmp_path / "restored")
    # where 0.0.370 keeps it when XDG_STATE_HOME is set (the runner's environment sets it)
    flat = home / ".local" / "state" / ".copilot" / "session-state" / f"{COPILOT_SID}.jsonl"
    flat.parent.mkdir(parents=True)
    shutil.copyfile(restored.path, flat)
    assert flat.read_bytes() == COPILOT_FLAT.read_bytes()
    with ChatCompletionsMock(SCRIPT) as mock:
        res = runner._run(node(exe) + ["--resume", COPILOT_SID, "-p", "say hello", "--allow-all-tools", "--no-color"],
                          cwd, copilot_old_env(home, mock.url), 120).check()
        sent = [r.body for r in mock.requests if r.path.endswith("/chat/completions") and isinstance(r.body, dict)]
    assert "Hello back from the mock." in res.stdout
    prompts = [m.get("content") for m in sent[-1]["messages"] if m.get("role") == "user"]
    # the archived prompts went back to the model (0.0.370 sends transformedContent)
    assert any("please list the files" in str(p) for p in prompts), prompts
    db2, summary = ingest_home(tmp_path / "b.db", home, {"XDG_STATE_HOME": str(home / ".local" / "state")})
    assert summary.files_changed == 1
    (thread,) = load_threads(db2.conn, "provider = 'copilot'")
    assert thread.id == COPILOT_SID
    assert texts(load_messages(db2.conn, "m.thread_id = ?", (COPILOT_SID,)))[:2] == ["say hello", "Hello back from the mock."]
    # the client appended to the restored file: the archive reads the new lines as such
    grown, before = flat.read_bytes(), COPILOT_FLAT.read_bytes()
    # seen once on a loaded CI run (not reproduced since): the file had not grown; say what the client left
    written = sorted(f"{p.relative_to(home)} {p.stat().st_size}" for p in home.rglob("*") if p.is_file())
    assert grown.startswith(before) and len(grown) > len(before), (len(before), len(grown), written, res.stderr[-2000:])


class Terminal:
    """A client's TUI on a pseudo-terminal of 200x50: what it printed, and keys typed in."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.screen = b""

    def wait(self, done, timeout: float) -> bool:
        end = time.time() + timeout
        while time.time() < end:
            if select.select([self.master], [], [], 0.2)[0]:
                try:
                    self.screen += os.read(self.master, 65536)
                except OSError:  # the client exited
                    return bool(done())
            if done():
                return True
        return False

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())
        time.sleep(0.5)  # Ink takes the Enter apart from the text
        os.write(self.master, b"\r")

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the client's own group, nothing else
        self.proc.wait(10)
        os.close(self.master)


def test_codex_typescript_rollout_from_its_tui_is_archived_whole(tmp_path: Path) -> None:
    exe = old_client("codex", CODEX_OLD)
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir(parents=True)
    # outside a git repository it first asks whether to go on at all
    subprocess.run(["git", "init", "-q", str(cwd)], check=True, env=runner.base_env(home))
    sessions = home / ".codex" / "sessions"
    with ChatCompletionsMock(SCRIPT) as mock:
        (home / ".codex").mkdir(parents=True)
        # a provider of its own (providers.<name>.baseURL), reached through its chat-completions bridge
        (home / ".codex" / "config.json").write_text(json.dumps({"model": "m", "provider": "mock", "providers": {
            "mock": {"name": "Mock", "baseURL": f"{mock.url}/v1", "envKey": "MOCK_API_KEY"}}}))
        env = {**runner.base_env(home), "TERM": "xterm-256color", "MOCK_API_KEY": "sk-mock-key",
               "OPENAI_API_KEY": "sk-mock-key"}
        term = Terminal(node(exe) + ["--full-auto"], cwd, env)
        try:
            assert term.wait(lambda: b"approval:" in term.screen, 90), term.screen[-2000:]
            term.wait(lambda: False, 3)  # the prompt box comes after the session box
            term.type("say hello")

            def saved() -> bool:
                files = list(sessions.glob("rollout-*.json")) if sessions.exists() else []
                return len(files) == 1 and b"Hello back from the mock." in files[0].read_bytes()

            assert term.wait(saved, 90), term.screen[-2000:]
        finally:
            term.close()
    (rollout,) = sessions.glob("rollout-*.json")
    db, _ = ingest_home(tmp_path / "a.db", home)
    (thread,) = load_threads(db.conn, "provider = 'codex'")
    assert thread.id == json.loads(rollout.read_bytes())["session"]["id"]
    assert texts(load_messages(db.conn, "m.thread_id = ?", (thread.id,))) == ["say hello", "Hello back from the mock."]
    restored = {r.path.name: r for r in restore(db, tmp_path / "restored")}
    assert restored[rollout.name].path.read_bytes() == rollout.read_bytes()
    # its prompt history (issue 38): a side file, restored byte for byte, its prompt not lost
    history = home / ".codex" / "history.json"
    assert restored["history.json"].path.read_bytes() == history.read_bytes()
    assert [r[0] for r in db.execute("SELECT prompt FROM prompt_history")] == ["say hello"]
    assert db.execute("SELECT count(*) FROM lost_sessions").fetchone()[0] == 0
