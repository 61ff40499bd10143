"""Find and run the real vendor CLIs (Claude Code, Codex) against a mock server, offline.

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
    """``claude`` or ``codex``: from the clients folders, then PATH."""
    for d in client_dirs():
        p = d / name
        if p.exists() and os.access(p, os.X_OK):
            return p
    found = shutil.which(name)
    return Path(found) if found else None


def client_version(exe: Path) -> str:
    """'2.1.197' from '2.1.197 (Claude Code)', '0.171.0' from 'codex-cli 0.171.0', '1.0.102' from
    'GitHub Copilot CLI 1.0.102.'."""
    r = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                       env=base_env(Path("/nonexistent-home")))
    out = (r.stdout.strip() or r.stderr.strip())  # pi 0.73.1 prints its version on stderr
    for word in out.replace("(", " ").split():
        if word[:1].isdigit():
            return word.rstrip(".")
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
               timeout: float = 120) -> RunResult:
    args = [str(exe), "-p"]
    if resume:
        args += ["--resume", resume]
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
              timeout: float = 120) -> RunResult:
    write_codex_config(home, base_url)  # the port changes between runs
    args = [str(exe), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    if resume:
        args += ["resume", resume]
    args.append(prompt)
    return _run(args, cwd, codex_env(home), timeout)


def codex_sessions(home: Path) -> list[Path]:
    root = codex_home(home) / "sessions"
    return sorted(root.rglob("rollout-*.jsonl")) if root.exists() else []


def codex_session_id(rollout: Path) -> str:
    with rollout.open("rb") as f:
        first = json.loads(f.readline())
    return first["payload"]["id"]


# ---------------------------------------------------------------- pi (issue 20)

PI_PROVIDER = "mock"
PI_MODEL = "m"  # a model of the mock provider in models.json; reasoning on, with prices


def pi_dir(home: Path) -> Path:
    return home / ".pi" / "agent"


def write_pi_config(home: Path, base_url: str) -> None:
    """models.json: one OpenAI chat-completions provider on the mock, with per-million prices
    so the session records a cost; settings.json: no telemetry."""
    d = pi_dir(home)
    d.mkdir(parents=True, exist_ok=True)
    (d / "models.json").write_text(json.dumps({"providers": {PI_PROVIDER: {
        "baseUrl": f"{base_url}/v1", "api": "openai-completions", "apiKey": "sk-mock-key",
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [{"id": PI_MODEL, "name": "Mock", "reasoning": True, "input": ["text", "image"],
                    "contextWindow": 128000, "maxTokens": 8000,
                    "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}]}}}, indent=1))
    (d / "settings.json").write_text(json.dumps({"enableInstallTelemetry": False, "defaultProvider": PI_PROVIDER,
                                                 "defaultModel": PI_MODEL}))


def pi_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    env.update({"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"})
    return env


def run_pi(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
           timeout: float = 120, fork: str | None = None) -> RunResult:
    """``pi -p``; ``resume`` is a session id (or file path) given to ``--session``, ``fork``
    one given to ``--fork`` (a new session file copied from it)."""
    write_pi_config(home, base_url)  # the port changes between runs
    args = [str(exe), "--provider", PI_PROVIDER, "--model", PI_MODEL, "--thinking", "medium"]
    if resume:
        args += ["--session", resume]
    if fork:
        args += ["--fork", fork]
    args += ["-p", prompt]
    return _run(args, cwd, pi_env(home), timeout)


def pi_package(exe: Path) -> Path:
    """The installed package folder of the ``pi`` command (node_modules/.bin/pi links into it)."""
    return exe.resolve().parents[1]


def run_pi_branch(exe: Path, home: Path, cwd: Path, base_url: str, session_file: Path, entry_id: str, prompt: str,
                  timeout: float = 120) -> RunResult:
    """Branch ``session_file`` in place at ``entry_id`` and send ``prompt`` there, with pi's
    own SessionManager (tests/clients/pi_branch.mjs; the TUI's ``/tree`` does the same)."""
    write_pi_config(home, base_url)
    script = Path(__file__).with_name("pi_branch.mjs")
    args = ["node", str(script), str(pi_package(exe)), str(session_file), entry_id, prompt]
    return _run(args, cwd, pi_env(home), timeout)


def pi_sessions(home: Path) -> list[Path]:
    root = pi_dir(home) / "sessions"
    return sorted(root.rglob("*.jsonl")) if root.exists() else []


def pi_session_id(path: Path) -> str:
    with path.open("rb") as f:
        return json.loads(f.readline())["id"]


def pi_project_dir(home: Path, cwd: Path) -> Path:
    """pi's folder for a cwd: ``--`` + the path without its leading '/', '/' as '-', + ``--``."""
    return pi_dir(home) / "sessions" / ("--" + str(cwd).lstrip("/").replace("/", "-").replace(":", "-") + "--")


# ---------------------------------------------------------------- GitHub Copilot CLI (issue 20)

COPILOT_MODEL = "gpt-4.1"


def copilot_env(home: Path, base_url: str) -> dict[str, str]:
    env = base_env(home)
    env.update({
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": f"{base_url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "sk-mock-key",
        "COPILOT_MODEL": COPILOT_MODEL,
    })
    return env


def run_copilot(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
                timeout: float = 120) -> RunResult:
    args = [str(exe)]
    if resume:
        args.append(f"--resume={resume}")
    args += ["-p", prompt, "--allow-all-tools", "--no-color"]
    return _run(args, cwd, copilot_env(home, base_url), timeout)


def copilot_sessions(home: Path) -> list[Path]:
    """Every file under session-state/ (events.jsonl, workspace.yaml, ...)."""
    root = home / ".copilot" / "session-state"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def copilot_session_id(home: Path) -> str:
    events = [p for p in copilot_sessions(home) if p.name == "events.jsonl"]
    return events[0].parent.name


# ---------------------------------------------------------------- any vendor

EXES = {"claude-code": "claude", "codex": "codex", "pi": "pi", "copilot": "copilot"}
# the vendor home below HOME, and its folder that holds the sessions
HOMES = {"claude-code": (".claude", "projects"), "codex": (".codex", "sessions"), "pi": (".pi/agent", "sessions"),
         "copilot": (".copilot", "session-state")}


def run_vendor(vendor: str, exe: Path, home: Path, cwd: Path, base_url: str, prompt: str,
               resume: str | None = None) -> RunResult:
    """One prompt, starting a session or resuming ``resume`` (a session id)."""
    run = {"claude-code": run_claude, "codex": run_codex, "pi": run_pi, "copilot": run_copilot}[vendor]
    return run(exe, home, cwd, base_url, prompt, resume=resume)


def run_step(vendor: str, exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, mode: str,
             session_id: str | None) -> str:
    """Send one prompt of a scenario the way its mode says (``new``, ``resume``, and for pi
    ``fork`` and ``branch``, see scenarios.Scenario); the session id after it."""
    if vendor == "claude-code":
        return run_claude(exe, home, cwd, base_url, prompt, resume=session_id).check().json()["session_id"]
    if vendor == "codex":
        run_codex(exe, home, cwd, base_url, prompt, resume=session_id).check()
        return session_id or codex_session_id(codex_sessions(home)[0])
    if vendor == "copilot":
        run_copilot(exe, home, cwd, base_url, prompt, resume=session_id).check()
        return session_id or copilot_session_id(home)
    before = pi_sessions(home)
    if mode == "branch":
        f = next(p for p in before if pi_session_id(p) == session_id)
        entries = [json.loads(line) for line in f.read_text().splitlines()]
        first_answer = next(e["id"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "assistant")
        run_pi_branch(exe, home, cwd, base_url, f, first_answer, prompt).check()
        assert session_id is not None
        return session_id
    run_pi(exe, home, cwd, base_url, prompt, resume=session_id if mode == "resume" else None,
           fork=session_id if mode == "fork" else None).check()
    new = [p for p in pi_sessions(home) if p not in before]
    if new:
        return pi_session_id(new[0])
    assert session_id is not None
    return session_id
