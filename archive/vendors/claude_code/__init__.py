"""Claude Code: the adapter (where the files are, which paths are ours, detect, parser, emit).

Parsing is in ``parse.py``, the cross-vendor writer in ``emit.py``; field notes in
``docs/vendors`` of the shared format notes (``formats/claude-code.md``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

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
    Retention,
    SourceInfo,
    env_path,
)
from .emit import cwd_slug, emit_session, resume_hint
from . import side
from .parse import ToolResultsFileParser, AGENT_FILE_RE, AGENT_META_RE, AgentMetaParser, ClaudeCodeParser, HANDLERS, NAME, SKIPPED_TYPES, UUID_RE

# ---------------------------------------------------------------- the adapter


class ClaudeCodeAdapter(Adapter):
    name = NAME
    emits = True
    # 2: a thread's cwd is where it started (later ones: metadata.lastCwd); 3: attachments
    # the model read are messages, agent_progress fills the child thread (issue 18);
    # 4: task notifications and slash-command prompts carry extra["conversation"]
    # 5: file-history-snapshot and file-history-delta lines name file checkpoints (issue 38)
    # 5: 1.0.x main-thread ids a resume's copy shares with its original (issue 33)
    revision = 5
    needs_cwd = True  # sessions are filed under the project folder's slug
    tool_kinds = {"Bash": "shell", "BashOutput": "shell", "KillShell": "shell", "Edit": "edit", "MultiEdit": "edit",
                  "Write": "edit", "NotebookEdit": "edit", "Read": "read", "NotebookRead": "read", "Glob": "search",
                  "Grep": "search", "LS": "search", "WebFetch": "web", "WebSearch": "web", "Task": "agent",
                  "Agent": "agent", "TodoWrite": "plan", "ExitPlanMode": "plan"}  # fmt: skip
    env_vars = ("CLAUDE_CONFIG_DIR",)
    # the structured tool result repeats the tool output (and Edit's whole original file):
    # ~17% of a corpus, so the archive reads it back from the line instead of a second copy
    line_backed_extra = ("toolUseResult",)

    def message_signal(self, role: str, text: str | None, extra: Mapping[str, Any]) -> str | None:
        # a compact_boundary system line starts the summarised context (manual /compact and
        # auto-compaction alike, 1.0.x-2.1.x); Esc during a turn writes this user text
        if extra.get("subtype") == "compact_boundary":
            return "compaction"
        if role == "user" and text and text.startswith("[Request interrupted by user"):
            return "interrupted"
        return None

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        base = env_path(env, "CLAUDE_CONFIG_DIR") or home / ".claude"
        return [base / "projects"]

    def side_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        return side.side_roots(env, home)

    def stored_form(self, path: Path, data: bytes) -> bytes:
        return side.stored_form(path, data)

    def retention(self, env: Mapping[str, str], home: Path) -> Retention | None:
        return side.retention(env, home)

    def classify(self, path: Path) -> str | None:
        return self._transcript_kind(path) or side.classify(path)

    def _transcript_kind(self, path: Path) -> str | None:
        parts = path.parts
        if "projects" not in parts or len(parts) < 2:
            return None
        name = parts[-1]
        under = parts[parts.index("projects") + 1 : -1]  # folders between projects/ and the file
        if AGENT_META_RE.match(name):
            return SNAPSHOT if "subagents" in under else None
        if len(under) == 3 and under[2] == "tool-results" and UUID_RE.match(under[1]):
            return SNAPSHOT  # a large tool output kept beside the transcript (2.1.x)
        if not name.endswith(".jsonl"):
            return None
        if AGENT_FILE_RE.match(name):
            # 2.0.x: projects/<slug>/agent-<id>.jsonl; 2.1.x: <slug>/<sid>/subagents/[workflows/<run>/]
            if len(under) == 1 or (len(under) >= 3 and under[2] == "subagents"):
                return LINES
            return None
        if UUID_RE.match(name[: -len(".jsonl")]) and len(under) == 1:
            return LINES
        return None

    def detect(self, head: bytes) -> bool:
        for line in head.split(b"\n")[:5]:
            try:
                d = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(d, dict):
                return False
            if "type" not in d and isinstance(d.get("display"), str) and "timestamp" in d:
                return True  # a history.jsonl line (side.py)
            t = d.get("type")
            known = t in HANDLERS or t in SKIPPED_TYPES
            return bool(known and any(k in d for k in ("sessionId", "uuid", "leafUuid", "messageId")))
        return False

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> Any:
        path = Path(source.path)  # once: a Path a file was a measurable part of a small file's cost
        if side.classify(path) is not None and not self._transcript_kind(path):
            return side.SideFileParser(source, state)
        if path.parent.name == "tool-results":
            return ToolResultsFileParser(source, state)
        if source.kind == SNAPSHOT or source.path.endswith(".meta.json"):
            return AgentMetaParser(source, state)
        return ClaudeCodeParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        rel = relative_to_marker(stored_path, ("projects",)) or super().install_path(stored_path)
        parts = Path(rel).parts if rel else ()
        if cwd is not None and len(parts) > 2 and parts[0] == "projects":
            # Claude finds a session by the slug of the folder it runs in, not by the cwd
            # written inside the lines: the same bytes under another slug resume there
            return str(Path("projects", cwd_slug(cwd), *parts[2:]))
        return rel

    def relocates(self) -> bool:
        return True

    def companion_markers(self, thread_id: str) -> tuple[str, ...]:
        return (f"/{thread_id}/tool-results/",)

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)


ADAPTER = ClaudeCodeAdapter()
