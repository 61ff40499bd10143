"""Cline CLI (npm ``cline``, a bundled Bun binary) run offline against the Chat Completions mock.

One recorded session (``record``): the mock saved as an openai-compatible provider (the
``providers.json`` that ``cline auth`` writes), ``cline --json PROMPT`` runs the first turn (a shell call, a subagent), and the
resume (``cline --id``, interactive only in 3.0.65) runs under tmux with a second prompt
(a reasoning answer). ``resume_in_tui`` also resumes an emitted session.

Invariants (those of runner.py): a fresh home and an explicit environment (``env -i``), the
mock on 127.0.0.1 only, every wait bounded. Cline starts a background hub process on its
first run (``--cline-hub-daemon``; its pid in ``data/locks/hub/production.json``): it is
given a port of its own (``CLINE_HUB_PORT``) and stopped by its pid (``stop_hub``), never by
name; the tmux server is our own (``-L``) and is killed at the end, nothing else.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .mock_servers import ChatCompletionsMock, Script, Text, Thinking, Tool

VERSION = "3.0.65"
MODEL = "mock-model"
FIRST = "list files here please"
SECOND = "what is two plus two"
THIRD = "and three plus three"


def script() -> Script:
    return Script(turns={
        "list files": [[Thinking("I should list the files."), Tool("run_commands", {"commands": ["ls"]})],
                       [Tool("spawn_agent", {"systemPrompt": "You count words.", "task": "count the words in hello.txt"})],
                       [Text("There is one file: hello.txt, with one word.")]],
        "count the words": [[Tool("read_files", {"file_paths": ["hello.txt"]})], [Text("One word.")]],
        "two plus two": [[Thinking("Two plus two is four."), Text("4")]],
        "three plus three": [[Text("6")]],
    })  # fmt: skip


def find_cline() -> Path | None:
    """The platform binary of a pinned install: ``$SESH_CLIENTS_DIR/cline/`` (its own prefix,
    scripts/install_clients.sh) or ``$SESH_CLIENTS_DIR/node_modules``."""
    for d in (os.environ.get("SESH_CLIENTS_DIR") or "").split(os.pathsep):
        for prefix in (Path(d) / "cline", Path(d)):
            exe = prefix / "node_modules" / "@cline" / "cli-linux-x64" / "bin" / "cline"
            if d and exe.is_file() and os.access(exe, os.X_OK):
                return exe
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ClineHome:
    exe: Path
    home: Path
    cwd: Path
    hub_port: int = field(default_factory=_free_port)

    @property
    def data(self) -> Path:
        return self.home / ".cline" / "data"

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "PATH": "/usr/bin:/bin", "TERM": "xterm-256color", "LANG": "C.UTF-8",
                "CLINE_HUB_PORT": str(self.hub_port), "NO_COLOR": "1"}

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in self.env().items()), str(self.exe), *args],
                              cwd=self.cwd, capture_output=True, text=True, timeout=timeout)

    def hub_pids(self) -> list[int]:
        """The hub processes of this home: the discovery record's, and any process started
        with this home's hub port (the record is written a few seconds after the hub starts)."""
        pids = set()
        try:
            pids.add(int(json.loads((self.data / "locks" / "hub" / "production.json").read_text())["pid"]))
        except (OSError, ValueError, KeyError, TypeError):
            pass
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    argv = (proc / "cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"--cline-hub-daemon" in argv and str(self.hub_port).encode() in argv:
                    pids.add(int(proc.name))
        return sorted(pids)

    def stop_hub(self) -> None:
        for pid in self.hub_pids():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(50):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)


def new_home(exe: Path, work: Path, mock_url: str) -> ClineHome:
    ch = ClineHome(exe, work / "home", work / "proj")
    ch.home.mkdir(parents=True)
    ch.cwd.mkdir(parents=True)
    (ch.cwd / "hello.txt").write_text("hi\n")
    # what ``cline auth -p openai -k x -m MODEL -b URL`` writes (3.0.65), without its ~20 s start
    settings = ch.data / "settings" / "providers.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"version": 1, "lastUsedProvider": "openai-compatible", "modes": {}, "providers": {
        "openai-compatible": {"settings": {"provider": "openai-compatible", "apiKey": "x", "model": MODEL,
                                           "baseUrl": mock_url},
                              "updatedAt": "2026-12-02T00:00:00.000Z", "tokenSource": "manual"}}}, indent=2))
    return ch


def resume_in_tui(ch: ClineHome, session_id: str, prompt: str, socket_name: str = "",
                  settle: float = 15.0) -> list[str]:
    """``cline --id SESSION`` in its terminal screen, one prompt typed, then quit; the screens."""
    tmux = ["tmux", "-L", socket_name or f"sesh-cline-{os.getpid()}"]  # one server per test process (pytest-xdist)
    env = " ".join(shlex.quote(f"{k}={v}") for k, v in ch.env().items())
    cmd = f"cd {shlex.quote(str(ch.cwd))} && env -i {env} {shlex.quote(str(ch.exe))} --id {shlex.quote(session_id)}"
    subprocess.run([*tmux, "kill-server"], capture_output=True)
    subprocess.run([*tmux, "new-session", "-d", "-x", "160", "-y", "50", "bash", "-c", cmd], check=True)
    screens = []
    try:
        def screen() -> str:
            return subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout

        deadline = time.monotonic() + 90
        while "Ask anything" not in screen() and time.monotonic() < deadline:
            time.sleep(0.5)
        screens.append(screen())
        subprocess.run([*tmux, "send-keys", "-l", prompt], check=True)
        time.sleep(1)
        subprocess.run([*tmux, "send-keys", "Enter"], check=True)
        deadline = time.monotonic() + settle
        while time.monotonic() < deadline:
            time.sleep(1)
            if screen().count("Ask anything") and prompt in screen() and "mock-model (0)" not in screen():
                break
        time.sleep(2)  # the transcript is saved after the turn
        screens.append(screen())
        for _ in range(2):
            subprocess.run([*tmux, "send-keys", "C-c"], capture_output=True)
            time.sleep(1)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
    return screens


@dataclass
class Recording:
    home: ClineHome
    session_id: str
    first: dict[str, bytes]  # the session folder after the first run (generation 1)
    requests: list


def record(exe: Path, work: Path, mock: ChatCompletionsMock) -> Recording:
    ch = new_home(exe, work, mock.url + "/v1")
    try:
        out = ch.run("--json", FIRST)
        assert out.returncode == 0, out.stderr[-2000:]
        sessions = ch.data / "sessions"
        (sid,) = [p.name for p in sessions.iterdir()]
        first = {str(p.relative_to(sessions)): p.read_bytes() for p in sorted((sessions / sid).iterdir())}
        resume_in_tui(ch, sid, SECOND)
    finally:
        ch.stop_hub()
    return Recording(ch, sid, first, list(mock.requests))
