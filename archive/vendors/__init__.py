"""Registered vendor adapters, in the order discovery and detection try them.

Adding a vendor: one module under ``archive/vendors/`` exposing ``ADAPTER`` (see
``base.Adapter``), and one line here.
"""

from __future__ import annotations

from .base import Adapter
from . import canonical, claude_code, clm, codex, copilot, pi

VENDORS: tuple[Adapter, ...] = (claude_code.ADAPTER, codex.ADAPTER, clm.ADAPTER, pi.ADAPTER, copilot.ADAPTER, canonical.ADAPTER)


def get(name: str) -> Adapter:
    for adapter in VENDORS:
        if adapter.name == name:
            return adapter
    raise KeyError(name)


def names() -> list[str]:
    return [a.name for a in VENDORS]
