#!/usr/bin/env python3
"""Record the side files of Kimi CLI, Hermes Agent and Mistral Vibe (issue 38) in their
terminal UI, against the Chat Completions mock: only the TUI writes their prompt histories
(``--print``/``-p`` runs write none).

    python scripts/record_side_files_rest.py kimi|hermes|vibe [--keep]

Writes tests/fixtures/recorded/<vendor>-<version>-side/: the files of the vendor's home the
TUI left (the prompt history, the session it ran), without credentials, logs and caches
(``KEEP`` per vendor). Needs tmux. Invariants as scripts/record_side_files.py: nothing
outside /tmp/sesh-record-side-rest/ and the output folder is written; the real home is
never read; the tmux server is our own (``-L``) and is killed at the end.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from clients import hermes_client, kimi_client, vibe_client  # noqa: E402
from clients.mock_servers import ChatCompletionsMock, Script  # noqa: E402

OUT = REPO / "tests" / "fixtures" / "recorded"
WORK = Path("/tmp/sesh-record-side-rest")
PROMPTS = ["say hello", "now say goodbye"]
SOCKET = "sesh-side-rest"


def tmux(*args: str, check: bool = True) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=check).stdout


def drive(cmd: str, ready: str, prompts: list[str], exit_keys: list[list[str]], settle: float = 10.0) -> list[str]:
    """Run ``cmd`` in a tmux pane, wait for ``ready`` on the screen, type each prompt, then
    the exit keys; returns the screens seen after each step."""
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
            tmux("send-keys", "Enter")
            time.sleep(settle)
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
        raise SystemExit("kimi-cli not found (scripts/install_clients.sh)")
    with ChatCompletionsMock(Script(default="Hello.")) as mock:
        kimi_client.write_kimi_config(home, mock.url)
        screens = drive(shell(cwd, kimi_client.kimi_env(home), [str(exe), "--yolo"]), "context:",
                        PROMPTS, [["-l", "/exit"], ["Enter"]])
    return kimi_client.KIMI_VERSION, kimi_client.kimi_home(home), screens


def record_hermes(home: Path, cwd: Path) -> tuple[str, Path, list[str]]:
    exe = hermes_client.find_hermes()
    if exe is None:
        raise SystemExit("hermes not found (scripts/install_clients.sh)")
    with ChatCompletionsMock(Script(default="Hello.")) as mock:
        hermes_client.write_config(home, mock.url)
        screens = drive(shell(cwd, hermes_client.hermes_env(home), [str(exe), "chat", "--yolo"]), "❯",
                        PROMPTS, [["-l", "/exit"], ["Enter"]], settle=15)
    return hermes_client.HERMES_VERSION, hermes_client.hermes_home(home), screens


def record_vibe(home: Path, cwd: Path) -> tuple[str, Path, list[str]]:
    version = vibe_client.VIBE_VERSIONS[0]
    exe = vibe_client.find_vibe(version)
    if exe is None:
        raise SystemExit("vibe not found (scripts/install_clients.sh)")
    with ChatCompletionsMock(Script(default="Hello.")) as mock:
        vibe_client.write_vibe_config(home, mock.url)
        screens = drive(shell(cwd, vibe_client.vibe_env(home), [str(exe), "--auto-approve"]), ">",
                        PROMPTS, [["-l", "/exit"], ["Enter"], ["C-c"], ["C-c"]], settle=12)
    return version, vibe_client.vibe_home(home), screens


# what is copied of the vendor's home: never config files (they hold the mock's key), logs, caches
RECORDERS = {"kimi": (record_kimi, ["user-history", "sessions", "kimi.json"]),
             "hermes": (record_hermes, [".hermes_history", "state.db", "state.db-wal", "sessions"]),
             "vibe": (record_vibe, ["vibehistory", "logs/session"])}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("vendor", choices=sorted(RECORDERS))
    args = ap.parse_args()
    record, keep = RECORDERS[args.vendor]
    work = WORK / args.vendor
    shutil.rmtree(work, ignore_errors=True)
    home, cwd = work / "home", work / "proj"
    home.mkdir(parents=True)
    cwd.mkdir(parents=True)
    (cwd / "hello.txt").write_text("hi\n")
    version, vendor_home, screens = record(home, cwd)
    for s in screens:
        print(s.rstrip(), "\n-----")
    out = OUT / f"{args.vendor}-{version}-side"
    shutil.rmtree(out, ignore_errors=True)
    copy_kept(vendor_home, out / vendor_home.relative_to(home), keep)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
