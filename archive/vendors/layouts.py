"""Known layouts the archive does not read yet: vendors without an adapter, where they keep
sessions, and which files there are sessions (DESIGN.md "Nothing passed over").

``ingest`` and ``status`` name every such folder that holds sessions (``archive/unread.py``)
instead of passing over it in silence. Each entry honours the vendor's own variables, as an
adapter's ``default_roots`` does. Sources: the vendors' public repositories (OpenClaw
``docs/reference/session-management-compaction.md``,
mistral-vibe ``vibe/core/session/session_logger.py``, agentsview ``internal/parser/``).

Vendors that write inside project folders (Aider, Crush) are found through
``archive/project_roots.py``, not here.

Turning one into a reader is a one-line move: an adapter whose ``name`` is the layout's
takes it over (``unread_layouts`` leaves out every registered name), and can reuse its
``roots`` as ``default_roots``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .base import env_path

Roots = Callable[[Mapping[str, str], Path], list[Path]]


@dataclass(frozen=True)
class KnownLayout:
    name: str
    env_vars: tuple[str, ...]
    roots: Roots  # (env, home) -> folders that may hold its sessions
    patterns: tuple[str, ...]  # globs below a root: one match per session (or session store)
    what: str  # what the files are, for the message


def _data(env: Mapping[str, str], home: Path) -> Path:
    return env_path(env, "XDG_DATA_HOME") or home / ".local" / "share"


LAYOUTS: tuple[KnownLayout, ...] = (
    KnownLayout("amp", ("XDG_DATA_HOME",), lambda env, home: [_data(env, home) / "amp" / "threads"],
                ("T-*.json",), "Amp thread files"),
)  # fmt: skip


def unread_layouts(registered: set[str]) -> list[KnownLayout]:
    """The known layouts no registered adapter reads."""
    return [layout for layout in LAYOUTS if layout.name not in registered]
