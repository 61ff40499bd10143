"""Reading files: streams (``.zst`` decompressed), complete lines from an offset, and long
lines found without holding their bytes (memory stays within ``SPILL``)."""

from __future__ import annotations

import hashlib
import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

from ..vendors.base import (
    loads_line,
)
from .options import CHUNK, SPILL


@contextmanager
def _open_stream(path: Path) -> Iterator[BinaryIO]:
    """The file's bytes; ``.zst`` files (Codex archives) are decompressed transparently,
    and offsets then count decompressed bytes; a record's document (``records.DocumentPath``)
    is read from memory."""
    document = getattr(path, "document", None)
    if document is not None:
        yield io.BytesIO(document)
        return
    # a buffer size given, so that opening does not ask whether the file is a terminal (an
    # ioctl a file, for files read in reads of CHUNK that bypass the buffer anyway)
    with open(path, "rb", buffering=io.DEFAULT_BUFFER_SIZE) as raw:
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
