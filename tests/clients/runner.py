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
    """Where installed clients are looked for, in order: $SESH_CLIENTS_DIR (one folder, or
    several separated by ``:``), ./.clients."""
    out = []
    for d in (os.environ.get("SESH_CLIENTS_DIR") or "").split(os.pathsep):
        if d:
            out.append(Path(d).expanduser() / "node_modules" / ".bin")
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


# older releases (issue 33), one npm prefix each: <folder>/<name>-<version>/node_modules/<package>
OLD_CLIENTS = {"pi": ("pi-coding-agent", "@mariozechner/pi-coding-agent", "dist/cli.js"),
               "copilot": ("copilot", "@github/copilot", "index.js"),
               "codex": ("codex", "@openai/codex", "dist/cli.js"),
               "claude": ("claude-code", "@anthropic-ai/claude-code", "cli.js")}


def old_client_dirs() -> list[Path]:
    """Where older releases are looked for: $SESH_CLIENTS_OLD_DIR (``:``-separated), then
    ``old/`` in each clients folder (scripts/install_clients.sh puts them there)."""
    out = [Path(d).expanduser() for d in (os.environ.get("SESH_CLIENTS_OLD_DIR") or "").split(os.pathsep) if d]
    return out + [d.parents[1] / "old" for d in client_dirs()]


def find_old_client(vendor: str, version: str) -> Path | None:
    """The entry script of an older release of ``vendor`` (a key of OLD_CLIENTS), or None."""
    name, package, entry = OLD_CLIENTS[vendor]
    for d in old_client_dirs():
        p = d / f"{name}-{version}" / "node_modules" / package / entry
        if p.is_file():
            return p
    return None


def find_old_bin(package: str, version: str, name: str) -> Path | None:
    """``gemini`` of ``gemini-cli`` 0.1.22 and the like (an npm bin), from ``old_client_dirs``."""
    for d in old_client_dirs():
        p = d / f"{package}-{version}" / "node_modules" / ".bin" / name
        if p.exists() and os.access(p, os.X_OK):
            return p
    return None


def client_version(exe: Path) -> str:
    """'2.1.197' from '2.1.197 (Claude Code)', '0.171.0' from 'codex-cli 0.171.0', '1.0.102' from
    'GitHub Copilot CLI 1.0.102.'."""
    r = subprocess.run(node_argv(exe) + ["--version"], capture_output=True, text=True, timeout=60,
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
               timeout: float = 120, fork: bool = False, permission_mode: bool = True) -> RunResult:
    """``permission_mode=False`` for releases without ``--permission-mode`` (1.0.3)."""
    args = [str(exe), "-p"]
    if resume:
        args += ["--resume", resume]
        if fork:
            args.append("--fork-session")
    args += [prompt, "--allowedTools", "Bash Write Edit Read Agent"]
    if permission_mode:
        args += ["--permission-mode", "acceptEdits"]
    args += ["--output-format", "json", "--model", CLAUDE_MODEL]
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
    args = node_argv(exe) + ["--provider", PI_PROVIDER, "--model", PI_MODEL, "--thinking", "medium"]
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
    args = [str(node22() or "node"), str(script), str(pi_package(exe)), str(session_file), entry_id, prompt]
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


def copilot_pkg_cache() -> Path | None:
    """Where Copilot CLI unpacks its package (240 MB for 1.0.102), shared by every run: beside
    the installed client, not in each test's temp home (145 homes filled CI's disk). The
    native binary unpacks atomically (``.extracting-<pid>`` then a rename), so runs in
    parallel do not trip over each other."""
    for d in client_dirs():  # <clients>/node_modules/.bin
        if (d / "copilot").exists():
            return d.parents[1] / ".cache" / "copilot"
    return None  # a client on PATH unpacks into the temp home, as before


def copilot_env(home: Path, base_url: str) -> dict[str, str]:
    env = base_env(home)
    cache = copilot_pkg_cache()
    if cache:
        env["COPILOT_PKG_CACHE_HOME"] = str(cache)
    env.update({
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": f"{base_url}/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_API_KEY": "sk-mock-key",
        "COPILOT_MODEL": COPILOT_MODEL,
        # the mock model's context, as pi's models.json gives it: without it Copilot CLI
        # (1.0.102) assumes a small one and compacts a resumed session with a ~100 KB tool output
        "COPILOT_PROVIDER_MAX_PROMPT_TOKENS": "128000",
    })
    return env


def run_copilot(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
                timeout: float = 120) -> RunResult:
    args = node_argv(exe)
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


# ---------------------------------------------------------------- OpenCode (issue 20)

OPENCODE_PROVIDER = "mock"
OPENCODE_MODEL = "m"


def opencode_data(home: Path) -> Path:
    """``$XDG_DATA_HOME/opencode`` (base_env sets XDG_DATA_HOME under the temp home)."""
    return home / ".local" / "share" / "opencode"


def write_opencode_config(home: Path, base_url: str) -> None:
    """opencode.json: one OpenAI-compatible provider on the mock (reasoning and image input on,
    prices per million so the session records a cost), its model the default; no sharing, no
    updates."""
    d = home / ".config" / "opencode"
    d.mkdir(parents=True, exist_ok=True)
    (d / "opencode.json").write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json",
        "provider": {OPENCODE_PROVIDER: {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
                                         "options": {"baseURL": f"{base_url}/v1", "apiKey": "sk-mock-key"},
                                         "models": {OPENCODE_MODEL: {"name": "Mock", "reasoning": True, "attachment": True,
                                                                     # images in: else OpenCode sends an error text for a tool's image
                                                                     "modalities": {"input": ["text", "image"], "output": ["text"]},
                                                                     "cost": {"input": 3, "output": 15, "cache_read": 0.3,
                                                                              "cache_write": 3.75},
                                                                     "limit": {"context": 128000, "output": 8000}}}}},
        "model": f"{OPENCODE_PROVIDER}/{OPENCODE_MODEL}",
        "small_model": f"{OPENCODE_PROVIDER}/{OPENCODE_MODEL}",
        "share": "disabled", "autoupdate": False,
    }, indent=1))


