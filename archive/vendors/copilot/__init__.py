"""GitHub Copilot CLI: the adapter (roots under ``COPILOT_HOME``, ``events.jsonl`` and its
``workspace.yaml`` companion, detect, parsers, emit).

Layouts read: ``session-state/<uuid>/events.jsonl`` (0.0.400 - 1.0.x) and the flat
``session-state/<uuid>.jsonl`` of 0.0.3xx (recorded with 0.0.370; 0.0.388 - 0.0.399 still
resume a flat file but write folders), the same events in both, so one parser reads both.
0.0.3xx keeps its state under ``$XDG_STATE_HOME/.copilot`` when that variable is set (and
its logs and config under ``$XDG_CONFIG_HOME/.copilot``), so that is a root too.

Parsing is in ``parse.py``, the session writer in ``emit.py``, the prompt history (a side
file, issue 38) in ``side.py``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from ...model import JsonObject, Message, Thread
from ..base import LINES, SNAPSHOT, Adapter, EmitOptions, EmitResult, SourceInfo, env_path, relative_to_marker
from . import side
from .emit import emit_session, resume_hint
from .parse import NAME, CopilotParser, WorkspaceParser

UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


class CopilotAdapter(Adapter):
    name = NAME
    emits = True
    env_vars = ("COPILOT_HOME",)
    revision = 2  # 2: usage of releases without usage records (assistant.message, session.shutdown)
    # Copilot CLI 1.0.x's built-in tools (bash and its session helpers; view/create/edit; task runs a subagent)
    tool_kinds = {"bash": "shell", "write_bash": "shell", "read_bash": "shell", "stop_bash": "shell",
                  "list_bash": "shell", "edit": "edit", "create": "edit", "str_replace_editor": "edit",
                  "view": "read", "glob": "search", "grep": "search", "web_fetch": "web", "task": "agent",
                  "update_todo": "plan"}  # fmt: skip

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "COPILOT_HOME") or home / ".copilot"
        roots = [base / "session-state"]
        state = env_path(env, "XDG_STATE_HOME")
        if state is not None and state / ".copilot" != base:
            roots.append(state / ".copilot" / "session-state")  # 0.0.3xx (0.0.370, 0.0.399)
        return roots

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "COPILOT_HOME") or home / ".copilot"
        return [base / side.COMMAND_HISTORY]

    def classify(self, path: Path) -> str | None:
        if side.classify(path):
            return side.classify(path)
        if path.parent.name == "session-state" and path.suffix == ".jsonl" and UUID_RE.match(path.stem):
            return LINES  # 0.0.3xx: the flat session-state/<uuid>.jsonl
        if not UUID_RE.match(path.parent.name):
            return None
        if path.name == "events.jsonl":
            return LINES
        if path.name == "workspace.yaml":
            return SNAPSHOT  # rewritten in place (updated_at, name, summary_count)
        return None

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        data = d.get("data") if isinstance(d, dict) else None
        return (isinstance(data, dict) and d.get("type") == "session.start" and isinstance(data.get("sessionId"), str)
                and ("copilotVersion" in data or data.get("producer") == "copilot-agent"))

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Any:
        if side.classify(Path(source.path)):
            return side.CommandHistoryParser(source, state)
        if source.kind == SNAPSHOT or source.path.endswith("workspace.yaml"):
            return WorkspaceParser(source, state)
        return CopilotParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        return relative_to_marker(stored_path, ("session-state",)) or super().install_path(stored_path)

    def companion_markers(self, thread_id: str) -> tuple[str, ...]:
        return (f"/{thread_id}/workspace.yaml",)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id)

    def configured_options(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """``model``: ``$COPILOT_MODEL``, else ``model`` in ``$COPILOT_HOME/config.json``
        (the model the user runs Copilot CLI with)."""
        if env.get("COPILOT_MODEL"):
            return {"model": env["COPILOT_MODEL"]}
        base = env_path(env, "COPILOT_HOME") or home / ".copilot"
        try:
            config = orjson.loads((base / "config.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        model = config.get("model") if isinstance(config, dict) else None
        return {"model": model} if isinstance(model, str) and model else {}


ADAPTER = CopilotAdapter()
