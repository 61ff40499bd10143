"""Discovery, source identity, offsets, generations and transactions: the ingest engine.

Invariants (DESIGN.md; each has a test in tests/test_ingest*.py):

* **Idempotent.** A file whose size, mtime and inode are unchanged is not opened again
  (unless it ended in a torn line that may now be taken), and re-reading committed bytes
  never adds rows: every row is keyed by ``(source, generation, offset)``.
* **Incremental = whole.** Only complete lines are consumed; a torn last line waits for a
  later run (or is taken once the file has been idle ``idle_seconds`` and it parses). The
  parser's state is saved with the offset, so a file read in k pieces yields the rows of
  one read.
* **Crash-safe.** Lines, the rows derived from them, the new offset and the parser state
  are committed in one transaction per batch.
* **Lossless.** Every consumed line is stored byte for byte (compressed) in
  ``source_lines``; ``restore`` writes any generation back. A file whose committed bytes
  no longer match (shorter, last committed line changed, or a new first line at a known
  path) becomes a new generation read from 0; older generations stay.
* **Identity by content, session and path history.** A line file continues a source
  whose first line it shares (``provider + sha256(first line)``; snapshots: the adapter's
  path key) when its bytes continue one of that source's generations and it is the same
  file: read at the same path, or the source's other paths are gone (moved, archived), or
  one has the same session key (``Adapter.session_key``), or (keys unknown) it repeats
  every committed byte past the first line (a copy). A file that continues an *older*
  generation (clm's ``.bak``) extends that one. Two files that exist at once with different
  session keys are two sources, even when one's bytes begin with all of the other's
  (``Engine._choose_generation``, ``archive/identity.py``); thread ids are namespaced by
  vendor where two vendors use one (``identity.ThreadNames``).
* **Nothing silent.** A line that yields no row gets an ``unexplained`` report; a blank
  line a ``skipped`` one; a parser exception an ``adapter_error``; unreadable files,
  broken links and link loops are listed in the run's problems.
* **A bad line costs only itself.** Values the database cannot hold are tamed in the
  line's rows (``projection.tame_rows``, an ``invalid`` report); a line longer than the
  limit is stored raw in pieces and reported ``refused``, never held whole in memory
  (``LongLine``); an unreadable file or folder fails the run (exit 1) but not the others;
  SQLite failing to write ends the run as ``failed`` with one message (``Engine.guard``).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import itertools
import os
import sqlite3
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

import orjson
from sqlite_utils import Database

from . import forget, records, secrets
from .db import ArchiveError
from .identity import ThreadNames, same_session
from .lines import Codec, iter_stored_lines, iter_stored_spans
from .derived import refresh as refresh_derived
from .projection import Projector, dumps, index_text, needs_taming, resolve_origins, tame_rows
from .unread import Unclaimed, find_unread
from .vendors import VENDORS
from .vendors import get as get_adapter
from .vendors.base import (
    ADAPTER_ERROR,
    LINES, PROMPT_HISTORY, SIDE_FILE,
    RECORDS,
    REFUSED,
    SKIPPED,
    SNAPSHOT,
    UNEXPLAINED,
    Adapter,
    Report,
    Row,
    SourceInfo,
    loads_line,
    stable_id,
)

CHUNK = 1 << 20
BATCH_LINES = 5000
BATCH_BYTES = 2 << 20  # with the parsed rows a batch costs several times this in memory
# Batches of several files share one transaction, committed every COMMIT_SECONDS or
# COMMIT_BYTES. One commit per file wrote the hot index pages again for every file (4.3 of
# 21.8 s on a 100 MB corpus of 495 files). Every batch is whole when written (lines, rows,
# offset and parser state together), so a file that fails between batches leaves a
# consistent prefix that the next run continues; a failure inside a batch rolls the whole
# transaction back. A crash loses at most the uncommitted seconds, read again next run.
# (A savepoint per file, to undo a failing file alone, made SQLite copy every page first
# touched in it to the sub-journal: the 1 GB first ingest went from 217 to 293 s.)
COMMIT_SECONDS = 5.0
COMMIT_BYTES = 256 << 20
# Connection settings while ingesting: an 8 MiB page cache and 2 MiB batches keep peak RSS
# under 100 MB with 6 MB lines (16 MiB and 4 MiB: 105 -> 92 MB on a 300 MB corpus, 5% slower);
# temp tables (the pending blocks) in a temporary file, not in memory (the 629 MB session
# alone: 96.6 -> 89.4 MB, same time); few WAL checkpoints: every checkpoint copies
# the hot index and FTS pages again, so letting the WAL grow to 512 MiB before one made a
# first ingest ~10% faster (100 MB corpus: 16.3 s -> 14.5 s including the final checkpoint).
# journal_size_limit gives the disk back once a checkpoint has emptied the WAL.
_INGEST_PRAGMAS = (
    "cache_size = -8192",
    "temp_store = FILE",
    "wal_autocheckpoint = 131072",
    "journal_size_limit = 67108864",
)
DEFAULT_IDLE_SECONDS = 3600
HEAD_BYTES = 64 << 10
# Lines longer than this are refused: stored raw in pieces (never whole in memory) and
# reported, not parsed. A 200 MB line took 1.6 GB of RSS to parse; a 13 KB .jsonl.zst that
# inflates to 400 MB without a newline took 857 MB, paid again every run (issue 16).
DEFAULT_MAX_LINE = 64 << 20
MAX_LINE_ENV = "SESH_ARCHIVE_MAX_LINE"
MIN_MAX_LINE = 1024
# A line growing past SPILL bytes is scanned to its end without keeping its bytes, then
# read again whole if it is within the limit after all (lines that long are rare; holding
# up to the limit would cost its 64 MB in every run that meets one).
SPILL = 8 << 20
PIECE = 4 << 20  # a refused line is stored in chunks of this size (at least two)


class IngestLocked(ArchiveError):
    """Another ingest holds the lock."""


class ArchiveWriteError(ArchiveError):
    """SQLite could not write (disk full, I/O error): the run is marked failed; what was
    committed before stays, and the next run continues from there."""


# problems listed after a run; the unreadable ones fail it (exit 1): something on disk was
# not archived
UNREADABLE = "unreadable"
UNREADABLE_FOLDER = "unreadable folder"
VANISHED = "vanished during ingest"
# SQLite result codes (primary, the low byte) that mean the database could not be written:
# BUSY, LOCKED, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, PROTOCOL, NOTADB
_WRITE_FAILURES = {5, 6, 8, 10, 11, 13, 14, 15, 26}


# ---------------------------------------------------------------- options and summary


@dataclass
class IngestOptions:
    providers: tuple[str, ...] = ()
    idle_seconds: float = DEFAULT_IDLE_SECONDS
    batch_lines: int = BATCH_LINES
    batch_bytes: int = BATCH_BYTES
    commit_seconds: float = COMMIT_SECONDS
    commit_bytes: int = COMMIT_BYTES
    env: Mapping[str, str] | None = None
    progress: Callable[[str, int], None] | None = None  # (path, bytes read so far in this run)
    # seconds per phase (read, parse, compress, insert, fts, commit), added to when given;
    # None (the default) costs nothing. scripts/bench.py reads it.
    timings: dict[str, float] | None = None
    # lines longer than this many bytes are stored raw and reported ``refused``, not parsed;
    # None: $SESH_ARCHIVE_MAX_LINE (bytes, or with a K/M/G suffix), else DEFAULT_MAX_LINE
    max_line_bytes: int | None = None
    # scan new blocks for secrets before each commit (archive/secrets.py); off, the next
    # run with it on scans what was skipped (scripts/bench.py --no-secrets measures the cost)
    scan_secrets: bool = True


def parse_size(text: str) -> int:
    """``"67108864"``, ``"64M"``, ``"64MB"``, ``"1G"`` -> bytes (binary multiples)."""
    t = text.strip().upper().removesuffix("B")
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    try:
        return int(float(t[:-1] if mult > 1 else t) * mult)
    except ValueError:
        raise ArchiveError(f"not a size: {text!r} (bytes, or with a K, M or G suffix)") from None


def max_line_bytes(options: IngestOptions, env: Mapping[str, str]) -> int:
    if options.max_line_bytes is not None:
        n = options.max_line_bytes
    elif env.get(MAX_LINE_ENV):
        n = parse_size(env[MAX_LINE_ENV])
    else:
        n = DEFAULT_MAX_LINE
    if n < MIN_MAX_LINE:
        raise ArchiveError(f"line limit {n} is below the minimum of {MIN_MAX_LINE} bytes")
    return n


PHASES = ("read", "parse", "compress", "insert", "derived", "fts", "secrets", "commit")


def _lap(timings: dict[str, float], phase: str, since: float) -> float:
    now = time.perf_counter()
    timings[phase] = timings.get(phase, 0.0) + now - since
    return now


def _timed_lines(lines: Iterable[tuple[int, bytes]], timings: dict[str, float]) -> Iterator[tuple[int, bytes]]:
    it = iter(lines)
    while True:
        t = time.perf_counter()
        item = next(it, None)
        _lap(timings, "read", t)
        if item is None:
            return
        yield item


@dataclass
class Summary:
    command: str = "ingest"
    files_seen: int = 0
    files_changed: int = 0
    bytes_read: int = 0
    lines: int = 0
    messages_added: int = 0
    reports: Counter[str] = field(default_factory=Counter)
    problems: list[dict[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    unread: list[dict[str, Any]] | None = None  # folders of sessions not read, when every root was walked (archive/unread.py)
    failed: int = 0
    elapsed: float = 0.0
    run_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "run_id": self.run_id,
            "files_seen": self.files_seen,
            "files_changed": self.files_changed,
            "bytes_read": self.bytes_read,
            "lines": self.lines,
            "messages_added": self.messages_added,
            "reports": dict(sorted(self.reports.items())),
            "problems": self.problems,
            "warnings": self.warnings,
            "unread": self.unread or [],
            "failed": self.failed,
            "elapsed_seconds": round(self.elapsed, 3),
        }

    def line(self) -> str:
        reports = ", ".join(f"{k} {v}" for k, v in sorted(self.reports.items())) or "none"
        return (
            f"{self.command}: {self.files_seen} files seen, {self.files_changed} changed, "
            f"{self.bytes_read:,} bytes, {self.lines:,} lines, {self.messages_added:,} messages added; "
            f"reports: {reports}; {len(self.problems)} problems, {len(self.warnings)} warnings; "
            f"{self.elapsed:.2f}s"
        )


# ---------------------------------------------------------------- discovery


@dataclass(frozen=True)
class Candidate:
    path: Path
    adapter: Adapter
    kind: str


def _walk(root: Path, problems: list[dict[str, str]]) -> Iterator[str]:
    """Paths of the files below root, following links, reporting broken links and link
    loops. Strings, not Paths: a nightly rerun walks every file, and a Path per file was a
    third of a no-op rerun."""
    seen_dirs: set[tuple[int, int]] = set()
    stack = [str(root)]
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d)
            if (st.st_dev, st.st_ino) in seen_dirs:
                problems.append({"path": d, "problem": "link loop"})
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except FileNotFoundError:
            # removed since its parent was listed (a vendor's cleanup): not a failure
            problems.append({"path": d, "problem": VANISHED})
            continue
        except OSError as e:
            # the files below it are not archived: a failure, as for an unreadable file
            problems.append({"path": d, "problem": UNREADABLE_FOLDER, "detail": str(e)})
            continue
        subdirs = []
        for e in entries:
            p = e.path
            try:
                if e.is_dir(follow_symlinks=True):
                    subdirs.append(p)
                elif e.is_file(follow_symlinks=True):
                    yield p
                elif e.is_symlink():
                    problems.append({"path": p, "problem": "broken link"})
            except OSError as err:  # ELOOP on a self-referencing link
                problems.append({"path": p, "problem": "link loop", "detail": str(err)})
        stack.extend(reversed(subdirs))


def _adapters(providers: Iterable[str]) -> list[Adapter]:
    providers = tuple(providers)
    if not providers:
        return list(VENDORS)
    out = []
    for name in providers:
        try:
            out.append(get_adapter(name))
        except KeyError:
            raise ArchiveError(f"unknown provider {name!r}; known: {', '.join(a.name for a in VENDORS)}")
    return out


def discover(
    paths: Iterable[str | os.PathLike[str]] | None,
    adapters: list[Adapter],
    env: Mapping[str, str],
    problems: list[dict[str, str]],
    unchanged: Callable[[str], bool] | None = None,
    unclaimed: Unclaimed | None = None,
) -> Iterator[Candidate]:
    """Candidates from explicit paths (files or folders), or from each vendor's default roots.
    A path for which ``unchanged`` says True is passed over before any work (no adapter, no
    read of its head); a file under a root that its adapter does not take goes to ``unclaimed``."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    seen: set[str] = set()

    def passed_over(path: str) -> bool:
        if path in seen:
            return True
        if unchanged is not None and unchanged(path):
            seen.add(path)
            return True
        return False

    def emit(p: Path, a: Adapter, kind: str) -> Iterator[Candidate]:
        # walks start from absolute roots, so only a path given by hand needs abspath
        key = str(p) if p.is_absolute() else os.path.abspath(p)
        if key not in seen:
            seen.add(key)
            yield Candidate(p if p.is_absolute() else Path(key), a, kind)

    if not paths:
        for a in adapters:
            for root in [*a.default_roots(env, home), *a.side_roots(env, home)]:  # a side root may be a file
                root = Path(os.path.abspath(root))
                if not root.exists():
                    continue
                for s in _walk(root, problems) if root.is_dir() else [str(root)]:
                    if passed_over(s):
                        continue
                    p = Path(s)
                    kind = a.classify(p)
                    if kind:
                        yield from emit(p, a, kind)
                    elif unclaimed is not None:
                        unclaimed.add(a, root, s)
        return
    for given in paths:
        p = Path(os.path.abspath(given))
        if p.is_dir():
            for s in _walk(p, problems):
                if passed_over(s):
                    continue
                f = Path(s)
                picked = _pick(f, adapters, by_content_only=False)
                if picked is not None:
                    yield from emit(f, *picked)
        elif p.is_file():
            if passed_over(str(p)):
                continue
            picked = _pick(p, adapters, by_content_only=True)
            if picked is None:
                problems.append({"path": str(p), "problem": "no adapter recognises this file"})
                continue
            yield from emit(p, *picked)
        elif os.path.islink(p):
            problems.append({"path": str(p), "problem": "broken link"})
        else:
            problems.append({"path": str(p), "problem": "not found"})


