"""Find and run the real vendor CLIs (Claude Code, Codex, Gemini CLI, Qwen Code) against a mock server, offline.

Invariants:

* A client never sees the caller's home or configuration: every run gets an explicit
  environment built from scratch (PATH, a temp HOME and the vendor variables pointing
  into it), never ``os.environ`` as a whole.
* Clients talk to 127.0.0.1 only: the base URLs point at the mock, telemetry, auto-update
  and "nonessential traffic" are switched off.
* Runs are bounded by a timeout; a hung client is killed (its process group only).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]

CLAUDE_MODEL = "claude-sonnet-4-5"
CODEX_MODEL = "gpt-5.5"  # a model Codex knows: it then offers apply_patch (0.171.0)
CODEX_KEY_VAR = "SESH_MOCK_OPENAI_KEY"


def client_dirs() -> list[Path]:
    """Where installed clients are looked for, in order: $SESH_CLIENTS_DIR, ./.clients."""
    out = []
    if os.environ.get("SESH_CLIENTS_DIR"):
        out.append(Path(os.environ["SESH_CLIENTS_DIR"]).expanduser() / "node_modules" / ".bin")
    out.append(REPO / ".clients" / "node_modules" / ".bin")
    return out


def find_client(name: str) -> Path | None:
    """``claude``, ``codex``, ``gemini`` or ``qwen``: from the clients folders, then PATH."""
    for d in client_dirs():
        p = d / name
        if p.exists() and os.access(p, os.X_OK):
            return p
    found = shutil.which(name)
    return Path(found) if found else None


def client_version(exe: Path) -> str:
    """'2.1.197' from '2.1.197 (Claude Code)', '0.171.0' from 'codex-cli 0.171.0'."""
    out = subprocess.run(node_argv(exe) + ["--version"], capture_output=True, text=True, timeout=60,
                         env=base_env(Path("/nonexistent-home"))).stdout.strip()
    for word in out.replace("(", " ").split():
        if word[:1].isdigit():
            return word
    return out


def base_env(home: Path) -> dict[str, str]:
    """A minimal environment: PATH (node must be found) plus an isolated home."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TZ": "UTC",
    }


@dataclass
class RunResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def check(self) -> "RunResult":
        if self.returncode != 0:
            raise AssertionError(f"{self.args[:3]} exited {self.returncode}\nstdout: {self.stdout[-3000:]}\nstderr: {self.stderr[-3000:]}")
        return self


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float) -> RunResult:
    proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the client's own group, nothing else
        out, err = proc.communicate()
        err += f"\n[killed after {timeout}s]"
    return RunResult(args, proc.returncode, out, err)


# ---------------------------------------------------------------- Claude Code


def claude_env(home: Path, base_url: str) -> dict[str, str]:
    env = base_env(home)
    env.update({
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-mock-key",
        "ANTHROPIC_MODEL": CLAUDE_MODEL,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
        "IS_SANDBOX": "1",
    })
    return env


def run_claude(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
               timeout: float = 120, fork: bool = False) -> RunResult:
    args = [str(exe), "-p"]
    if resume:
        args += ["--resume", resume]
        if fork:
            args.append("--fork-session")
    args += [prompt, "--allowedTools", "Bash Write Edit Read Agent", "--permission-mode", "acceptEdits",
             "--output-format", "json", "--model", CLAUDE_MODEL]
    return _run(args, cwd, claude_env(home, base_url), timeout)


def claude_sessions(home: Path) -> list[Path]:
    """Every file Claude Code wrote under projects/ (transcripts, subagents, meta.json)."""
    root = home / ".claude" / "projects"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def claude_project_dir(home: Path, cwd: Path) -> Path:
    """Claude Code's project folder for a cwd: every non-alphanumeric character becomes '-'."""
    slug = "".join(c if c.isalnum() else "-" for c in str(cwd))
    return home / ".claude" / "projects" / slug


# ---------------------------------------------------------------- Codex


def codex_home(home: Path) -> Path:
    return home / ".codex"


def write_codex_config(home: Path, base_url: str) -> None:
    ch = codex_home(home)
    ch.mkdir(parents=True, exist_ok=True)
    (ch / "config.toml").write_text(
        f'model = "{CODEX_MODEL}"\n'
        'model_provider = "mock"\n'
        'model_reasoning_summary = "auto"\n'
        'web_search = "live"\n'
        "[model_providers.mock]\n"
        'name = "mock"\n'
        f'base_url = "{base_url}/v1"\n'
        f'env_key = "{CODEX_KEY_VAR}"\n'
        'wire_api = "responses"\n'
        "request_max_retries = 0\n"
        "stream_max_retries = 0\n"
        "[analytics]\nenabled = false\n"
        "[feedback]\nenabled = false\n"
    )


