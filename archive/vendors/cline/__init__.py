"""Cline CLI: the adapter (roots under ``CLINE_DIR`` / ``CLINE_DATA_DIR`` /
``CLINE_SESSION_DATA_DIR``, session folder names, detect, parser, emit).

Parsing is in ``parse.py``, the session writer in ``emit.py``. Every file read is a JSON
document the client rewrites whole (SNAPSHOT): ``sessions/<id>/<id>.messages.json``, a
subagent's ``sessions/<root id>/<agent id>.messages.json``, the manifest
``sessions/<id>/<id>.json`` and ``sessions/<id>/<id>.compaction.json``.

Not read: the SQLite mirrors in ``data/db/`` (``sessions.db``: one row per session with the
manifest's fields, the transcript path and the subagent spawn queue; ``teams.db``: team
runs and their events). In Cline CLI 3.0.65 they hold no message the JSON files lack, so the
JSON files are the only source and nothing is counted twice. VS Code Cline 4.x writes the
same session folders (not verified here: no VS Code on these machines).

A side file (issue 38, ``side.py``): the terminal UI's prompt history
``data/cache/user_input_history.jsonl``. Not read (examined in a recording of 3.0.65): the
other ``data/db/`` databases (``tasks.db``, ``cron.db``, ``session-search.db``: an index of
the sessions' text, ``connectors.db``, the hub's ``hub-events-*``/``hub-runs-*``: run
bookkeeping), ``settings/providers.json`` (provider keys: never read), ``logs/``,
``locks/``, ``cache/feature-flags.json``."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

from ...model import JsonObject, Message, Thread
from ..base import (
    SNAPSHOT,
    Adapter,
    EmitOptions,
    EmitResult,
    Registration,
    SourceInfo,
    env_path,
    file_chunks,
    relative_to_marker,
)
from . import side
from .emit import emit_session, resume_hint
from .parse import NAME, ClineParser

# <epoch ms>_<5 characters> (Cline CLI 3.0.65 session ids)
SESSION_ID_RE = re.compile(r"^\d{10,}_[A-Za-z0-9]+$")


class ClineAdapter(Adapter):
    name = NAME
    emits = True
    needs_cwd = True  # the manifest names the folder the session runs in
    revision = 1
    env_vars = ("CLINE_DIR", "CLINE_DATA_DIR", "CLINE_SESSION_DATA_DIR")
    # the built-in tools Cline CLI 3.0.65 offers the model
    tool_kinds = {"run_commands": "shell", "read_files": "read", "search_codebase": "search", "editor": "edit",
                  "fetch_web_content": "web", "spawn_agent": "agent"}  # fmt: skip

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        sessions = env_path(env, "CLINE_SESSION_DATA_DIR")
        if sessions:
            return [sessions]
        data = env_path(env, "CLINE_DATA_DIR") or (env_path(env, "CLINE_DIR") or home / ".cline") / "data"
        return [data / "sessions"]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        data = env_path(env, "CLINE_DATA_DIR") or (env_path(env, "CLINE_DIR") or home / ".cline") / "data"
        return [data / "cache" / side.HISTORY]

    def classify(self, path: Path) -> str | None:
        if side.classify(path):
            return side.classify(path)
        name, folder = path.name, path.parent.name
        if name.endswith(".messages.json") and SESSION_ID_RE.match(folder):
            return SNAPSHOT
        if name in (f"{folder}.json", f"{folder}.compaction.json") and SESSION_ID_RE.match(folder):
            return SNAPSHOT
        return None

    def detect(self, head: bytes) -> bool:
        try:
            d = orjson.loads(head)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(d, dict):
            return False
        if isinstance(d.get("session_id"), str) and "started_at" in d and "enable_tools" in d:
            return True  # a manifest
        origin = d.get("origin")
        return (isinstance(d.get("messages"), list) and isinstance(d.get("sessionId"), str)
                and isinstance(origin, dict) and "version" in d and "agent" in d)

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> ClineParser | side.HistoryParser:
        if side.classify(Path(source.path)):
            return side.HistoryParser(source, state)
        return ClineParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        return relative_to_marker(stored_path, ("sessions",)) or super().install_path(stored_path)

    def install_registrations(self, files: Mapping[str, bytes], base: Path) -> list[Registration]:
        """Cline CLI 3.0.65 resumes (``cline --id``) only a session its ``db/sessions.db``
        lists: a session folder alone starts a new session under that id, which overwrites
        the transcript. One ``sessions`` row per manifest written, from the manifest."""
        regs = []
        for rel in sorted(files):
            path = Path(rel)
            if path.name != f"{path.parent.name}.json" or not SESSION_ID_RE.match(path.parent.name):
                continue
            try:
                m = orjson.loads(b"".join(file_chunks(files, rel)))
            except orjson.JSONDecodeError:
                continue
            if isinstance(m, dict) and isinstance(m.get("session_id"), str):
                messages = base / path.parent / f"{path.parent.name}.messages.json"
                regs.append(Registration("db/sessions.db", "sessions", session_row(m, str(messages))))
        return regs

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)


def session_row(m: JsonObject, messages_path: str) -> JsonObject:
    """The ``sessions`` row Cline CLI 3.0.65 writes for a manifest (``SessionManifestStore``)."""
    md = m.get("metadata") if isinstance(m.get("metadata"), dict) else {}
    return {
        "session_id": m["session_id"], "source": m.get("source") or "cli", "pid": m.get("pid") or 0,
        "started_at": m.get("started_at") or "", "ended_at": m.get("ended_at"), "exit_code": m.get("exit_code"),
        "status": m.get("status") or "completed", "interactive": int(bool(m.get("interactive"))),
        "provider": m.get("provider") or "", "model": m.get("model") or "", "cwd": m.get("cwd") or "",
        "workspace_root": m.get("workspace_root") or m.get("cwd") or "", "team_name": m.get("team_name"),
        "enable_tools": int(bool(m.get("enable_tools", True))), "enable_spawn": int(bool(m.get("enable_spawn", True))),
        "enable_teams": int(bool(m.get("enable_teams"))), "is_subagent": 0, "prompt": m.get("prompt"),
        "metadata_json": orjson.dumps(md).decode(), "hook_path": "", "messages_path": messages_path,
        "updated_at": m.get("ended_at") or m.get("started_at") or "",
    }  # fmt: skip


ADAPTER = ClineAdapter()
