"""Run the real Kilo Code CLI (npm ``@kilocode/cli``, an OpenCode fork) against the chat
completions mock, offline.

Invariants (as ``runner.py``): an environment built from scratch with a temp home, the
provider's base URL on 127.0.0.1, every run bounded by a timeout.

Kilo 7.7.7 reads ``$XDG_CONFIG_HOME/kilo/kilo.json`` (OpenCode's ``opencode.json`` under its
own name) and keeps its sessions in ``$XDG_DATA_HOME/kilo/kilo.db`` (OpenCode's schema). The
npm registry here holds no linux binary of 7.8.1 (the newest ``@kilocode/cli``), so 7.7.7,
the newest release with one, is the pinned client.
"""

from __future__ import annotations

import json
from pathlib import Path

from .mock_servers import ChatCompletionsMock, Script, Text, Thinking, Tool
from .runner import REPO, RunResult, _run, base_env, client_dirs, old_client_dirs, opencode_session_id
from .scenarios import Scenario

KILO_VERSION = "7.7.7"
KILO_PROVIDER = "mock"
KILO_MODEL = "m"


def find_kilo() -> Path | None:
    """``kilo`` from the clients folders, or from ``kilocode-cli-<version>`` in the folders
    of older releases (scripts/install_clients.sh puts it in ``DIR/old/``)."""
    for d in client_dirs():
        if (d / "kilo").exists():
            return d / "kilo"
    for d in [*old_client_dirs(), REPO / ".clients" / "old"]:
        p = d / f"kilocode-cli-{KILO_VERSION}" / "node_modules" / ".bin" / "kilo"
        if p.exists():
            return p
    return None


def kilo_data(home: Path) -> Path:
    return home / ".local" / "share" / "kilo"


def kilo_db(home: Path) -> Path:
    return kilo_data(home) / "kilo.db"


def write_kilo_config(home: Path, base_url: str) -> None:
    d = home / ".config" / "kilo"
    d.mkdir(parents=True, exist_ok=True)
    (d / "kilo.json").write_text(json.dumps({
        "$schema": "https://app.kilo.ai/config.json",
        "provider": {KILO_PROVIDER: {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                                     "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-mock-key"},
                                     "models": {KILO_MODEL: {"name": "Mock", "reasoning": True, "attachment": True,
                                                             "modalities": {"input": ["text", "image"], "output": ["text"]},
                                                             "cost": {"input": 3, "output": 15, "cache_read": 0.3,
                                                                      "cache_write": 3.75},
                                                             "limit": {"context": 128000, "output": 8000}}}}},
        "model": f"{KILO_PROVIDER}/{KILO_MODEL}",
        "small_model": f"{KILO_PROVIDER}/{KILO_MODEL}",
        "share": "disabled", "autoupdate": False,
    }, indent=1))


def kilo_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    env.update({"KILO_DISABLE_AUTOUPDATE": "1", "KILO_DISABLE_MODELS_FETCH": "1", "KILO_DISABLE_SHARE": "1",
                "KILO_DISABLE_LSP_DOWNLOAD": "1", "KILO_DISABLE_DEFAULT_PLUGINS": "1",
                "KILO_DISABLE_SESSION_INGEST": "1", "KILO_DISABLE_CLAUDE_CODE": "1",
                "KILO_DISABLE_CHANNEL_DB": "1"})
    return env


def run_kilo(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
             timeout: float = 180) -> RunResult:
    """``kilo run --auto --format json``; ``resume`` is a ``ses_...`` id given to ``--session``."""
    write_kilo_config(home, base_url)
    args = [str(exe), "run", "--auto", "--format", "json"]
    if resume:
        args += ["--session", resume]
    args += ["--", *prompt.split(" ")]
    return _run(args, cwd, kilo_env(home), timeout)


def kilo_import(exe: Path, home: Path, cwd: Path, file: Path) -> RunResult:
    return _run([str(exe), "import", str(Path(file).resolve())], cwd, kilo_env(home), 60).check()


def kilo_session_id(res: RunResult) -> str:
    return opencode_session_id(res)


def kilo_scenario(cwd: Path) -> Scenario:
    """One session for every Kilo check (the CI budget allows one recording per client):
    bash calls (one failing), then, resumed with ``--session``, reasoning and an answer."""
    return Scenario("session", "kilo", ["[bash] Run two commands.", "[reasoning] Think, then answer."], Script(turns={
        "[bash]": [
            [Text("Running echo."), Tool("bash", {"command": "echo hello-from-bash", "description": "Print a greeting"})],
            [Tool("bash", {"command": "ls /nonexistent-sesh-dir", "description": "List a missing folder"})],
            [Text("The second command failed as expected.")],
        ],
        "[reasoning]": [[Thinking("The user wants me to think first."), Text("I thought about it: 42.")]],
        "[resume-check]": [[Text("OK.")]],
    }), "bash tool parts, a failing command, a resume with --session, reasoning parts and tokens")


def record_kilo(exe: Path, home: Path, cwd: Path) -> str:
    """Run ``kilo_scenario`` against the mock in ``home``; the session id."""
    scenario = kilo_scenario(cwd)
    session: str | None = None
    with ChatCompletionsMock(scenario.script) as mock:
        for prompt in scenario.prompts:
            session = kilo_session_id(run_kilo(exe, home, cwd, mock.url, prompt, resume=session).check())
    assert session is not None
    return session
