"""Copilot CLI side files (issue 38): the prompt history beside the session state.

* ``$COPILOT_HOME/command-history-state.json`` (``SNAPSHOT``, rewritten whole at each
  prompt; 1.0.102, recorded in its TUI in tests/fixtures/side-files/copilot-1.0.102):
  ``{"commandHistory": [<text>, ...]}``, newest first, at most 50, a repeated text moved to
  the front. No session id, no time, no project: each prompt is a prompt report without a
  thread, lost when no archived user message of a Copilot thread has its text (view
  ``lost_prompts``). Slash commands (``/exit``: a first word without another ``/``, the
  client's own test) are not prompts: skipped, kept in the stored bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..base import INVALID, PARSE_ERROR, SKIPPED, SNAPSHOT, Report, Row, SourceInfo, prompt_report

COMMAND_HISTORY = "command-history-state.json"


def classify(path: Path) -> str | None:
    return SNAPSHOT if path.name == COMMAND_HISTORY else None


def is_slash_command(text: str) -> bool:
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return first.startswith("/") and "/" not in first[1:]


class CommandHistoryParser:
    """A prompt report per entry of ``command-history-state.json``, oldest first."""

    def __init__(self, source: SourceInfo, state: Any = None) -> None:
        self.source = source

    def state(self) -> dict[str, Any]:
        return {}

    def feed(self, offset: int, data: bytes) -> Iterator[Row]:
        try:
            d = orjson.loads(data)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "invalid JSON", str(e))
            return
        history = d.get("commandHistory") if isinstance(d, dict) else None
        if not isinstance(history, list):
            yield Report(INVALID, "command history", "no commandHistory array")
            return
        for text in reversed(history):
            if not isinstance(text, str):
                yield Report(INVALID, "command history entry", "not a string")
            elif is_slash_command(text):
                yield Report(SKIPPED, "slash command", text.split(maxsplit=1)[0])
            else:
                yield prompt_report(None, None, None, None, text)
