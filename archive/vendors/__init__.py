"""Registered vendor adapters, in the order discovery and detection try them.

Adding a vendor: one module under ``archive/vendors/`` exposing ``ADAPTER`` (see
``base.Adapter``), and one line here.
"""

from __future__ import annotations

from .base import Adapter
from . import canonical, claude_code, clm, codex, copilot, crush, gemini, kilo, opencode, pi, qwen

# Qwen Code before Claude Code: its records wear Claude Code's envelope (detect tells them
# apart by the Gemini-style ``parts`` inside; Claude Code's detect would take both). Kilo
# before OpenCode for the same reason (its rows are OpenCode's; detect reads the release).
VENDORS: tuple[Adapter, ...] = (
    qwen.ADAPTER, claude_code.ADAPTER, codex.ADAPTER, clm.ADAPTER, gemini.ADAPTER,
    pi.ADAPTER, copilot.ADAPTER, kilo.ADAPTER, opencode.ADAPTER, crush.ADAPTER,
    canonical.ADAPTER,
)


def get(name: str) -> Adapter:
    for adapter in VENDORS:
        if adapter.name == name:
            return adapter
    raise KeyError(name)


def names() -> list[str]:
    return [a.name for a in VENDORS]
