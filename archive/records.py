"""``RECORDS`` sources: a database (OpenCode's ``opencode.db``) or a record kept as several
small files (OpenCode's JSON ``storage/`` before 1.2: a session's info, message and part
files), read through the adapter as per-session documents of JSON lines.

Invariants:

* **A rerun opens nothing that did not change.** Each record has a signature taken from
  ``stat`` alone, before it is read: a database's inode and the newest mtime of it and its
  WAL; a record of files (``Adapter.record_files``) the first file's inode and a digest of
  every file's path, size, mtime and inode. Ingest passes a record over when every document
  it gave last time was read at the signature it has now.
* **A write in the same clock tick is not missed.** A signature whose newest mtime is less
  than ``RECORDS_SETTLE_NS`` old is 0 (never equal to a stored one): the record is read again
  next run.
* A database is opened read-only (``archive.readonly``); a record of files is read by the
  adapter itself (``documents(path, None)``), with no database.
* ``restore`` gives a record of files back as its files, byte for byte (``unpack_restored``),
  beside the document it stored.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .vendors import VENDORS
from .vendors.base import Adapter, Document

RECORDS_SETTLE_NS = 2_000_000_000


class DocumentPath(type(Path())):  # type: ignore[misc]
    """The virtual path of a record's document, carrying its bytes (``ingest._open_stream``)."""

    def __new__(cls, path: str, document: bytes) -> "DocumentPath":
        self = super().__new__(cls, path)
        self.document = document
        return self


@dataclass(frozen=True)
class DocumentStat:
    """What ingest asks of ``os.stat`` for a document: its size, the record's signature."""

    st_size: int
    st_mtime: float
    st_mtime_ns: int
    st_ino: int


def database_companion(path: str) -> str | None:
    """The database a ``-wal``/``-shm`` file belongs to (SQLite's names), else None."""
    return path[:-4] if path.endswith(("-wal", "-shm")) else None


def record_files(path: Path, adapter: Adapter | None = None) -> list[str] | None:
    """The files of a record of files (asked of ``adapter``, or of every adapter: a rerun
    asks no adapter to classify a path it passes over), None for a database."""
    for a in [adapter] if adapter is not None else VENDORS:
        files = a.record_files(path)
        if files is not None:
            return files
    return None


def _settled(newest: int) -> int:
    return 0 if time.time_ns() - newest < RECORDS_SETTLE_NS else newest


def files_signature(files: Sequence[str]) -> tuple[int, int]:
    """(inode of the first file, a 63-bit digest of every file's path, size, mtime and
    inode), or a digest of 0 while one of them changed in the last RECORDS_SETTLE_NS."""
    h = hashlib.sha256()
    newest = 0
    first = 0
    for i, f in enumerate(files):
        st = os.stat(f)
        if i == 0:
            first = st.st_ino
        newest = max(newest, st.st_mtime_ns)
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\n".encode("utf-8", "surrogateescape"))
    digest = int.from_bytes(h.digest()[:8], "big") >> 1 or 1
    return first, digest if _settled(newest) else 0


def signature(path: Path, adapter: Adapter | None = None) -> tuple[int, int]:
    """The record's signature: ``files_signature`` of the adapter's ``record_files``, else
    (inode, newest mtime of the database and its WAL)."""
    files = record_files(path, adapter)
    if files is not None:
        return files_signature(files)
    st = os.stat(path)
    newest = st.st_mtime_ns
    try:
        wal = os.stat(f"{path}-wal")
        if wal.st_size:  # an empty WAL (a read-only reader leaves one) holds nothing
            newest = max(newest, wal.st_mtime_ns)
    except OSError:
        pass
    return st.st_ino, _settled(newest)


def read_documents(adapter: Adapter, path: Path) -> list[Document]:
    """The record's documents: a record of files read by the adapter, a database read-only."""
    if adapter.record_files(path) is not None:
        return list(adapter.documents(path, None))
    from .readonly import ReadOnlyDatabase

    with ReadOnlyDatabase(path) as database:
        return list(adapter.documents(path, database.query))


def unpack_restored(provider_of: Callable[[str], str | None], restored: Sequence[Any], out_dir: Path) -> list[tuple[Path, str]]:
    """The files each restored document of a record of files holds, written under
    ``out_dir`` at their own paths (never over an existing file): (path, sha256) each.
    ``restored``: ``ingest.RestoredFile``s; ``provider_of(source uid)``."""
    from .errors import ArchiveError
    from .vendors import get as get_adapter

    out = []
    for f in restored:
        provider = provider_of(f.source_uid)
        if provider is None or not str(f.path).endswith(".jsonl"):
            continue  # (an older generation, restored as ``.genN``, keeps its files in the document)
        adapter = get_adapter(provider)
        document_path = "/" + str(Path(f.path).relative_to(out_dir))
        for rel, data in adapter.unpack(document_path, Path(f.path).read_bytes()):
            target = Path(out_dir) / rel
            if target.exists():
                raise ArchiveError(f"{target} exists; restore never overwrites")
            target.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as w:
                w.write(data)
            out.append((target, hashlib.sha256(data).hexdigest()))
    return out
