"""Registered vendor adapters, in the order discovery and detection try them.

Adding a vendor: one module under ``archive/vendors/`` exposing ``ADAPTER`` (see
``base.Adapter``), and one line here.
"""

from __future__ import annotations

from .base import Adapter
from . import canonical, claude_code, clm, codex, copilot, gemini, openclaw, opencode, pi, qwen

# Qwen Code before Claude Code: its records wear Claude Code's envelope (detect tells them
# apart by the Gemini-style ``parts`` inside; Claude Code's detect would take both);
# OpenClaw before pi: it writes pi's format (its detect looks for OpenClaw's own records)
VENDORS: tuple[Adapter, ...] = (
    qwen.ADAPTER, claude_code.ADAPTER, codex.ADAPTER, clm.ADAPTER, gemini.ADAPTER,
    openclaw.ADAPTER, pi.ADAPTER, copilot.ADAPTER, opencode.ADAPTER, canonical.ADAPTER,
)


def get(name: str) -> Adapter:
    for adapter in VENDORS:
        if adapter.name == name:
            return adapter
    raise KeyError(name)


def names() -> list[str]:
    return [a.name for a in VENDORS]
