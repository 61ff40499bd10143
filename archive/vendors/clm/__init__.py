"""clm: the adapter (``$XDG_STATE_HOME/clm`` logs, blobs and spools, detect, parser, emit).

Parsing is in ``parse.py``, the log writer in ``emit.py``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


from ...model import (
    JsonObject,
    Message,
    Thread,
)
from ..base import (
    LINES,
    SNAPSHOT,
    Adapter,
    EmitResult,
    SourceInfo,
)
from .emit import _Emitter, _meta_line, clm_id
from .parse import BLOB_RE, ClmParser, ID_RE, NAME, ROLES, SPOOL_RE, _load

# ---------------------------------------------------------------- adapter


class ClmAdapter(Adapter):
    name = NAME
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

    def emit(
        self,
        thread: Thread | JsonObject,
        messages: list[Message],
        children: list[Any] | None = None,
        **options: Any,
    ) -> EmitResult:
        """Write ``<id>.jsonl`` (and ``<id>.blobs/`` images). ``blobs`` (sha256 -> bytes)
        supplies image bytes for attachments whose data lives in the archive's blob table."""
        if isinstance(thread, dict):
            thread = Thread.from_dict(thread)
        cid = clm_id(thread)
        result = EmitResult(thread_id=cid)
        if cid != thread.id:
            result.notes.append(f"thread id {thread.id!r} is not a valid clm session id; wrote {cid}")
        if children:
            result.count("child thread", len(children))
        emitter = _Emitter(cid, options.get("blobs") or {}, result)
        emitter.lines.append(_meta_line(thread, cid, result))
        for m in messages:
            emitter.message(m)
        unanswered = [c for c in emitter.call_names if c not in emitter.answered]
        if unanswered:
            result.count("tool call without a result", len(unanswered))
        result.files[f"{cid}.jsonl"] = b"\n".join(emitter.lines) + b"\n"
        result.resume_hint = (
            f"copy {cid}.jsonl (and {cid}.blobs/ if present) into $XDG_STATE_HOME/clm "
            f"(default ~/.local/state/clm), then run: clm --resume {cid}  "
            "(interactive UI only; the system prompt, model and provider come from the current config)"
        )
        return result


ADAPTER = ClmAdapter()
