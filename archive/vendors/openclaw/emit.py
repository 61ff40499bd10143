"""Canonical threads -> an OpenClaw session (pi's format, written by pi's emitter).

``agents/main/sessions/<id>.jsonl`` under the state folder (a ``session`` header with ``version`` 3 and
``cwd``, a ``model_change``, then one chain of ``message`` entries) and
``agents/main/sessions/sessions.json`` naming it under the session key
``agent:main:explicit:<id>`` (the key ``openclaw agent --session-id <id>`` uses, 2026.7.1).
What pi's emitter drops or changes is counted the same way (see ``archive/vendors/pi/emit.py``).

OpenClaw 2026.7.1 resumes the file with ``openclaw agent --local --session-id <id>``;
the releases that keep sessions in SQLite first import it into their database with their own importer,
``openclaw doctor --session-sqlite import --session-sqlite-all-agents`` (the resume hint
says so): the archive never writes the client's database.

``sessions.json`` is the whole index: installing it over an existing one would drop the
user's other sessions, so ``--install`` is refused by ``emit`` where it exists (the
emitted file lists only this session).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from ...model import Message, Thread
from ..base import CHILD_THREADS_NOT_WRITTEN, EmitOptions, EmitResult, command
from ..pi.emit import _Emitter
from .parse import NAME

AGENT = "main"


def session_key(session_id: str) -> str:
    return f"agent:{AGENT}:explicit:{session_id}"


def resume_hint(session_id: str, cwd: str | None) -> str:
    """Import (the SQLite releases: a session already in the database is left alone), then resume."""
    return (command("cd", cwd or ".") + " && "
            + command("openclaw", "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents") + " && "
            + command("openclaw", "agent", "--local", "--session-id", session_id, "--message", "..."))


class _OpenClawEmitter(_Emitter):
    vendor = NAME

    def path(self) -> str:
        return f"agents/{AGENT}/sessions/{self.id}.jsonl"

    def resume_hint(self) -> str | None:
        return resume_hint(self.id, self.cwd)

    def settings(self) -> None:
        """pi's ``model_change``, then the ``model-snapshot`` OpenClaw writes after it (which
        also tells the file from a pi session where its name does not)."""
        super().settings()
        if self.model:
            data = {"timestamp": int(self.clock.timestamp() * 1000), "provider": self.provider or "unknown",
                    "modelApi": "openai-completions", "modelId": self.model}
            self.entry("custom", None, customType="model-snapshot", data=data)

    def emit(self) -> EmitResult:
        result = super().emit()
        created = int(self.created.timestamp() * 1000)
        entry: dict[str, Any] = {"sessionId": self.id, "updatedAt": int(self.clock.timestamp() * 1000),
                                 "sessionStartedAt": created, "sessionFile": f"{self.id}.jsonl"}
        if self.model:
            entry["model"] = self.model
        if self.provider:
            entry["modelProvider"] = self.provider
        index = orjson.dumps({session_key(self.id): entry}, option=orjson.OPT_INDENT_2) + b"\n"
        result.files[f"agents/{AGENT}/sessions/sessions.json"] = index
        return result


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[Any], options: EmitOptions) -> EmitResult:
    emitter = _OpenClawEmitter(thread, messages, options)
    if children:
        emitter.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return emitter.emit()
