"""Discovery, source identity, offsets, generations and transactions: the ingest engine.

One module per concern: ``options`` (what a run is given and reports), ``discovery`` (which
files, which adapter), ``reader`` (streams and lines), ``generations`` (source identity and
generations), ``writer`` (a line file's batches), ``engine`` (a run and its transactions),
``rederive`` and ``rebuild`` (re-deriving rows from stored lines; ``upgrade``), ``restore``
(bytes written back), ``lock`` (one writer at a time). Everything a caller needs is
importable from ``archive.ingest``.

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

from .discovery import Candidate, discover
from .engine import Engine, ingest_paths
from .generations import generation_path, plain_name, source_rows
from .lock import ingest_lock, lock_held
from .options import (
    BATCH_BYTES,
    BATCH_LINES,
    DEFAULT_MAX_LINE,
    PHASES,
    ArchiveWriteError,
    IngestLocked,
    IngestOptions,
    Summary,
    max_line_bytes,
    parse_size,
)
from .rebuild import open_archive, rebuild, upgrade
from .restore import RestoredFile, restore, stored_file_bytes

__all__ = [
    "BATCH_BYTES",
    "BATCH_LINES",
    "DEFAULT_MAX_LINE",
    "PHASES",
    "ArchiveWriteError",
    "Candidate",
    "Engine",
    "IngestLocked",
    "IngestOptions",
    "RestoredFile",
    "Summary",
    "discover",
    "generation_path",
    "ingest_lock",
    "ingest_paths",
    "lock_held",
    "max_line_bytes",
    "open_archive",
    "parse_size",
    "plain_name",
    "rebuild",
    "restore",
    "source_rows",
    "stored_file_bytes",
    "upgrade",
]
