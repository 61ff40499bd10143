"""OpenClaw's retention setting (issue 38): the one that deletes transcripts by age.

OpenClaw 2026.9.6 (``docs/reference/session-management-compaction/maintenance.md``,
``dist/store-maintenance-*.mjs``): ``session.maintenance`` in ``openclaw.json``
(``$OPENCLAW_CONFIG_PATH``, else ``<OPENCLAW_STATE_DIR or ~/.openclaw>/openclaw.json``).
``pruneAfter`` (30 days) and ``maxEntries`` *archive* sessions in place, their transcript
rows kept; ``maxDiskBytes`` (10 GB) evicts by size, not age. Only
``resetArchiveRetention`` deletes transcripts by age: the ``*.reset.<time>`` and
``*.deleted.<time>`` transcript archives, unset by default (kept until the disk budget
evicts them), a duration opting in (``"30d"``, ``"12h"``, ``"1d12h"``, a bare number of
days; units ms, s, m, h, d). ``mode: "warn"`` applies nothing. The file is JSON5: read as
JSON, else (comments, unquoted keys) the one key is looked for by a pattern. The file is
never a source (it holds provider keys and gateway tokens).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from ..base import Retention, env_path

_UNITS = {"ms": 1 / 86_400_000, "s": 1 / 86_400, "m": 1 / 1440, "h": 1 / 24, "d": 1.0}
_TOKEN = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_JSON5_KEY = re.compile(r"""["']?resetArchiveRetention["']?\s*:\s*(?:["']([^"']*)["']|([0-9.]+|false|true))""")
_JSON5_WARN = re.compile(r"""["']?maintenance["']?\s*:\s*\{[^{}]*["']?mode["']?\s*:\s*["']warn["']""", re.S)


def config_path(env: Mapping[str, str], home: Path) -> Path:
    explicit = env_path(env, "OPENCLAW_CONFIG_PATH")
    if explicit is not None:
        return explicit
    return (env_path(env, "OPENCLAW_STATE_DIR") or home / ".openclaw") / "openclaw.json"


def duration_days(value: Any) -> float | None:
    """A duration as OpenClaw's ``parseDurationMs`` reads it (default unit: days), in days;
    None for anything it would not take or that is not positive."""
    if isinstance(value, bool) or value is None:
        return None
    text = str(value).strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        days = float(text)
    else:
        total, consumed = 0.0, 0
        for m in _TOKEN.finditer(text):
            if m.start() != consumed:
                return None
            total += float(m.group(1)) * _UNITS[m.group(2)]
            consumed = m.end()
        if consumed == 0 or consumed != len(text):
            return None
        days = total
    return days if days > 0 else None


def _maintenance(data: bytes) -> tuple[Any, bool]:
    """(``resetArchiveRetention``, whether ``mode`` is "warn") of the config's bytes."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        text = data.decode("utf-8", "replace")
        m = _JSON5_KEY.search(text)
        raw = None if m is None else (m.group(1) if m.group(1) is not None else m.group(2))
        return (False if raw == "false" else raw), bool(_JSON5_WARN.search(text))
    session = doc.get("session") if isinstance(doc, dict) else None
    maint = session.get("maintenance") if isinstance(session, dict) else None
    if not isinstance(maint, dict):
        return None, False
    return maint.get("resetArchiveRetention"), maint.get("mode") == "warn"


def retention(env: Mapping[str, str], home: Path) -> Retention | None:
    config = config_path(env, home)
    try:
        raw, warn_only = _maintenance(config.read_bytes())
    except OSError:
        return None
    days = duration_days(raw)
    if days is None or warn_only:
        return None
    return Retention(days, f"session.maintenance.resetArchiveRetention = {raw!s} in {config} (reset and deleted "
                           "sessions' transcript archives)",
                     f"set session.maintenance.resetArchiveRetention to a longer duration (or remove it: kept until "
                     f"the disk budget evicts them) in {config}, or run ingest more often")
