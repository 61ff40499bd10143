"""Kimi CLI, Hermes Agent and Mistral Vibe in their terminal UI, driven through tmux, to
record the prompt histories only their TUIs write (issue 38; ``-p``/``--print`` runs write
none): scripts/record_side_files_rest.py records the fixtures with it, the ``clients`` test
tests/test_clients_side_rest.py records afresh.

Invariants (those of runner.py): a fresh home and an explicit environment (``env -i``), the
mock on 127.0.0.1 only, every wait bounded; the tmux server is our own (``-L``, one socket
per caller) and is killed at the end, nothing else.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from . import hermes_client, kimi_client, vibe_client
from .mock_servers import ChatCompletionsMock, Script

SOCKET = f"sesh-side-rest-{os.getpid()}"  # one tmux server per test process (pytest-xdist)
PROMPTS = ["say hello", "now say goodbye"]


def tmux(*args: str, check: bool = True, socket: str = SOCKET) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=check).stdout


ANSWER = "Hello."  # the mock's reply to every prompt


def drive(cmd: str, ready: str, prompts: list[str], exit_keys: list[list[str]], settle: float = 10.0) -> list[str]:
    """Run ``cmd`` in a tmux pane, wait for ``ready`` on the screen, type each prompt and
    wait for its answer (at most ``settle`` seconds), then the exit keys; returns the
    screens seen after each step."""
    screens = []
    tmux("kill-server", check=False)
    tmux("new-session", "-d", "-x", "160", "-y", "50", "bash", "-c", cmd)
    try:
        deadline = time.monotonic() + 90
        while ready not in tmux("capture-pane", "-p", check=False) and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)
        screens.append(tmux("capture-pane", "-p", check=False))
        for prompt in prompts:
            tmux("send-keys", "-l", prompt)
            time.sleep(1)
            before = tmux("capture-pane", "-p", check=False).count(ANSWER)
            tmux("send-keys", "Enter")
            deadline = time.monotonic() + settle
            while tmux("capture-pane", "-p", check=False).count(ANSWER) <= before and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(1.5)  # the history and the session written after the answer
            screens.append(tmux("capture-pane", "-p", check=False))
        for keys in exit_keys:
            tmux("send-keys", *keys, check=False)
            time.sleep(3)
            screens.append(tmux("capture-pane", "-p", check=False))
        time.sleep(2)
    finally:
        tmux("kill-server", check=False)
    return screens


def shell(cwd: Path, env: dict[str, str], argv: list[str]) -> str:
    env = {**env, "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    return f"cd {shlex.quote(str(cwd))} && env -i {' '.join(shlex.quote(f'{k}={v}') for k, v in env.items())} {shlex.join(argv)}"


def copy_kept(src: Path, out: Path, keep: list[str]) -> None:
    for name in keep:
        for p in sorted(src.glob(name)):
            rel = p.relative_to(src)
            if p.is_dir():
                shutil.copytree(p, out / rel, dirs_exist_ok=True)
            elif p.is_file():
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, out / rel)


def record_kimi(home: Path, cwd: Path) -> tuple[str, Path, list[str]]:
    exe = kimi_client.find_kimi()
    if exe is None:
        raise FileNotFoundError("kimi-cli not found (scripts/install_clients.sh)")
    with ChatCompletionsMock(Script(default=ANSWER)) as mock:
        kimi_client.write_kimi_config(home, mock.url)
        screens = drive(shell(cwd, kimi_client.kimi_env(home), [str(exe), "--yolo"]), "context:",
                        PROMPTS, [["-l", "/exit"], ["Enter"]], settle=30)
    return kimi_client.KIMI_VERSION, kimi_client.kimi_home(home), screens


def record_hermes(home: Path, cwd: Path) -> tuple[str, Path, list[str]]:
    exe = hermes_client.find_hermes()
    if exe is None:
        raise FileNotFoundError("hermes not found (scripts/install_clients.sh)")
    with ChatCompletionsMock(Script(default=ANSWER)) as mock:
        hermes_client.write_config(home, mock.url)
        screens = drive(shell(cwd, hermes_client.hermes_env(home), [str(exe), "chat", "--yolo"]), "❯",
                        PROMPTS, [["-l", "/exit"], ["Enter"]], settle=30)
    return hermes_client.HERMES_VERSION, hermes_client.hermes_home(home), screens


def record_vibe(home: Path, cwd: Path) -> tuple[str, Path, list[str]]:
    version = vibe_client.VIBE_VERSIONS[0]
    exe = vibe_client.find_vibe(version)
    if exe is None:
        raise FileNotFoundError("vibe not found (scripts/install_clients.sh)")
    with ChatCompletionsMock(Script(default=ANSWER)) as mock:
        vibe_client.write_vibe_config(home, mock.url)
        screens = drive(shell(cwd, vibe_client.vibe_env(home), [str(exe), "--auto-approve"]), ">",
                        PROMPTS, [["-l", "/exit"], ["Enter"], ["C-c"], ["C-c"]], settle=30)
    return version, vibe_client.vibe_home(home), screens


# what is copied of the vendor's home: never config files (they hold the mock's key), logs, caches
RECORDERS = {"kimi": (record_kimi, ["user-history", "sessions", "kimi.json"]),
             "hermes": (record_hermes, [".hermes_history", "state.db", "state.db-wal", "sessions"]),
             "vibe": (record_vibe, ["vibehistory", "logs/session"])}


def record(vendor: str, work: Path) -> tuple[str, Path, list[str]]:
    """Record ``vendor`` in a fresh ``work/home``, cwd ``work/proj``: (version, the vendor's
    home, the screens)."""
    home, cwd = work / "home", work / "proj"
    home.mkdir(parents=True)
    cwd.mkdir(parents=True)
    (cwd / "hello.txt").write_text("hi\n")
    return RECORDERS[vendor][0](home, cwd)
