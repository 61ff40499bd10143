"""pi coding agent: the adapter (roots under ``PI_CODING_AGENT_DIR`` /
``PI_CODING_AGENT_SESSION_DIR``, session file names, detect, parser, emit).

Parsing is in ``parse.py``, the session writer in ``emit.py``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, Adapter, EmitOptions, EmitResult, SourceInfo, env_path, relative_to_marker
from .emit import emit_session, resume_hint
from .parse import NAME, PiParser

# <ISO time with ':' and '.' as '-'>_<uuid>.jsonl (pi 0.73.1 SessionManager)
SESSION_NAME_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z_[0-9a-fA-F-]{36}\.jsonl$")


class PiAdapter(Adapter):
    name = NAME
    emits = True
    # 2: session format v1 (pi 0.7 - 0.30) read, with ids by position (was: 0 messages)
    revision = 2
    needs_cwd = True  # sessions are filed under the project folder
    env_vars = ("PI_CODING_AGENT_DIR", "PI_CODING_AGENT_SESSION_DIR")
    # pi 0.73.1's seven built-in tools
    tool_kinds = {"bash": "shell", "edit": "edit", "write": "edit", "read": "read", "grep": "search",
                  "find": "search", "ls": "search"}  # fmt: skip

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        sessions = env_path(env, "PI_CODING_AGENT_SESSION_DIR")
        agent = env_path(env, "PI_CODING_AGENT_DIR") or home / ".pi" / "agent"
        roots = [agent / "sessions"]
        if sessions is not None and sessions != roots[0]:
            roots.insert(0, sessions)
        return roots

    def classify(self, path: Path) -> str | None:
        return LINES if SESSION_NAME_RE.match(path.name) else None

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        return (isinstance(d, dict) and d.get("type") == "session" and isinstance(d.get("id"), str)
                and "cwd" in d and "timestamp" in d)

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> PiParser:
        return PiParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        return relative_to_marker(stored_path, ("sessions",)) or super().install_path(stored_path)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)

    def configured_options(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """``model_provider`` and ``model`` from pi's settings.json (``defaultProvider``,
        ``defaultModel``): an emitted session then names the model the user runs pi with."""
        agent = env_path(env, "PI_CODING_AGENT_DIR") or home / ".pi" / "agent"
        try:
            settings = orjson.loads((agent / "settings.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        if not isinstance(settings, dict):
            return {}
        out = {}
        for key, field in (("defaultProvider", "model_provider"), ("defaultModel", "model")):
            if isinstance(settings.get(key), str) and settings[key]:
                out[field] = settings[key]
        return out


ADAPTER = PiAdapter()
