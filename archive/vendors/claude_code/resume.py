"""Claude Code 1.0.x resume copies: message ids a resumed session's new file shares with
the file it repeats (issue 33).

Before 1.0.128, ``claude --resume`` wrote a new file that repeats the resumed turns under new
uuids, a new ``sessionId`` and new timestamps, keeping each response's ``message.id``
(recorded with 1.0.3 and 1.0.56, tests/fixtures/claude-code/resume-1.0/; 1.0.56 also writes
the copy of the first prompt's string as one text block). Invariants:

* The main-thread lines of those releases get ids from what the copy repeats, never from
  uuids: a response line ``(message.id, n)``, a tool-result line its call ids, any other
  user line the response before it (the ``cwd`` for the opening prompt) and its content;
  ``k`` counts repeats. The copy's lines are then the original's messages, and the new
  file is a fork of the original (the projection's lineage), whatever the order.
* Sidechains, later releases and lines without ``version`` keep their uuids.
* The state is bounded (``ALIASES``, ``RESPONSES``, ``REPEATS``) and JSON.
* Known limit: two 1.0.x sessions in one folder that open with the same prompt share
  that first message.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ...model import JsonObject
from ..base import nonempty_str as _str
from ..base import stable_id

NAME = "claude-code"

RESUME_COPIES_BEFORE = (1, 0, 128)  # 1.0.128 appends a resumed session to its own file
# bounds of the state: recent uuid -> id pairs for parent links (a parent is nearly always a
# recent line), line counts of recent responses, contents counted after the last response
ALIASES, RESPONSES, REPEATS = 16, 8, 32


def _version(v: Any) -> tuple[int, ...] | None:
    if not isinstance(v, str):
        return None
    try:
        return tuple(int(x) for x in v.split("-", 1)[0].split("."))
    except ValueError:
        return None


def _content_key(content: Any) -> str:
    """The content as the copy has it too: 1.0.56 writes the copy of a prompt string as one
    text block."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return hashlib.sha256(orjson.dumps(content, option=orjson.OPT_SORT_KEYS)).hexdigest()


class ResumeIds:
    """Message ids of 1.0.x main-thread lines that a resume copy shares with its original
    (module docstring). State: the line counts of the recent responses, the last response
    id, the counts of repeated contents after it, and recent uuid -> id aliases."""

    def __init__(self, state: JsonObject | None) -> None:
        s = state or {}
        self.lines: dict[str, int] = dict(s.get("lines") or {})
        self.anchor: str | None = s.get("anchor")
        self.repeats: dict[str, int] = dict(s.get("repeats") or {})
        self.aliases: dict[str, str] = dict(s.get("aliases") or {})

    def state(self) -> JsonObject | None:
        if not self.lines and self.anchor is None and not self.repeats and not self.aliases:
            return None
        return {"lines": self.lines, "anchor": self.anchor, "repeats": self.repeats, "aliases": self.aliases}

    def id(self, d: JsonObject, msg: JsonObject, main: bool) -> str | None:
        version = _version(d.get("version"))
        if not main or d.get("isSidechain") is True or version is None or version >= RESUME_COPIES_BEFORE:
            return None
        content = msg.get("content")
        if d.get("type") == "assistant":
            rid = _str(msg.get("id"))
            if rid is None:
                return None
            n = self.lines.pop(rid, -1) + 1  # the lines of a response are consecutive; counted apart anyway
            self.lines[rid] = n
            while len(self.lines) > RESPONSES:
                self.lines.pop(next(iter(self.lines)))
            if self.anchor != rid:
                self.anchor, self.repeats = rid, {}
            mid = stable_id(NAME, "response", rid, n)
        else:
            calls = [b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
                if isinstance(content, list) else []
            key = _content_key(content)
            k = self.repeats.get(key, 0)
            self.repeats[key] = k + 1
            while len(self.repeats) > REPEATS:
                self.repeats.pop(next(iter(self.repeats)))
            if calls and all(isinstance(c, str) and c for c in calls):
                mid = stable_id(NAME, "results", *calls, k)
            else:
                mid = stable_id(NAME, "user", self.anchor or f"cwd:{d.get('cwd')}", key, k)
        uuid = _str(d.get("uuid"))
        if uuid:
            self.aliases[uuid] = mid
            while len(self.aliases) > ALIASES:
                self.aliases.pop(next(iter(self.aliases)))
        return mid

    def parent(self, parent: str | None) -> str | None:
        return self.aliases.get(parent, parent) if parent else parent
