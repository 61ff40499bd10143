"""Claude Code side files: what Claude Code keeps beside its transcripts, and deletes or
rewrites as it does them (issue 38). Each is a source of its own, byte for byte (restore
gives it back), except ``.claude.json`` (below). Layout as Claude Code 2.1.332 wrote it in
tests/fixtures/side-files/claude-code (recorded in its TUI: ``-p`` writes none of these):

* ``history.jsonl`` (``LINES``, appended): one line per prompt typed, in every project:
  ``{display, pastedContents, timestamp (epoch ms), project, sessionId}``. Lines of older
  releases (1.0.x) have no ``sessionId``: their prompts belong to a project, not a session.
  A prompt of a session whose transcript the archive never saw is a lost session.
* ``file-history/<sessionId>/<h>@v<N>`` (``SNAPSHOT``): a file's bytes as they were before an
  edit, behind ``/rewind``; ``h`` is the first 16 hex digits of sha256 of the file's absolute
  path (2.1.332: ``8c79874ff79ae9d2`` for ``/tmp/s38/tui2/proj/hello.py``), ``N`` the backup's
  version; the transcript's ``file-history-snapshot`` lines name them per prompt.
* ``todos/<sessionId>-agent-<agentId>.json`` (``SNAPSHOT``, TodoWrite, 1.0.x-2.0.x) and
  ``tasks/<sessionId>/<n>.json`` (``SNAPSHOT``, TaskCreate, 2.1.x; a task's file is deleted
  when it is completed, ``.highwatermark`` and ``.lock`` are bookkeeping, not sources).
* ``plans/<words>.md`` (``SNAPSHOT``, plan mode, 2.1.x): the plan's Markdown; its name names
  no session (the transcript's Write of the plan names the file).
* ``paste-cache/<hash>.txt`` (``SNAPSHOT``): a long paste that ``history.jsonl`` names by
  ``contentHash`` instead of holding it.
* ``.claude.json`` (``SNAPSHOT``, **derived**): beside account data (user and machine ids,
  OAuth account, API key approvals, tips, counters), which is never stored, releases up to
  1.0.x kept each project's prompt history in ``projects.<path>.history``. The source layer
  keeps only ``{"projects": {<path>: {"history": [...]}}}`` (``stored_form``), for the
  projects that have one: this source is NOT byte-exact of the file, and restoring it gives
  the derived document. ``$CLAUDE_CONFIG_DIR/.claude.json`` when that variable is set
  (2.1.332), else ``~/.claude.json``.

Retention: Claude Code deletes transcripts (and these files) older than
``cleanupPeriodDays`` (default 30) of its settings, read from the user's ``settings.json``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from ..base import INVALID, PARSE_ERROR, SKIPPED, LINES, SNAPSHOT, Report, Retention, Row, SourceInfo
from ..base import checkpoint_report, env_path, epoch_iso, json_line_rows, prompt_report, side_report
from ..base import nonempty_str as _str

CLAUDE_JSON = ".claude.json"
HISTORY = "history.jsonl"
BACKUP_RE = re.compile(r"^([0-9a-f]{16})@v(\d+)$")
TODOS_RE = re.compile(r"^(.+?)-agent-(.+)\.json$")
DEFAULT_CLEANUP_DAYS = 30.0  # Claude Code's default cleanupPeriodDays (settings docs, 2.1.x)
_SIDE_FOLDERS = ("file-history", "todos", "tasks", "plans", "paste-cache")
_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def config_dir(env: Mapping[str, str], home: Path) -> Path:
    return env_path(env, "CLAUDE_CONFIG_DIR") or home / ".claude"


def side_roots(env: Mapping[str, str], home: Path) -> list[Path]:
    base = config_dir(env, home)
    claude_json = base / CLAUDE_JSON if env.get("CLAUDE_CONFIG_DIR") else home / CLAUDE_JSON
    return [base / HISTORY, *(base / f for f in _SIDE_FOLDERS), claude_json]


def classify(path: Path) -> str | None:
    """``LINES``/``SNAPSHOT`` for a side file (by its name and folder), else None."""
    parts, name = path.parts, path.name
    if name == HISTORY:
        return LINES
    if name == CLAUDE_JSON:
        return SNAPSHOT
    folder = parts[-2] if len(parts) > 1 else ""
    if len(parts) > 2 and parts[-3] == "file-history" and BACKUP_RE.match(name):
        return SNAPSHOT
    if folder == "todos" and name.endswith(".json"):
        return SNAPSHOT
    if len(parts) > 2 and parts[-3] == "tasks" and name.endswith(".json"):
        return SNAPSHOT
    if folder == "plans" and name.endswith(".md"):
        return SNAPSHOT
    if folder == "paste-cache" and name.endswith(".txt"):
        return SNAPSHOT
    return None


def stored_form(path: Path, data: bytes) -> bytes:
    """``.claude.json`` -> only its projects' prompt history (see the module docstring); any
    other side file as it is."""
    if path.name != CLAUDE_JSON:
        return data
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return orjson.dumps({"projects": {}, "unreadable": "not JSON when read"}) + b"\n"
    projects = doc.get("projects") if isinstance(doc, dict) else None
    kept = {}
    for key, value in (projects.items() if isinstance(projects, dict) else ()):
        if isinstance(value, dict) and "history" in value:
            kept[key] = {"history": value["history"]}
    return orjson.dumps({"projects": kept}, option=orjson.OPT_INDENT_2) + b"\n"


def _ms_to_iso(value: Any) -> str | None:
    """Epoch milliseconds as an ISO time; a string (an ISO time already) as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _str(value)
    return epoch_iso(value)


