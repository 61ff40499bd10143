"""Source identity and generations: which source and generation a line file's bytes
continue, or whether it is a new generation (rewritten in place) or a new source. See the
package docstring for the rules (``archive/identity.py`` holds the session-key side)."""

from __future__ import annotations

import itertools
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from sqlite_utils import Database

from ..errors import ArchiveError
from ..identity import same_keys
from ..lines import iter_stored_lines
from ..vendors.base import (
    LINES,
    Adapter,
    stable_id,
)
from .reader import _open_stream, _read_exactly, _sha_range

# the sources that opened with a line, with their other paths: every one (a file whose
# session key is unknown), or those SourcesByLine names (one lookup each)
_CANDIDATES = """
SELECT s.id, s.uid, p.path FROM source_fingerprints f JOIN sources s ON s.id = f.source_id
LEFT JOIN source_paths p ON p.source_id = s.id AND p.path != ?1
WHERE f.provider = ?2 AND f.fingerprint = ?3 {}
ORDER BY s.id"""
_ALL = _CANDIDATES.format("")
_NAMED = _CANDIDATES.format("AND f.source_id IN (SELECT value FROM json_each(?4))")


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
    key: str | None = None  # a new line source: the session key of the file it is read from


class SourcesByLine:
    """The sources of each first line that many sessions open with, by the session keys of
    their paths in place, so that a new file is compared only with the ones it may continue.

    A source is passed over for a file when every path of it in place has a known session
    key other than the file's (``same_keys``): it is another session's file. Without this
    index each new file fetched every source that opened with its line and looked at each
    one's paths, so a first ingest was quadratic in the sessions sharing a line (a vendor
    whose every session log opens with the same header record), and each night's new files
    paid for all the sessions before them.

    A line is indexed the first time a file of the run opens with it and finds more than
    ``SHARED`` sources (``Generations._index_line``): a line fewer sessions share is fetched
    whole, as before, and costs no memory. After that the run adds what it changes. Every
    change only adds, so the index can name a source the comparison then passes over, never
    leave out one it would take. A rollback empties it, and so does ``Generations`` past
    ``LIMIT`` sources (between files): the lines are then read again from the database."""

    SHARED = 8
    LIMIT = 20_000  # about 10 MB (485 bytes a source)

    def __init__(self) -> None:
        self._by_line: dict[tuple[str, str], dict[str | None, list[int]]] = {}
        self._lines: dict[int, list[tuple[str, str]]] = {}  # a source's indexed (provider, fingerprint)s
        self._keys: dict[int, list[str | None]] = {}  # the keys of its paths in place (None: unknown or none)

    def __len__(self) -> int:
        return len(self._keys)

    def indexed(self, provider: str, fingerprint: str) -> bool:
        return (provider, fingerprint) in self._by_line

    def index(self, provider: str, fingerprint: str, sources: dict[int, list[str | None]]) -> None:
        """A line's sources as the database holds them, each with the keys of its paths in
        place (an empty list: none in place)."""
        self._by_line[(provider, fingerprint)] = {}
        for source_id, keys in sources.items():
            for key in keys or [None]:
                self.add(source_id, provider, fingerprint, key)

    def add(self, source_id: int, provider: str, fingerprint: str, key: str | None) -> None:
        """A source that opens with this line (stored, registered under one more first line,
        or read from the database) with a path of ``key`` in its place (None: a key unknown,
        or a source that may have no path in its place). Nothing for a line not indexed: the
        database is read for it."""
        line = (provider, fingerprint)
        if line not in self._by_line:
            return
        lines = self._lines.setdefault(source_id, [])
        keys = self._keys.setdefault(source_id, [])
        if line not in lines:
            lines.append(line)
            for k in keys:
                self._by_line[line].setdefault(k, []).append(source_id)
        if key not in keys:  # a source's keys are its paths', whichever line it is found by
            keys.append(key)
            for other in lines:
                self._by_line[other].setdefault(key, []).append(source_id)

    def key(self, source_id: int, key: str | None) -> None:
        """A source read at one more path, of this key."""
        lines = self._lines.get(source_id)
        if lines:
            self.add(source_id, *lines[0], key)

    def open(self, source_id: int) -> None:
        """A source that lost a path to another: compared with every file that opens with one
        of its lines."""
        self.key(source_id, None)

    def wanted(self, provider: str, fingerprint: str, key: str | None) -> list[int] | None:
        """The sources of an indexed line a file of this key may continue; None for all of
        them (its key is unknown)."""
        if key is None:
            return None
        buckets = self._by_line[(provider, fingerprint)]
        return sorted({*buckets.get(key, ()), *buckets.get(None, ())})



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



def source_rows(db: Database, provider: str | None, source: str | None) -> list[tuple[int, str, str, str]]:
    sql = "SELECT id, uid, provider, kind FROM sources WHERE kind != 'store'"
    params: list[Any] = []
    if provider:
        sql += " AND provider = ?"
        params.append(provider)
    if source:
        sql += " AND (uid = ? OR uid LIKE ? OR CAST(id AS TEXT) = ? OR last_path = ?)"
        params += [source, source + "%", source, source]
    return db.execute(sql + " ORDER BY id", params).fetchall()



