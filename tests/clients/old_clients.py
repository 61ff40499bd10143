"""Older releases of Gemini CLI (0.1.x) and Qwen Code (0.1.x), driven through their terminal UI
(tests/clients/tui_old.py) against the mock servers: 0.1.x Gemini CLI writes nothing with ``-p``;
its checkpoints come from ``/chat save TAG`` and its prompt log from the TUI.

Invariants:

* Each old release is installed pinned in a folder of its own, ``<dir>/<package>-<version>``
  (scripts/install_clients.sh puts them in ``$SESH_CLIENTS_DIR/old/``); ``find_old`` looks
  there and in ``$SESH_CLIENTS_OLD_DIR`` (``runner.find_old_bin``).
* A step waits for what the client shows when it is done (the scripted reply, the
  "checkpoint saved" notice), then for a still screen: the files are written by then.
* Same isolation as tests/clients/runner.py: a fresh HOME, an explicit environment,
  loopback only.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import runner
from .mock_servers import Script, Text, Tool
from .tui_old import Tui

GEMINI_OLD = ("gemini-cli", "0.1.22", "gemini")
QWEN_OLD = ("qwen-code", "0.1.4", "qwen")
OLD = {"gemini": GEMINI_OLD, "qwen": QWEN_OLD}


def find_old(vendor: str) -> Path | None:
    package, version, exe = OLD[vendor]
    return runner.find_old_bin(package, version, exe)


@dataclass
class Step:
    """Type ``text``; done when ``until`` is on the screen (once more than before), or, for
    None, when the prompt box is empty again (the line was taken)."""

    text: str
    until: str | None


@dataclass
class OldScenario:
    name: str
    vendor: str
    steps: list[Step]
    script: Script
    covers: str = ""
    files: list[str] = field(default_factory=list)


def _shell_turns(background: bool) -> list[list]:
    # Qwen Code 0.1.4's run_shell_command requires is_background
    extra = {"is_background": False} if background else {}
    return [
        [Text("Running echo."), Tool("run_shell_command", {"command": "echo hello-from-shell",
                                                           "description": "Print a greeting", **extra})],
        [Tool("run_shell_command", {"command": "ls /nonexistent-sesh-dir", "description": "List a missing folder", **extra})],
        [Text("The second command failed as expected.")],
    ]


def old_scenario(vendor: str) -> OldScenario:
    """Three prompts and three saves: ``one`` after the shell turn, ``two`` after a second turn
    (the same conversation, longer), then ``/chat resume one`` and a different turn saved as
    ``three`` (a branch of ``one``)."""
    script = Script(turns={
        "[shell]": _shell_turns(vendor == "qwen"),
        "[text]": [[Text("Hello from the mock model.")]],
        "[text-2]": [[Text("Hello again, from the branch.")]],
        "[resume-check]": [[Text("OK.")]],
    })
    saved = "Conversation checkpoint saved with tag:"
    steps = [
        Step("[shell] Run two commands.", "The second command failed as expected."),
        Step("/chat save one", f"{saved} one"),
        Step("[text] Say hello.", "Hello from the mock model."),
        Step("/chat save two", f"{saved} two"),
        Step("/chat resume one", None),
        Step("[text-2] Say it again.", "Hello again, from the branch."),
        Step("/chat save three", f"{saved} three"),
    ]
    return OldScenario("checkpoints", vendor, steps, script,
                       "a shell turn, /chat save one; a text turn, /chat save two; /chat resume one, another turn, "
                       "/chat save three (logs.json, three checkpoints, and the chats/session-*.json document of a "
                       "release that writes one: Qwen Code 0.1.x, Gemini CLI 0.4-0.19)")


def _settings(vendor: str, home: Path) -> None:
    folder = home / (".gemini" if vendor == "gemini" else ".qwen")
    folder.mkdir(parents=True, exist_ok=True)
    auth = "gemini-api-key" if vendor == "gemini" else "openai"
    (folder / "settings.json").write_text(json.dumps({
        "selectedAuthType": auth, "theme": "Default" if vendor == "gemini" else "Qwen Dark", "usageStatisticsEnabled": False,
        "telemetry": {"enabled": False}, "disableAutoUpdate": True, "hideTips": True}, indent=1))


def old_env(vendor: str, home: Path, base_url: str) -> dict[str, str]:
    # their banners fail to render without colours ("Invalid number of stops"): Qwen Code
    # 0.1.4, Gemini CLI 0.10.0
    env = runner.gemini_env(home, base_url) if vendor == "gemini" else runner.qwen_env(home, base_url)
    env.pop("NO_COLOR", None)
    return env


def old_argv(vendor: str, exe: Path) -> list[str]:
    model = runner.GEMINI_MODEL if vendor == "gemini" else runner.QWEN_MODEL
    return runner.node_argv(exe) + ["--model", model, "--yolo"]


EMPTY_BOX = "Type your message"


def run_tui(vendor: str, exe: Path, home: Path, cwd: Path, base_url: str, steps: list[Step], timeout: float = 120) -> str:
    """Start the TUI, type each step, and quit; the last screen."""
    _settings(vendor, home)
    with Tui(old_argv(vendor, exe), cwd, old_env(vendor, home, base_url)) as tui:
        tui.wait_for(EMPTY_BOX, timeout)
        # the prompt log is set up after the prompt box shows: a prompt typed at once is
        # answered but not logged (Gemini CLI 0.1.22)
        time.sleep(3)
        tui.wait_quiet(1.5, timeout)
        for step in steps:
            until = step.until or EMPTY_BOX
            before = tui.screen().count(until) if step.until else 0
            tui.type(step.text)
            # the completion menu of a slash command takes an Enter (it completes the tag the
            # line already names, 0.1.22 /chat resume): Enter again until the line is taken
            for attempt in range(4):
                try:
                    tui.wait_for(until, 6 if attempt < 3 else timeout, after=before)
                    break
                except TimeoutError:
                    if attempt == 3:
                        raise
                    tui.type("", enter=True)
            tui.wait_quiet(2, timeout)
        return tui.screen()


def vendor_tmp(vendor: str, home: Path) -> Path:
    return home / (".gemini" if vendor == "gemini" else ".qwen") / "tmp"


def written_files(vendor: str, home: Path) -> list[Path]:
    root = vendor_tmp(vendor, home)
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []
