"""Re-emit archived threads as files a vendor's own CLI resumes, as canonical JSONL, or as Markdown.

Invariants:

* **Same vendor, untouched thread: byte-exact.** The thread's own source files (and its
  child threads' files, and the companions its adapter names: images, spooled outputs)
  are written back from the stored lines of their current generation, so the sha256 of
  each equals the file the vendor wrote.
* **Vendor knowledge is the adapter's.** Targets are the registered adapters that emit
  (plus Markdown); layout, companions, resume hints and the need for a project folder
  come from adapter hooks; every emitter takes the same ``EmitOptions``.
* **Across vendors:** the target adapter's ``emit`` builds the session; every field it
  drops or transforms is counted with its reason in the report.
* **Paths** are relative to the parent of the vendor's first root folder
  (``Adapter.install_path``), so ``-o DIR`` and ``--install`` lay files out the same way.
* **One view of the thread:** ``thread_view.load_view`` (the loader ``show``, the pages and the
  MCP server use): a fork's inherited history first, the session's child threads beside it.
* **Streamed:** messages are read from the archive a page at a time (``MessagePages``) and
  the emitters write each file as they go (``EmittedFiles``: spooled to a temporary file
  past a few MB), so memory stays flat however long the thread (README benchmarks).
* **``--install`` never overwrites:** every target is checked first; each file is written
  to a temporary name in its folder and hard-linked into place (which fails if the name
  exists), so a concurrent writer or a crash never leaves a half-written session. The one
  exception is an index the target's client finds sessions through (``Adapter.merge_installed``):
  the user's file, with the session added by the adapter, replaces it atomically.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .errors import ArchiveError
from .ingest import plain_name
from .lines import iter_stored_lines
from .thread_view import ThreadView, child_views, load_view
from .vendors import VENDORS
from .vendors import get as get_adapter
from .vendors.base import EmitError, EmitOptions, EmitResult, EmittedFiles, file_chunks

MARKDOWN = "markdown"  # a document for people, not a session: rendered here, not by an adapter
TARGETS = tuple(a.name for a in VENDORS if a.emits) + (MARKDOWN,)
# formats with a home folder of their own, where ``--install`` writes and byte-exact copies make sense
INSTALLABLE = tuple(a.name for a in VENDORS if a.emits and a.default_roots({}, Path("/")))


@dataclass
class EmitOutcome:
    thread_id: str
    target: str
    exact: bool  # byte-exact restore of the vendor's own files
    files: Mapping[str, bytes]  # relative path -> bytes (EmittedFiles: read with file_chunks)
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


def _root_name(provider: str, env: Mapping[str, str], home: Path) -> Path:
    roots = get_adapter(provider).default_roots(env, home)
    if not roots:
        raise ArchiveError(f"{provider} has no home folder to install into")
    return roots[0]


def thread_sources(db: Database, thread_ids: list[str]) -> list[tuple[int, str, str, int, str]]:
    marks = ", ".join("?" * len(thread_ids))
    ids = {r[0] for r in db.execute(
        # the threads' own copies: not a fork's file that repeats their history
        f"SELECT DISTINCT o.source_id FROM message_occurrences o JOIN messages m ON m.id = o.message_id "
        f"WHERE m.thread_id IN ({marks}) AND o.thread_id IS m.thread_id "
        f"UNION SELECT DISTINCT source_id FROM thread_facts WHERE thread_id IN ({marks})",
        thread_ids * 2,
    )}  # fmt: skip
    # the current generation's own path: a log's, not the .bak of an older generation
    rows = db.execute(
        "SELECT id, provider, kind, current_generation, coalesce((SELECT p.path FROM source_paths p WHERE "
        "p.source_id = s.id AND p.generation = s.current_generation ORDER BY p.missing, p.path LIMIT 1), last_path) "
        f"FROM sources s WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id",
        sorted(ids),
    ).fetchall() if ids else []  # fmt: skip
    return [tuple(r) for r in rows]  # type: ignore[misc]


def _companions(db: Database, provider: str, thread_id: str) -> list[tuple[int, str, str, int, str]]:
    """Sources of the thread's provider that its adapter names as companions of the thread."""
    markers = get_adapter(provider).companion_markers(thread_id)
    if not markers:
        return []
    rows = db.execute(
        "SELECT id, provider, kind, current_generation, last_path FROM sources WHERE provider = ? AND ("
        + " OR ".join("instr(last_path, ?) > 0" for _ in markers) + ") ORDER BY id",
        (provider, *markers),
    ).fetchall()
    return [tuple(r) for r in rows]  # type: ignore[misc]


