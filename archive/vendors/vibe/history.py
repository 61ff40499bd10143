"""Mistral Vibe's prompt history (issue 38), a side file beside the session logs.

* ``<VIBE_HOME or ~/.vibe>/vibehistory`` (``LINES``): one input per line as a JSON string,
  at most 100, rewritten whole (read, merge, write to a temporary file, replace) at each
  prompt: 2.26.1 ``vibe/cli/history_manager.py``; 3.0.3's TUI (the Rust ``vibe-rs``) writes
  the same lines (recorded in its TUI, tests/fixtures/recorded/vibe-3.0.3-side; ``vibe -p``
  writes none). A rewrite that only adds lines reads as an append; one that trims the
  oldest is a new generation. No session id, no time, no project: each line is a prompt
  report without a thread, lost when no archived user message of a Vibe thread has its
  text (view ``lost_prompts``).
* The client reads a line that is not JSON as the text itself (2.26.1), and seeds a new
  home with the raw line ``Hello Vibe!`` (``core/paths/_vibe_home.py``, which 3.0.3's TUI
  rewrites quoted): that seed, first in the file, is not a prompt; nor is a slash command
  (``/exit``). Both are skipped, kept in the stored bytes.

Stateless; never raises on input.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

from ..base import INVALID, LINES, Report, Row, SKIPPED, StatelessParser, prompt_report

HISTORY = "vibehistory"
SEED = "Hello Vibe!"


def classify(path: Path) -> str | None:
    return LINES if path.name == HISTORY else None


def is_slash_command(text: str) -> bool:
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return first.startswith("/") and "/" not in first[1:]


class HistoryParser(StatelessParser):
    """A prompt report per line of ``vibehistory``."""

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            yield Report(SKIPPED, "blank line")
            return
        try:
            text = orjson.loads(line)
        except orjson.JSONDecodeError:
            text = line.decode("utf-8", "replace").rstrip("\r")  # the client's own fallback
        if not isinstance(text, str):
            yield Report(INVALID, "prompt history line", "not a string")
        elif offset == 0 and text == SEED:
            yield Report(SKIPPED, "history seed", "the line Vibe writes into a new home")
        elif is_slash_command(text):
            yield Report(SKIPPED, "slash command", text.split(maxsplit=1)[0])
        else:
            yield prompt_report(None, None, None, None, text)
