"""Codex CLI 0.20 - 0.47 (the Rust CLI's first JSONL rollouts, issue 33): one scenario, run
offline against the Responses mock, shared by scripts/record_codex_old.py (the recordings
in tests/fixtures/recorded/codex-<version>/) and tests/test_clients_codex_old.py.

A prompt with reasoning, a ``shell`` call that succeeds and one that fails, an answer;
then the session resumed with a second prompt. The resume differs by release: 0.20-0.34
take ``-c experimental_resume=<rollout path>`` (formats/old-versions.md), 0.47 has
``codex exec resume <id> PROMPT``; both append to the same rollout.

Invariants: the client gets runner.codex_env (a temp home, the mock's URL), never the
caller's environment; nothing is written outside ``home`` and ``cwd``.
"""

from __future__ import annotations

import json
from pathlib import Path

from . import runner
from .mock_servers import ResponsesMock, Script, Text, Thinking, Tool

# the releases recorded (tests/fixtures/recorded/codex-<version>/) and the one CI runs
RELEASES = ("0.20.0", "0.47.0")
CI_RELEASE = "0.47.0"
PROMPTS = ("[shell] Run two commands.", "[more] Say what the first printed.")
SCRIPT = Script(turns={
    "[shell]": [
        [Thinking("Two commands: one prints, one fails."), Text("Running echo."),
         Tool("shell", {"command": ["bash", "-lc", "echo hello-from-shell"]})],
        [Tool("shell", {"command": ["bash", "-lc", "ls /nonexistent-sesh-dir"]})],
        [Text("The second command failed as expected.")],
    ],
    "[more]": [[Text("The first printed hello-from-shell.")]],
})  # fmt: skip
COVERS = ("reasoning, text, a shell call that succeeds and one that fails, an answer; then the "
          "session resumed with a second prompt, appended to the same rollout")


def find(version: str) -> Path | None:
    """``codex`` of @openai/codex ``version`` in ``<clients>/old/codex-<version>`` (npm bin)."""
    return runner.find_old_bin("codex", version, "codex")


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split(".")[:3])


def first(exe: Path, home: Path, cwd: Path, url: str) -> Path:
    """The first prompt; the rollout it wrote."""
    runner.run_codex(exe, home, cwd, url, PROMPTS[0], timeout=180).check()
    (rollout,) = runner.codex_sessions(home)
    return rollout


def resume(exe: Path, version: str, home: Path, cwd: Path, url: str, rollout: Path) -> None:
    """The second prompt, resuming the session as the release can."""
    if _version_tuple(version) < (0, 35):
        runner.write_codex_config(home, url)
        args = [str(exe), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                "-c", f"experimental_resume={rollout}", PROMPTS[1]]
        runner._run(args, cwd, runner.codex_env(home), 180).check()
    else:
        runner.run_codex(exe, home, cwd, url, PROMPTS[1], resume=session_id(rollout), timeout=180).check()


def run(exe: Path, version: str, home: Path, cwd: Path) -> dict:
    """Both prompts; the rollout file(s) written and the session id."""
    with ResponsesMock(SCRIPT) as mock:
        rollout = first(exe, home, cwd, mock.url)
        resume(exe, version, home, cwd, mock.url, rollout)
        requests = len(mock.model_requests())
    return {"session_id": session_id(rollout), "files": runner.codex_sessions(home), "requests": requests}


def session_id(rollout: Path) -> str:
    """0.20's first line is the session itself ({"id", "timestamp", "instructions"}); later
    ones a ``session_meta`` line."""
    with rollout.open("rb") as f:
        first = json.loads(f.readline())
    return first.get("payload", first)["id"]
