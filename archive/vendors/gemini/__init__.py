"""Gemini CLI: the adapter (roots under ``GEMINI_CLI_HOME``, chat file names, detect, parser, emit).

Parsing is in ``parse.py`` (chat recordings) and ``saved.py`` (``/chat save`` checkpoints
and the ``logs.json`` prompt log, the only files 0.1.x writes), the chat-recording writer
in ``emit.py``.

Layouts read, under ``tmp/<project>/``: ``chats/session-*.jsonl`` (0.20 and later, LINES),
``chats/session-*.json`` (0.4-0.19, SNAPSHOT), ``chats/<session>/<id>.jsonl`` (subagents),
``checkpoint-<tag>.json`` and ``logs.json`` (0.1.x and later, SNAPSHOT: rewritten whole).
Not read: ``tmp/<project>/checkpoints/`` (the tool-call snapshots ``/restore`` uses) and
``shell_history``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, SNAPSHOT, Adapter, EmitOptions, EmitResult, SourceInfo, env_path, relative_to_marker
from .emit import emit_session, resume_hint
from .parse import NAME, GeminiParser
from .saved import prompt_log_signal, saved_resume_hint


class GeminiAdapter(Adapter):
    name = NAME
    emits = True
    needs_cwd = True
    # 2: a rewritten message updates its canonical row (MessageRow.revises) instead of
    # adding its new tool calls as a second message
    # 3: the thread's model and every response's model; /chat save checkpoints and logs.json
    # are read (saved.py)
    # 4: a checkpoint names its project folder (metadata.savedCopyScope) so it is linked to
    # the session it was saved from (saved_copies.py); a document given by hand is one document
    revision = 4
    # GEMINI_CLI_HOME replaces the home folder: sessions are under $GEMINI_CLI_HOME/.gemini (0.61.0)
    env_vars = ("GEMINI_CLI_HOME",)
    # the built-in tools' names in Gemini CLI 0.61.0's bundle (search_file_content before grep_search)
    tool_kinds = {"run_shell_command": "shell", "replace": "edit", "write_file": "edit", "read_file": "read",
                  "read_many_files": "read", "list_directory": "search", "glob": "search", "grep_search": "search",
                  "search_file_content": "search", "web_fetch": "web", "google_web_search": "web",
                  "write_todos": "plan"}  # fmt: skip

    def message_signal(self, role: str, text: str | None, extra: Mapping[str, Any]) -> str | None:
        return prompt_log_signal(extra)

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "GEMINI_CLI_HOME") or home
        return [base / ".gemini" / "tmp"]

    def classify(self, path: Path) -> str | None:
        if saved_document(path):
            return SNAPSHOT
        # main sessions: chats/session-*.json[l]; subagents: chats/<parent session>/<id>.jsonl
        main = path.parent.name == "chats" and path.name.startswith("session-")
        sub = path.parent.parent.name == "chats" and path.name.endswith(".jsonl")
        if not (main or sub):
            return None
        if path.name.endswith(".jsonl"):
            return LINES
        if path.name.endswith(".json"):
            return SNAPSHOT
        return None

    def detect(self, head: bytes) -> bool:
        if _document(head):
            return True
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            try:
                d = orjson.loads(head)  # a legacy single document
            except orjson.JSONDecodeError:
                return False
        return (isinstance(d, dict) and isinstance(d.get("sessionId"), str) and isinstance(d.get("projectHash"), str)
                and "startTime" in d)

    def session_scope(self, metadata: JsonObject) -> str | None:
        # a chat document names its project folder (sha256 of the cwd): its checkpoints sit there
        scope = metadata.get("projectHash")
        return scope if isinstance(scope, str) else None

    def given_kind(self, path: Path, head: bytes) -> str:
        # a chat document (0.4-0.19) or a checkpoint renamed or moved out of tmp/<project>/ is
        # still one pretty-printed document: read whole, never as 248 lines of parse errors
        # (a public session of September 2025 given by hand, issue 33)
        return self.classify(path) or (SNAPSHOT if head.lstrip().startswith((b"{\n", b"{\r\n", b"[")) else LINES)

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> GeminiParser:
        return GeminiParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        # tmp/<project>/chats/<file>: the project folder name is the stored one
        found = relative_to_marker(stored_path, ("tmp",))
        return found or super().install_path(stored_path)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return saved_resume_hint(NAME, "gemini", session_id, cwd, resume_hint)


# the head of a pretty-printed document (Gemini CLI's ``JSON.stringify(d, null, 2)``), which may
# be cut at 64 KiB: a chat (``sessionId`` then ``projectHash``; Qwen Code 0.1.x's have
# ``"type": "qwen"`` answers and are Qwen's) or a ``/chat save`` checkpoint (``Content[]``)
_CHAT_HEAD = re.compile(rb'^\{\r?\n\s*"sessionId": "[^"]+",\s*"projectHash": "[0-9a-f]+"')
_CHECKPOINT_HEAD = re.compile(rb'^\[\r?\n\s*\{\r?\n\s*"role": "(user|model)",\r?\n\s*"parts": \[')


def _document(head: bytes) -> bool:
    head = head.lstrip()
    return bool(_CHAT_HEAD.match(head) and b'"type": "qwen"' not in head) or bool(_CHECKPOINT_HEAD.match(head))


def saved_document(path: Path) -> bool:
    """``tmp/<project>/checkpoint-<tag>.json`` or ``tmp/<project>/logs.json`` (Gemini CLI
    0.1.22; Qwen Code 0.1.4 under ``~/.qwen``)."""
    name = path.name
    return path.parent.parent.name == "tmp" and (
        name == "logs.json" or (name.startswith("checkpoint-") and name.endswith(".json")))


ADAPTER = GeminiAdapter()
