"""Hermes Agent's side files (issue 38): the TUI's prompt history, and the session pruning
read from its config.

* ``$HERMES_HOME/.hermes_history`` (``LINES``, appended; Hermes 0.19.0 ``cli.py``, a
  prompt_toolkit ``FileHistory`` written by ``hermes chat`` in its TUI only, never by
  ``-q``; recorded in tests/fixtures/recorded/hermes-0.19.0-side): a blank line, ``# <local
  time>`` (``datetime.now()``, no zone), then each line of the input prefixed ``+``. Each
  ``+`` line is a prompt report (a multi-line input is several, as the file gives no end,
  the rule of Aider's ``.aider.input.history``) with the time as written, ``T``-separated;
  no session id, no project: lost when no archived user message of a Hermes thread has its
  text (view ``lost_prompts``). An input whose first line is a slash command (``/exit``) is
  not a prompt: skipped, kept in the stored bytes.
* Retention: ``sessions.auto_prune: true`` in ``$HERMES_HOME/config.yaml`` makes Hermes
  delete ended sessions older than ``sessions.retention_days`` (default 90) from
  ``state.db`` at start-up (0.19.0 ``hermes_cli/config.py``, ``cli.py``); off by default.
  Only those two keys of the ``sessions:`` block are read, by a line reader (the archive
  has no YAML parser): a top-level ``sessions:`` and its directly indented ``key: value``
  lines. The config file itself is never a source (it holds the provider's API key).

Stateless but for the time of the input being read; never raises on input.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from ...model import JsonObject
from ..base import LINES, METADATA, SKIPPED, WARNING, Report, Retention, Row, SourceInfo, env_path, prompt_report

HISTORY = ".hermes_history"
CONFIG = "config.yaml"
DEFAULT_RETENTION_DAYS = 90
# prompt_toolkit's FileHistory: a blank line, ``# <time with microseconds>``, a ``+`` line
HISTORY_HEAD = re.compile(rb"^\r?\n?# \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\r?\n\+")
_KEY = re.compile(r"^(\s+)([A-Za-z_]+)\s*:\s*(.*?)\s*(?:#.*)?$")


def hermes_home(env: Mapping[str, str], home: Path) -> Path:
    return env_path(env, "HERMES_HOME") or home / ".hermes"


def classify(path: Path) -> str | None:
    return LINES if path.name == HISTORY else None


def is_slash_command(text: str) -> bool:
    first = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    return first.startswith("/") and "/" not in first[1:]


class HistoryParser:
    """A prompt report per ``+`` line of ``.hermes_history``."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.ts: str | None = s.get("ts")
        self.line: int = s.get("line", 0)  # the number of the input line being read (1: the first)
        self.slash: bool = s.get("slash", False)  # the input being read is a slash command

    def state(self) -> JsonObject:
        return {"ts": self.ts, "line": self.line, "slash": self.slash}

    def feed(self, offset: int, line: bytes) -> list[Row]:
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            return []
        if text.startswith("# "):
            self.ts, self.line, self.slash = text[2:].strip().replace(" ", "T"), 0, False
            return [Report(METADATA, "input time", "the time of the input that follows")]
        if not text.startswith("+"):
            return [Report(WARNING, "input history", "a line that is neither a time nor an input line")]
        self.line += 1
        if self.line == 1:
            self.slash = is_slash_command(text[1:])
        if self.slash:
            return [Report(SKIPPED, "slash command", text[1:].split(maxsplit=1)[0] if self.line == 1 else None)]
        if text == "+":
            return [Report(METADATA, "input line", "an empty line of a multi-line input")]
        return [prompt_report(None, None, None, self.ts, text[1:])]


def sessions_config(text: str) -> dict[str, str]:
    """The ``key: value`` lines directly under a top-level ``sessions:`` (module docstring)."""
    out: dict[str, str] = {}
    inside, indent = False, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            inside, indent = re.sub(r"\s*#.*$", "", line).rstrip() == "sessions:", None
            continue
        m = _KEY.match(line)
        if not inside or m is None:
            continue
        if indent is None:
            indent = len(m.group(1))
        if len(m.group(1)) == indent:
            out[m.group(2)] = m.group(3).strip("'\"")
    return out


def retention(env: Mapping[str, str], home: Path) -> Retention | None:
    """``sessions.retention_days`` when ``sessions.auto_prune`` is on; None when off (the
    default: Hermes then never deletes a session by itself)."""
    config = hermes_home(env, home) / CONFIG
    try:
        found = sessions_config(config.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None
    if found.get("auto_prune", "").lower() not in ("true", "yes", "on"):
        return None
    raw = found.get("retention_days")
    try:
        days = float(raw) if raw is not None else float(DEFAULT_RETENTION_DAYS)
    except ValueError:
        days = float(DEFAULT_RETENTION_DAYS)
    where = (f"sessions.retention_days = {days:g} in {config}" if raw is not None
             else f"sessions.retention_days (default {DEFAULT_RETENTION_DAYS}, not set in {config})")
    return Retention(days, f"{where}, with sessions.auto_prune on",
                     f"set sessions.retention_days to a larger number of days (or sessions.auto_prune to false) "
                     f"in {config}, or run ingest more often")
