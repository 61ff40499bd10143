"""Codex CLI: the adapter (roots under ``CODEX_HOME``, rollout names, detect, parser, emit).

Parsing is in ``parse.py``, the rollout writer in ``emit.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...model import (
    JsonObject,
    Message,
    Thread,
)
from ..base import (
    EmitOptions,
    relative_to_marker,
    LINES,
    SNAPSHOT,
    Adapter,
    EmitResult,
    SourceInfo,
    env_path,
)
from . import side
from .emit import configured, emit_rollout, resume_hint
from .parse import CodexParser, NAME

# ---------------------------------------------------------------- adapter


class CodexAdapter(Adapter):
    name = NAME
    emits = True
    # 2: usage in neutral buckets (cached input out of input_tokens); item ids as
    # provenance.sourceId; a thread's cwd is where it started (later ones: metadata.lastCwd);
    # 3: a user_message event without its response_item is the user message (issue 18);
    # 4: before 0.66 a token_count precedes its response's items: its usage goes to them (issue 33)
    revision = 4
    env_vars = ("CODEX_HOME",)
    # 0.171 resumes a fork from its parent's rollout ("invalid paginated history lineage ...
    # missing source rollout" without it)
    fork_reads_parent_files = True
    tool_kinds = {"shell": "shell", "shell_command": "shell", "local_shell": "shell", "exec_command": "shell",
                  "write_stdin": "shell", "unified_exec": "shell", "apply_patch": "edit", "view_image": "read",
                  "read_file": "read", "list_dir": "search", "grep_files": "search", "tool_search": "search",
                  "web_search": "web", "update_plan": "plan", "spawn_agent": "agent"}  # fmt: skip

    def message_signal(self, role: str, text: str | None, extra: Mapping[str, Any]) -> str | None:
        # a "compacted" line's replacement history opens with the summary (parse._compacted);
        # an interrupted turn leaves a <turn_aborted> user message (0.5x and later)
        if extra.get("compacted"):
            return "compaction"
        if role == "user" and text and text.lstrip().startswith("<turn_aborted"):
            return "interrupted"
        return None

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "CODEX_HOME") or home / ".codex"
        return [base / "sessions", base / "archived_sessions"]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "CODEX_HOME") or home / ".codex"
        # the TypeScript CLI (0.1.25xxxxxx) keeps its history under the home whatever CODEX_HOME says
        return [base / side.HISTORY_LINES, home / ".codex" / side.HISTORY_JSON]

    def classify(self, path: Path) -> str | None:
        name = path.name
        if not name.startswith("rollout-"):
            return side.classify(path)
        if name.endswith(".jsonl") or name.endswith(".jsonl.zst"):
            return LINES
        if name.endswith(".json"):
            return SNAPSHOT
        return None

    def detect(self, head: bytes) -> bool:
        text = head.lstrip()
        if text.startswith(b"{") and b'"session"' in head[:4096] and b'"items"' in head:
            try:
                d = orjson.loads(head)
            except orjson.JSONDecodeError:
                d = None
            if isinstance(d, dict) and isinstance(d.get("session"), dict) and "items" in d:
                return True
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(d, dict):
            return False
        if d.get("type") == "session_meta" and isinstance(d.get("payload"), dict):
            return True
        if "type" not in d and isinstance(d.get("session_id"), str) and "ts" in d and isinstance(d.get("text"), str):
            return True  # a history.jsonl line (side.py)
        # G1: a bare SessionMeta first line
        return "type" not in d and isinstance(d.get("id"), str) and "timestamp" in d and "instructions" in d

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Any:
        if side.classify(Path(source.path)):
            return side.HistoryParser(source, state)
        return CodexParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_rollout(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        # a rollout Codex archived goes back where its resume looks
        found = relative_to_marker(stored_path, ("sessions", "archived_sessions"), {"archived_sessions": "sessions"})
        return found or super().install_path(stored_path)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id)

    def configured_options(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """``model_provider`` and ``model`` from ``$CODEX_HOME/config.toml``, its selected
        ``profile`` first: Codex refuses to resume a session whose provider is not the
        configured one (0.171.0: "Cannot change this thread's model provider")."""
        return configured(env_path(env, "CODEX_HOME") or home / ".codex")


ADAPTER = CodexAdapter()


