"""``restore``: sources written back byte for byte, each generation at the path it was
last read at; never overwrites."""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sqlite_utils import Database

from ..errors import ArchiveError
from ..lines import iter_stored_lines, iter_stored_spans
from .generations import generation_path, plain_name, source_rows


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
    for sid, uid, _prov, _kind in source_rows(db, provider, source):
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
