"""OpenCode side files (issue 38): the TUI's prompt history beside the database.

* ``$XDG_STATE_HOME/opencode/prompt-history.jsonl`` (``LINES``: appended at each prompt,
  rewritten whole when trimmed to its limit; 1.18.33, recorded in its TUI in
  tests/fixtures/side-files/opencode-1.18.33; ``opencode run`` writes none):
  ``{"input", "parts" (attachments), "mode" ("normal", "shell")}`` per prompt. No session
  id, no time, no project: a prompt report without a thread, lost when no archived user
  message of the vendor has its text (view ``lost_prompts``). A shell-mode line (``!cmd``)
  is a command the TUI ran, not a prompt: skipped, kept in the stored bytes.
  Kilo (an OpenCode fork, same adapter code) has the same file name in its 7.7.7 binary,
  under its own state folder; no recording of it here.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any


from ..base import INVALID, LINES, Report, Row, SKIPPED, StatelessParser, json_line_rows, prompt_report

PROMPT_HISTORY = "prompt-history.jsonl"


def classify(path: Path) -> str | None:
    return LINES if path.name == PROMPT_HISTORY else None


class PromptHistoryParser(StatelessParser):
    """A prompt report per line of ``prompt-history.jsonl``."""

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        return json_line_rows(line, self._prompt)

    def _prompt(self, d: Any) -> Iterator[Row]:
        if not isinstance(d, dict) or not isinstance(d.get("input"), str):
            yield Report(INVALID, "prompt history line", "not an object with an input")
        elif d.get("mode") == "shell":
            yield Report(SKIPPED, "shell command", "a command the TUI ran, not a prompt")
        else:
            yield prompt_report(None, None, None, None, d["input"])
