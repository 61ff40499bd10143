"""What an ingest run is given and what it reports: options, limits, the run summary and
the errors that end a run."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ArchiveError

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
# temporary storage in files (sorts, and statement journals past 64 KiB), except in the
# transactions of the file loop (``Engine._begin``): there every row is a statement whose
# journal holds the few pages it changes, and once one statement's journal had gone to a file
# they all did, two write calls a page (1.3 GB written for a 109 MB corpus; in memory the
# first ingest took 0.88-0.91x the time at the same peak RSS). The run's end, rebuild and
# forget keep files: a statement deleting whole sources journals every page it changes.
# Few WAL checkpoints: every checkpoint copies
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