class SideFileParser:
    """Rows of one Claude Code side file: a prompt report per ``history.jsonl`` line (or per
    entry of the derived ``.claude.json``), one side-file report per snapshot. Stateless:
    each line stands alone."""

    def __init__(self, source: SourceInfo, state: Any = None) -> None:
        self.source = source
        self.path = Path(source.path)

    def state(self) -> dict[str, Any]:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        name, parts = self.path.name, self.path.parts
        if name == HISTORY:
            yield from self._history_line(line)
        elif name == CLAUDE_JSON:
            yield from self._claude_json(line)
        elif len(parts) > 2 and parts[-3] == "file-history":
            m = BACKUP_RE.match(name)
            yield side_report("file backup", parts[-2], backup=name, path_hash=m.group(1) if m else None,
                              version=int(m.group(2)) if m else None, bytes=len(line))
        elif parts[-2:-1] == ("todos",):
            m = TODOS_RE.match(name)
            yield from self._json_side("todos", m.group(1) if m else None, line, agent=m.group(2) if m else None)
        elif len(parts) > 2 and parts[-3] == "tasks":
            yield from self._json_side("task", parts[-2], line, task=name[: -len(".json")])
        elif parts[-2:-1] == ("plans",):
            yield side_report("plan", None, name=name, bytes=len(line))
        else:
            yield side_report("paste", None, name=name, bytes=len(line))

    def _history_line(self, line: bytes) -> Iterator[Row]:
        return json_line_rows(line, self._history_entry)

    def _history_entry(self, d: Any) -> Iterator[Row]:
        if not isinstance(d, dict) or not isinstance(d.get("display"), str):
            yield Report(INVALID, "history line", "not an object with a display text")
            return
        session = _str(d.get("sessionId"))
        yield prompt_report(session, session, _str(d.get("project")), _ms_to_iso(d.get("timestamp")), d["display"])

    def _claude_json(self, line: bytes) -> Iterator[Row]:
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "invalid JSON", str(e))
            return
        projects = d.get("projects") if isinstance(d, dict) else None
        n = 0
        for project, value in (projects.items() if isinstance(projects, dict) else ()):
            history = value.get("history") if isinstance(value, dict) else None
            # newest first in the file (1.0.x); no session id, no time
            for entry in reversed(history) if isinstance(history, list) else ():
                text = entry.get("display") if isinstance(entry, dict) else entry
                if isinstance(text, str):
                    n += 1
                    yield prompt_report(None, None, project, None, text)
        yield side_report("claude.json prompt history", None, prompts=n,
                          derived="only projects.<path>.history is kept; account data is never stored")

    def _json_side(self, kind: str, thread: str | None, line: bytes, **fields: Any) -> Iterator[Row]:
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            yield Report(PARSE_ERROR, "invalid JSON", str(e))
            d = None
        items = len(d) if isinstance(d, list) else None
        yield side_report(kind, thread, items=items, bytes=len(line), **fields)


