"""Kimi CLI (Moonshot, PyPI ``kimi-cli``): the adapter (roots under ``KIMI_SHARE_DIR``,
classify, detect, parsers, emit).

Read, under ``<KIMI_SHARE_DIR or ~/.kimi>/sessions/`` (``common.py`` gives the layout):

* ``context.jsonl`` and its rotations ``context_<n>.jsonl`` (LINES, ``context.py``): the
  messages; a subagent's under ``subagents/<agent id>/`` is a child thread;
* ``wire.jsonl`` (LINES, ``wire.py``): usage, times, the title, the subagents' parents;
* ``state.json`` and a subagent's ``meta.json`` (SNAPSHOT, ``side.py``): the session's
  state (kept, bookkeeping) and the subagent's type and description;
* ``<md5>/<uuid>.jsonl``, the context file of the releases before session folders;

and, a side file (issue 38, ``history.py``), the shell TUI's prompt history
``user-history/<md5>.jsonl``.

Not read: ``prompt.txt`` and ``output`` beside a subagent (its prompt and its output as the
parent got them: both are in the contexts), ``kimi.json`` (the work folders; the cwd of a
session is in its system prompt), ``logs/``.

Emit (``emit.py``): ``context.jsonl`` and ``wire.jsonl`` in a session folder, and
``kimi.json`` naming the work folder, which Kimi needs to find the session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, SNAPSHOT, Adapter, EmitOptions, EmitResult, Parser, SourceInfo, env_path, relative_to_marker
from .common import CONTEXT_RE, NAME, SUBAGENTS, UUID_RE, session_parts, thread_of
from .context import ContextParser
from .emit import emit_session, merge_index, resume_hint
from . import history
from .side import SideParser
from .wire import WireParser

_CONTEXT_ROLES = (b'"role": "_system_prompt"', b'"role": "_checkpoint"', b'"role": "_usage"')


def share_dir(env: Mapping[str, str], home: Path) -> Path:
    return env_path(env, "KIMI_SHARE_DIR") or home / ".kimi"


class KimiAdapter(Adapter):
    name = NAME
    revision = 2  # 2: an assistant message and its step's usage name the same link (common.StepLinks)
    emits = True
    needs_cwd = True  # a session belongs to its work folder (sessions/<md5 of it>/)
    env_vars = ("KIMI_SHARE_DIR",)
    # kimi-cli 1.51.0's built-in tools (agents/default/agent.yaml)
    tool_kinds = {"Shell": "shell", "ReadFile": "read", "ReadMediaFile": "read", "Glob": "search", "Grep": "search",
                  "WriteFile": "edit", "StrReplaceFile": "edit", "SearchWeb": "web", "FetchURL": "web",
                  "Agent": "agent", "SetTodoList": "plan", "ExitPlanMode": "plan", "EnterPlanMode": "plan",
                  "Think": "plan"}  # fmt: skip

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [share_dir(env, home) / "sessions"]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [share_dir(env, home) / history.HISTORY_DIR]

    def classify(self, path: Path) -> str | None:
        if history.classify(path):
            return history.classify(path)
        found = session_parts(path)
        if found is None:
            return None
        name = path.name
        if CONTEXT_RE.match(name) or name == "wire.jsonl":
            return LINES
        if UUID_RE.match(name[:-6]) and name.endswith(".jsonl"):
            return LINES  # the old layout's sessions/<md5>/<uuid>.jsonl
        if (name == "state.json" and found[1] is None) or (name == "meta.json" and found[1] is not None):
            return SNAPSHOT
        return None

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(d, dict):
            return False
        if d.get("type") == "metadata" and isinstance(d.get("protocol_version"), str) and len(d) == 2:
            return True  # wire.jsonl
        if isinstance(d.get("role"), str) and d["role"] in ("_system_prompt", "_checkpoint", "_usage"):
            return True
        # a context whose first line is a message (older releases wrote no system prompt)
        return d.get("role") in ("user", "assistant", "tool") and "content" in d and any(r in head for r in _CONTEXT_ROLES)

    def snapshot_key(self, path: Path) -> str:
        found = session_parts(path)
        return f"{thread_of(str(path), '')}/{path.name}" if found else super().snapshot_key(path)

    def session_key(self, path: Path) -> str | None:
        found = session_parts(path)
        if found is None:
            return super().session_key(path)
        return f"{thread_of(str(path), '')}/{path.name.split('.', 1)[0]}"

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Parser:
        path = Path(source.path)
        if history.classify(path):
            return history.HistoryParser(source, state)
        if source.kind == SNAPSHOT or path.name in ("state.json", "meta.json"):
            return SideParser(source, state)
        if path.name == "wire.jsonl":
            return WireParser(source, state)
        if CONTEXT_RE.match(path.name) or session_parts(path) is not None:
            return ContextParser(source, state)
        return _EitherParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        return relative_to_marker(stored_path, ("sessions",)) or super().install_path(stored_path)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)

    def merge_installed(self, rel: str, existing: bytes, emitted: bytes) -> bytes | None:
        return merge_index(rel, existing, emitted)


class _EitherParser:
    """A line file given by hand (its path says nothing): a wire log when its first line is
    the wire's metadata, else a context; the choice is kept in the state."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.kind: str | None = s.get("kind")
        self.inner: Parser | None = None if self.kind is None else self._make(self.kind, s.get("inner"))

    def _make(self, kind: str, state: JsonObject | None) -> Parser:
        return WireParser(self.source, state) if kind == "wire" else ContextParser(self.source, state)

    def feed(self, offset: int, line: bytes):  # type: ignore[no-untyped-def]
        if self.inner is None:
            if not line.strip():
                return iter(())
            self.kind = "wire" if b'"protocol_version"' in line or b'"message"' in line[:40] else "context"
            self.inner = self._make(self.kind, None)
        return self.inner.feed(offset, line)

    def state(self) -> JsonObject:
        return {"kind": self.kind, "inner": self.inner.state() if self.inner is not None else None}


ADAPTER = KimiAdapter()
