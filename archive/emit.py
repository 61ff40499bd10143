"""Re-emit archived threads as files a vendor's own CLI resumes, as canonical JSONL, or as Markdown.

Invariants:

* **Same vendor, untouched thread: byte-exact.** The thread's own source files (for
  Claude Code also its subagent files and their meta.json; for clm its blob and spool
  files) are written back from the stored lines of their current generation, so the
  sha256 of each equals the file the vendor wrote.
* **Across vendors:** the target adapter's ``emit`` builds the session; every field it
  drops or transforms is counted with its reason in the report.
* **Paths** are relative to the parent of the vendor's root folder: ``projects/...``
  (``~/.claude``), ``sessions/...`` (``~/.codex``), ``clm/...`` (``~/.local/state``), so
  ``-o DIR`` and ``--install`` lay files out the same way.
* **``--install`` never overwrites:** every target is checked first; each file is written
  to a temporary name in its folder and hard-linked into place (which fails if the name
  exists), so a concurrent writer or a crash never leaves a half-written session.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .db import ArchiveError
from .ingest import plain_name, stored_file_bytes
from .model import Message, Thread
from .projection import load_messages, load_threads
from .queries import resolve_thread
from .vendors import get as get_adapter
from .vendors.base import EmitError, EmitResult

TARGETS = ("claude-code", "codex", "clm", "canonical", "markdown")


@dataclass
class EmitOutcome:
    thread_id: str
    target: str
    exact: bool  # byte-exact restore of the vendor's own files
    files: dict[str, bytes]  # relative path -> bytes
    counts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    resume_hint: str | None = None
    target_id: str | None = None
    written: list[Path] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        return {
            "thread": self.thread_id,
            "target": self.target,
            "exact": self.exact,
            "target_id": self.target_id,
            "files": sorted(self.files),
            "written": [str(p) for p in self.written],
            "dropped_or_transformed": dict(sorted(self.counts.items())),
            "notes": self.notes,
            "resume": self.resume_hint,
        }


def _thread_record(db: Database, thread_id: str) -> Thread:
    found = load_threads(db.conn, "id = ?", (thread_id,))
    if not found:
        raise ArchiveError(f"no thread {thread_id!r}")
    return found[0]


def load_thread(db: Database, thread_id: str) -> tuple[Thread, list[Message]]:
    return _thread_record(db, thread_id), load_messages(db.conn, "m.thread_id = ?", (thread_id,))


def descendants(db: Database, thread_id: str) -> list[str]:
    out, frontier = [], [thread_id]
    while frontier:
        children = [r[0] for r in db.execute(
            f"SELECT id FROM threads WHERE parent_thread_id IN ({', '.join('?' * len(frontier))}) ORDER BY created_at, id",
            frontier,
        )]  # fmt: skip
        children = [c for c in children if c not in out and c != thread_id]
        out += children
        frontier = children
    return out


def _root_name(provider: str, env: Mapping[str, str], home: Path) -> Path:
    roots = get_adapter(provider).default_roots(env, home)
    if not roots:
        raise ArchiveError(f"{provider} has no home folder to install into")
    return roots[0]


def _relative(provider: str, path: str) -> str:
    """A stored path relative to the parent of the vendor's root folder."""
    parts = Path(path).parts
    markers = {"claude-code": ("projects",), "codex": ("sessions", "archived_sessions"), "clm": ("clm",)}
    for marker in markers.get(provider, ()):
        if marker in parts:
            i = len(parts) - 1 - parts[::-1].index(marker)
            rel = parts[i:]
            if marker == "archived_sessions":
                rel = ("sessions",) + rel[1:]  # restore where the vendor's resume looks
            return str(Path(*rel))
    return Path(path).name


def _thread_sources(db: Database, thread_ids: list[str]) -> list[tuple[int, str, str, int, str]]:
    marks = ", ".join("?" * len(thread_ids))
    ids = {r[0] for r in db.execute(
        f"SELECT DISTINCT o.source_id FROM message_occurrences o JOIN messages m ON m.id = o.message_id "
        f"WHERE m.thread_id IN ({marks}) UNION SELECT DISTINCT source_id FROM thread_facts WHERE thread_id IN ({marks})",
        thread_ids * 2,
    )}  # fmt: skip
    rows = db.execute(
        f"SELECT id, provider, kind, current_generation, last_path FROM sources WHERE id IN ({', '.join('?' * len(ids))}) "
        "ORDER BY id",
        sorted(ids),
    ).fetchall() if ids else []  # fmt: skip
    return [tuple(r) for r in rows]  # type: ignore[misc]


