"""Mistral Vibe: the adapter (roots under ``VIBE_HOME``, both generations' layouts, detect,
parsers, emit).

Layouts read, under ``<VIBE_HOME or ~/.vibe>/logs/session/``:

* ``unified/<uuid>/`` (the unified harness, vibe 2.2x - 3.x; ``unified.py``): journal
  segments (LINES), ``meta.json``, ``generations/*/*.json`` and ``chunks/*.json``
  (SNAPSHOT: each file a source, so what Vibe deletes on resume stays);
* ``session_<YYYYMMDD_HHMMSS>_<id8>/`` (2.x and ``--legacy-harness``; ``legacy.py``):
  ``messages.jsonl`` (LINES) and ``meta.json`` (SNAPSHOT).

``unified/<uuid>/CURRENT`` (the newest generation's pointer) and ``scheduled-loops.json`` are
kept as snapshots (Vibe needs them to open a restored session). Not read: the session
indexes, ``active/`` locks and ``logs/session/plugins/`` (installed plugin packages). ``emit --to vibe`` writes the legacy layout, which both
generations resume (``emit.py``).

A side file (issue 38, ``history.py``): the TUI's prompt history ``<VIBE_HOME>/vibehistory``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, SNAPSHOT, Adapter, EmitOptions, EmitResult, Parser, SourceInfo, env_path
from . import history
from .common import NAME
from .emit import emit_session, resume_hint
from .legacy import FOLDER_RE, LegacyMessagesParser, LegacyMetaParser
from .unified import SNAPSHOT_FILES, UUID_RE, JournalParser, SnapshotParser, session_of, session_parts

# the files of a unified session's own folder: all kept, so a restored session is one Vibe opens
SESSION_FILES = ("meta.json", "CURRENT", "scheduled-loops.json")
SEGMENT_RE = re.compile(r"^\d{16}\.jsonl$")


def _unified_kind(path: Path) -> str | None:
    """LINES / SNAPSHOT for a file of ``unified/<uuid>/``, else None."""
    parts = path.parts
    if len(parts) < 3:
        return None
    if parts[-2] == "journal" and SEGMENT_RE.match(parts[-1]) and len(parts) >= 4 and UUID_RE.match(parts[-3]) \
            and parts[-4] == "unified":
        return LINES
    if parts[-1] in SESSION_FILES and UUID_RE.match(parts[-2]) and parts[-3] == "unified":
        return SNAPSHOT
    if len(parts) >= 5 and parts[-3] == "generations" and parts[-1] in SNAPSHOT_FILES and UUID_RE.match(parts[-4]):
        return SNAPSHOT
    if len(parts) >= 4 and parts[-2] == "chunks" and parts[-1].endswith(".json") and UUID_RE.match(parts[-3]):
        return SNAPSHOT
    return None


class VibeAdapter(Adapter):
    name = NAME
    emits = True
    needs_cwd = True  # a session records the folder it runs in; --resume runs there
    env_vars = ("VIBE_HOME",)
    # the model-facing names of vibe 3.0.3's built-in tools (2.26.1: the same, and edit was search_replace)
    tool_kinds = {"bash": "shell", "git_bash": "shell", "windows_shell": "shell", "edit": "edit",
                  "search_replace": "edit", "write_file": "edit", "read_file": "read", "grep": "search",
                  "web_fetch": "web", "web_search": "web", "task": "agent", "todo": "plan",
                  "exit_plan_mode": "plan"}  # fmt: skip

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [(env_path(env, "VIBE_HOME") or home / ".vibe") / "logs" / "session"]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [(env_path(env, "VIBE_HOME") or home / ".vibe") / history.HISTORY]

    def classify(self, path: Path) -> str | None:
        if history.classify(path):
            return history.classify(path)
        kind = _unified_kind(path)
        if kind is not None:
            return kind
        if FOLDER_RE.match(path.parent.name):
            return {"messages.jsonl": LINES, "meta.json": SNAPSHOT}.get(path.name)
        return None

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(d, dict):
            return False
        if isinstance(d.get("record_sha256"), str) and "recovery_journal_record_version" in d:
            return True  # a unified journal segment
        # a legacy messages.jsonl line: an LLMMessage dump (Vibe always writes ``injected``)
        return d.get("role") in ("user", "assistant", "tool") and "injected" in d and (
            "message_id" in d or "tool_call_id" in d)

    def snapshot_key(self, path: Path) -> str:
        # generations/<n>/manifest.json repeats in every session: the session folder is the key
        session, parts = session_parts(str(path))
        if session is not None:
            return "/".join((session, *parts[parts.index(session) + 1:]))
        return "/".join(parts[-2:])

    def session_key(self, path: Path) -> str | None:
        session = session_of(str(path))
        if session is not None:
            return f"{session}/{path.name}"
        if FOLDER_RE.match(path.parent.name):
            return path.parent.name
        return super().session_key(path)

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Parser:
        path = Path(source.path)
        if history.classify(path):
            return history.HistoryParser(source, state)
        if session_of(source.path) is not None:
            return JournalParser(source, state) if source.kind == LINES else SnapshotParser(source, state)
        if source.kind == SNAPSHOT or path.name == "meta.json":
            return LegacyMetaParser(source, state)
        if path.name.endswith(".jsonl") and SEGMENT_RE.match(path.name):
            return JournalParser(source, state)
        return self._by_content(source, state)

    def _by_content(self, source: SourceInfo, state: JsonObject | None) -> Parser:
        return _EitherParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        parts = Path(stored_path).parts
        if "session" in parts:
            i = len(parts) - 1 - parts[::-1].index("session")
            return str(Path("session", *parts[i + 1:]))
        return super().install_path(stored_path)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)

    def configured_options(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """``model``: the ``active_model`` alias of the user's config.toml, so an emitted session
        names a model Vibe has a provider for."""
        try:
            config = tomllib.loads(((env_path(env, "VIBE_HOME") or home / ".vibe") / "config.toml").read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return {}
        model = config.get("active_model")
        return {"model": model} if isinstance(model, str) and model else {}

    def companion_markers(self, thread_id: str) -> tuple[str, ...]:
        # a unified session's snapshots and chunks hold none of its lines but Vibe needs them
        # all to open it: they travel with a byte-exact copy
        return (f"unified/{thread_id}/",) if UUID_RE.match(thread_id) else ()


class _EitherParser:
    """A line file given by hand (its path says nothing): a journal segment when its first
    line wears the journal's record envelope, else a legacy ``messages.jsonl``; the choice
    is kept in the state, so a resumed parse needs no file."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.kind: str | None = s.get("kind")
        self.inner: Parser | None = None if self.kind is None else self._make(self.kind, s.get("inner"))

    def _make(self, kind: str, state: JsonObject | None) -> Parser:
        return JournalParser(self.source, state) if kind == "journal" else LegacyMessagesParser(self.source, state)

    def feed(self, offset: int, line: bytes):  # type: ignore[no-untyped-def]
        if self.inner is None:
            if not line.strip():
                return iter(())
            self.kind = "journal" if b'"record_sha256"' in line else "legacy"
            self.inner = self._make(self.kind, None)
        return self.inner.feed(offset, line)

    def state(self) -> JsonObject:
        return {"kind": self.kind, "inner": self.inner.state() if self.inner is not None else None}


ADAPTER = VibeAdapter()
