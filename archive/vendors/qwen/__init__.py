"""Qwen Code: the adapter (roots under ``QWEN_RUNTIME_DIR`` / ``QWEN_HOME``, chat file names,
detect, parser, emit).

Parsing is in ``parse.py``, the chat-recording writer in ``emit.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, Adapter, EmitOptions, EmitResult, SourceInfo, env_path, relative_to_marker
from .emit import emit_session, resume_hint
from . import side
from .parse import NAME, QwenParser


class QwenAdapter(Adapter):
    name = NAME
    revision = 2  # 2: a response counted once in every release (0.5.2's prompt ids, issue 33)
    emits = True
    needs_cwd = True
    # QWEN_HOME replaces ~/.qwen; QWEN_RUNTIME_DIR, when set, holds the conversations (0.24.4)
    env_vars = ("QWEN_RUNTIME_DIR", "QWEN_HOME")
    # the built-in tools' names in Qwen Code 0.24.4's bundle (a Gemini CLI fork: edit, not replace)
    tool_kinds = {"run_shell_command": "shell", "edit": "edit", "replace": "edit", "write_file": "edit",
                  "read_file": "read", "read_many_files": "read", "list_directory": "search", "glob": "search",
                  "grep_search": "search", "search_file_content": "search", "web_fetch": "web", "web_search": "web",
                  "task": "agent", "todo_write": "plan", "exit_plan_mode": "plan"}  # fmt: skip

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "QWEN_RUNTIME_DIR") or env_path(env, "QWEN_HOME") or home / ".qwen"
        return [base / "projects"]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "QWEN_HOME") or home / ".qwen"  # usage_record.jsonl: the global folder
        runtime = env_path(env, "QWEN_RUNTIME_DIR") or base  # usage/: the runtime folder (0.24.4)
        return [base / side.USAGE_RECORD, runtime / "usage"]

    def classify(self, path: Path) -> str | None:
        # projects/<slug>/chats/<sessionId>.jsonl (not *.runtime.json and the like)
        if path.parent.name == "chats" and path.name.endswith(".jsonl") and path.parent.parent.parent.name == "projects":
            return LINES
        return side.classify(path)

    def detect(self, head: bytes) -> bool:
        try:
            d = orjson.loads(head.split(b"\n", 1)[0])
        except orjson.JSONDecodeError:
            return False
        if not isinstance(d, dict) or not isinstance(d.get("uuid"), str) or "sessionId" not in d:
            return False
        message = d.get("message")
        # Claude Code's envelope holds Anthropic content; Qwen Code's holds Gemini parts
        return (isinstance(message, dict) and isinstance(message.get("parts"), list)) or (
            d.get("type") == "system" and isinstance(d.get("systemPayload"), dict))

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Any:
        path = Path(source.path)
        if path.parent.name != "chats" and side.classify(path):
            return side.UsageRecordParser(source, state)
        return QwenParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        found = relative_to_marker(stored_path, ("projects",))
        return found or super().install_path(stored_path)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)


ADAPTER = QwenAdapter()