def _pick(path: Path, adapters: list[Adapter], by_content_only: bool) -> tuple[Adapter, str] | None:
    """The adapter for a file outside the vendors' own folders. File names overlap between
    vendors (clm's ``<id>.jsonl`` matches a Claude ``<uuid>.jsonl``), so a name match is
    confirmed by the content; snapshots (binary companions) are taken by name alone. Failing
    that, any adapter that recognises the content; in a folder walk, the first name match
    (an empty or torn file waits its turn); a single file given by hand must be recognised."""
    claims = [(a, k) for a in adapters if (k := a.classify(path))]
    if not claims and not by_content_only and not path.name.endswith((".jsonl", ".jsonl.zst")):
        return None
    head = _head(path)
    for a, k in claims:
        if k in (SNAPSHOT, RECORDS) or (head is not None and a.detect(head)):
            return a, k
    if head:
        for a in adapters:
            if a.detect(head):
                return a, a.classify(path) or LINES
    if claims and not by_content_only:
        return claims[0]
    return None


def _head(p: Path) -> bytes | None:
    try:
        with _open_stream(p) as f:
            return f.read(HEAD_BYTES)
    except OSError:
        return None


# ---------------------------------------------------------------- reading


@contextmanager
def _open_stream(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes; ``.zst`` files (Codex archives) are decompressed transparently,
    and offsets then count decompressed bytes; a record's document (``records.DocumentPath``)
    is read from memory."""
    document = getattr(path, "document", None)
    if document is not None:
        yield io.BytesIO(document)
        return
    with open(path, "rb") as raw:
        if path.name.endswith(".zst"):
            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as z:
                yield z  # type: ignore[misc]
        else:
            yield raw


def _seek(f: BinaryIO, offset: int) -> None:
    try:
        f.seek(offset)
    except (io.UnsupportedOperation, OSError):
        remaining = offset
        while remaining > 0:
            got = f.read(min(CHUNK, remaining))
            if not got:
                break
            remaining -= len(got)


def generation_path(db: Database, source_id: int, generation: int) -> str | None:
    """The path a generation was last read at: a file found (not missing) first. A log and
    the ``.bak`` a compaction left (clm) are one source: the log holds the current
    generation, the ``.bak`` the older one, whichever of the two was seen last."""
    row = db.execute(
        "SELECT path FROM source_paths WHERE source_id = ? AND generation = ? ORDER BY missing, path LIMIT 1",
        (source_id, generation),
    ).fetchone()
    return row[0] if row else None


def plain_name(path: str) -> str:
    """Where a source's bytes are written back: the archive keeps a ``.zst`` file's lines
    decompressed (its offsets are the decompressed ones), so restore and emit write the
    plain ``.jsonl`` the vendor reads too, not decompressed bytes under a ``.zst`` name."""
    return path[: -len(".zst")] if path.endswith(".zst") else path


def _read_exactly(f: BinaryIO, n: int) -> bytes:
    """``n`` bytes, or fewer at the end (a decompressing reader may return short reads)."""
    parts = []
    while n > 0:
        got = f.read(min(n, CHUNK))
        if not got:
            break
        parts.append(got)
        n -= len(got)
    return b"".join(parts)


def _sha_range(path: Path, start: int, end: int) -> str:
    """sha256 of the bytes in [start, end), read a chunk at a time (a refused line may be
    hundreds of MB)."""
    h = hashlib.sha256()
    with _open_stream(path) as f:
        _seek(f, start)
        remaining = end - start
        while remaining > 0:
            got = f.read(min(CHUNK, remaining))
            if not got:
                break
            h.update(got)
            remaining -= len(got)
    return h.hexdigest()


def _read_range(path: Path, start: int, end: int) -> bytes:
    with _open_stream(path) as f:
        _seek(f, start)
        return f.read(end - start)


@dataclass(frozen=True)
class LongLine:
    """A line longer than the limit, found by scanning: its bytes are not held."""

    length: int
    terminated: bool


class _LineReader:
    """Complete lines from the current position; ``tail`` holds the bytes after the last
    newline. With ``max_line``, a line longer than that comes as a ``LongLine`` (and a tail
    that long as one), found without holding its bytes: memory stays within SPILL."""

    def __init__(self, f: BinaryIO, offset: int, path: Path | None = None, max_line: int | None = None) -> None:
        self.f = f
        self.offset = offset
        self.tail: bytes | LongLine = b""
        self.bytes_read = 0
        self.path = path
        self.max_line = max_line
        self.spill = min(SPILL, max_line) if max_line is not None else None

    def __iter__(self) -> Iterator[tuple[int, bytes | LongLine]]:
        pending: list[bytes] = []
        pending_len = 0
        pos = self.offset
        carry = b""
        limit = self.max_line if self.max_line is not None else sys.maxsize
        while True:
            if carry:
                chunk, carry = carry, b""
            else:
                chunk = self.f.read(CHUNK)
                if not chunk:
                    break
                self.bytes_read += len(chunk)
            parts = chunk.split(b"\n")
            if len(parts) > 1:
                first = parts[0]
                if pending:
                    pending.append(first)
                    first = b"".join(pending)
                    pending, pending_len = [], 0
                # a line read whole is still refused when over the limit (under SPILL + CHUNK)
                yield pos, first if len(first) <= limit else LongLine(len(first), True)
                pos += len(first) + 1
                for line in parts[1:-1]:
                    yield pos, line if len(line) <= limit else LongLine(len(line), True)
                    pos += len(line) + 1
            last = parts[-1]
            if not last:
                continue
            pending.append(last)
            pending_len += len(last)
            if self.spill is None or pending_len <= self.spill:
                continue
            # a long line: find its end without keeping its bytes
            pending = []
            length, terminated, carry = self._scan(pending_len)
            pending_len = 0
            assert self.max_line is not None and self.path is not None
            item: bytes | LongLine = (
                _read_range(self.path, pos, pos + length) if length <= self.max_line else LongLine(length, terminated)
            )
            if not terminated:
                self.tail, self.offset = item, pos
                return
            yield pos, item
            pos += length + 1
        self.tail = b"".join(pending)
        self.offset = pos

    def _scan(self, length: int) -> tuple[int, bool, bytes]:
        """Read on to the end of the current line: its length, whether a newline ended it,
        and the bytes read after that newline."""
        while True:
            chunk = self.f.read(CHUNK)
            if not chunk:
                return length, False, b""
            self.bytes_read += len(chunk)
            nl = chunk.find(b"\n")
            if nl >= 0:
                return length + nl, True, chunk[nl + 1 :]
            length += len(chunk)


def _parses(line: bytes) -> bool:
    try:
        loads_line(line)
        return True
    except orjson.JSONDecodeError:
        return False


# ---------------------------------------------------------------- the engine


@dataclass
class _Gen:
    source_id: int | None  # None until the first batch commits
    uid: str
    provider: str
    kind: str
    generation: int
    end_offset: int
    line_count: int
    state: dict[str, Any] | None
    fingerprint: str
    register_fingerprint: bool = False  # a known source seen with a new first line
    content_sha: str | None = None  # snapshots: sha256 of the document


class Engine:
    """Reads sources into the archive. One instance per command; holds the write lock's db."""

    def __init__(self, db: Database, options: IngestOptions | None = None, command: str = "ingest") -> None:
        self.conn = db.conn
        self.options = options or IngestOptions()
        self.codec = Codec()
        self.summary = Summary(command=command)
        self.projector = Projector(self.conn)
        self.names = ThreadNames(self.conn)  # vendor thread ids -> archive thread ids
        self.path_stats: dict[str, tuple[int, int, int, int, int]] = {}
        self.document_paths: set[str] = set()  # virtual paths of the documents read this run
        self.records_index: dict[str, list[tuple[str, Any]]] | None = None  # database path -> its documents' stats
        self.max_line = DEFAULT_MAX_LINE
        self._tx_started = 0.0
        self._tx_bytes = 0
        self._masking: _Gen | None = None  # the generation whose lines are masked (archive/forget.py)
        for pragma in _INGEST_PRAGMAS:
            self.conn.execute(f"PRAGMA {pragma}")

    # -- run bookkeeping
    def _start_run(self) -> None:
        self.conn.execute("UPDATE ingest_runs SET status = 'interrupted' WHERE status = 'running'")
        cur = self.conn.execute(
            "INSERT INTO ingest_runs (command, started_at, status) VALUES (?, ?, 'running')",
            (self.summary.command, datetime.now(timezone.utc).isoformat(timespec="seconds")),
        )
        self.summary.run_id = cur.lastrowid

    def _finish_run(self, started: float, status: str | None = None) -> None:
        s = self.summary
        if s.run_id is None:
            return  # interrupted before the run was recorded: nothing to close
        s.elapsed = time.monotonic() - started
        self.conn.execute(
            "UPDATE ingest_runs SET finished_at = ?, elapsed_seconds = ?, files_seen = ?, files_changed = ?, "
            "bytes_read = ?, lines = ?, messages_added = ?, reports = ?, problems = ?, status = ? WHERE id = ?",
            (
                datetime.now(timezone.utc).isoformat(timespec="seconds"), round(s.elapsed, 3), s.files_seen,
                s.files_changed, s.bytes_read, s.lines, s.messages_added, dumps(dict(s.reports)),
                dumps({"problems": s.problems, "warnings": s.warnings,
                       **({"unread": s.unread} if s.unread is not None else {})}),
                status or ("failed" if s.failed else "ok"), s.run_id,
            ),
        )  # fmt: skip

    def _end_interrupted(self, started: float) -> None:
        """Ctrl-C or SIGTERM: the run ends as ``interrupted`` with what it committed (the file
        loop commits its consistent batches before re-raising), never left ``running``."""
        try:
            self._rollback()
            self.summary.messages_added = self.projector.messages_added
            self._finish_run(started, status="interrupted")
        except sqlite3.Error:
            pass  # left running: the next run marks it interrupted, and readers cope with that

    @contextmanager
    def guard(self, started: float) -> Iterator[None]:
        """SQLite failing to write (``database or disk is full``, an I/O error) ends the
        command with one clear error and the run marked failed, not a traceback and a run
        left ``running``."""
        try:
            yield
        except sqlite3.DatabaseError as e:
            code = getattr(e, "sqlite_errorcode", None)
            if code is None or code & 0xFF not in _WRITE_FAILURES:
                raise  # a bug, not the disk: keep the traceback
            self._rollback()
            run = self.summary.run_id
            try:
                self.conn.execute(
                    "UPDATE ingest_runs SET status = 'failed', finished_at = ?, elapsed_seconds = ?, problems = ? "
                    "WHERE id = ?",
                    (datetime.now(timezone.utc).isoformat(timespec="seconds"), round(time.monotonic() - started, 3),
                     dumps({"problems": [*self.summary.problems, {"path": "", "problem": "database write failed",
                                                                  "detail": str(e)}]}), run),
                )  # fmt: skip
                marked = f"run {run} marked failed" if run is not None else "no run recorded"
            except sqlite3.Error:
                marked = f"run {run} left running; the next run marks it interrupted"
            raise ArchiveWriteError(
                f"cannot write the archive: {e} ({marked}; what was committed before is kept, the next run continues)"
            ) from None

    # -- public
    def ingest(self, paths: Iterable[str | os.PathLike[str]] | None = None) -> Summary:
        started = time.monotonic()
        with self.guard(started):
            try:
                return self._ingest(paths, started)
            except KeyboardInterrupt:
                self._end_interrupted(started)
                raise

    def _ingest(self, paths: Iterable[str | os.PathLike[str]] | None, started: float) -> Summary:
        env = self.options.env if self.options.env is not None else os.environ
        adapters = _adapters(self.options.providers)
        self.max_line = max_line_bytes(self.options, env)
        self._start_run()
        self.path_stats = {
            r[0]: tuple(r[1:]) for r in self.conn.execute(
                "SELECT path, size, mtime_ns, inode, pending, missing FROM source_paths"
            )
        }  # fmt: skip
        touched: set[int] = set()
        seen_paths: set[str] = set()

        def unchanged(path: str) -> bool:
            """Known, complete and with the same size, mtime and inode: nothing to read."""
            if not self._unchanged(path):
                return False
            index = self.records_index or {}
            if path in index:  # a database: each session it holds is a source, as a file is
                self.summary.files_seen += len(index[path])
            elif records.database_companion(path) not in index:  # a -wal/-shm: not a file read
                self.summary.files_seen += 1
            seen_paths.add(path)
            return True

        unclaimed = Unclaimed() if not paths and not self.options.providers else None
        for cand in discover(list(paths) if paths else None, adapters, env, self.summary.problems, unchanged, unclaimed):
            self.summary.files_seen += 1
            seen_paths.add(str(cand.path))
            try:
                sid = self._ingest_file(cand)
                self._maybe_commit()
                if sid is not None:
                    touched.add(sid)
                if self.options.progress is not None and cand.kind != RECORDS:  # (a database: per document)
                    self.options.progress(str(cand.path), self.summary.bytes_read)
            except FileNotFoundError:
                # the vendor deleted or moved it between the walk and the read (Claude Code's
                # cleanup, Codex archiving): not a failure, the next run sees where it went
                self.summary.problems.append({"path": str(cand.path), "problem": VANISHED})
            except OSError as e:
                self.summary.failed += 1
                self.summary.problems.append({"path": str(cand.path), "problem": UNREADABLE, "detail": str(e)})
            except BaseException:
                # interrupted between batches: what is written is consistent, keep it
                try:
                    self._commit_tx()
                except BaseException:
                    self._rollback()
                raise
        self._commit_tx()
        self.summary.failed += sum(1 for p in self.summary.problems if p["problem"] == UNREADABLE_FOLDER)
        if not paths:
            self._mark_missing(seen_paths | self.document_paths, {a.name for a in adapters})
            if unclaimed is not None:
                self.summary.unread = find_unread(env, unclaimed, seen_paths)
        self.conn.execute("BEGIN IMMEDIATE")
        if self.names.outranked:  # a vendor ranked first took a thread id: re-derive the other's rows
            from .rebuild import rederive_outranked  # it builds on the engine

            rederive_outranked(self)
        resolve_origins(self.conn)
        if self.options.scan_secrets:
            secrets.scan_new(self.conn)  # blocks a run without scanning left behind
        t = time.perf_counter()
        refresh_derived(self.conn)  # once a run: the file index and signals of the threads it wrote (derived.py)
        if self.options.timings is not None:
            _lap(self.options.timings, "derived", t)
        self.conn.execute("COMMIT")
        self._warn_empty(touched)
        self.summary.messages_added = self.projector.messages_added
        self._finish_run(started)
        # copy what the run wrote into the database file now; PASSIVE never waits for readers
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        return self.summary

    def _rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.projector.discard()
        self.names.discard()

    # -- transactions: several files' batches share one
    def _begin(self) -> None:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN IMMEDIATE")
            self._tx_started, self._tx_bytes = time.monotonic(), 0

    def _maybe_commit(self) -> None:
        o = self.options
        if self._tx_bytes >= o.commit_bytes or time.monotonic() - self._tx_started >= o.commit_seconds:
            self._commit_tx()

    def _commit_tx(self) -> None:
        if self.conn.in_transaction:
            tm = self.options.timings
            t = time.perf_counter()
            index_text(self.conn)
            if tm is not None:
                t = _lap(tm, "fts", t)
            if self.options.scan_secrets:
                secrets.scan_new(self.conn)
                if tm is not None:
                    t = _lap(tm, "secrets", t)
            self.conn.execute("COMMIT")
            if tm is not None:
                _lap(tm, "commit", t)

    # -- one file
    def _unchanged(self, path: str) -> bool:
        known = self.path_stats.get(path)
        if known is None:
            return self._records_unchanged(path)
        if known[3] or known[4]:  # pending bytes, or marked missing
            return False
        try:
            st = os.stat(path)
        except OSError:
            return False  # the read reports it
        return (st.st_size, st.st_mtime_ns, st.st_ino) == tuple(known[:3])

    def _ingest_file(self, cand: Candidate) -> int | None:
        """A new or changed file (discover passed over the unchanged ones)."""
        st = os.stat(cand.path)
        if cand.kind == SNAPSHOT:
            return self._ingest_snapshot(cand, st)
        if cand.kind == RECORDS:
            return self._ingest_records(cand, st)
        return self._ingest_lines(cand, st)

    def _records_unchanged(self, path: str) -> bool:
        """A database (``RECORDS``) whose documents were all read at its current signature
        (``records.signature``); its ``-wal``/``-shm`` files go with it (their changes are
        seen through it)."""
        if self.records_index is None:
            self.records_index = {}
            for p, stat in self.path_stats.items():
                base, sep, _ = p.rpartition("#")
                if sep and not stat[4]:
                    self.records_index.setdefault(base, []).append((p, stat))
        docs = self.records_index.get(path)
        if docs is None:
            base = records.database_companion(path)
            return base is not None and base in self.records_index and self._records_unchanged(base)
        try:
            sig = records.signature(Path(path))
        except OSError:
            return False
        if sig[1] == 0 or any(stat[3] or (stat[1], stat[2]) != (sig[1], sig[0]) for _p, stat in docs):
            return False
        self.document_paths.update(p for p, _stat in docs)
        return True

    def _ingest_records(self, cand: Candidate, st: os.stat_result) -> int | None:
        """A database (``RECORDS``): the adapter reads it read-only (``archive.readonly``)
        and gives one document of JSON lines per session (``Adapter.documents``); each is
        ingested as a line file at its virtual path, so identity, offsets, generations,
        restore and rebuild are those of files (and ``files_changed`` and the progress
        callback count documents). The database is read on every run (its WAL
        changes without its own mtime changing) unless neither it nor its WAL changed since
        every one of its documents was read (``_records_unchanged``); an unchanged document
        adds nothing."""
        inode, signature = records.signature(cand.path, cand.adapter)  # before the read: a later write changes it
        documents = records.read_documents(cand.adapter, cand.path)
        # "files seen" counts sources: the database (counted once by the walk) is its sessions
        self.summary.files_seen += len(documents) - 1
        last = None
        for doc in documents:
            path = records.DocumentPath(doc.path, doc.data)
            self.document_paths.add(doc.path)
            doc_st = records.DocumentStat(len(doc.data), st.st_mtime, signature, inode)
            last = self._ingest_lines(Candidate(path, cand.adapter, LINES), doc_st) or last  # type: ignore[arg-type]
            self._maybe_commit()
            if self.options.progress is not None:  # each document is a source, as a file is
                self.options.progress(doc.path, self.summary.bytes_read)
        return last

    def _lookup_source(self, provider: str, fingerprint: str) -> tuple[int, str, str] | None:
        return self.conn.execute(
            "SELECT s.id, s.uid, s.kind FROM source_fingerprints f JOIN sources s ON s.id = f.source_id "
            "WHERE f.provider = ? AND f.fingerprint = ? ORDER BY s.id LIMIT 1",
            (provider, fingerprint),
        ).fetchone()

    def _source_for_path(self, path: Path) -> tuple[int, str, str] | None:
        return self.conn.execute(
            "SELECT s.id, s.uid, s.kind FROM source_paths p JOIN sources s ON s.id = p.source_id WHERE p.path = ?",
            (str(path),),
        ).fetchone()

    def _ingest_lines(self, cand: Candidate, st: os.stat_result) -> int | None:
        path, adapter = cand.path, cand.adapter
        idle = (time.time() - st.st_mtime) >= self.options.idle_seconds
        with _open_stream(path) as f:
            first = _first_line(f, self.max_line)
        if first is None:
            return None
        fingerprint, terminated, line = first
        if not terminated and not (idle and (line is None or _parses(line))):
            return None  # no complete first line yet: nothing is recorded, the next run retries
        gen = self._choose_generation(adapter, fingerprint, path, st)
        return self._read_lines(cand, st, gen, idle)

    def _choose_generation(self, adapter: Adapter, fingerprint: str, path: Path, st: os.stat_result) -> _Gen:
        """The source and generation a line file's bytes continue, or a new generation (a
        file rewritten in place), or a new source.

        A first line alone does not make two files one source: two sessions can open with
        the same line (a leading summary record, a common context line). A file read at a
        path the source was not read at continues it only when the bytes continue one of
        its generations *and* it is the same file: the source's other paths are gone (moved,
        renamed, archived, copied from elsewhere), or one of them has the same session key (a
        rollout being archived, a log beside its ``.bak``). Where keys are unknown, a file that
        repeats every committed byte of more than the first line is a copy."""
        provider = adapter.name
        candidates = self.conn.execute(
            "SELECT s.id, s.uid FROM source_fingerprints f JOIN sources s ON s.id = f.source_id "
            "WHERE f.provider = ? AND f.fingerprint = ? ORDER BY s.id",
            (provider, fingerprint),
        ).fetchall()
        at_path = self._source_for_path(path)
        if at_path is not None and any(c[0] == at_path[0] for c in candidates):
            # the source last read here: its bytes continue, or it was rewritten in place
            return self._continued(at_path[0], at_path[1], provider, fingerprint, path, st) or self._next_generation(
                at_path[0], at_path[1], provider, fingerprint, register=False
            )
        for source_id, uid in candidates:
            gen = self._continued(source_id, uid, provider, fingerprint, path, st)
            if gen is not None and self._same_file(gen, adapter, path):
                return gen
        if at_path is not None:  # a known path with a new first line: rewritten in place
            return self._next_generation(at_path[0], at_path[1], provider, fingerprint, register=True)
        uid = self._new_uid(provider, fingerprint, adapter.session_key(path), path)
        return _Gen(None, uid, provider, LINES, 1, 0, 0, None, fingerprint)

    def _continued(self, source_id: int, uid: str, provider: str, fingerprint: str, path: Path,
                   st: os.stat_result) -> _Gen | None:  # fmt: skip
        """The generation of the source whose last committed line the file repeats at the
        same offset (newest first), or None."""
        compressed = path.name.endswith(".zst")
        for g, end, count, last_off, last_sha, state in self.conn.execute(
            "SELECT generation, end_offset, line_count, last_line_offset, last_line_sha, parser_state "
            "FROM generations WHERE source_id = ? ORDER BY generation DESC",
            (source_id,),
        ).fetchall():
            if (not compressed and st.st_size < end) or last_off is None:
                continue
            if _sha_range(path, last_off, end) == last_sha:
                return _Gen(source_id, uid, provider, LINES, g, end, count,
                            orjson.loads(state) if state else None, fingerprint)  # fmt: skip
        return None

    def _next_generation(self, source_id: int, uid: str, provider: str, fingerprint: str, register: bool) -> _Gen:
        top = self.conn.execute("SELECT max(generation) FROM generations WHERE source_id = ?", (source_id,)).fetchone()[0]
        return _Gen(source_id, uid, provider, LINES, (top or 0) + 1, 0, 0, None, fingerprint, register)

    def _same_file(self, gen: _Gen, adapter: Adapter, path: Path) -> bool:
        """Is the file at ``path``, whose bytes continue ``gen``, the file ``gen`` was read
        from (moved, archived, copied), rather than another that shares its beginning?"""
        others = [r[0] for r in self.conn.execute(
            "SELECT path FROM source_paths WHERE source_id = ? AND path != ?", (gen.source_id, str(path))
        )]  # fmt: skip
        live = [p for p in others if os.path.exists(p)]
        if not live:
            return True  # moved, renamed, archived: the old path is gone
        same = same_session(adapter, path, live)
        if same is not None:
            return same
        # no session keys: the same only as a copy of more than the shared first line
        return gen.line_count > 1 and self._repeats_generation(gen, path)

    def _repeats_generation(self, gen: _Gen, path: Path) -> bool:
        assert gen.source_id is not None
        with _open_stream(path) as f:
            for _offset, _length, term, line in iter_stored_lines(self.conn, gen.source_id, gen.generation):
                want = line + (b"\n" if term else b"")
                if _read_exactly(f, len(want)) != want:
                    return False
        return True

    def _new_uid(self, provider: str, fingerprint: str, key: str | None, path: Path) -> str:
        """``provider + fingerprint`` as always; a second source opening with the same line
        adds its session key (or path) so that the uid stays unique."""
        tries = [(provider, fingerprint)]
        if key is not None:
            tries.append((provider, fingerprint, key))
        tries.append((provider, fingerprint, str(path)))
        tries += [(provider, fingerprint, str(path), n) for n in range(2, 100)]
        for parts in tries:
            uid = stable_id(*parts)
            if self.conn.execute("SELECT 1 FROM sources WHERE uid = ?", (uid,)).fetchone() is None:
                return uid
        raise ArchiveError(f"{path}: no free source id")

    def _read_lines(self, cand: Candidate, st: os.stat_result, gen: _Gen, idle: bool) -> int | None:
        path, adapter = cand.path, cand.adapter
        parser = adapter.parser(SourceInfo(gen.uid, adapter.name, self._parser_path(gen, path), gen.generation, LINES), gen.state)
        batch: list[tuple[int, bytes, int, list[Row]]] = []
        batch_bytes = 0
        tm = self.options.timings
        feed = self._feed if tm is None else self._timed_feed
        changed = self._terminate_idle_tail(gen, path)
        mask = forget.incoming_masker(self.conn, gen.source_id)  # values forgotten from this source stay out
        self._masking = gen if mask is not None else None
        with _open_stream(path) as f:
            _seek(f, gen.end_offset)
            reader = _LineReader(f, gen.end_offset, path, self.max_line)
            for offset, line in reader if tm is None else _timed_lines(reader, tm):
                if type(line) is LongLine:
                    if batch:
                        self._write(gen, parser, batch, path, st, final=False)
                        batch, batch_bytes = [], 0
                    self._write_long(gen, parser, path, offset, line)
                    changed = True
                    continue
                assert type(line) is bytes
                if mask is not None:
                    line = mask(line)
                batch.append((offset, line, 1, feed(parser, offset, line)))
                batch_bytes += len(line) + 1
                if len(batch) >= self.options.batch_lines or batch_bytes >= self.options.batch_bytes:
                    self._write(gen, parser, batch, path, st, final=False)
                    changed = True
                    batch, batch_bytes = [], 0
            tail = reader.tail
            self.summary.bytes_read += reader.bytes_read
        if type(tail) is LongLine:
            pending = tail.length
            if idle:  # refused as any long line, kept without its (absent) newline
                if batch:
                    self._write(gen, parser, batch, path, st, final=False)
                    batch, batch_bytes = [], 0
                self._write_long(gen, parser, path, reader.offset, tail)
                changed = True
                pending = 0
        else:
            assert type(tail) is bytes
            pending = len(tail)
            if tail and idle and _parses(tail):
                tail = tail if mask is None else mask(tail)
                batch.append((reader.offset, tail, 0, self._feed(parser, reader.offset, tail)))
                pending = 0
        if mask is not None and mask.lines_masked:  # the stored bytes differ from the file's: never silently
            self.summary.warnings.append(f"{path}: {mask.lines_masked} line(s) held a value `forget` removed: stored masked, so they differ from the file")
        if batch or gen.source_id is None or changed:
            self._write(gen, parser, batch, path, st, final=True, pending=pending)
            changed = True
        else:
            self._record_path(gen, path, st, pending=pending)
        if changed:
            self.summary.files_changed += 1
        return gen.source_id

    def _parser_path(self, gen: _Gen, path: Path) -> str:
        """The path parsers see: the source's first path, at ingest and at rebuild alike. A
        parser may take ids from the file name, and a moved or copied file must not change
        them (rebuild = ingest)."""
        if gen.source_id is not None:
            row = self.conn.execute("SELECT first_path FROM sources WHERE id = ?", (gen.source_id,)).fetchone()
            if row is not None and row[0]:
                return str(row[0])
        return str(path)

    def _terminate_idle_tail(self, gen: _Gen, path: Path) -> bool:
        """A last line taken without its newline (the file was idle) whose newline has come
        since: mark it terminated, as a whole ingest would have stored it, rather than read
        the newline as an empty line of its own. The line's chunk keeps its bytes; the row
        says where its newline is."""
        if gen.source_id is None or gen.end_offset == 0:
            return False
        row = self.conn.execute(
            "SELECT l.offset, l.length FROM generations g JOIN source_lines l ON l.source_id = g.source_id "
            "AND l.generation = g.generation AND l.offset = g.last_line_offset "
            "WHERE g.source_id = ? AND g.generation = ? AND l.terminated = 0",
            (gen.source_id, gen.generation),
        ).fetchone()
        if row is None or _read_range(path, gen.end_offset, gen.end_offset + 1) != b"\n":
            return False
        offset, length = row
        self._begin()
        try:
            self.conn.execute(
                "UPDATE source_lines SET terminated = 1 WHERE source_id = ? AND generation = ? AND offset = ?",
                (gen.source_id, gen.generation, offset),
            )
            gen.end_offset = offset + length + 1
            self.conn.execute(
                "UPDATE generations SET end_offset = ?, last_line_sha = ? WHERE source_id = ? AND generation = ?",
                (gen.end_offset, _sha_range(path, offset, gen.end_offset), gen.source_id, gen.generation),
            )  # fmt: skip
        except BaseException:
            self._rollback()
            raise
        return True

    def _timed_feed(self, parser: Any, offset: int, line: bytes) -> list[Row]:
        t = time.perf_counter()
        rows = self._feed(parser, offset, line)
        assert self.options.timings is not None
        _lap(self.options.timings, "parse", t)
        return rows

    def _feed(self, parser: Any, offset: int, line: bytes) -> list[Row]:
        self.summary.lines += 1
        if not line.strip():
            rows: list[Row] = [Report(SKIPPED, "blank line")]
        else:
            try:
                rows = list(parser.feed(offset, line))
            except Exception as e:  # a parser bug must not lose the rest of the file
                tb = traceback.format_exception_only(type(e), e)[-1].strip()
                rows = [Report(ADAPTER_ERROR, type(e).__name__, tb)]
            if not rows:
                rows = [Report(UNEXPLAINED, "parser yielded nothing for this line")]
            elif needs_taming(line, rows):
                rows = tame_rows(rows)  # a value the database cannot hold costs its line only
        reports = self.summary.reports
        for r in rows:
            if isinstance(r, Report):
                reports[r.kind] += 1
        return rows

    def _ensure_source(self, gen: _Gen, path: Path) -> None:
        if gen.source_id is None:
            cur = self.conn.execute(
                "INSERT INTO sources (uid, provider, kind, current_generation, first_path, last_path) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (gen.uid, gen.provider, gen.kind, gen.generation, str(path), str(path)),
            )
            gen.source_id = cur.lastrowid
            self.conn.execute(
                "INSERT INTO source_fingerprints VALUES (?, ?, ?)", (gen.provider, gen.fingerprint, gen.source_id)
            )
        elif gen.register_fingerprint:
            self.conn.execute(
                "INSERT OR IGNORE INTO source_fingerprints VALUES (?, ?, ?)",
                (gen.provider, gen.fingerprint, gen.source_id),
            )
            gen.register_fingerprint = False

    def _write(
        self,
        gen: _Gen,
        parser: Any,
        batch: list[tuple[int, bytes, int, list[Row]]],
        path: Path,
        st: os.stat_result,
        final: bool,
        pending: int = 0,
    ) -> None:
        """Store one batch of lines with the rows derived from them and the new offset and
        parser state; a failure part-way rolls the open transaction back."""
        conn = self.conn
        tm = self.options.timings
        t = time.perf_counter() if tm is not None else 0.0
        self._begin()
        try:
            self._ensure_source(gen, path)
            assert gen.source_id is not None
            sid, g = gen.source_id, gen.generation
            if batch:
                first_off = batch[0][0]
                last_off, last_line, last_term, _ = batch[-1]
                end_off = last_off + len(last_line) + last_term
                codec, data = self.codec.pack(
                    b"".join(line + b"\n" if terminated else line for _o, line, terminated, _r in batch)
                )
                if tm is not None:
                    t = _lap(tm, "compress", t)
                chunk_id = conn.execute(
                    "INSERT INTO source_chunks (source_id, generation, first_offset, end_offset, codec, data) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (sid, g, first_off, end_off, codec, data),
                ).lastrowid
                del data
                conn.executemany(
                    "INSERT INTO source_lines (source_id, generation, offset, length, terminated, chunk_id) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(sid, g, offset, len(line), terminated, chunk_id) for offset, line, terminated, _r in batch],
                )
            apply = self.projector.apply
            for offset, _line, _t, rows in batch:
                apply(gen.provider, (sid, g, offset), self.names.map_rows(gen.provider, rows))
            if tm is not None:
                t = _lap(tm, "insert", t)
            self.projector.flush()
            if tm is not None:
                t = _lap(tm, "insert", t)
            self.projector.refold()
            if batch:
                self._tx_bytes += end_off - first_off
                gen.end_offset = end_off
                gen.line_count += len(batch)
                last_sha = hashlib.sha256(last_line + (b"\n" if last_term else b"")).hexdigest()
                if self._masking is gen:  # the file's bytes, not the masked ones: the file continues
                    last_sha = _sha_range(path, last_off, end_off)
                conn.execute(
                    "INSERT INTO generations (source_id, generation, end_offset, line_count, last_line_offset, "
                    "last_line_sha, content_sha256, parser_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT(source_id, generation) DO UPDATE SET end_offset = excluded.end_offset, "
                    "line_count = excluded.line_count, last_line_offset = excluded.last_line_offset, "
                    "last_line_sha = excluded.last_line_sha, parser_state = excluded.parser_state",
                    (sid, g, gen.end_offset, gen.line_count, last_off, last_sha, gen.content_sha,
                     dumps(parser.state())),
                )
            conn.execute(
                "UPDATE sources SET current_generation = max(current_generation, ?), last_path = ? WHERE id = ?",
                (g, str(path), sid),
            )
            if final:
                self._record_path(gen, path, st, pending=pending)
            if tm is not None:
                t = _lap(tm, "insert", t)
        except BaseException:
            self._rollback()
            raise
        if not final:
            self._maybe_commit()  # a long file commits as it goes

    def _write_long(self, gen: _Gen, parser: Any, path: Path, offset: int, long: LongLine) -> None:
        """Store a line over the limit raw, in pieces of its own (read again from the file, a
        piece at a time: never whole in memory), with a ``refused`` report and the new offset,
        in the open transaction. The parser never sees it; its state is unchanged."""
        n, term = long.length, int(long.terminated)
        piece = min(PIECE, (n + 1) // 2)  # two chunks at least: lines.py tells a refused line so
        tm = self.options.timings
        t = time.perf_counter()
        self._begin()
        try:
            self._ensure_source(gen, path)
            assert gen.source_id is not None
            sid, g = gen.source_id, gen.generation
            h = hashlib.sha256()
            first_chunk = None
            with _open_stream(path) as f:
                _seek(f, offset)
                done = 0
                while done < n:
                    data = _read_exactly(f, min(piece, n - done))
                    last = done + len(data) == n
                    if not data or b"\n" in data or (last and term and _read_exactly(f, 1) != b"\n"):
                        raise OSError(f"{path} changed while a long line was read; it is read again next run")
                    if last and term:
                        data += b"\n"
                    h.update(data)
                    codec, packed = self.codec.pack(data)
                    cid = self.conn.execute(
                        "INSERT INTO source_chunks (source_id, generation, first_offset, end_offset, codec, data) "
                        "VALUES (?, ?, ?, ?, ?, ?)",
                        (sid, g, offset + done, offset + done + len(data), codec, packed),
                    ).lastrowid
                    del packed
                    first_chunk = first_chunk or cid
                    done = min(done + len(data), n)
            self.conn.execute(
                "INSERT INTO source_lines (source_id, generation, offset, length, terminated, chunk_id) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (sid, g, offset, n, term, first_chunk),
            )
            if tm is not None:
                t = _lap(tm, "compress", t)
            self.projector.apply(gen.provider, (sid, g, offset), self._refused(n))
            gen.end_offset = offset + n + term
            gen.line_count += 1
            self.conn.execute(
                "INSERT INTO generations (source_id, generation, end_offset, line_count, last_line_offset, "
                "last_line_sha, content_sha256, parser_state) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(source_id, generation) DO UPDATE SET end_offset = excluded.end_offset, "
                "line_count = excluded.line_count, last_line_offset = excluded.last_line_offset, "
                "last_line_sha = excluded.last_line_sha, parser_state = excluded.parser_state",
                (sid, g, gen.end_offset, gen.line_count, offset, h.hexdigest(), gen.content_sha, dumps(parser.state())),
            )
            self.conn.execute(
                "UPDATE sources SET current_generation = max(current_generation, ?), last_path = ? WHERE id = ?",
                (g, str(path), sid),
            )
            self._tx_bytes += n + term
            if tm is not None:
                _lap(tm, "insert", t)
        except BaseException:
            self._rollback()
            raise
        self._maybe_commit()

    def _refused(self, length: int) -> list[Row]:
        """The rows of a line over the limit, at ingest and rebuild alike (from its length)."""
        self.summary.lines += 1
        self.summary.reports[REFUSED] += 1
        return [Report(REFUSED, "line too long", f"{length:,} bytes; kept raw in the source layer, not parsed")]

    def _record_path(self, gen: _Gen, path: Path, st: os.stat_result, pending: int) -> None:
        if gen.source_id is None:
            return  # nothing committed yet: the file is retried next run
        self.conn.execute(
            "INSERT INTO source_paths (path, source_id, generation, size, mtime_ns, inode, pending, missing) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT(path) DO UPDATE SET source_id = excluded.source_id, "
            "generation = excluded.generation, size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "inode = excluded.inode, pending = excluded.pending, missing = 0",
            (str(path), gen.source_id, gen.generation, st.st_size, st.st_mtime_ns, st.st_ino, pending),
        )

    def _ingest_snapshot(self, cand: Candidate, st: os.stat_result) -> int | None:
        path, adapter = cand.path, cand.adapter
        with _open_stream(path) as f:
            data = adapter.stored_form(path, f.read())  # the whole file, or what of it may be kept
        self.summary.bytes_read += len(data)
        fingerprint = hashlib.sha256(b"snapshot\0" + adapter.snapshot_key(path).encode()).hexdigest()
        content_sha = hashlib.sha256(data).hexdigest()
        found = self._lookup_source(adapter.name, fingerprint)
        if found is None:
            gen = _Gen(None, stable_id(adapter.name, fingerprint), adapter.name, SNAPSHOT, 1, 0, 0, None, fingerprint)
        else:
            source_id, uid, _ = found
            top = self.conn.execute(
                "SELECT generation, content_sha256 FROM generations WHERE source_id = ? ORDER BY generation DESC LIMIT 1",
                (source_id,),
            ).fetchone()
            if top is not None and top[1] == content_sha:
                gen = _Gen(source_id, uid, adapter.name, SNAPSHOT, top[0], len(data), 1, None, fingerprint)
                self._record_path(gen, path, st, pending=0)  # touched, same content: new stat only
                return source_id
            gen = _Gen(source_id, uid, adapter.name, SNAPSHOT, (top[0] if top else 0) + 1, 0, 0, None, fingerprint)
        gen.content_sha = content_sha
        parser = adapter.parser(SourceInfo(gen.uid, adapter.name, self._parser_path(gen, path), gen.generation, SNAPSHOT), None)
        rows = self._feed(parser, 0, data)
        self._write(gen, parser, [(0, data, 0, rows)], path, st, final=True)
        self.summary.files_changed += 1
        return gen.source_id

    # -- after the walk
    def _mark_missing(self, seen: set[str], providers: set[str]) -> None:
        rows = self.conn.execute(
            "SELECT p.path, p.missing FROM source_paths p JOIN sources s ON s.id = p.source_id "
            f"WHERE s.provider IN ({', '.join('?' * len(providers))})",
            tuple(providers),
        ).fetchall()
        updates = []
        for path, missing in rows:
            if path in seen:
                continue
            gone = 0 if os.path.exists(path) else 1
            if gone != missing:
                updates.append((gone, path))
        if updates:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany("UPDATE source_paths SET missing = ? WHERE path = ?", updates)
            self.conn.execute("COMMIT")

    def _warn_empty(self, touched: set[int]) -> None:
        for sid in sorted(touched):
            row = self.conn.execute(
                "SELECT s.last_path, s.kind, (SELECT count(*) FROM message_occurrences o WHERE o.source_id = s.id) + (SELECT "
                "count(*) FROM reports r WHERE r.source_id = s.id AND r.reason IN (?, ?)) FROM sources s WHERE s.id = ?",
                (PROMPT_HISTORY, SIDE_FILE, sid),  # a side file holds prompts or side data, never messages
            ).fetchone()
            if row and row[1] == LINES and row[2] == 0:
                self.summary.warnings.append(f"{row[0]}: no messages in this source")


def _first_line(f: BinaryIO, max_line: int) -> tuple[str, bool, bytes | None] | None:
    """sha256 of the first line, whether a newline ended it, and the line itself unless it
    is longer than ``max_line`` (hashed as it is read, never held); None for an empty file."""
    held: list[bytes] | None = []
    size = 0
    h = hashlib.sha256()
    while True:
        chunk = f.read(CHUNK)
        if not chunk:
            break
        nl = chunk.find(b"\n")
        piece = chunk if nl < 0 else chunk[:nl]
        h.update(piece)
        size += len(piece)
        if held is not None and size <= max_line:
            held.append(piece)
        else:
            held = None  # over the limit: hashed, not held
        if nl >= 0:
            return h.hexdigest(), True, None if held is None else b"".join(held)
    if not size:
        return None
    return h.hexdigest(), False, None if held is None else b"".join(held)


# ---------------------------------------------------------------- locking


@contextmanager
def ingest_lock(db_path: str | os.PathLike[str], wait: float | None = 600.0) -> Iterator[None]:
    """One writer at a time: a second ingest waits up to ``wait`` seconds (None: fail at once)."""
    lock_path = f"{db_path}.lock"
    fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        deadline = time.monotonic() + (wait or 0)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if wait is None or time.monotonic() >= deadline:
                    raise IngestLocked(f"another ingest is running on {db_path} (lock {lock_path})")
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


def lock_held(db_path: str | os.PathLike[str]) -> bool:
    """Whether an ingest (or rebuild) holds the archive's write lock right now. Never creates
    the lock file: a reader must leave nothing behind."""
    try:
        fd = os.open(f"{db_path}.lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False


# ---------------------------------------------------------------- entry points


def ingest_paths(
    db: Database,
    paths: Iterable[str | os.PathLike[str]] | None = None,
    options: IngestOptions | None = None,
) -> Summary:
    """Ingest explicit files/folders, or every vendor's default locations when paths is empty.
    The caller holds ``ingest_lock`` when other processes may write."""
    return Engine(db, options).ingest(paths)


def _source_rows(db: Database, provider: str | None, source: str | None) -> list[tuple[int, str, str, str]]:
    sql = "SELECT id, uid, provider, kind FROM sources WHERE kind != 'store'"
    params: list[Any] = []
    if provider:
        sql += " AND provider = ?"
        params.append(provider)
    if source:
        sql += " AND (uid = ? OR uid LIKE ? OR CAST(id AS TEXT) = ? OR last_path = ?)"
        params += [source, source + "%", source, source]
    return db.execute(sql + " ORDER BY id", params).fetchall()


def rebuild(db: Database, provider: str | None = None, source: str | None = None) -> Summary:
    """Re-derive the projection of the chosen sources from their stored lines alone
    (``archive/rebuild.py``)."""
    from .rebuild import rebuild as rebuild_sources  # it builds on the engine

    return rebuild_sources(db, provider, source)


def upgrade(db: Database) -> list[str]:
    """Re-derive the rows of every provider whose adapter is newer (``Adapter.revision``)
    than the one those rows were derived with; returns the providers rebuilt.

    An archive from before revisions were recorded holds revision 1 rows for each provider
    it has sources of. A fresh archive records the current revisions and rebuilds nothing."""
    recorded = dict(db.execute("SELECT provider, revision FROM adapter_revisions").fetchall())
    present = {r[0] for r in db.execute("SELECT DISTINCT provider FROM sources")}
    rebuilt = []
    for adapter in VENDORS:
        have = recorded.get(adapter.name, 1 if adapter.name in present else adapter.revision)
        if have < adapter.revision and adapter.name in present:
            rebuild(db, provider=adapter.name)
            rebuilt.append(adapter.name)
        if recorded.get(adapter.name) != adapter.revision:
            db.execute(
                "INSERT OR REPLACE INTO adapter_revisions (provider, revision) VALUES (?, ?)",
                (adapter.name, adapter.revision),
            )
    from .rebuild import split_merged  # two vendors' sessions in one thread, from before m070

    split_merged(db)
    return rebuilt


@dataclass
class RestoredFile:
    source_uid: str
    generation: int
    path: Path
    sha256: str
    size: int


def restore(
    db: Database,
    out_dir: str | os.PathLike[str],
    source: str | None = None,
    provider: str | None = None,
    generation: int | None = None,
    all_generations: bool = False,
    redact: Callable[[bytes], bytes] | None = None,
) -> list[RestoredFile]:
    """Write sources back byte for byte under ``out_dir``, each generation at the path it was
    last read at, relative to ``/`` (a generation older than the current one that was read
    only at the current one's path gets a ``.gen<N>`` suffix). ``redact``: applied to each
    whole line (``restore --redact``; the files are then not the originals)."""
    out = []
    for sid, uid, _prov, _kind in _source_rows(db, provider, source):
        last_path, current = db.execute("SELECT last_path, current_generation FROM sources WHERE id = ?", (sid,)).fetchone()
        gens = [r[0] for r in db.execute("SELECT generation FROM generations WHERE source_id = ? ORDER BY generation", (sid,))]
        if generation is not None:
            gens = [g for g in gens if g == generation]
        elif not all_generations:
            gens = [current] if current in gens else gens[-1:]
        current_path = generation_path(db, sid, current) or last_path
        for g in gens:
            path = generation_path(db, sid, g) or last_path
            rel = Path(plain_name(str(path)).lstrip("/")) if path else Path(uid)
            target = Path(out_dir) / rel
            if g != current and path == current_path:
                target = target.with_name(f"{target.name}.gen{g}")
            if target.exists():
                raise ArchiveError(f"{target} exists; restore never overwrites")
            target.parent.mkdir(parents=True, exist_ok=True)
            h = hashlib.sha256()
            size = 0
            expected = 0
            tmp, fd = _private_temp(target)
            try:
                with os.fdopen(fd, "wb") as f:
                    for offset, length, term, line in iter_stored_spans(db.conn, sid, g):
                        if offset != expected:
                            raise ArchiveError(f"source {uid} generation {g}: gap in stored lines at {expected}")
                        if redact is not None and isinstance(line, bytes):
                            line = redact(line)
                        pieces = (line,) if isinstance(line, bytes) else line  # a refused line: chunk by chunk
                        for piece in itertools.chain(pieces, (b"\n",) if term else ()):
                            f.write(piece)
                            h.update(piece)
                            size += len(piece)
                        expected = offset + length + term
                os.replace(tmp, target)
            except BaseException:
                os.unlink(tmp)
                raise
            out.append(RestoredFile(uid, g, target, h.hexdigest(), size))
    return out


def _private_temp(target: Path) -> tuple[Path, int]:
    """A new file beside ``target`` (so the final rename stays on one file system), mode
    0600, opened with ``O_EXCL | O_NOFOLLOW``: a link or file someone planted at the name is
    never followed or truncated; the next name is tried instead."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(100):
        suffix = ".restoring" if attempt == 0 else f".{os.urandom(6).hex()}.restoring"
        tmp = target.with_name(f".{target.name}{suffix}")
        try:
            return tmp, os.open(tmp, flags, 0o600)
        except FileExistsError:
            continue
    raise ArchiveError(f"cannot create a temporary file beside {target}")


def stored_file_bytes(db: Database, source_id: int, generation: int) -> bytes:
    """One generation's bytes, reassembled (emit of an untouched thread uses this)."""
    return b"".join(line + (b"\n" if term else b"") for _o, _l, term, line in iter_stored_lines(db.conn, source_id, generation))

