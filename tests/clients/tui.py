"""Claude Code in its terminal UI, driven through tmux, to record the side files that
``claude -p`` never writes (issue 38): ``history.jsonl`` (or, up to 1.0.x, the projects'
``history`` in ``.claude.json``), ``file-history/`` backups, ``tasks/`` (``todos/`` up to
2.0.x) and ``plans/``.

Invariants (those of runner.py): a fresh home and an explicit environment (``env -i``),
the mock on 127.0.0.1 only, every wait bounded; the tmux server is our own (``-L``) and
is killed at the end, nothing else.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import runner
from .mock_servers import AnthropicMock, Script, Text, Tool

PLAN = "<the plan file the client names>"  # replaced by the path of the plan-mode reminder


class PlanAwareMock(AnthropicMock):
    """The Anthropic mock, writing the plan where plan mode asks for it: Claude Code names a
    random ``plans/<words>.md`` in the request (2.1.332), unknown to a static script."""

    plan: str | None = None

    def reply_for(self, body: dict[str, Any]) -> tuple[str, str, int, Any]:
        key, prompt, step, reply = super().reply_for(body)
        found = re.findall(r"(/[^\s\"'`\\]*/plans/[A-Za-z0-9_-]+\.md)", json.dumps(body))
        if found:
            self.plan = found[-1]
        reply = [Tool(p.name, {**p.input, "file_path": self.plan}) if isinstance(p, Tool) and isinstance(p.input, dict)
                 and p.input.get("file_path") == PLAN else p for p in reply]
        return key, prompt, step, reply


def side_script(cwd: Path, tasks: bool = True) -> Script:
    """A task left open (``tasks/<session>/1.json``), an edit (``file-history`` v1 and
    ``file-history-delta``), a plan written in plan mode (``plans/*.md``), a second edit."""
    hello = str(cwd / "hello.py")
    side: list[list[Any]] = [[Tool("ToolSearch", {"query": "select:TaskCreate", "max_results": 5})],
                             [Tool("TaskCreate", {"subject": "Edit hello.py", "description": "Make hello.py print hello",
                                                  "activeForm": "Editing hello.py"})]] if tasks else []
    return Script(turns={
        "[side]": [*side, [Tool("Read", {"file_path": hello})],
                   [Tool("Edit", {"file_path": hello, "old_string": "print('hi')", "new_string": "print('hello')"})],
                   [Text("Edited.")]],
        "[plan]": [[Tool("ToolSearch", {"query": "select:EnterPlanMode,ExitPlanMode", "max_results": 5})],
                   [Tool("EnterPlanMode", {})],
                   [Tool("Write", {"file_path": PLAN, "content": "# Plan\n\n1. Make hello.py print hello, world.\n"})],
                   [Tool("ExitPlanMode", {})],
                   [Text("Planned.")]],
        "[again]": [[Tool("Edit", {"file_path": hello, "old_string": "print('hello')", "new_string": "print('hello, world')"})],
                    [Text("Edited again.")]],
    })


@dataclass
class TuiRun:
    home: Path
    cwd: Path
    screens: list[str] = field(default_factory=list)


def run_tui(exe: Path, work: Path, prompts: list[str], script: Script, settle: float = 12.0,
            socket: str = "") -> TuiRun:
    """Start Claude Code's TUI in ``work``, type each prompt, approve a plan if asked, exit."""
    home, cwd = work / "home", work / "proj"
    (home / ".claude").mkdir(parents=True)
    cwd.mkdir(parents=True)
    (cwd / "hello.py").write_text("print('hi')\n")
    # onboarding done, the mock key approved, the folder trusted: no dialog before the prompt
    (home / ".claude" / ".claude.json").write_text(json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark", "numStartups": 3,
        "customApiKeyResponses": {"approved": ["sk-ant-mock-key"[-20:]], "rejected": []},
        "projects": {str(cwd): {"hasTrustDialogAccepted": True, "allowedTools": []}}}))
    run = TuiRun(home, cwd)
    tmux = ["tmux", "-L", socket or f"sesh-tui-{os.getpid()}"]  # one server per test process (pytest-xdist)
    with PlanAwareMock(script) as mock:
        env = runner.claude_env(home, mock.url)
        argv = [*runner.node_argv(exe), "--permission-mode", "acceptEdits", "--model", runner.CLAUDE_MODEL]
        cmd = f"cd {shlex.quote(str(cwd))} && env -i {' '.join(shlex.quote(f'{k}={v}') for k, v in env.items())} {shlex.join(argv)}"
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        subprocess.run([*tmux, "new-session", "-d", "-x", "160", "-y", "50", "bash", "-c", cmd], check=True)
        try:
            def screen() -> str:
                return subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True).stdout

            def send(*keys: str) -> None:
                subprocess.run([*tmux, "send-keys", *keys], check=True)

            deadline = time.monotonic() + 60
            while "❯" not in screen() and ">" not in screen() and time.monotonic() < deadline:
                time.sleep(0.5)
            time.sleep(3)
            for prompt in [*prompts, "/exit"]:
                send("-l", prompt)
                time.sleep(1)
                send("Enter")
                time.sleep(settle if prompt != "/exit" else 4)
                for _ in range(3):  # ExitPlanMode asks "Would you like to proceed?" (1. Yes, ...)
                    s = screen()
                    run.screens.append(s)
                    if "Would you like to proceed" not in s:
                        break
                    send("Enter")
                    time.sleep(settle / 2)
        finally:
            subprocess.run([*tmux, "kill-server"], capture_output=True)
    return run
