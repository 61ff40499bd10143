"""Kimi CLI's prompt history (issue 38), a side file beside the sessions.

* ``<KIMI_SHARE_DIR or ~/.kimi>/user-history/<md5 of the work folder>.jsonl`` (``LINES``,
  appended; kimi-cli 1.51.0 ``ui/shell/prompt.py``, written by the shell TUI only, never by
  ``--print``; recorded in tests/fixtures/recorded/kimi-1.51.0-side): ``{"content": <text>}``
  per input, a repeat of the previous line skipped by the client. The file name is the md5
  of the work folder, as the session folder ``sessions/<md5>/`` is; no session id, no time:
  each line is a prompt report without a thread and without a project, lost when no
  archived user message of a Kimi thread has its text (view ``lost_prompts``). Slash
  commands (``/exit``, a first word without another ``/``) and shell-mode commands are
  written to the same file (the TUI keeps no mode there): slash commands are skipped (kept in
  the stored bytes), the rest are prompts.

Stateless; never raises on input.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any


from ..base import INVALID, LINES, Report, Row, SKIPPED, StatelessParser, json_line_rows, prompt_report

HISTORY_DIR = "user-history"
_MD5 = re.compile(r"^[0-9a-f]{32}$")


def classify(path: Path) -> str | None:
    return LINES if path.parent.name == HISTORY_DIR and path.suffix == ".jsonl" and _MD5.match(path.stem) else None


def is_slash_command(text: str) -> bool:
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return first.startswith("/") and "/" not in first[1:]


class HistoryParser(StatelessParser):
    """A prompt report per line of ``user-history/<md5>.jsonl``."""

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        return json_line_rows(line, self._prompt)

    def _prompt(self, d: Any) -> Iterator[Row]:
        if not isinstance(d, dict) or not isinstance(d.get("content"), str):
            yield Report(INVALID, "prompt history line", "not an object with a content")
        elif is_slash_command(d["content"]):
            yield Report(SKIPPED, "slash command", d["content"].split(maxsplit=1)[0])
        else:
            yield prompt_report(None, None, None, None, d["content"])