def _exact(db: Database, view: ThreadView, target: str, cwd: str | None) -> EmitOutcome | None:
    if target not in INSTALLABLE:
        return None  # canonical JSONL is always built from the model (a file may hold other threads)
    adapter = get_adapter(target)
    thread = view.thread
    ids = [thread.id, *view.descendants, *(view.ancestors if adapter.fork_reads_parent_files else [])]
    sources = thread_sources(db, ids)
    if not sources or any(s[1] != target or s[2] == "store" for s in sources):
        return None
    own_cwd = (thread.metadata or {}).get("cwd")
    moved = cwd is not None and cwd != own_cwd
    if moved and not adapter.relocates():
        raise ArchiveError(
            f"--cwd cannot be applied to a byte-exact {target} copy: its files name their folder inside; "
            f"add --rebuild-format to build the session for {cwd}"
        )
    files = EmittedFiles()
    for sid, _provider, _kind, gen, last_path in sources + _companions(db, target, thread.id):
        rel = adapter.install_path(plain_name(last_path), cwd if moved else None)
        if rel is not None:
            files.set_chunks(rel, _stored_chunks(db, sid, gen))
    if not files:
        return None  # the adapter writes none of its stored sources back (a database's documents): build
    notes = [f"filed under {cwd}: the files are byte for byte as archived (they still name {own_cwd} inside)"] if moved else []
    root = view.session
    hint = adapter.resume_hint(root, cwd or own_cwd)
    if root != thread.id and hint:
        hint += f"  # {thread.id} is a subagent thread: its client reaches it through the session above"
    return EmitOutcome(thread.id, target, True, files, notes=notes, resume_hint=hint, target_id=root)


def _stored_chunks(db: Database, source_id: int, generation: int):  # type: ignore[no-untyped-def]
    """One generation's bytes, reassembled line by line when read (``ingest.stored_file_bytes``)."""

    def chunks() -> Iterator[bytes]:
        for _o, _l, term, line in iter_stored_lines(db.conn, source_id, generation):
            yield line + b"\n" if term else line

    return chunks


def emit_thread(db: Database, ref: str, target: str, exact: bool = True,
                options: EmitOptions = EmitOptions(), configured: Mapping[str, str] | None = None) -> EmitOutcome:
    """Build the files for one thread (and its child threads) in the target format.

    ``configured``: what the user's own configuration of the target decides
    (``Adapter.configured_options``: Codex's model provider), used where ``options`` leave a
    field unset; the thread's own model stays when it comes from the target vendor."""
    if target not in TARGETS:
        raise ArchiveError(f"unknown target {target!r}; one of {', '.join(TARGETS)}")
    if target == MARKDOWN:
        from .render import thread_markdown

        view = load_view(db, ref)
        md = EmittedFiles()
        out = md.open(f"{_safe_name(view.thread.id)}.md")
        for line in thread_markdown(view, full=True):
            out.write(line.encode() + b"\n")
        return EmitOutcome(view.thread.id, target, False, md)
    adapter = get_adapter(target)
    # the thread's view (thread_view: a fork's inherited history, the parent's messages up to
    # the fork point, then its own, read a page at a time); messages are read only when the
    # target is built from them, not for a byte-exact copy
    view = load_view(db, ref, summaries=False)
    thread, thread_id = view.thread, view.thread.id
    if exact:
        outcome = _exact(db, view, target, options.cwd)
        if outcome is not None:
            return outcome
    messages = view.messages
    children = child_views(db, view)
    pages = [messages, *(c[1] for c in children)]
    applied = []
    for key, value in (configured or {}).items():
        own_model = key == "model" and (thread.metadata or {}).get("provider") == target and (thread.metadata or {}).get("model")
        if getattr(options, key, "") is None and not own_model:
            options = replace(options, **{key: value})
            applied.append(f"{key} {value!r} from the {target} configuration")
    default_cwd = adapter.needs_cwd and not options.cwd and not (thread.metadata or {}).get("cwd")
    if default_cwd:
        options = replace(options, cwd=os.getcwd())
    try:
        result: EmitResult = adapter.emit(thread, messages, children, options)
    except EmitError as e:
        raise ArchiveError(str(e)) from e
    full = sum(n for p in pages for n in p.replaced.values())
    if default_cwd:
        result.count("cwd: none archived, the current folder was used")
    if full:
        result.count("tool_result: full output from its companion file, not the transcript's preview", full)
    result.notes.extend(applied)
    root = _root_name(target, {}, Path("/")) if target in INSTALLABLE else None
    files = result.files
    for rel in list(files):
        first = Path(rel).parts[0]
        files.move(rel, rel if root is None or first == root.name else str(Path(root.name) / rel))
    return EmitOutcome(
        thread_id, target, False, files, dict(result.counts), list(result.notes), result.resume_hint, result.thread_id
    )


