"""Qwen Code: the adapter (roots under ``QWEN_RUNTIME_DIR`` / ``QWEN_HOME``, chat file names,
detect, parser, emit).

Parsing is in ``parse.py``, the chat-recording writer in ``emit.py``.

Layouts read: ``projects/<slug>/chats/<sessionId>.jsonl`` (0.5 and later, LINES, under
``QWEN_RUNTIME_DIR`` / ``QWEN_HOME``) and, from 0.1.x (a Gemini CLI fork that honours neither
variable: always ``~/.qwen``), ``~/.qwen/tmp/<sha256(cwd)>/chats/session-*.json`` (Gemini
CLI-style documents, rewritten whole: SNAPSHOT, read by the Gemini CLI document parser with
assistant type ``qwen``) and the ``checkpoint-<tag>.json`` / ``logs.json`` beside them
(``gemini/saved.py``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, SNAPSHOT, Adapter, EmitOptions, EmitResult, SourceInfo, env_path, relative_to_marker
from .emit import emit_session, resume_hint
from . import side
from ..gemini import saved_document
from ..gemini.parse import GeminiParser
from ..gemini.saved import prompt_log_signal, saved_resume_hint
from .parse import NAME, QwenParser


class QwenDocumentParser(GeminiParser):
    """Qwen Code 0.1.x ``chats/session-*.json`` documents, checkpoints and prompt log: the
    Gemini CLI document parser, under Qwen Code's name, its assistant messages typed ``qwen``
    (0.1.4)."""

    name = NAME
    assistant_types = ("qwen",)


class QwenAdapter(Adapter):
    name = NAME
    # 2: a response counted once in every release (0.5.2's prompt ids, issue 33); the 0.1.x
    # layout (tmp/<hash>/: chats/session-*.json, checkpoints, logs.json) is read
    # 3: a 0.1.x checkpoint names its project folder (metadata.savedCopyScope): linked to the
    # session it was saved from (saved_copies.py); a 0.1.x document given by hand is one document
    revision = 3
    emits = True
    needs_cwd = True
    # QWEN_HOME replaces ~/.qwen; QWEN_RUNTIME_DIR, when set, holds the conversations (0.24.4)
    env_vars = ("QWEN_RUNTIME_DIR", "QWEN_HOME")
    # the built-in tools' names in Qwen Code 0.24.4's bundle (a Gemini CLI fork: edit, not replace)
    tool_kinds = {"run_shell_command": "shell", "edit": "edit", "replace": "edit", "write_file": "edit",
                  "read_file": "read", "read_many_files": "read", "list_directory": "search", "glob": "search",
                  "grep_search": "search", "search_file_content": "search", "web_fetch": "web", "web_search": "web",
                  "task": "agent", "todo_write": "plan", "exit_plan_mode": "plan"}  # fmt: skip

    def message_signal(self, role: str, text: str | None, extra: Mapping[str, Any]) -> str | None:
        return prompt_log_signal(extra)  # 0.1.x's logs.json, read as Gemini CLI's

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "QWEN_RUNTIME_DIR") or env_path(env, "QWEN_HOME") or home / ".qwen"
        # 0.1.x ignores both variables (0.1.4): its files are always under the home's .qwen
        return [base / "projects", home / ".qwen" / "tmp"]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "QWEN_HOME") or home / ".qwen"  # usage_record.jsonl: the global folder
        runtime = env_path(env, "QWEN_RUNTIME_DIR") or base  # usage/: the runtime folder (0.24.4)
        return [base / side.USAGE_RECORD, runtime / "usage"]

    def classify(self, path: Path) -> str | None:
        if old_layout(path):
            return SNAPSHOT
        # projects/<slug>/chats/<sessionId>.jsonl (not *.runtime.json and the like)
        if path.parent.name == "chats" and path.name.endswith(".jsonl") and path.parent.parent.parent.name == "projects":
            return LINES
        return side.classify(path)

    def session_scope(self, metadata: JsonObject) -> str | None:
        # a 0.1.x chat document names its project folder, as Gemini CLI's do
        scope = metadata.get("projectHash")
        return scope if isinstance(scope, str) else None

    def given_kind(self, path: Path, head: bytes) -> str:
        # a 0.1.x document given by hand out of ~/.qwen/tmp/ is one document, not lines
        return self.classify(path) or (SNAPSHOT if head.lstrip().startswith((b"{\n", b"{\r\n")) else LINES)

    def detect(self, head: bytes) -> bool:
        if head.lstrip().startswith(b"{\n") and _QWEN_DOC.search(head):  # a 0.1.x document
            return True
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
        if source.kind == SNAPSHOT:
            return QwenDocumentParser(source, state)
        path = Path(source.path)
        if path.parent.name != "chats" and side.classify(path):
            return side.UsageRecordParser(source, state)
        return QwenParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        found = relative_to_marker(stored_path, ("tmp",) if old_layout(Path(stored_path)) else ("projects",))
        return found or super().install_path(stored_path)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return saved_resume_hint(NAME, "qwen", session_id, cwd, resume_hint)


# a pretty-printed 0.1.x session document with an assistant message (JSON.stringify(doc, null, 2))
_QWEN_DOC = re.compile(rb'"projectHash": "[0-9a-f]+",.*"type": "qwen"', re.S)


def old_layout(path: Path) -> bool:
    """A 0.1.x file: ``.qwen/tmp/<hash>/chats/session-*.json``, or a checkpoint or the
    prompt log beside the chats. Only under a ``.qwen`` folder, which 0.1.x always uses:
    Gemini CLI's own files have the same names."""
    if ".qwen" not in path.parts:
        return False
    chats = path.parent.name == "chats" and path.parent.parent.parent.name == "tmp"
    return (chats and path.name.startswith("session-") and path.name.endswith(".json")) or saved_document(path)


ADAPTER = QwenAdapter()
