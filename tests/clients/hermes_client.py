"""Find and run the real Hermes Agent (PyPI ``hermes-agent``, a Python client in a venv of its
own) against the chat-completions mock, offline (issue 35).

Invariants, as in ``runner.py``: an explicit environment built from scratch (a temp HOME
and ``HERMES_HOME`` under it), loopback only (the model's ``base_url`` is the mock;
the update check and the tirith download fail offline and Hermes goes on), runs bounded by
a timeout that kills the client's own process group only.

Hermes 0.19.0: ``hermes chat -q PROMPT --yolo -Q`` runs one prompt and prints
``session_id: <id>`` on stderr; ``--resume <id>`` continues a session from ``state.db``;
its shell tool is ``terminal``. There is no command that imports a session file:
``import_session`` runs Hermes's own ``SessionDB.import_sessions`` (what its dashboard's
import calls) in the client's Python, which is what ``emit --to hermes``'s resume hint does.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .runner import RunResult, _run, base_env, old_client_dirs

HERMES_VERSION = os.environ.get("HERMES_VERSION", "0.19.0")
HERMES_MODEL = "m"


def find_hermes(version: str = HERMES_VERSION) -> Path | None:
    """``hermes`` of the venv ``<old clients folder>/hermes-<version>`` (scripts/install_clients.sh)."""
    for d in old_client_dirs():
        p = d / f"hermes-{version}" / "bin" / "hermes"
        if p.exists() and os.access(p, os.X_OK):
            return p
    return None


def hermes_home(home: Path) -> Path:
    return home / ".hermes"


def write_config(home: Path, base_url: str) -> None:
    """config.yaml: the mock as a custom OpenAI-compatible provider; no tirith scanner (its
    download is the only other network call left); the context length given, so Hermes does
    not probe for it."""
    hh = hermes_home(home)
    hh.mkdir(parents=True, exist_ok=True)
    (hh / "config.yaml").write_text(
        "model:\n  provider: custom\n"
        f"  default: {HERMES_MODEL}\n  base_url: {base_url}/v1\n  api_key: x\n  context_length: 128000\n"
        "security:\n  tirith_enabled: false\n"
    )


def hermes_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    env["HERMES_HOME"] = str(hermes_home(home))
    return env


def run_hermes(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
               timeout: float = 240) -> RunResult:
    write_config(home, base_url)  # the port changes between runs
    args = [str(exe), "chat", "-q", prompt, "--yolo", "-Q"]
    if resume:
        args += ["--resume", resume]
    return _run(args, cwd, hermes_env(home), timeout)


def session_id(res: RunResult) -> str:
    m = re.search(r"session_id: (\S+)", res.stderr + res.stdout)
    if m is None:
        raise AssertionError(f"no session_id in hermes output: {res.stdout[-1500:]}\n{res.stderr[-1500:]}")
    return m.group(1)


def import_session(exe: Path, home: Path, cwd: Path, file: Path) -> RunResult:
    """``SessionDB().import_sessions([document])`` in Hermes's own Python (its venv)."""
    from archive.vendors.hermes.emit import IMPORT

    python = exe.parent / "python"
    return _run([str(python), "-c", IMPORT, str(Path(file).resolve())], cwd, hermes_env(home), 120)


def state_db(home: Path) -> Path:
    return hermes_home(home) / "state.db"


BASH_PROMPT = "[bash] Run a command, then explain."
RESUME_PROMPT = "[resume-check] One more thing: reply OK."


def script():  # type: ignore[no-untyped-def]
    """One prompt with a ``terminal`` call, its result and a reasoning answer; the resume
    prompt's plain answer."""
    from .mock_servers import Script, Text, Thinking, Tool

    return Script(turns={
        "[bash]": [[Text("Running a command."), Tool("terminal", {"command": "echo hello-from-terminal"})],
                   [Thinking("The command printed the greeting."), Text("The command printed hello-from-terminal.")]],
        "[resume-check]": [[Text("OK.")]],
    })


def record_session(exe: Path, home: Path, cwd: Path, base_url: str) -> str:
    """The scripted session: the first prompt, then the resume prompt with ``--resume``."""
    sid = session_id(run_hermes(exe, home, cwd, base_url, BASH_PROMPT).check())
    run_hermes(exe, home, cwd, base_url, RESUME_PROMPT, resume=sid).check()
    return sid
