"""OpenClaw: the adapter (roots under ``OPENCLAW_STATE_DIR`` and the legacy ``~/.clawdbot``,
``~/.moltbot``; both generations of its transcripts; detect, parser, emit).

OpenClaw's transcripts are pi's session format v3 (a ``session`` header, then entries
forming a tree by ``id``/``parentId``): the parser is pi's (``archive/vendors/pi``), run
under this provider's name (``parse.py``).

**Two generations** (checked with the real clients):

* 2026.7.1 and earlier (most files people hold): one JSON Lines file per session,
  ``agents/<agent>/sessions/<sessionId>.jsonl``, appended, beside ``sessions.json`` (the
  index: session key -> entry, rewritten in place). Rotated copies keep the lines the
  session had when it was rotated: ``<id>.jsonl.reset.<ts>`` (``/new``, ``/reset``),
  ``.deleted.<ts>``, ``.bak.<ts>`` / ``.bak-<ts>`` (repairs), and
  ``<id>.checkpoint.<uuid>.jsonl`` (a copy taken before compaction). All are ``LINES``
  sources of the same session (``session_key``): their entries have the same ids, so they
  are the same messages, stored once. ``<id>.trajectory.jsonl`` is the runtime's trace of
  a run (requests, tool timings), not the conversation: read as bookkeeping (``SKIPPED``)
  so it is kept byte-exact in the source layer and never named unread.
* Later releases (2026.9.1 and 2026.9.6 checked; the move came between 2026.7.1 and
  2026.9.1): ``agents/<agent>/agent/openclaw-agent.sqlite`` (WAL). Its
  ``transcript_events`` table holds one row per entry (``session_id``, ``seq`` growing per
  session, ``event_json`` = the JSONL line the older releases wrote, byte for byte). The
  database is ``RECORDS``: read read-only (``archive.readonly``), one document per session
  made of its ``event_json`` rows in ``seq`` order, each followed by a newline, at the
  virtual path ``<database>#<session id>.jsonl``. That document is the session's JSONL
  file: the same parser reads both generations, a session imported from JSONL by
  ``openclaw doctor`` is the same thread with the same message ids, and ``restore`` writes
  back a file the older releases read. Rows only append, so a rerun adds nothing and a run
  while the client writes continues after the rows committed so far. ``session_nodes``
  (the old ``sessions.json`` entries, updated in place) is not read: every fact it holds
  (cwd, model, timestamps) is in the events too.

Emit: a JSONL session (``agents/main/sessions/<id>.jsonl``, pi's writer under this name)
plus ``sessions.json`` naming it. 2026.7.1 resumes it directly; the SQLite releases read it after
``openclaw doctor --session-sqlite import`` has moved it into its database (the client's
own importer writes its database; the archive never does: 2026.9.6's import keeps the emitted
lines byte for byte, checked by hand; the resume after it is not checked).

Side files (issue 38, ``side.py``): no prompt history of its own (2026.9.6's source writes
none); its one age-based deletion, ``session.maintenance.resetArchiveRetention``, is the
vendor's retention.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import orjson
import zstandard

from ...model import JsonObject, Message, Thread
from ..base import LINES, RECORDS, Adapter, Document, EmitOptions, EmitResult, Query, Retention, SourceInfo, env_path
from . import side
from .emit import emit_session, resume_hint
from .parse import NAME, OpenClawParser, TrajectoryParser

DB_NAME = "openclaw-agent.sqlite"
# <id>.jsonl and its rotated copies (2026.7.1 and earlier; session ids are uuids, a topic
# thread's transcript is <id>-topic-<thread>.jsonl)
_SESSION_FILE = re.compile(r"^[^./][^/]*?(\.checkpoint\.[0-9a-fA-F-]+)?\.jsonl(\.(reset|deleted|bak)[.-].+)?$")
_TRAJECTORY = re.compile(r"^[^./][^/]*\.trajectory\.jsonl$")


def event_line(raw: bytes | None, packed: bytes | None, size: int | None) -> bytes:
    """One ``transcript_events`` row as a JSON line: ``event_json`` as it is, or, for a row
    2026.9.6 compressed (``event_json`` NULL, ``event_zstd`` the zstd frame of the same
    text, ``event_utf8_bytes`` its length), the text it holds. A row holding a line break
    (never seen: the client writes ``JSON.stringify``) would break the framing, so it is
    carried as a JSON string instead (the parser reports it)."""
    if raw is None and packed is not None:
        try:
            raw = zstandard.ZstdDecompressor().decompress(packed, max_output_size=max(size or 0, 1 << 22))
        except zstandard.ZstdError as e:
            raw = b'{"type":"openclaw_row","eventText":' + orjson.dumps(f"undecodable event_zstd: {e}") + b"}"
    raw = raw or b""
    if b"\n" in raw or b"\r" in raw:
        raw = b'{"type":"openclaw_row","eventText":' + orjson.dumps(raw.decode("utf-8", "replace")) + b"}"
    return raw + b"\n"


class OpenClawAdapter(Adapter):
    name = NAME
    emits = True
    needs_cwd = False
    env_vars = ("OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH")
    # OpenClaw 2026.9.6's core tools (``exec`` runs shell commands; ``process`` polls them)
    tool_kinds = {"exec": "shell", "process": "shell", "bash": "shell", "read": "read", "write": "edit",
                  "edit": "edit", "apply_patch": "edit", "grep": "search", "find": "search", "ls": "search",
                  "web_search": "web", "web_fetch": "web", "browser": "web", "sessions_spawn": "agent",
                  "sessions_send": "agent", "subagents": "agent", "update_plan": "plan"}
    # the session index and per-agent auth beside the transcripts: not sessions
    # (2026.9.6 keeps lock and writer databases beside its own: openclaw-agent.sqlite.*.sqlite)
    not_sessions = ("*/sessions/sessions.json", "*/agent/*.json", "*/agent/*.sqlite")

    def default_roots(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """``<state>/agents``: every agent's transcripts and database are under it, and its
        parent, the state folder, is where emitted files (``agents/...``) are laid out."""
        state = env_path(env, "OPENCLAW_STATE_DIR")
        if state is not None:
            return [state / "agents"]
        return [home / name / "agents" for name in (".openclaw", ".clawdbot", ".moltbot")]

    def retention(self, env: Mapping[str, str], home: Path) -> Retention | None:
        return side.retention(env, home)

    def classify(self, path: Path) -> str | None:
        parts = path.parts
        if len(parts) < 4 or parts[-4] != "agents":
            return None
        if path.name == DB_NAME and parts[-2] == "agent":
            return RECORDS
        if parts[-2] != "sessions":
            return None
        if _TRAJECTORY.match(path.name) or _SESSION_FILE.match(path.name):
            return LINES
        return None

    def session_key(self, path: Path) -> str | None:
        """The session id; a checkpoint copy and a trajectory are files of their own beside
        the transcript (both restored), a rotated copy is the transcript renamed."""
        name = path.name.rpartition("#")[2]
        sid, _, rest = name.partition(".")
        if rest.startswith("checkpoint."):
            return f"{sid}.{rest[:-len('.jsonl')] if rest.endswith('.jsonl') else rest}"
        if rest == "trajectory.jsonl":
            return f"{sid}.trajectory"
        return sid or None

    def detect(self, head: bytes) -> bool:
        first = head.split(b"\n", 1)[0]
        try:
            d = orjson.loads(first)
        except orjson.JSONDecodeError:
            return False
        # pi's header names no ``version``-3 session this way: OpenClaw's header has no
        # project folder in its file name, so a file given by hand is told apart by the
        # ``openclaw`` marks pi never writes (see parse.py: is_openclaw_header)
        from .parse import is_openclaw_header
        return isinstance(d, dict) and is_openclaw_header(d, head)

    def documents(self, path: Path, query: Query | None) -> Iterator[Document]:
        """One document per session of ``transcript_events`` (its rows in ``seq`` order, one
        statement per session, each a consistent snapshot), and one of its
        ``trajectory_runtime_events`` (``<session>.trajectory.jsonl``, as 2026.7.1 wrote it
        beside the transcript: the run traces, which name the client's release)."""
        if query is None:
            return
        tables = {r[0] for r in query("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
        if b"transcript_events" not in tables:
            return
        cols = {r[1] for r in query("PRAGMA table_info(transcript_events)", ())}
        packed = "event_zstd, event_utf8_bytes" if {b"event_zstd", b"event_utf8_bytes"} <= cols else "NULL, NULL"
        for (sid,) in query("SELECT DISTINCT session_id FROM transcript_events ORDER BY session_id", ()):
            text = sid.decode("utf-8", "surrogateescape")
            rows = query(f"SELECT CAST(event_json AS BLOB), {packed} FROM transcript_events "
                         "WHERE session_id = ? ORDER BY seq", (text,))
            if rows:
                yield Document(f"{path}#{text}.jsonl", b"".join(event_line(*row) for row in rows))
        if b"trajectory_runtime_events" not in tables:
            return
        for (sid,) in query("SELECT DISTINCT session_id FROM trajectory_runtime_events ORDER BY session_id", ()):
            text = sid.decode("utf-8", "surrogateescape")
            rows = query("SELECT CAST(event_json AS BLOB), NULL, NULL FROM trajectory_runtime_events "
                         "WHERE session_id = ? ORDER BY seq", (text,))
            if rows:
                yield Document(f"{path}#{text}.trajectory.jsonl", b"".join(event_line(*row) for row in rows))

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> OpenClawParser | TrajectoryParser:
        if source.path.endswith(".trajectory.jsonl"):
            return TrajectoryParser(source, state)
        return OpenClawParser(source, state)

    def emit(self, thread: Thread, messages: list[Message], children: Sequence[tuple[Thread, list[Message]]] = (),
             options: EmitOptions = EmitOptions()) -> EmitResult:
        return emit_session(thread, messages, children, options)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        """A JSONL file goes back to ``agents/<agent>/sessions/``; a database's session
        document is that session's JSONL file (what ``doctor --session-sqlite import``
        reads); a rotated copy is not written back (an older generation's name)."""
        base, _, session = stored_path.rpartition("#")
        parts = Path(base if session else stored_path).parts
        if "agents" not in parts:
            return None
        i = len(parts) - 1 - parts[::-1].index("agents")
        if i + 1 >= len(parts):
            return None
        agent = parts[i + 1]
        name = session if session else parts[-1]
        if not re.match(r"^[^./][^/]*\.jsonl$", name) or ".checkpoint." in name or name.endswith(".trajectory.jsonl"):
            return None
        return str(Path("agents", agent, "sessions", name))

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return resume_hint(session_id, cwd)

    def configured_options(self, env: Mapping[str, str], home: Path) -> dict[str, str]:
        """``cwd``: the workspace of the user's ``openclaw.json`` (``agents.defaults.workspace``).
        2026.7.1 rewrites a resumed session's header ``cwd`` to its workspace, which breaks the
        header's emit mark (the hand-off would come back as a thread of its own); a header
        that already names the workspace is kept byte for byte. A config in JSON5 (comments)
        is not read."""
        state = env_path(env, "OPENCLAW_STATE_DIR") or home / ".openclaw"
        try:
            config = orjson.loads((state / "openclaw.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return {}
        defaults = (config.get("agents") or {}).get("defaults") if isinstance(config, dict) else None
        workspace = defaults.get("workspace") if isinstance(defaults, dict) else None
        return {"cwd": workspace} if isinstance(workspace, str) and workspace else {}


ADAPTER = OpenClawAdapter()
