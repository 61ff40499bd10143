"""Kimi CLI's layout and the ids shared by its parsers and its emitter.

Layout (kimi-cli 1.51.0 ``session.py``, ``metadata.py``, ``subagents/store.py``), under
``$KIMI_SHARE_DIR`` (default ``~/.kimi``):

* ``kimi.json``: the work folders Kimi knows (``work_dirs``: ``path``, ``kaos``,
  ``last_session_id``); a session is found only through its folder's entry;
* ``sessions/<md5 of the work folder>/<session uuid>/`` (``<kaos>_<md5>`` for a non-local
  KAOS): ``context.jsonl`` (what the model is sent), ``wire.jsonl`` (the UI event log),
  ``state.json`` (approval and title state), ``context_<n>.jsonl`` (a context rotated away
  by ``/clear`` or a compaction);
* ``<session>/subagents/<agent id>/``: a subagent's own ``context.jsonl``, ``wire.jsonl``,
  ``meta.json`` (its type, description, parent tool call), ``prompt.txt`` and ``output``;
* releases before the session folders kept ``sessions/<md5>/<session uuid>.jsonl`` (the
  context alone; 1.51.0 moves it into the folder when it opens the session).

Usage links (``RESPONSE_LINK``): the wire's ``StatusUpdate`` of a step and the context's assistant
message that step wrote are named alike (``StepLinks``): by the step's first tool call id; a
step without one by the first tool call id of the step before it in the turn, or, the turn's
first step, by the turn's prompt (its text's digest and how many times the thread had that
prompt before). Both files give the same names in the same order (kimi-cli 1.51.0
``soul/kimisoul.py``: each step appends one assistant message, its tool calls streamed before
the step's ``StatusUpdate``); a ``SteerInput`` or an ``/undo`` is not followed (a link that
finds no message leaves the usage on the thread, as before).

Invariants: thread ids come from the path (the session folder's uuid, ``<session>/<agent
id>`` for a subagent), what Kimi itself finds a session by; a file given without its folder
gets ``kimi-<stable id of its source>``. Never raises on input.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from typing import Any

from ..base import stable_id

NAME = "kimi"
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
# a work folder's md5, with the KAOS name in front for a non-local one
WORKDIR_RE = re.compile(r"^(?:[A-Za-z0-9_-]+_)?[0-9a-f]{32}$")
CONTEXT_RE = re.compile(r"^context(?:_\d+)?\.jsonl$")
SUBAGENTS = "subagents"


def session_parts(path: str | Path) -> tuple[str, str | None] | None:
    """(session uuid, agent id or None) of a file in a Kimi session folder, from its path;
    None when the path is not in one."""
    return _session_parts(str(path))


@lru_cache(maxsize=1024)  # asked about each file four to five times in a run (discovery, identity, parsers)
def _session_parts(path: str) -> tuple[str, str | None] | None:
    parts = Path(path).parts
    if len(parts) >= 4 and parts[-3] == SUBAGENTS and UUID_RE.match(parts[-4]):
        return parts[-4], parts[-2]
    if len(parts) >= 2 and UUID_RE.match(parts[-2]):
        return parts[-2], None
    if len(parts) >= 2 and WORKDIR_RE.match(parts[-2]) and parts[-1].endswith(".jsonl") \
            and UUID_RE.match(parts[-1][:-6]):
        return parts[-1][:-6], None  # the old layout: sessions/<md5>/<uuid>.jsonl
    return None


def child_thread(session: str, agent_id: str) -> str:
    return f"{session}/{agent_id}"


def thread_of(path: str, source_id: str) -> str:
    found = session_parts(path)
    if found is None:
        return f"{NAME}-" + stable_id(source_id, "session")
    session, agent = found
    return session if agent is None else child_thread(session, agent)


def prompt_text(content: Any) -> str:
    """A prompt's text, from the wire's ``user_input`` or the context's ``content`` (a string or
    parts: the text parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


class StepLinks:
    """The link names of one thread's steps (see the module's docstring), fed in file order by
    either parser; ``state()`` persists it between runs."""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        s = state or {}
        self.prompt: str | None = s.get("prompt")
        self.previous: str | None = s.get("previous")  # the first tool call of the turn's last step
        self.current: str | None = s.get("current")  # the first tool call of the step going on
        self.counts: dict[str, int] = s.get("counts", {})

    def state(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "previous": self.previous, "current": self.current, "counts": self.counts}

    def turn(self, content: Any) -> None:
        digest = stable_id(prompt_text(content), length=16)
        n = self.counts.get(digest, 0)
        self.counts[digest] = n + 1
        self.prompt, self.previous, self.current = f"{digest}.{n}", None, None

    def step(self) -> None:
        if self.current is not None:
            self.previous, self.current = self.current, None

    def call(self, call_id: Any) -> None:
        if self.current is None and isinstance(call_id, str) and call_id:
            self.current = call_id

    def link(self) -> str | None:
        if self.current is not None:
            return f"call:{self.current}"
        if self.previous is not None:
            return f"after:{self.previous}"
        return f"prompt:{self.prompt}" if self.prompt is not None else None