def codex_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    env.update({"CODEX_HOME": str(codex_home(home)), CODEX_KEY_VAR: "sk-mock-key", "RUST_LOG": "error"})
    return env


def run_codex(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
              timeout: float = 120, fork: bool = False) -> RunResult:
    write_codex_config(home, base_url)  # the port changes between runs
    args = [str(exe), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    if resume:
        args += ["fork" if fork else "resume", resume]
    args.append(prompt)
    return _run(args, cwd, codex_env(home), timeout)


def codex_sessions(home: Path) -> list[Path]:
    root = codex_home(home) / "sessions"
    return sorted(root.rglob("rollout-*.jsonl")) if root.exists() else []


def codex_session_id(rollout: Path) -> str:
    with rollout.open("rb") as f:
        first = json.loads(f.readline())
    return first["payload"]["id"]


# ---------------------------------------------------------------- Node 22 (Qwen Code)


def node22() -> Path | None:
    """The Node 22 binary scripts/install_clients.sh puts beside the clients (Qwen Code needs it)."""
    for d in client_dirs():
        p = d.parents[1] / "node22" / "node_modules" / ".bin" / "node"
        if p.exists() and os.access(p, os.X_OK):
            return p
    return None


def node_argv(exe: Path) -> list[str]:
    """How to start a client: a node script with Node 22 where installed (PATH's node
    otherwise); a native binary (Claude Code, Codex) as it is."""
    with open(exe, "rb") as f:
        first = f.readline(200)
    node = node22()
    return [str(node), str(exe)] if node and first.startswith(b"#!") and b"node" in first else [str(exe)]


# ---------------------------------------------------------------- Gemini CLI

GEMINI_MODEL = "gemini-2.5-pro"


def gemini_home(home: Path) -> Path:
    return home / ".gemini"


def write_gemini_settings(home: Path) -> None:
    gh = gemini_home(home)
    gh.mkdir(parents=True, exist_ok=True)
    settings = {
        # an API key with a base URL: otherwise the base URL switches auth to "gateway",
        # which headless mode rejects (0.61.0)
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    }
    (gh / "settings.json").write_text(json.dumps(settings, indent=1))


def gemini_env(home: Path, base_url: str) -> dict[str, str]:
    env = base_env(home)
    env.update({"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": "mock-gemini-key",
                "GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true"})
    return env


def run_gemini(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
               timeout: float = 120) -> RunResult:
    write_gemini_settings(home)
    args = node_argv(exe) + ["--model", GEMINI_MODEL, "--approval-mode", "yolo", "--output-format", "json"]
    if resume:
        args += ["--resume", resume]
    args += ["-p", prompt]
    return _run(args, cwd, gemini_env(home, base_url), timeout)


def gemini_sessions(home: Path) -> list[Path]:
    root = gemini_home(home) / "tmp"
    return sorted(root.rglob("session-*.json*")) if root.exists() else []


# ---------------------------------------------------------------- Qwen Code

QWEN_MODEL = "qwen3-coder-plus"


def qwen_home(home: Path) -> Path:
    return home / ".qwen"


def qwen_env(home: Path, base_url: str) -> dict[str, str]:
    env = base_env(home)
    env.update({"OPENAI_BASE_URL": base_url + "/v1", "OPENAI_API_KEY": "sk-mock-key", "OPENAI_MODEL": QWEN_MODEL})
    return env


def write_qwen_settings(home: Path) -> None:
    qh = qwen_home(home)
    qh.mkdir(parents=True, exist_ok=True)
    settings = {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}
    (qh / "settings.json").write_text(json.dumps(settings, indent=1))


def run_qwen(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
             timeout: float = 120) -> RunResult:
    write_qwen_settings(home)
    args = node_argv(exe) + ["--auth-type", "openai", "--yolo", "--model", QWEN_MODEL, "--output-format", "json"]
    if resume:
        args += ["--resume", resume]
    args += ["-p", prompt]
    return _run(args, cwd, qwen_env(home, base_url), timeout)


def qwen_sessions(home: Path) -> list[Path]:
    root = qwen_home(home) / "projects"
    return sorted(root.rglob("*.jsonl")) if root.exists() else []


def qwen_session_id(res: RunResult) -> str:
    """The session id in Qwen Code's ``--output-format json`` (a list of events; 0.24.4)."""
    events = res.json()
    events = events if isinstance(events, list) else [events]
    for e in events:
        if isinstance(e, dict) and e.get("session_id"):
            return e["session_id"]
    raise AssertionError(f"no session_id in qwen output: {res.stdout[-500:]}")
