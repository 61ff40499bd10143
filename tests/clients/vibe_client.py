"""Find and run Mistral Vibe (PyPI ``mistral-vibe``, a Python >= 3.12 package with a Rust
CLI) against the chat-completions mock, offline.

Invariants (as tests/clients/runner.py's): an environment built from scratch (a temp home,
``VIBE_HOME`` inside it), the provider's base URL on 127.0.0.1, runs bounded by a timeout.

Each release lives in its own virtual environment ``<old dir>/vibe-<version>/`` (made by
scripts/install_clients.sh): 3.0.3 writes the unified journal, 2.26.1 the legacy
``session_*/messages.jsonl``.
"""

from __future__ import annotations

import os
from pathlib import Path

from .runner import RunResult, _run, base_env, old_client_dirs

VIBE_VERSIONS = ("3.0.3", "2.26.1")
VIBE_PROVIDER = "mock"
VIBE_MODEL = "mock-model"  # served by ChatCompletionsMock
VIBE_ALIAS = "mock"
VIBE_KEY_VAR = "SESH_MOCK_VIBE_KEY"


def find_vibe(version: str) -> Path | None:
    """``bin/vibe`` of the release's virtual environment, or None."""
    for d in old_client_dirs() + [Path(p) for p in (os.environ.get("SESH_CLIENTS_DIR") or "").split(os.pathsep) if p]:
        p = d / f"vibe-{version}" / "bin" / "vibe"
        if p.exists() and os.access(p, os.X_OK):
            return p
    return None


def vibe_home(home: Path) -> Path:
    return home / ".vibe"


def write_vibe_config(home: Path, base_url: str) -> None:
    """config.toml: one OpenAI-compatible provider on the mock, its model active, no
    telemetry, no update check, every tool allowed."""
    d = vibe_home(home)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(f"""active_model = "{VIBE_ALIAS}"
enable_telemetry = false
enable_update_checks = false
enable_auto_update = false

[[providers]]
name = "{VIBE_PROVIDER}"
api_base = "{base_url}/v1"
api_key_env_var = "{VIBE_KEY_VAR}"
backend = "generic"

[[models]]
name = "{VIBE_MODEL}"
provider = "{VIBE_PROVIDER}"
alias = "{VIBE_ALIAS}"
input_price = 3.0
output_price = 15.0
""")


def vibe_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    env.update({"VIBE_HOME": str(vibe_home(home)), VIBE_KEY_VAR: "sk-mock-key"})
    return env


def run_vibe(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
             timeout: float = 180, extra: tuple[str, ...] = ()) -> RunResult:
    """``vibe -p PROMPT`` (programmatic mode), ``--resume ID`` to continue a session."""
    write_vibe_config(home, base_url)  # the port changes between runs
    args = [str(exe), *extra]
    if resume:
        args += ["--resume", resume]
    args += ["-p", prompt]
    return _run(args, cwd, vibe_env(home), timeout)


def vibe_sessions(home: Path) -> list[Path]:
    """Every file under ``logs/session`` (both generations' layouts)."""
    root = vibe_home(home) / "logs" / "session"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
