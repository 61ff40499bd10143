"""Run the real OpenClaw CLI (npm ``openclaw``) offline against the chat-completions mock.

Invariants:

* OpenClaw 2026.9 needs Node >= 24.16: the npm package ``node@24`` puts one in
  ``<clients>/node24`` (scripts/install_clients.sh), and every run has it first on PATH.
  The newest release is ``<clients>/node_modules/.bin/openclaw``; the last release that still
  wrote JSONL transcripts (2026.7.1; 2026.9.1 already keeps them in SQLite) is an old client,
  ``<clients>/old/openclaw-2026.7.1``; the newest is looked for in ``<clients>/old`` too.
* A run never sees the caller's home: HOME and ``OPENCLAW_STATE_DIR`` point into a temp
  folder, configured by ``openclaw onboard --non-interactive`` with a custom
  OpenAI-compatible provider at the mock (``CUSTOM_API_KEY``), telemetry and update checks
  off. The model is marked ``reasoning: true`` so ``--thinking low`` asks for reasoning.
* ``openclaw agent --local --session-id X --message M`` starts session X, and the same id
  again resumes it (appended).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .mock_servers import Script, Text, Thinking, Tool
from .runner import RunResult, _run, base_env, client_dirs, old_client_dirs

OPENCLAW_VERSION = "2026.9.6"
OPENCLAW_OLD_VERSION = "2026.7.1"  # the last release that wrote agents/<agent>/sessions/<id>.jsonl
MODEL = "mock-model"
SESSION_ID = "5e55a0c1-0000-4000-8000-00000000c1a0"

# one prompt with reasoning, a tool call (``exec``, OpenClaw's shell tool) and its result,
# then one resume
PROMPT = "[oc] Think, then run one command."
RESUME = "[resume-check] One more thing: reply OK."
SCRIPT = Script(turns={
    "[oc]": [
        [Thinking("The user wants one command run."), Text("Running echo."),
         Tool("exec", {"command": "echo hello-from-exec"})],
        [Text("The command printed hello-from-exec.")],
    ],
    "[resume-check]": [[Text("OK.")]],
})


def node24() -> Path | None:
    """Node 24 from ``<clients>/node24`` or ``<old clients>/node24``."""
    for d in [d.parents[1] for d in client_dirs()] + old_client_dirs():
        p = d / "node24" / "node_modules" / ".bin" / "node"
        if p.exists():
            return p
    return None


def find_openclaw(version: str | None = None) -> Path | None:
    """The ``openclaw`` entry script: the newest (in the clients folder) or an old release."""
    if version is None:
        for d in client_dirs():
            p = d.parents[0] / "openclaw" / "openclaw.mjs"
            if p.is_file():
                return p
        version = OPENCLAW_VERSION  # else the newest, pinned, among the old releases
    for d in old_client_dirs():
        p = d / f"openclaw-{version}" / "node_modules" / "openclaw" / "openclaw.mjs"
        if p.is_file():
            return p
    return None


def state_dir(home: Path) -> Path:
    return home / ".openclaw"


def openclaw_env(home: Path) -> dict[str, str]:
    env = base_env(home)
    node = node24()
    if node is not None:
        env["PATH"] = f"{node.parent}{os.pathsep}{env['PATH']}"
    env.update({
        "OPENCLAW_STATE_DIR": str(state_dir(home)),
        "CUSTOM_API_KEY": "sk-mock-key",
        "OPENCLAW_NO_UPDATE_CHECK": "1",
        "DO_NOT_TRACK": "1",
    })
    return env


def _argv(exe: Path) -> list[str]:
    node = node24()
    return [str(node) if node else "node", str(exe)]


def onboard(exe: Path, home: Path, cwd: Path, base_url: str, timeout: float = 180) -> RunResult:
    """Configure a temp state folder for the mock (the format notes' non-interactive onboard),
    then mark the model as a reasoning one."""
    args = _argv(exe) + ["onboard", "--non-interactive", "--accept-risk", "--mode", "local",
                         "--auth-choice", "custom-api-key", "--custom-base-url", f"{base_url}/v1",
                         "--custom-model-id", MODEL, "--custom-compatibility", "openai",
                         "--workspace", str(cwd), "--skip-health", "--skip-channels", "--skip-skills"]
    res = _run(args, cwd, openclaw_env(home), timeout)
    if res.returncode != 0:
        # older releases lack some --skip-* flags: retry without them
        args = [a for a in args if not a.startswith("--skip-")]
        res = _run(args, cwd, openclaw_env(home), timeout)
    set_reasoning(home)
    return res


def set_reasoning(home: Path) -> None:
    config = state_dir(home) / "openclaw.json"
    try:
        d = json.loads(config.read_text())
    except (OSError, ValueError):
        return
    for provider in ((d.get("models") or {}).get("providers") or {}).values():
        for model in provider.get("models") or []:
            if isinstance(model, dict):
                model["reasoning"] = True
    config.write_text(json.dumps(d, indent=2))


def run_agent(exe: Path, home: Path, cwd: Path, message: str, session_id: str = SESSION_ID,
              thinking: str | None = "low", timeout: float = 600) -> RunResult:
    args = _argv(exe) + ["agent", "--local", "--session-id", session_id, "--message", message]
    if thinking:
        args += ["--thinking", thinking]
    return _run(args, cwd, openclaw_env(home), timeout)


def version(exe: Path) -> str:
    r = subprocess.run(_argv(exe) + ["--version"], capture_output=True, text=True, timeout=120,
                       env=openclaw_env(Path("/nonexistent-home")))
    for word in (r.stdout + r.stderr).replace("(", " ").split():
        if word[:1].isdigit():
            return word
    return (r.stdout + r.stderr).strip()
