"""Claude Code 2.0.x warmup sidechains (issue 33): before ``subagents/`` folders, 2.0.x
writes each warmup of its built-in agents (a "Warmup" prompt sent at start, one per agent
model) as ``projects/<slug>/agent-<8hex>.jsonl`` beside the session, lines with
``isSidechain: true``, the session's ``sessionId`` and an ``agentId``. One ``-p`` run with a
Bash call, offline against the Anthropic mock; shared by scripts/record_claude_warmup.py
(tests/fixtures/claude-code/warmup-2.0/) and tests/test_clients_claude_warmup.py.

Invariants: the client gets runner.claude_env (a temp home, the mock's URL), never the
caller's environment.
"""

from __future__ import annotations

from pathlib import Path

from . import runner
from .mock_servers import AnthropicMock, Script, Text, Tool

RELEASE = "2.0.30"
PROMPT = "[warmup] Run a command."
SCRIPT = Script(turns={
    "[warmup]": [[Tool("Bash", {"command": "echo one", "description": "Print one"})], [Text("It printed one.")]],
})  # fmt: skip


def find(version: str = RELEASE) -> Path | None:
    return runner.find_old_client("claude", version)


def run(exe: Path, home: Path, cwd: Path) -> str:
    """The session id; the files are ``runner.claude_sessions(home)``."""
    with AnthropicMock(SCRIPT) as mock:
        return runner.run_claude(exe, home, cwd, mock.url, PROMPT, timeout=180).check().json()["session_id"]
