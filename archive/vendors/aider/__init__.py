"""Aider (PyPI ``aider-chat``): the adapter. Aider writes inside the project, not under a
home folder: ``<repo>/.aider.chat.history.md`` (the chat, Markdown appended per run) and
``<repo>/.aider.input.history`` (the prompts typed, a side file), found through the project
folders the archive knows (``project_patterns``; ``archive/project_roots.py``), or where
``AIDER_CHAT_HISTORY_FILE`` / ``AIDER_INPUT_HISTORY_FILE`` name an absolute path.

Parsing is in ``parse.py``, the history writer (``aider --restore-chat-history``) in ``emit.py``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from ...model import JsonObject, Message, Thread
from ..base import LINES, Adapter, EmitOptions, EmitResult, SourceInfo
from .emit import emit_history, resume_hint
from .parse import HEADING, HISTORY_NAME, INPUT_NAME, NAME, AiderParser, InputHistoryParser


_INPUT_HEAD = re.compile(rb"\s*# \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d+\r?\n\+")


class AiderAdapter(Adapter):
    name = NAME
    emits = True
    needs_cwd = True  # the history lives in the project folder Aider runs in
    env_vars = ("AIDER_CHAT_HISTORY_FILE", "AIDER_INPUT_HISTORY_FILE")
    project_patterns = (HISTORY_NAME, INPUT_NAME)
    # Aider offers the model no tools; ``/run`` output and edits are status lines

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return []

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        # an absolute --chat-history-file / --input-history-file set for every run
        return [Path(p) for v in self.env_vars if (p := env.get(v)) and Path(p).is_absolute()]

    def classify(self, path: Path) -> str | None:
        return LINES if path.name.endswith((HISTORY_NAME, INPUT_NAME)) else None

    def detect(self, head: bytes) -> bool:
        # a chat history opens with a run heading; an input history (prompt_toolkit's
        # FileHistory) with a ``# <time with microseconds>`` line and a ``+`` line
        return head.lstrip(b"\r\n").startswith(HEADING.encode()) or _INPUT_HEAD.match(head) is not None

    def session_key(self, path: Path) -> str | None:
        return None  # one file per project: its folder is no session id

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> AiderParser | InputHistoryParser:
        if source.path.endswith(INPUT_NAME):
            return InputHistoryParser(source, state)
        return AiderParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, Iterable[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:  # fmt: skip
        return emit_history(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        name = Path(stored_path).name
        return name if name.endswith((HISTORY_NAME, INPUT_NAME)) else None

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)


ADAPTER = AiderAdapter()
