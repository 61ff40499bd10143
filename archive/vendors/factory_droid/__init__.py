"""Factory Droid (npm ``@factory/cli``): read only (issue 35).

Checked with droid 0.225.2 (the ``@factory/cli-linux-x64`` binary; ``@factory/cli`` 0.225.1 on
the registry names a platform release the registry lacks) run offline against the mock with a
BYOK ``customModels`` entry in ``~/.factory/settings.json``: a new session runs without a
Factory login, but ``droid exec -s <id>`` (resume) fails with "Failed to fetch session" (it asks
Factory's server), so there is no emit target the client could resume here.

Layout: ``~/.factory/sessions/<cwd slug>/<uuid>.jsonl`` (LINES, appended) and beside it
``<uuid>.settings.json`` (SNAPSHOT, rewritten: model, autonomy, ``tokenUsage`` totals) and a
``.settings.json.bak`` copy (not read). Records (``parse.py``): ``session_start``, ``message``
(Claude-style content blocks), ``agent_turn_outcome`` (bookkeeping).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ...model import JsonObject
from ..base import LINES, SNAPSHOT, Adapter, SourceInfo
from .parse import NAME, DroidParser


class DroidAdapter(Adapter):
    name = NAME
    tool_kinds = {"Execute": "shell", "Read": "read", "LS": "search", "Grep": "search", "Glob": "search",
                  "Edit": "edit", "Create": "edit", "MultiEdit": "edit", "Task": "agent", "FetchUrl": "web",
                  "WebSearch": "web", "TodoWrite": "plan"}

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return [home / ".factory" / "sessions"]

    def classify(self, path: Path) -> str | None:
        if path.parent.parent.name != "sessions" or path.parent.parent.parent.name != ".factory":
            return None
        if path.name.endswith(".settings.json"):
            return SNAPSHOT
        return LINES if path.suffix == ".jsonl" else None

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        return first.startswith(b'{"type":"session_start"') and b'"hostId"' in first

    def session_key(self, path: Path) -> str | None:
        return path.name.split(".", 1)[0] or None

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> DroidParser:
        return DroidParser(source, state)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        p = Path(stored_path)
        return str(Path(".factory") / "sessions" / p.parent.name / p.name)


ADAPTER = DroidAdapter()
