"""Mistral Vibe 2.x sessions (and 3.x ``--legacy-harness``):
``<VIBE_HOME>/logs/session/session_<YYYYMMDD_HHMMSS>_<id8>/`` holding ``messages.jsonl``
(each non-system message appended once, as it is added; a resume appends to the same file)
and ``meta.json`` (rewritten whole after each turn: ``session_id``, ``start_time``,
``end_time``, ``environment.working_directory``, ``git_branch``, ``title``, ``stats``,
``config``, ``system_prompt``, ``tools_available``). Checked with vibe 2.26.1.

Invariants:

* **Thread.** Both files name their thread by the short id their folder name ends with
  (``session_<time>_<id8>``, what Vibe itself finds a session by: ``SessionLoader.find_session_by_id`` looks the short
  id up among folder names), so the two sources meet without reading each other;
  ``meta.json`` gives the full ``session_id`` as ``metadata.sessionId`` (the id ``--resume``
  takes).
* **Messages** come from ``messages.jsonl`` (LINES, read from its last offset); they have
  no timestamps (2.x writes none). ``meta.json`` is a SNAPSHOT: each rewrite is a generation
  whose only rows are the thread's facts and the session's usage.
* **Usage.** 2.x keeps no per-response usage, only the session's running totals in
  ``meta.json`` ``stats`` (``session_prompt_tokens`` counts cached input inside it, as
  OpenAI does): one ``UsageRow`` keyed ``vibe:<folder>:session`` (every generation repeats
  the key, the newest wins), input = prompt - cached; the vendor's figures in
  ``usage.extra["vendor"]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ...model import JsonObject, Usage
from ..base import INVALID, PARSE_ERROR, SKIPPED, MessageRow, Report, Row, SourceInfo, ThreadFact, UsageRow
from ..base import claim_emitted, nonempty_str, stable_id
from .common import NAME, message_id, snippet, to_message

# session_<YYYYMMDD_HHMMSS>_<first 8 characters of the session id> (vibe 2.26.1 SessionLogger.save_folder;
# session_prefix defaults to "session")
FOLDER_RE = re.compile(r"^[A-Za-z0-9-]+_\d{8}_\d{6}_[0-9A-Za-z-]{1,36}$")


def folder_thread(path: str) -> str | None:
    """The thread of a file in a legacy session folder: the short session id the folder
    name ends with (what ``--resume`` matches first)."""
    folder = Path(path).parent.name
    return folder.rsplit("_", 1)[1] if FOLDER_RE.match(folder) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def session_usage(stats: JsonObject) -> Usage | None:
    prompt, completion = _int(stats.get("session_prompt_tokens")), _int(stats.get("session_completion_tokens"))
    cached = _int(stats.get("session_cached_tokens")) or 0
    if prompt is None and completion is None or not (prompt or completion):
        return None  # none yet (or an emitted session's zeros, emit.py)
    return Usage(input_tokens=None if prompt is None else max(prompt - cached, 0), output_tokens=completion,
                 cache_read_tokens=cached, extra={"vendor": {k: stats[k] for k in (
                     "session_prompt_tokens", "session_completion_tokens", "session_cached_tokens") if k in stats}})


class LegacyMessagesParser:
    """``messages.jsonl``: one canonical message a line."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.emitted: JsonObject = s.get("emitted", {})
        self.started: bool = s.get("started", False)
        self.previous: str | None = s.get("previous")
        self.thread = folder_thread(source.path) or "vibe-" + stable_id(source.source_id, "session")

    def state(self) -> JsonObject:
        return {"emitted": self.emitted, "started": self.started, "previous": self.previous}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        if not isinstance(d, dict):
            return iter([Report(PARSE_ERROR, "not a JSON object")])
        return iter(list(claim_emitted(d, self._message(d, offset), self.emitted)))

    def _message(self, d: JsonObject, offset: int) -> Iterator[Row]:
        if not self.started:
            self.started = True
            yield ThreadFact(self.thread, {"metadata": {"layout": "legacy"}})
        if d.get("role") not in ("user", "assistant", "tool", "system"):
            yield Report(INVALID, f"message role {d.get('role')}", snippet(d))
            return
        mid = message_id(self.thread, d) or stable_id(NAME, self.source.source_id, offset)
        msg = to_message(d, self.thread, mid, None, nonempty_str(d.get("message_id")) or nonempty_str(d.get("tool_call_id")))
        if self.previous:
            msg = msg.__class__(**{**msg.__dict__, "parent_id": self.previous})
        self.previous = mid
        yield MessageRow(msg)


class LegacyMetaParser:
    """``meta.json``: a SNAPSHOT document, fed whole as one line."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        self.thread = folder_thread(source.path) or "vibe-" + stable_id(source.source_id, "session")

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        if not isinstance(d, dict):
            return iter([Report(PARSE_ERROR, "not a JSON object")])
        return iter(list(meta_rows(self.thread, d)))


def meta_rows(thread: str, d: JsonObject) -> Iterator[Row]:
    env = d.get("environment") if isinstance(d.get("environment"), dict) else {}
    config = d.get("config") if isinstance(d.get("config"), dict) else {}
    model = nonempty_str(config.get("active_model"))
    meta: JsonObject = {k: v for k, v in (
        ("sessionId", nonempty_str(d.get("session_id"))), ("cwd", nonempty_str(env.get("working_directory"))),
        ("gitBranch", nonempty_str(d.get("git_branch"))), ("gitCommit", nonempty_str(d.get("git_commit"))),
        ("model", model), ("endTime", nonempty_str(d.get("end_time"))),
        ("parentSessionId", nonempty_str(d.get("parent_session_id"))), ("layout", "legacy"),
    ) if v is not None}
    fields: JsonObject = {"metadata": meta}
    if nonempty_str(d.get("start_time")):
        fields["createdAt"] = d["start_time"]
    if nonempty_str(d.get("title")):
        fields["title"] = d["title"]
    yield ThreadFact(thread, fields)
    stats = d.get("stats")
    usage = session_usage(stats) if isinstance(stats, dict) else None
    if usage is not None:
        yield UsageRow(f"{NAME}:{thread}:session", thread, usage, None, model, nonempty_str(d.get("end_time")))
    else:
        yield Report(SKIPPED, "meta.json without stats", None)
