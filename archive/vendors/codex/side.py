"""Codex CLI side files (issue 38): the prompt histories beside the rollouts.

* ``$CODEX_HOME/history.jsonl`` (``LINES``, appended; the Rust CLI's TUI, not ``codex exec``):
  ``{"session_id", "ts" (epoch seconds), "text"}`` per prompt (0.171.0, recorded in
  tests/fixtures/side-files/codex-0.171.0). The session id is the rollout's, which is the
  thread id the archive gives it.
* ``~/.codex/history.json`` (``SNAPSHOT``, rewritten; the TypeScript CLI, 0.1.25xxxxxx, joins
  the home folder and ``.codex`` whatever ``CODEX_HOME`` says):
  one JSON array of ``{"command", "timestamp" (epoch ms)}``: no session, no project, so
  its prompts are kept and listed but never tied to a session.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ..base import INVALID, LINES, PARSE_ERROR, SKIPPED, SNAPSHOT, Report, Row, SourceInfo
from ..base import loads_line, prompt_report, side_report
from ..base import nonempty_str as _str

HISTORY_LINES = "history.jsonl"
HISTORY_JSON = "history.json"


def classify(path: Path) -> str | None:
    return {HISTORY_LINES: LINES, HISTORY_JSON: SNAPSHOT}.get(path.name)


def _iso(value: Any, scale: float) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return datetime.fromtimestamp(value / scale, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


class HistoryParser:
    """A prompt report per line of ``history.jsonl`` or entry of ``history.json``."""

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
        if Path(self.source.path).name == HISTORY_JSON:
            yield from self._document(d)
        elif isinstance(d, dict) and isinstance(d.get("text"), str):
            session = _str(d.get("session_id"))
            yield prompt_report(session, session, None, _iso(d.get("ts"), 1), d["text"])
        else:
            yield Report(INVALID, "history line", "not an object with a text")

    def _document(self, d: Any) -> Iterator[Row]:
        n = 0
        for entry in d if isinstance(d, list) else ():
            if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                n += 1
                yield prompt_report(None, None, None, _iso(entry.get("timestamp"), 1000), entry["command"])
        yield side_report("history.json", None, prompts=n)
