"""Find and run Kimi CLI (PyPI ``kimi-cli``, a Python >= 3.12 package) against the
chat-completions mock, offline.

Invariants (as tests/clients/runner.py's): an environment built from scratch (a temp home,
``KIMI_SHARE_DIR`` inside it), the provider's base URL on 127.0.0.1, runs bounded by a timeout.

The release lives in its own virtual environment ``<old dir>/kimi-cli-<version>/`` (made by
scripts/install_clients.sh). 1.51.0 is the last release that runs: 1.52.0, the newest on
PyPI, only prints that kimi-cli is no longer maintained (its ``kimi_cli/deprecation.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

from .runner import RunResult, _run, base_env, old_client_dirs

KIMI_VERSION = "1.51.0"
KIMI_MODEL = "mock-model"  # served by ChatCompletionsMock
KIMI_ALIAS = "mock"


def find_kimi(version: str = KIMI_VERSION) -> Path | None:
    """``bin/kimi`` of the release's virtual environment, or None."""
    for d in old_client_dirs() + [Path(p) for p in (os.environ.get("SESH_CLIENTS_DIR") or "").split(os.pathsep) if p]:
        p = d / f"kimi-cli-{version}" / "bin" / "kimi"
        if p.exists() and os.access(p, os.X_OK):
            return p
    return None


def kimi_home(home: Path) -> Path:
    return home / ".kimi"


def write_kimi_config(home: Path, base_url: str) -> None:
    """config.toml: one OpenAI-compatible ("openai_legacy") provider on the mock, its model
    the default, no telemetry."""
    d = kimi_home(home)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text(f"""default_model = "{KIMI_ALIAS}"
telemetry = false

[providers.mock]
type = "openai_legacy"
base_url = "{base_url}/v1"
api_key = "sk-mock-key"

[models.{KIMI_ALIAS}]
provider = "mock"
model = "{KIMI_MODEL}"
max_context_size = 128000
""")


def kimi_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    env["KIMI_SHARE_DIR"] = str(kimi_home(home))
    return env


def run_kimi(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, session: str | None = None,
             timeout: float = 180, extra: tuple[str, ...] = ()) -> RunResult:
    """``kimi --print --yolo -p PROMPT`` (non-interactive), ``--session ID`` to resume one."""
    write_kimi_config(home, base_url)  # the port changes between runs
    args = [str(exe), "--print", "--yolo", *extra]
    if session:
        args += ["--session", session]
    args += ["-p", prompt]
    return _run(args, cwd, kimi_env(home), timeout)


def kimi_files(home: Path) -> list[Path]:
    """Every file under ``sessions/``."""
    root = kimi_home(home) / "sessions"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else []
