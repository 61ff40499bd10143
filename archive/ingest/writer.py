"""A line file read from its offset and written in batches: lines (compressed), the rows
parsed from them, the new offset and the parser state, together (crash-safe)."""

from __future__ import annotations

import hashlib
import os
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from typing import Any, BinaryIO

from .. import masking
from ..projection import dumps, needs_taming, tame_rows
from ..vendors.base import (
    ADAPTER_ERROR,
    LINES,
    REFUSED,
    SKIPPED,
    UNEXPLAINED,
    Report,
    Row,
    SourceInfo,
)
from .discovery import Candidate
from .generations import SourcesByLine, _Gen
from .options import PIECE, _lap, _timed_lines
from .reader import (
    LongLine,
    _LineReader,
    _open_stream,
    _parses,
    _read_exactly,
    _read_range,
    _seek,
    _sha_range,
)


class LineWriter:
    """Reading a line file from its offset and writing its lines and rows in batches
    (mixed into ``Engine``)."""

    by_line: SourcesByLine
    recorded_paths: set[str]  # the paths written to source_paths this run (Engine._may_be_stored)

    def _read_lines(self, cand: Candidate, st: os.stat_result, gen: _Gen, idle: bool,
                    stream: BinaryIO | None = None) -> int | None:
        """Read the file from ``gen``'s offset (``stream``: the file already open, seekable)."""
        path, adapter = cand.path, cand.adapter
        parser = adapter.parser(SourceInfo(gen.uid, adapter.name, self._parser_path(gen, path), gen.generation, LINES), gen.state)
        batch: list[tuple[int, bytes, int, list[Row]]] = []
        batch_bytes = 0
        tm = self.options.timings
        feed = self._feed if tm is None else self._timed_feed
        changed = self._terminate_idle_tail(gen, path)
        mask = masking.incoming_masker(self.conn, gen.source_id)  # values forgotten from this source stay out
        self._masking = gen if mask is not None else None
        with nullcontext(stream) if stream is not None else _open_stream(path) as f:
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
            if type(r) is Report:  # never subclassed
                reports[r.kind] += 1
        return rows

    def _ensure_source(self, gen: _Gen, path: Path) -> bool:
        """The source's row, inserted for a new one (then True: the row already names this
        generation and path, and ``_touch_source`` has nothing to change)."""
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
            self.by_line.add(gen.source_id, gen.provider, gen.fingerprint, gen.key)  # None for a snapshot
            if self.projector.live is not None:
                self.projector.live.new_source(gen.source_id, gen.provider)
            return True
        if gen.register_fingerprint:
            self.conn.execute(
                "INSERT OR IGNORE INTO source_fingerprints VALUES (?, ?, ?)",
                (gen.provider, gen.fingerprint, gen.source_id),
            )
            self.by_line.add(gen.source_id, gen.provider, gen.fingerprint, None)
            gen.register_fingerprint = False
        return False

    def _touch_source(self, gen: _Gen, path: Path) -> None:
        """The source's newest generation and the path it was last read at."""
        self.conn.execute(
            "UPDATE sources SET current_generation = max(current_generation, ?), last_path = ? WHERE id = ?",
            (gen.generation, str(path), gen.source_id),
        )

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
            new = self._ensure_source(gen, path)
            assert gen.source_id is not None
            sid, g = gen.source_id, gen.generation
            if batch:
                first_off = batch[0][0]
                last_off, last_line, last_term, _ = batch[-1]
                end_off = last_off + len(last_line) + last_term
                # every line of a batch but its last is terminated (an idle tail comes last)
                raw = b"\n".join([line for _o, line, _t, _r in batch])
                codec, data = self.codec.pack(raw + b"\n" if last_term else raw)
                del raw
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
            self.projector.parcel()
            apply = self.projector.apply
            for offset, _line, _t, rows in batch:
                apply(gen.provider, (sid, g, offset), self.names.map_rows(gen.provider, rows))
            if tm is not None:
                t = _lap(tm, "insert", t)
            self._flush_rows(batch[-1][0] + len(batch[-1][1]) - batch[0][0] if batch else 0, len(batch), final)
            if tm is not None:
                t = _lap(tm, "insert", t)
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
            if not new:
                self._touch_source(gen, path)
            if final:
                self._record_path(gen, path, st, pending=pending)
            if tm is not None:
                t = _lap(tm, "insert", t)
        except BaseException:
            self._rollback()
            raise
        if not final:
            self._maybe_commit()  # a long file commits as it goes

    def _flush_rows(self, nbytes: int, nlines: int, final: bool) -> None:
        """Write the projection's queued rows: after each batch of a long file, and after
        a file's last batch once the files since the last flush hold a batch's worth of
        lines or bytes (the memory bound of one batch). Small files share a flush: its
        statements (one ``executemany`` a table, the owners' lookup, the usage links) are
        paid once for many files. The rest is written when the transaction commits
        (``Engine._fold``), where their threads are folded."""
        p = self.projector
        p.lines_held += nlines
        p.bytes_held += nbytes
        if not final or p.lines_held >= self.options.batch_lines or p.bytes_held >= self.options.batch_bytes:
            p.flush()

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
            new = self._ensure_source(gen, path)
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
            self.projector.parcel()
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
            if not new:
                self._touch_source(gen, path)
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
        self.recorded_paths.add(str(path))
        self.conn.execute(
            "INSERT INTO source_paths (path, source_id, generation, size, mtime_ns, inode, pending, missing) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT(path) DO UPDATE SET source_id = excluded.source_id, "
            "generation = excluded.generation, size = excluded.size, mtime_ns = excluded.mtime_ns, "
            "inode = excluded.inode, pending = excluded.pending, missing = 0",
            (str(path), gen.source_id, gen.generation, st.st_size, st.st_mtime_ns, st.st_ino, pending),
        )
