"""Cline CLI's prompt history (issue 38), a side file beside the sessions.

* ``<CLINE_DATA_DIR or (CLINE_DIR or ~/.cline)/data>/cache/user_input_history.jsonl``
  (``SNAPSHOT``): written by the CLI's terminal UI only (3.0.65, recorded in
  tests/fixtures/recorded/cline-3.0.65-side; ``cline --json PROMPT`` writes none), rewritten
  whole at each prompt: ``{"prompt", "ts"}`` per line, oldest first, at most 20, a repeated
  prompt moved to the end. Every line gets the time of the rewrite (the client's
  ``Date.now()`` for each line), not the prompt's, so no time is reported. No session id, no
  project: each line is a prompt report without a thread, lost when no archived user
  message of a Cline thread has its text (view ``lost_prompts``). Every rewrite changes
  every line's time: each is a generation of its own, the prompts counted once
  (``lost_prompts`` is read distinct).

Stateless; never raises on input.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ..base import INVALID, PARSE_ERROR, SKIPPED, SNAPSHOT, Report, Row, SourceInfo, prompt_report

HISTORY = "user_input_history.jsonl"


def classify(path: Path) -> str | None:
    return SNAPSHOT if path.name == HISTORY and path.parent.name == "cache" else None


class HistoryParser:
    """A prompt report per line of ``user_input_history.jsonl`` (the document fed whole)."""

    def __init__(self, source: SourceInfo, state: Any = None) -> None:
        self.source = source

    def state(self) -> dict[str, Any]:
        return {}

    def feed(self, offset: int, data: bytes) -> Iterator[Row]:
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                yield Report(PARSE_ERROR, "invalid JSON", str(e))
                continue
            if not isinstance(d, dict) or not isinstance(d.get("prompt"), str):
                yield Report(INVALID, "prompt history line", "not an object with a prompt")
            elif not d["prompt"].strip():
                yield Report(SKIPPED, "empty prompt")
            else:
                yield prompt_report(None, None, None, None, d["prompt"])
