"""Qwen Code side files (issue 38): the usage records beside the chats.

* ``$QWEN_HOME/usage_record.jsonl`` (``LINES``, appended; 0.24.4, recorded in
  tests/fixtures/side-files/qwen-0.24.4): one line per session when it ends:
  ``{"version": 1, "sessionId", "timestamp", "startTime" (epoch ms), "project", "durationMs",
  "models": {<model>: {requests, inputTokens, outputTokens, cachedTokens, ...}}, "tools",
  "files", "skills"}``. The figures repeat the chat's own usage, so they are not counted
  again: each line is a side-file report of its session (``thread`` = ``sessionId``, the
  chat's thread id), kept byte for byte when the chat is gone.
* ``usage/token-usage-YYYY-MM.jsonl`` under the runtime folder (``QWEN_RUNTIME_DIR``, else
  the global one; 0.24.4 writes it when ``privacy.usageStatisticsEnabled`` is on): one line
  per API response, ``{schemaVersion, id, timestamp, localDate, localMonth, sessionId,
  model, authType, source ("main", "managed-auto-memory-extractor", ...), inputTokens,
  outputTokens, cachedTokens, thoughtsTokens, totalTokens, apiDurationMs}``; also a
  side-file report of its session, not counted again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any


from ..base import INVALID, LINES, Report, Row, StatelessParser, json_line_rows
from ..base import epoch_iso, side_report
from ..base import nonempty_str as _str

USAGE_RECORD = "usage_record.jsonl"


def classify(path: Path) -> str | None:
    if path.name == USAGE_RECORD:
        return LINES
    if path.parent.name == "usage" and path.name.startswith("token-usage-") and path.name.endswith(".jsonl"):
        return LINES
    return None


def _iso(value: Any) -> str | None:
    """Epoch milliseconds as an ISO time; a string (an ISO time already) as it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _str(value)
    return epoch_iso(value)


class UsageRecordParser(StatelessParser):
    """A side-file report per usage line, naming its session, project, time and models."""

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        return json_line_rows(line, self._record)

    def _record(self, d: Any) -> Iterator[Row]:
        if not isinstance(d, dict):
            yield Report(INVALID, "usage record", "not an object")
            return
        if "schemaVersion" in d:  # usage/token-usage-*.jsonl: one API response
            yield side_report("token usage", _str(d.get("sessionId")), ts=_str(d.get("timestamp")),
                              model=_str(d.get("model")), source=_str(d.get("source")))
            return
        models = d.get("models")
        yield side_report("usage record", _str(d.get("sessionId")), project=_str(d.get("project")),
                          ts=_iso(d.get("timestamp")), models=sorted(models) if isinstance(models, dict) else None)
