"""Aider (PyPI ``aider-chat``) for the ``clients`` tests and recordings: found in its own
virtualenv ``<old dir>/aider-<version>`` (scripts/install_clients.sh makes it; locally
``SESH_CLIENTS_OLD_DIR`` may name the folder holding it), run offline against the Chat
Completions mock in a git repository.

Aider offers the model no tools, so every request it sends is answered from the script by
its latest user prompt (``AiderMock``); ``LITELLM_LOCAL_MODEL_COST_MAP`` keeps litellm from
fetching its price table."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from .mock_servers import ChatCompletionsMock, Reply, Text, chat_prompt_and_step
from .runner import RunResult, _run, base_env, old_client_dirs

AIDER_VERSION = "0.86.2"
AIDER_MODEL = "mock-model"


def find_aider(version: str = AIDER_VERSION) -> Path | None:
    for d in old_client_dirs():
        p = d / f"aider-{version}" / "bin" / "aider"
        if p.is_file():
            return p
    return None


class AiderMock(ChatCompletionsMock):
    """Every request is the agent's own (no tools): the script answers by prompt."""

    def model_requests(self) -> list[Any]:
        return [r for r in self.requests if r.path.endswith("/chat/completions") and isinstance(r.body, dict)
                and self.reply_for(r.body)[0]]

    def reply_for(self, body: dict[str, Any]) -> tuple[str, str, int, Reply]:
        prompt, step = chat_prompt_and_step(body.get("messages") or [])
        key, reply = self.script.reply(prompt, step)
        return key, prompt, step, reply if key else [Text(self.script.default)]


def git_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(path), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    for k, v in (("user.name", "sesh"), ("user.email", "sesh@example.invalid"), ("commit.gpgsign", "false")):
        subprocess.run(["git", "-C", str(path), "config", k, v], check=True, env=env)
    return path


def aider_env(home: Path, base_url: str) -> dict[str, str]:
    env = base_env(home)
    env.update({"OPENAI_API_BASE": f"{base_url}/v1", "OPENAI_API_KEY": "x", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "GIT_CONFIG_NOSYSTEM": "1"})  # fmt: skip
    return env


def run_aider(exe: Path, home: Path, cwd: Path, base_url: str, message: str, restore: bool = False,
              timeout: float = 180) -> RunResult:  # fmt: skip
    args = [str(exe), "--model", f"openai/{AIDER_MODEL}", "--yes-always", "--no-check-update", "--analytics-disable",
            "--no-show-model-warnings", "--no-auto-commits", "--no-gitignore", "--no-pretty",
            "--map-tokens", "0", "--message", message]  # fmt: skip
    if restore:
        args.insert(1, "--restore-chat-history")
    return _run(args, cwd, aider_env(home, base_url), timeout)