def opencode_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
                "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1"})
    return env


def run_opencode(exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, resume: str | None = None,
                 timeout: float = 180) -> RunResult:
    """``opencode run --auto``; ``resume`` is a ``ses_...`` id given to ``--session``."""
    write_opencode_config(home, base_url)  # the port changes between runs
    args = [str(exe), "run", "--auto", "--format", "json"]
    if resume:
        args += ["--session", resume]
    # one argument per word: 1.18.33 joins its arguments with spaces and puts quotes around
    # an argument that holds a space, and the quotes would become part of the prompt
    args += ["--", *prompt.split(" ")]
    return _run(args, cwd, opencode_env(home), timeout)


def opencode_export(exe: Path, home: Path, cwd: Path, session_id: str) -> str:
    """``opencode export SESSION``: the session as one JSON document (stdout)."""
    return _run([str(exe), "export", session_id], cwd, opencode_env(home), 60).check().stdout


def opencode_import(exe: Path, home: Path, cwd: Path, file: Path) -> RunResult:
    """``opencode import FILE`` (rows in the database, no events; the session's directory
    becomes ``cwd``, 1.18.33)."""
    return _run([str(exe), "import", str(Path(file).resolve())], cwd, opencode_env(home), 60).check()


def opencode_db(home: Path) -> Path:
    return opencode_data(home) / "opencode.db"


def opencode_session_id(res: RunResult) -> str:
    """The session id from ``--format json`` output (every event line names it)."""
    for line in res.stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        sid = d.get("sessionID") if isinstance(d, dict) else None
        if isinstance(sid, str):
            return sid
    raise AssertionError(f"no session id in opencode output: {res.stdout[-2000:]}\n{res.stderr[-2000:]}")


# ---------------------------------------------------------------- any vendor

EXES = {"claude-code": "claude", "codex": "codex", "gemini": "gemini", "qwen": "qwen", "pi": "pi", "copilot": "copilot",
        "opencode": "opencode"}
# the vendor home below HOME, and its folder that holds the sessions
HOMES = {"claude-code": (".claude", "projects"), "codex": (".codex", "sessions"), "gemini": (".gemini", "tmp"),
         "qwen": (".qwen", "projects"), "pi": (".pi/agent", "sessions"), "copilot": (".copilot", "session-state"),
         "opencode": (".local/share", "opencode")}
# the clients that fork a session into a new one (Claude Code --fork-session, codex fork, pi --fork)
FORKS = ("claude-code", "codex", "pi")


def run_vendor(vendor: str, exe: Path, home: Path, cwd: Path, base_url: str, prompt: str,
               resume: str | None = None, fork: bool = False) -> RunResult:
    """One prompt, starting a session, resuming ``resume`` (a session id) or, with ``fork``,
    forking it into a new session (the clients in FORKS)."""
    run = {"claude-code": run_claude, "codex": run_codex, "gemini": run_gemini, "qwen": run_qwen,
           "pi": run_pi, "copilot": run_copilot, "opencode": run_opencode}[vendor]
    if not fork:
        return run(exe, home, cwd, base_url, prompt, resume=resume)
    assert vendor in FORKS, f"{vendor}: no fork"
    if vendor == "pi":
        return run_pi(exe, home, cwd, base_url, prompt, fork=resume)
    return run(exe, home, cwd, base_url, prompt, resume=resume, fork=True)  # type: ignore[call-arg]


def run_step(vendor: str, exe: Path, home: Path, cwd: Path, base_url: str, prompt: str, action: str,
             session: str | None, first: str | None) -> str:
    """Send one prompt of a scenario as its action says (scenarios.Scenario.action: ``new``,
    ``resume`` the session so far, ``fork`` or ``original`` from the ``first`` session, and
    pi's ``branch``); the id of the session the prompt ran in."""
    resume = first if action in ("fork", "original") else session
    if action == "branch":  # pi: back to the first answer of the session, in the same file
        assert vendor == "pi" and session is not None, (vendor, action)
        f = next(p for p in pi_sessions(home) if pi_session_id(p) == session)
        entries = [json.loads(line) for line in f.read_text().splitlines()]
        first_answer = next(e["id"] for e in entries if e.get("type") == "message" and e["message"]["role"] == "assistant")
        run_pi_branch(exe, home, cwd, base_url, f, first_answer, prompt).check()
        return session
    before_codex, before_pi = set(codex_sessions(home)), set(pi_sessions(home))
    res = run_vendor(vendor, exe, home, cwd, base_url, prompt, resume=resume, fork=action == "fork").check()
    if vendor in ("claude-code", "gemini"):
        return res.json()["session_id"]
    if vendor == "qwen":
        return qwen_session_id(res)
    if vendor == "codex":
        new = sorted(set(codex_sessions(home)) - before_codex)
        return codex_session_id(new[0]) if new else (resume or codex_session_id(codex_sessions(home)[0]))
    if vendor == "copilot":
        return resume or copilot_session_id(home)
    if vendor == "opencode":
        return opencode_session_id(res)
    new = sorted(set(pi_sessions(home)) - before_pi)
    if new:
        return pi_session_id(new[0])
    assert resume is not None
    return resume
