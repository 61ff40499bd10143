"""Codex CLI side files (issue 38): the prompt histories beside the rollouts.

* ``$CODEX_HOME/history.jsonl`` (``LINES``, appended; the Rust CLI's TUI, not ``codex exec``):
  ``{"session_id", "ts" (epoch seconds), "text"}`` per prompt (0.171.0, recorded in
  tests/fixtures/side-files/codex-0.171.0). The session id is the rollout's, which is the
  thread id the archive gives it.
* The TypeScript CLI's ``~/.codex/history.json`` (0.1.25xxxxxx) is not read yet: no
  recording of it exists here (issue 38 leaves it for a recording of that client).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..base import INVALID, LINES, PARSE_ERROR, SKIPPED, Report, Row, SourceInfo
from ..base import epoch_iso, loads_line, prompt_report
from ..base import nonempty_str as _str

HISTORY_LINES = "history.jsonl"


def classify(path: Path) -> str | None:
    return LINES if path.name == HISTORY_LINES else None


def _iso(value: Any, scale: float) -> str | None:
    return epoch_iso(value, scale)


class HistoryParser:
    """A prompt report per line of ``history.jsonl``."""

    def __init__(self, source: SourceInfo, state: Any = None) -> None:
        self.source = source

    def state(self) -> dict[str, Any]:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            yield Report(SKIPPED, "blank line")
            return
        try:
            d, warn = loads_line(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "invalid JSON", str(e))
            return
        if warn is not None:
            yield warn
        if isinstance(d, dict) and isinstance(d.get("text"), str):
            session = _str(d.get("session_id"))
            yield prompt_report(session, session, None, _iso(d.get("ts"), 1), d["text"])
        else:
            yield Report(INVALID, "history line", "not an object with a text")
