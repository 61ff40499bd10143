"""clm: the adapter (``$XDG_STATE_HOME/clm`` logs, blobs and spools, detect, parser, emit).

Parsing is in ``parse.py``, the log writer in ``emit.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path


from ...model import (
    JsonObject,
    Message,
    Thread,
)
from ..base import (
    EmitOptions,
    relative_to_marker,
    LINES,
    SNAPSHOT,
    Adapter,
    EmitResult,
    SourceInfo,
)
from .emit import emit_log, resume_hint
from .parse import BLOB_RE, ClmParser, ID_RE, NAME, ROLES, SPOOL_RE, _load

# ---------------------------------------------------------------- adapter


class ClmAdapter(Adapter):
    name = NAME
    emits = True
    tool_kinds = {"shell_exec": "shell"}  # the one tool seen in clm logs so far
    env_vars = ("XDG_STATE_HOME",)

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        # session.c clm_session_state_dir: XDG_STATE_HOME only when set and non-empty
        base = env.get("XDG_STATE_HOME")
        if base:
            return [Path(base) / "clm"]
        return [home / ".local" / "state" / "clm"]

    def classify(self, path: Path) -> str | None:
        name = path.name
        for suffix in (".jsonl", ".jsonl.bak"):
            if name.endswith(suffix) and ID_RE.match(name[: -len(suffix)]):
                return LINES
        folder = path.parent.name
        if folder.endswith(".blobs") and ID_RE.match(folder[:-6]) and BLOB_RE.match(name):
            return SNAPSHOT
        if folder.endswith(".spool") and ID_RE.match(folder[:-6]) and SPOOL_RE.match(name):
            return SNAPSHOT
        return None  # .jsonl.tmp is a rewrite in flight; blob temp files likewise

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        value, _, error = _load(first)
        if error is not None or not isinstance(value, dict):
            return False
        if value.get("type") == "meta":
            return "v" in value and isinstance(value.get("id"), str) and "created" in value
        if value.get("type") == "msg":
            return value.get("role") in ROLES and "threadId" not in value
        return False

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> ClmParser:
        return ClmParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_log(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        if stored_path.endswith(".bak"):
            return None  # a .bak continues an older generation; only the live log is written back
        return relative_to_marker(stored_path, ("clm",)) or super().install_path(stored_path)

    def companion_markers(self, thread_id: str) -> tuple[str, ...]:
        return (f"/{thread_id}.blobs/", f"/{thread_id}.spool/")

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id)


ADAPTER = ClmAdapter()
