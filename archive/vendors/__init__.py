"""Registered vendor adapters, in the order discovery and detection try them.

Adding a vendor: one module under ``archive/vendors/`` exposing ``ADAPTER`` (see
``base.Adapter``), and one line here.
"""

from __future__ import annotations

from .base import Adapter
from . import (
    aider, canonical, claude_code, cline, clm, codex, copilot, crush, factory_droid, gemini, goose, hermes, kilo, kimi, openclaw,
    opencode, pi, qwen, vibe,
)

# Qwen Code before Claude Code: its records wear Claude Code's envelope (detect tells them
# apart by the Gemini-style ``parts`` inside; Claude Code's detect would take both); OpenClaw
# before pi: it writes pi's format (its detect looks for OpenClaw's own records); Goose's
# documents before OpenCode's, which wear the same {"table":"session","row":...} envelope
# (Goose's session row names a ``working_dir``); Kilo before OpenCode for the same reason
# (its rows are OpenCode's; detect reads the release). Mistral Vibe before clm: clm's
# session ids are loose enough to take Vibe's ``messages.jsonl``; Kimi CLI before clm for the same reason
VENDORS: tuple[Adapter, ...] = (
    qwen.ADAPTER, claude_code.ADAPTER, codex.ADAPTER, vibe.ADAPTER, kimi.ADAPTER, clm.ADAPTER, gemini.ADAPTER,
    openclaw.ADAPTER, pi.ADAPTER, copilot.ADAPTER, goose.ADAPTER, kilo.ADAPTER, opencode.ADAPTER,
    crush.ADAPTER, aider.ADAPTER, hermes.ADAPTER, factory_droid.ADAPTER, cline.ADAPTER,
    canonical.ADAPTER,
)


def get(name: str) -> Adapter:
    for adapter in VENDORS:
        if adapter.name == name:
            return adapter
    raise KeyError(name)


def names() -> list[str]:
    return [a.name for a in VENDORS]