def _safe_name(thread_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in thread_id)


def install_base(target: str, env: Mapping[str, str], home: Path) -> Path:
    return _root_name(target, env, home).parent


def install_files(outcome: EmitOutcome, env: Mapping[str, str], home: Path) -> list[Path]:
    """``--install``: the files under the vendor's home, then the rows its own index needs
    (``Adapter.install_registrations``) added where the index exists, noted where it does not."""
    base = install_base(outcome.target, env, home)
    written = write_files(outcome, base)
    for reg in get_adapter(outcome.target).install_registrations(outcome.files, base):
        outcome.notes.append(register(base / reg.database, reg.table, reg.row))
    return written


def register(database: Path, table: str, row: Mapping[str, Any]) -> str:
    """Add ``row`` to ``table`` of a client's database unless a row with its key is there;
    the client's own schema decides which columns are written. Returns what was done."""
    if not database.is_file():
        return f"{database}: not found; run the client once (it creates it), then emit --install again"
    conn = sqlite3.connect(database, timeout=10, isolation_level=None)
    try:
        cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
        if not cols:
            return f"{database}: no table {table}; the session is not registered"
        keys = [k for k in row if k in cols]
        cur = conn.execute(f'INSERT OR IGNORE INTO "{table}" ({", ".join(keys)}) VALUES ({", ".join("?" * len(keys))})',
                           [row[k] for k in keys])
        return f"{database}: {table} row {'added' if cur.rowcount else 'already there'}"
    except sqlite3.Error as e:
        return f"{database}: not registered ({e})"
    finally:
        conn.close()


def write_files(outcome: EmitOutcome, base: Path) -> list[Path]:
    """Write every file under ``base`` atomically; refuse (before writing anything) if any exists."""
    # normalised: a file beside the vendor's root folder is named through it ("sessions/../kimi.json")
    return _write_atomically(outcome, [(Path(os.path.normpath(base / rel)), rel) for rel in sorted(outcome.files)])


def write_file(outcome: EmitOutcome, path: Path) -> list[Path]:
    """Write the outcome's one file as ``path``, atomically, never over an existing file."""
    (rel,) = outcome.files
    return _write_atomically(outcome, [(path, rel)])


def _merged(outcome: EmitOutcome, targets: list[tuple[Path, str]]) -> dict[Path, bytes]:
    """The existing files the target's adapter merges the emitted one into (an index that
    must name the session: ``Adapter.merge_installed``), as they will be written."""
    if outcome.target == MARKDOWN:
        return {}
    adapter = get_adapter(outcome.target)
    out = {}
    for path, rel in targets:
        if path.is_file() and not path.is_symlink():
            merged = adapter.merge_installed(rel, path.read_bytes(), b"".join(file_chunks(outcome.files, rel)))
            if merged is not None:
                out[path] = merged
    return out


def _write_atomically(outcome: EmitOutcome, targets: list[tuple[Path, str]]) -> list[Path]:
    merged = _merged(outcome, targets)
    existing = [str(p) for p, _ in targets if (p.exists() or p.is_symlink()) and p not in merged]
    if existing:
        raise ArchiveError("refusing to overwrite: " + ", ".join(existing))
    written = []
    for path, rel in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "wb") as f:
                for chunk in [merged[path]] if path in merged else file_chunks(outcome.files, rel):
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            if path in merged:
                os.replace(tmp, path)  # the user's index, with the session added
            else:
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
