"""The source layer's storage: lines committed together are compressed together.

Invariants: a chunk holds the exact bytes of consecutive lines of one generation, each
line followed by its newline when the file had one, from ``first_offset`` to
``end_offset``; ``source_lines`` rows point into it. One exception: a last line taken
without its newline (its file was idle) and found terminated later keeps its chunk as it
was, and only its row says ``terminated`` (``Engine._terminate_idle_tail``).

A line refused as too long (``IngestOptions.max_line_bytes``) is never held whole: its
bytes are stored in pieces, in two or more consecutive chunks of its own, and its row
points at the first. So a line longer than the chunk it starts in is exactly a refused
line, whatever limit was in force: rebuild refuses the same lines as ingest did.

``iter_stored_spans`` gives back every line in file order, reading one chunk at a time, a
refused line as ``Pieces`` read one chunk at a time (memory is bounded by the largest
chunk, whatever the file's or the line's size); ``iter_stored_lines`` joins the pieces.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

CODEC_RAW, CODEC_ZSTD = 0, 2
_MIN_COMPRESS = 96


class Codec:
    def __init__(self) -> None:
        import zstandard

        self._c = zstandard.ZstdCompressor(level=3)
        self._d = zstandard.ZstdDecompressor()

    def pack(self, data: bytes) -> tuple[int, bytes]:
        if len(data) < _MIN_COMPRESS:
            return CODEC_RAW, data
        packed = self._c.compress(data)
        if len(packed) >= len(data) * 0.95:  # images, archives: not worth a decompression
            return CODEC_RAW, data
        return CODEC_ZSTD, packed

    def unpack(self, codec: int, data: bytes) -> bytes:
        if codec == CODEC_RAW:
            return bytes(data)
        if codec == CODEC_ZSTD:
            return self._d.decompress(data)
        raise ValueError(f"unknown chunk codec {codec}")


class Pieces:
    """The bytes of a refused long line (without its newline), one stored chunk at a time."""

    def __init__(self, conn: sqlite3.Connection, chunk_ids: list[int], length: int) -> None:
        self.conn = conn
        self.chunk_ids = chunk_ids
        self.length = length

    def __iter__(self) -> Iterator[bytes]:
        codec = Codec()
        remaining = self.length
        for chunk_id in self.chunk_ids:
            c, data = self.conn.execute("SELECT codec, data FROM source_chunks WHERE id = ?", (chunk_id,)).fetchone()
            raw = codec.unpack(c, data)
            piece = raw[:remaining]
            remaining -= len(piece)
            yield piece

    def join(self) -> bytes:
        return b"".join(self)


def iter_stored_spans(
    conn: sqlite3.Connection, source_id: int, generation: int
) -> Iterator[tuple[int, int, int, bytes | Pieces]]:
    """``(offset, length, terminated, line)`` in file order; ``line`` is the bytes without
    the newline, or ``Pieces`` for a line refused as too long."""
    codec = Codec()
    chunks = conn.execute(
        "SELECT id, first_offset, end_offset FROM source_chunks WHERE source_id = ? AND generation = ? ORDER BY first_offset",
        (source_id, generation),
    ).fetchall()
    i = 0
    while i < len(chunks):
        chunk_id, first, end = chunks[i]
        raw: bytes | None = None
        for offset, length, terminated in conn.execute(
            "SELECT offset, length, terminated FROM source_lines WHERE source_id = ? AND generation = ? "
            "AND offset >= ? AND offset < ? ORDER BY offset",
            (source_id, generation, first, end),
        ).fetchall():
            if offset + length > end:  # a refused line: its own chunks, from this one on
                j = i
                while chunks[j][2] < offset + length:
                    j += 1
                yield offset, length, terminated, Pieces(conn, [c[0] for c in chunks[i : j + 1]], length)
                i = j
                break
            if raw is None:
                c, data = conn.execute("SELECT codec, data FROM source_chunks WHERE id = ?", (chunk_id,)).fetchone()
                raw = codec.unpack(c, data)
            start = offset - first
            yield offset, length, terminated, raw[start : start + length]
        i += 1


def iter_stored_lines(conn: sqlite3.Connection, source_id: int, generation: int) -> Iterator[tuple[int, int, int, bytes]]:
    """``(offset, length, terminated, line bytes without the newline)`` in file order; a
    refused long line is joined (memory: its length)."""
    for offset, length, terminated, line in iter_stored_spans(conn, source_id, generation):
        yield offset, length, terminated, line.join() if isinstance(line, Pieces) else line


class LineReader:
    """Single stored lines by (source, generation, offset); keeps the last chunk unpacked,
    so reading the lines of one thread in order unpacks each chunk once."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.codec = Codec()
        self._chunk: tuple[int, int, bytes] | None = None  # id, first_offset, bytes

    def line(self, source_id: int, generation: int, offset: int) -> bytes:
        row = self.conn.execute(
            "SELECT l.length, l.chunk_id, c.end_offset FROM source_lines l JOIN source_chunks c ON c.id = l.chunk_id "
            "WHERE l.source_id = ? AND l.generation = ? AND l.offset = ?",
            (source_id, generation, offset),
        ).fetchone()
        if row is None:
            raise KeyError(f"no stored line at source {source_id} generation {generation} offset {offset}")
        length, chunk_id, end = row
        if offset + length > end:  # a refused long line
            ids = [r[0] for r in self.conn.execute(
                "SELECT id FROM source_chunks WHERE source_id = ? AND generation = ? AND first_offset >= ? "
                "AND first_offset < ? ORDER BY first_offset",
                (source_id, generation, offset, offset + length),
            )]  # fmt: skip
            return Pieces(self.conn, ids, length).join()
        if self._chunk is None or self._chunk[0] != chunk_id:
            first, c, data = self.conn.execute(
                "SELECT first_offset, codec, data FROM source_chunks WHERE id = ?", (chunk_id,)
            ).fetchone()
            self._chunk = (chunk_id, first, self.codec.unpack(c, data))
        start = offset - self._chunk[1]
        return self._chunk[2][start : start + length]