class Generations:
    """Which source and generation a line file continues (mixed into ``Engine``)."""

    conn: sqlite3.Connection
    seen_paths: set[str]  # the paths this run has read or found unchanged
    by_line: SourcesByLine  # the sources of the lines many sessions share, by their paths' keys
    _keys: dict[str, dict[str, str | None]]  # session keys of stored paths, by provider

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
        here = str(path)
        # the sources that opened with this line, with their other paths, in one statement: of
        # a line many sessions share, only those the file may continue (SourcesByLine;
        # fetching all of them for each file made ingest quadratic in those sessions)
        at_path = self._source_for_path(path)
        if len(self.by_line) > self.by_line.LIMIT:
            self.by_line = SourcesByLine()
        run = self.by_line
        wanted = None
        if run.indexed(provider, fingerprint):
            wanted = run.wanted(provider, fingerprint, self._session_key(adapter, here, path))
            if wanted is not None and at_path is not None:
                wanted.append(at_path[0])
        candidates: dict[int, tuple[str, list[str]]] = {}
        rows = (self.conn.execute(_ALL, (here, provider, fingerprint)) if wanted is None
                else self.conn.execute(_NAMED, (here, provider, fingerprint, orjson.dumps(wanted).decode())))  # fmt: skip
        for source_id, uid, other in rows:
            entry = candidates.setdefault(source_id, (uid, []))
            if other is not None:
                entry[1].append(other)
        if len(candidates) > run.SHARED and not run.indexed(provider, fingerprint):
            self._index_line(adapter, fingerprint, candidates, at_path, here)
            keep = run.wanted(provider, fingerprint, self._session_key(adapter, here, path))
            if keep is not None:  # the rest are other sessions' files in their place
                named = {*keep, *(at_path[:1] if at_path else ())}
                candidates = {s: c for s, c in candidates.items() if s in named}
        if at_path is not None and at_path[0] in candidates:
            # the source last read here: its bytes continue, or it was rewritten in place
            return self._continued(at_path[0], at_path[1], provider, fingerprint, path, st) or self._next_generation(
                at_path[0], at_path[1], provider, fingerprint, register=False
            )
        key = self._session_key(adapter, here, path)
        for source_id, (uid, others) in candidates.items():
            # another session's file still in its place is not read (its bytes, its
            # generations): only a source whose other paths are gone (moved, renamed,
            # archived), or one of them has this file's session key, or keys are unknown
            live = [p for p in others if self._exists(p)]
            same = same_keys(key, [self._session_key(adapter, p) for p in live]) if live else True
            if same is False:
                continue
            gen = self._continued(source_id, uid, provider, fingerprint, path, st)
            if gen is not None and (same or self._is_copy(gen, path)):
                run.key(source_id, key)
                if at_path is not None:
                    run.open(at_path[0])  # its path now continues another source
                return gen
        if at_path is not None:  # a known path with a new first line: rewritten in place
            return self._next_generation(at_path[0], at_path[1], provider, fingerprint, register=True)
        uid = self._new_uid(provider, fingerprint, key, path)
        return _Gen(None, uid, provider, LINES, 1, 0, 0, None, fingerprint, key=key)

    def _index_line(self, adapter: Adapter, fingerprint: str, candidates: dict[int, tuple[str, list[str]]],
                    at_path: tuple[int, str, str] | None, here: str) -> None:  # fmt: skip
        """Index a line's sources (all of them, fetched for this file) by the session keys of
        their paths in place; the file's own path is the source's that it was last read for."""
        sources: dict[int, list[str | None]] = {}
        for source_id, (_uid, others) in candidates.items():
            sources[source_id] = [self._session_key(adapter, p) for p in others if self._exists(p)]
        if at_path is not None and at_path[0] in sources:
            sources[at_path[0]].append(self._session_key(adapter, here))
        self.by_line.index(adapter.name, fingerprint, sources)

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

    def _exists(self, path: str) -> bool:
        """Whether a file is in its place: read or found unchanged in this run (its walk saw
        it), or there now."""
        return path in self.seen_paths or os.path.exists(path)

    def _session_key(self, adapter: Adapter, path: str, as_path: Path | None = None) -> str | None:
        """``adapter.session_key`` of a stored path, computed once a run (``as_path``: the
        same path as a Path, when the caller holds one)."""
        keys = self._keys.setdefault(adapter.name, {})
        if path not in keys:
            if len(keys) >= 100_000:
                keys.clear()
            keys[path] = adapter.session_key(as_path if as_path is not None else Path(path))
        return keys[path]

    def _is_copy(self, gen: _Gen, path: Path) -> bool:
        """Where session keys are unknown: a file is the same as the one ``gen`` was read
        from only as a copy of more than the shared first line."""
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
        tries = itertools.chain(
            [(provider, fingerprint)],
            [(provider, fingerprint, key)] if key is not None else [],
            [(provider, fingerprint, str(path))],
            ((provider, fingerprint, str(path), n) for n in range(2, 100)),
        )
        for parts in tries:
            uid = stable_id(*parts)
            if self.conn.execute("SELECT 1 FROM sources WHERE uid = ?", (uid,)).fetchone() is None:
                return uid
        raise ArchiveError(f"{path}: no free source id")
