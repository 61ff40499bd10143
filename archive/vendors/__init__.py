"""Registered vendor adapters, in the order discovery and detection try them.

Adding a vendor: one module under ``archive/vendors/`` exposing ``ADAPTER`` (see
``base.Adapter``), and one line here.
"""

from __future__ import annotations

from .base import Adapter
from . import canonical, claude_code, clm, codex, copilot, gemini, opencode, pi, qwen, vibe

# Qwen Code before Claude Code: its records wear Claude Code's envelope (detect tells them
# apart by the Gemini-style ``parts`` inside; Claude Code's detect would take both). Mistral
# Vibe before clm: clm's session ids are loose enough to take Vibe's ``messages.jsonl``
VENDORS: tuple[Adapter, ...] = (
    qwen.ADAPTER, claude_code.ADAPTER, codex.ADAPTER, vibe.ADAPTER, clm.ADAPTER, gemini.ADAPTER,
    pi.ADAPTER, copilot.ADAPTER, opencode.ADAPTER, canonical.ADAPTER,
)


def get(name: str) -> Adapter:
    for adapter in VENDORS:
        if adapter.name == name:
            return adapter
    raise KeyError(name)


def names() -> list[str]:
    return [a.name for a in VENDORS]
