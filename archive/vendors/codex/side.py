"""Codex CLI side files (issue 38): the prompt histories beside the rollouts.

* ``$CODEX_HOME/history.jsonl`` (``LINES``, appended; the Rust CLI's TUI, not ``codex exec``):
  ``{"session_id", "ts" (epoch seconds), "text"}`` per prompt (0.171.0, recorded in
  tests/fixtures/side-files/codex-0.171.0). The session id is the rollout's, which is the
  thread id the archive gives it.
* The TypeScript CLI's ``~/.codex/history.json`` (``SNAPSHOT``, rewritten whole at each
  prompt; 0.1.2505172129, recorded in tests/fixtures/side-files/codex-0.1.2505172129; always
  under the home's ``.codex``, ``CODEX_HOME`` is the Rust CLI's): a JSON array (indent 2) of
  ``{"command", "timestamp" (epoch ms)}``, the last 10,000 prompts, a prompt equal to the
  previous one or matching its own secret patterns left out. No session id and no project:
  each prompt is a prompt report without a thread, lost when no archived user message of a
  Codex thread has its text (view ``lost_sessions``, migration m127). A rewrite is a new
  generation that repeats the older prompts; the view counts each (time, text) once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..base import INVALID, LINES, PARSE_ERROR, Report, Row, SNAPSHOT, StatelessParser, json_line_rows
from ..base import epoch_iso, prompt_report
from ..base import nonempty_str as _str

HISTORY_LINES = "history.jsonl"
HISTORY_JSON = "history.json"  # the TypeScript CLI's (0.1.25xxxxxx)


def classify(path: Path) -> str | None:
    if path.name == HISTORY_LINES:
        return LINES
    return SNAPSHOT if path.name == HISTORY_JSON and path.parent.name == ".codex" else None


def _iso(value: Any, scale: float) -> str | None:
    return epoch_iso(value, scale)


class HistoryParser(StatelessParser):
    """A prompt report per line of ``history.jsonl``."""

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if Path(self.source.path).name == HISTORY_JSON:
            yield from _history_json(line)
            return
        yield from json_line_rows(line, _history_line)


def _history_line(d: Any) -> Iterator[Row]:
    """One line of ``history.jsonl``: a prompt report, naming its session and time."""
    if isinstance(d, dict) and isinstance(d.get("text"), str):
        session = _str(d.get("session_id"))
        yield prompt_report(session, session, None, _iso(d.get("ts"), 1), d["text"])
    else:
        yield Report(INVALID, "history line", "not an object with a text")


def _history_json(data: bytes) -> Iterator[Row]:
    """The TypeScript CLI's whole ``history.json``: a prompt report per entry, oldest first."""
    try:
        entries = orjson.loads(data)
    except orjson.JSONDecodeError as e:
        yield Report(PARSE_ERROR, "invalid JSON", str(e))
        return
    if not isinstance(entries, list):
        yield Report(INVALID, "history.json", "not an array")
        return
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("command"), str):
            yield prompt_report(None, None, None, _iso(entry.get("timestamp"), 1000), entry["command"])
        else:
            yield Report(INVALID, "history.json entry", "not an object with a command")
