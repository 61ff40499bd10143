"""The source layer's storage: lines committed together are compressed together.

Invariants: a chunk holds the exact bytes of consecutive lines of one generation, each
line followed by its newline when the file had one, from ``first_offset`` to
``end_offset``; ``source_lines`` rows point into it. One exception: a last line taken
without its newline (its file was idle) and found terminated later keeps its chunk as it
was, and only its row says ``terminated`` (``Engine._terminate_idle_tail``). ``iter_stored_lines`` gives back
every line's exact bytes in file order, reading one chunk at a time (memory is bounded by
the largest chunk, whatever the file's size).
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


def iter_stored_lines(conn: sqlite3.Connection, source_id: int, generation: int) -> Iterator[tuple[int, int, int, bytes]]:
    """``(offset, length, terminated, line bytes without the newline)`` in file order."""
    codec = Codec()
    chunks = conn.execute(
        "SELECT id, first_offset, end_offset, codec, data FROM source_chunks "
        "WHERE source_id = ? AND generation = ? ORDER BY first_offset",
        (source_id, generation),
    )
    for chunk_id, first, end, c, data in chunks:
        raw = codec.unpack(c, data)
        for offset, length, terminated in conn.execute(
            "SELECT offset, length, terminated FROM source_lines WHERE source_id = ? AND generation = ? "
            "AND offset >= ? AND offset < ? ORDER BY offset",
            (source_id, generation, first, end),
        ).fetchall():
            start = offset - first
            yield offset, length, terminated, raw[start : start + length]


class LineReader:
    """Single stored lines by (source, generation, offset); keeps the last chunk unpacked,
    so reading the lines of one thread in order unpacks each chunk once."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.codec = Codec()
        self._chunk: tuple[int, int, bytes] | None = None  # id, first_offset, bytes

    def line(self, source_id: int, generation: int, offset: int) -> bytes:
        row = self.conn.execute(
            "SELECT l.length, l.chunk_id FROM source_lines l WHERE l.source_id = ? AND l.generation = ? AND l.offset = ?",
            (source_id, generation, offset),
        ).fetchone()
        if row is None:
            raise KeyError(f"no stored line at source {source_id} generation {generation} offset {offset}")
        length, chunk_id = row
        if self._chunk is None or self._chunk[0] != chunk_id:
            first, c, data = self.conn.execute(
                "SELECT first_offset, codec, data FROM source_chunks WHERE id = ?", (chunk_id,)
            ).fetchone()
            self._chunk = (chunk_id, first, self.codec.unpack(c, data))
        start = offset - self._chunk[1]
        return self._chunk[2][start : start + length]