def checkpoint_rows(d: dict[str, Any], source_path: str, sid: str | None) -> Iterator[Row]:
    """A transcript's ``file-history-snapshot`` (a checkpoint per prompt, ``messageId`` = the
    prompt) or ``file-history-delta`` (2.1.332: a backup taken just before an edit,
    ``messageId`` = the assistant message holding the Edit/Write call): each backup named
    becomes a checkpoint report linking the message to ``file-history/<session>/<backupFileName>``,
    the side file holding the file as it was before (None: the file did not exist).
    ``sid``: the session of the transcript's lines so far (the parser's)."""
    message = _str(d.get("messageId"))
    # the lines name no session; a transcript's file name does (a copy under another name:
    # the session of the lines before, else the backup's name alone)
    session = _str(d.get("sessionId")) or _file_session(source_path) or sid
    if d.get("type") == "file-history-delta":
        backups = {d.get("trackingPath"): d.get("backup")}
        at = "edit"
    else:
        snap = d.get("snapshot")
        tracked = snap.get("trackedFileBackups") if isinstance(snap, dict) else None
        backups = tracked if isinstance(tracked, dict) else {}
        at = "prompt"
    n = 0
    for tracking, backup in backups.items():
        if not isinstance(tracking, str) or not isinstance(backup, dict) or message is None:
            continue
        parent = _str(backup.get("realParentDir"))
        path = tracking if tracking.startswith("/") or parent is None else f"{parent}/{tracking}"
        name = _str(backup.get("backupFileName"))
        version = backup.get("version") if isinstance(backup.get("version"), int) else None
        n += 1
        backup_at = (f"file-history/{session}/{name}" if session else name) if name else None
        yield checkpoint_report(session, message, path, backup_at, version, at)
    if n == 0:
        yield Report(SKIPPED, str(d.get("type")), None)


def _file_session(path: str) -> str | None:
    """The session a transcript file belongs to: ``<sessionId>.jsonl``, or
    ``<sessionId>/subagents/[workflows/<run>/]agent-<id>.jsonl``."""
    parts = Path(path).parts
    if parts and _UUID_RE.match(parts[-1].split(".", 1)[0]):
        return parts[-1].split(".", 1)[0]
    if "subagents" in parts:
        i = len(parts) - 1 - parts[::-1].index("subagents")
        return parts[i - 1] if i > 0 and _UUID_RE.match(parts[i - 1]) else None
    return None


def retention(env: Mapping[str, str], home: Path) -> Retention | None:
    """``cleanupPeriodDays`` of the user's settings (``<config dir>/settings.json``), else
    Claude Code's default of 30 days."""
    settings = config_dir(env, home) / "settings.json"
    days: float = DEFAULT_CLEANUP_DAYS
    where = f"cleanupPeriodDays (default {DEFAULT_CLEANUP_DAYS:g}, not set in {settings})"
    try:
        doc = orjson.loads(settings.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        doc = None
    value = doc.get("cleanupPeriodDays") if isinstance(doc, dict) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        days, where = float(value), f"cleanupPeriodDays = {value:g} in {settings}"
    return Retention(days, where, f'set "cleanupPeriodDays" to a larger number of days in {settings}, '
                                  "or run ingest more often")
