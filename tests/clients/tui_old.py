"""Drive a client's terminal UI under tmux, for releases whose headless mode writes no session
(Gemini CLI 0.1.x: ``-p`` writes nothing; ``/chat save TAG`` exists only in the TUI).

Invariants:

* One private tmux server per run (``tmux -L <unique socket>``): the caller's own tmux
  sessions are never seen or touched; ``close`` kills that server only.
* The client gets the explicit environment it is given (``env``), never ``os.environ``.
* Every wait is bounded; on timeout the screen is in the error.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path


class Tui:
    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], width: int = 160, height: int = 50) -> None:
        if shutil.which("tmux") is None:
            raise RuntimeError("tmux is not installed")
        self.socket = f"sesh-tui-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        env = {**env, "TERM": "xterm-256color"}
        # tmux starts the command through a shell with the server's environment: the command
        # line sets the client's environment itself (env -i), so nothing else leaks in
        cmd = "exec env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in sorted(env.items())) + " " + shlex.join(argv)
        self._tmux("new-session", "-d", "-s", "c", "-x", str(width), "-y", str(height), "-c", str(cwd), cmd)

    def _tmux(self, *args: str) -> str:
        r = subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"tmux {args[0]}: {r.stderr.strip()}")
        return r.stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "c", "-S", "-200")

    def type(self, text: str, enter: bool = True) -> None:
        if text:
            self._tmux("send-keys", "-t", "c", "-l", text)
        if enter:
            # Ink UIs take keys arriving together as a paste (an Enter among them is a newline
            # in the prompt, Gemini CLI 0.1.22): the key that submits comes on its own
            time.sleep(1.0)
            self._tmux("send-keys", "-t", "c", "C-m")

    def wait_for(self, text: str, timeout: float = 60, after: int = 0) -> str:
        """The screen once ``text`` appears on it more than ``after`` times."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            try:
                screen = self.screen()
            except RuntimeError:
                break  # the client exited and its session ended
            if screen.count(text) > after:
                return screen
            time.sleep(0.3)
        raise TimeoutError(f"{text!r} not on the screen after {timeout}s:\n{screen}")

    def wait_quiet(self, seconds: float = 1.5, timeout: float = 60) -> str:
        """The screen once it has not changed for ``seconds`` (spinners excepted: a screen
        that keeps changing past ``timeout`` raises)."""
        deadline = time.monotonic() + timeout
        last, since = self.screen(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.3)
            now = self.screen()
            if now != last:
                last, since = now, time.monotonic()
            elif time.monotonic() - since >= seconds:
                return now
        raise TimeoutError(f"the screen kept changing for {timeout}s:\n{last}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)

    def __enter__(self) -> "Tui":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