def _companions(db: Database, provider: str, thread_id: str) -> list[tuple[int, str, str, int, str]]:
    """clm keeps images and spooled outputs in ``<id>.blobs/`` and ``<id>.spool/`` beside the log."""
    if provider != "clm":
        return []
    rows = db.execute(
        "SELECT id, provider, kind, current_generation, last_path FROM sources WHERE provider = 'clm' "
        "AND (last_path LIKE ? OR last_path LIKE ?) ORDER BY id",
        (f"%/{thread_id}.blobs/%", f"%/{thread_id}.spool/%"),
    ).fetchall()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def _exact(db: Database, thread: Thread, thread_ids: list[str], target: str) -> EmitOutcome | None:
    sources = _thread_sources(db, thread_ids)
    if not sources or any(s[1] != target or s[2] == "store" for s in sources):
        return None
    files: dict[str, bytes] = {}
    for sid, provider, _kind, gen, last_path in sources + _companions(db, target, thread.id):
        # a .bak (clm) continues an older generation; only the live file is restored
        if last_path.endswith(".bak"):
            continue
        files[_relative(provider, plain_name(last_path))] = stored_file_bytes(db, sid, gen)
    hint = {
        "claude-code": f"cd {shlex.quote((thread.metadata or {}).get('cwd') or '.')} && claude --resume {thread.id}",
        "codex": f"codex resume {thread.id}",
        "clm": f"clm --resume {thread.id}",
    }.get(target)
    return EmitOutcome(thread.id, target, True, files, resume_hint=hint, target_id=thread.id)


def emit_thread(db: Database, ref: str, target: str, exact: bool = True, **options: Any) -> EmitOutcome:
    """Build the files for one thread (and its child threads) in the target format."""
    if target not in TARGETS:
        raise ArchiveError(f"unknown target {target!r}; one of {', '.join(TARGETS)}")
    thread_id = resolve_thread(db, ref)  # an id or an unambiguous prefix
    if target == "markdown":
        from .queries import show
        from .render import thread_markdown

        text = "\n".join(thread_markdown(show(db, thread_id), full=True)) + "\n"
        return EmitOutcome(thread_id, target, False, {f"{_safe_name(thread_id)}.md": text.encode()})
    # messages are loaded only when the target is built from them, not for a byte-exact copy
    thread = _thread_record(db, thread_id)
    child_ids = descendants(db, thread_id)
    if exact and target != "canonical":
        outcome = _exact(db, thread, [thread_id] + child_ids, target)
        if outcome is not None:
            return outcome
    messages = load_messages(db.conn, "m.thread_id = ?", (thread_id,))
    children = [load_thread(db, c) for c in child_ids]
    if target == "canonical":
        result = get_adapter("canonical").emit(thread, messages)
        body = b"".join(result.files.values())
        for t, ms in children:
            body += b"".join(get_adapter("canonical").emit(t, ms).files.values())
        return EmitOutcome(thread_id, target, False, {f"{_safe_name(thread_id)}.jsonl": body}, target_id=thread_id)
    if target == "claude-code" and not options.get("cwd") and not (thread.metadata or {}).get("cwd"):
        # Claude files sessions by project folder; a thread from clm has none on record
        options["cwd"] = os.getcwd()
        default_cwd = True
    else:
        default_cwd = False
    try:
        result: EmitResult = get_adapter(target).emit(thread, messages, children, **options)
    except EmitError as e:
        raise ArchiveError(str(e)) from e
    if default_cwd:
        result.count("cwd: none archived, the current folder was used")
    root = _root_name(target, {}, Path("/"))
    files = {}
    for rel, data in result.files.items():
        first = Path(rel).parts[0]
        files[rel if first == root.name else str(Path(root.name) / rel)] = data
    return EmitOutcome(
        thread_id, target, False, files, dict(result.counts), list(result.notes), result.resume_hint, result.thread_id
    )


def _safe_name(thread_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in thread_id)


def install_base(target: str, env: Mapping[str, str], home: Path) -> Path:
    return _root_name(target, env, home).parent


def write_files(outcome: EmitOutcome, base: Path) -> list[Path]:
    """Write every file under ``base`` atomically; refuse (before writing anything) if any exists."""
    return _write_atomically(outcome, [(base / rel, data) for rel, data in sorted(outcome.files.items())])


def write_file(outcome: EmitOutcome, path: Path) -> list[Path]:
    """Write the outcome's one file as ``path``, atomically, never over an existing file."""
    ((_rel, data),) = outcome.files.items()
    return _write_atomically(outcome, [(path, data)])


def _write_atomically(outcome: EmitOutcome, targets: list[tuple[Path, bytes]]) -> list[Path]:
    existing = [str(p) for p, _ in targets if p.exists() or p.is_symlink()]
    if existing:
        raise ArchiveError("refusing to overwrite: " + ", ".join(existing))
    written = []
    for path, data in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise ArchiveError(f"refusing to overwrite: {path}")
        finally:
            if tmp.exists():
                tmp.unlink()
        written.append(path)
    outcome.written = written
    return written
