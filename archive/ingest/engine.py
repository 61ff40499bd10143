"""The engine: one run over the discovered files, its transactions, and what it does
after the walk (missing paths, unread folders, outranked threads, secrets)."""

from __future__ import annotations

import gc
import hashlib
import itertools
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .. import project_roots, records, secrets
from ..derived import Live, detach_scratch
from ..derived import refresh as refresh_derived
from ..identity import ThreadNames
from ..lines import Codec
from ..projection import Projector, dumps, index_text, resolve_origins
from ..unread import Unclaimed, find_unread
from ..vendors.base import (
    LINES,
    PROMPT_HISTORY,
    RECORDS,
    SIDE_FILE,
    SNAPSHOT,
    SourceInfo,
    stable_id,
)
from .discovery import Candidate, chosen_adapters, discover
from .generations import Generations, SourcesByLine, _Gen
from .options import (
    _INGEST_PRAGMAS,
    _WRITE_FAILURES,
    DEFAULT_MAX_LINE,
    UNREADABLE,
    UNREADABLE_FOLDER,
    VANISHED,
    ArchiveWriteError,
    IngestOptions,
    Summary,
    _lap,
    max_line_bytes,
)
from .reader import _first_line, _open_stream, _parses
from .rederive import rederive, rederive_outranked
from .writer import LineWriter


class Engine(Generations, LineWriter):
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
        self.seen_paths: set[str] = set()  # the paths this run read or found unchanged
        self.recorded_paths: set[str] = set()  # the paths this run wrote to source_paths (_record_path)
        self._keys: dict[str, dict[str, str | None]] = {}  # session keys of stored paths (generations.py)
        self.by_line = SourcesByLine()
        self.records_index: dict[str, list[tuple[str, Any]]] | None = None  # database path -> its documents' stats
        self.max_line = DEFAULT_MAX_LINE
        self._tx_started = 0.0
        self._tx_bytes = 0
        self._masking: _Gen | None = None  # the generation whose lines are masked (archive/forget.py)
        for pragma in _INGEST_PRAGMAS:
            self.conn.execute(f"PRAGMA {pragma}")
        self._temp = "FILE"

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
        with self.guard(started), _few_collections():
            try:
                return self._ingest(paths, started)
            except KeyboardInterrupt:
                self._end_interrupted(started)
                raise

    def _ingest(self, paths: Iterable[str | os.PathLike[str]] | None, started: float) -> Summary:
        env = self.options.env if self.options.env is not None else os.environ
        adapters = chosen_adapters(self.options.providers)
        self.projector.live = Live(self.conn)  # the index and signals computed as the run writes (derived.py)
        self.max_line = max_line_bytes(self.options, env)
        self._start_run()
        self.path_stats = {
            r[0]: tuple(r[1:]) for r in self.conn.execute(
                "SELECT path, size, mtime_ns, inode, pending, missing FROM source_paths"
            )
        }  # fmt: skip
        touched: set[int] = set()
        seen_paths: set[str] = set()
        self.seen_paths, self._keys = seen_paths, {}
        self.recorded_paths = set()
        self.by_line = SourcesByLine()

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
        found: Iterable[Candidate] = discover(list(paths) if paths else None, adapters, env, self.summary.problems, unchanged, unclaimed)
        if not paths:  # then the project folders (issue 36): after the roots, so this run's cwds count
            found = itertools.chain(found, self._folded(), project_roots.candidates(
                self.conn, adapters, env, lambda s: s in seen_paths or unchanged(s), Candidate))  # fmt: skip
        for cand in found:
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
        self._temp_store("FILE")  # the run's end may delete whole sources (rederive_outranked)
        self.conn.execute("BEGIN IMMEDIATE")
        if self.names.outranked:  # a vendor ranked first took a thread id: re-derive the other's rows
            rederive_outranked(self)
        resolve_origins(self.conn)
        if self.options.scan_secrets:
            secrets.scan_new(self.conn)  # blocks a run without scanning left behind
        t = time.perf_counter()
        live, self.projector.live = self.projector.live, None
        refresh_derived(self.conn, live)  # once a run: the file index and signals of the threads it wrote (derived.py)
        if self.options.timings is not None:
            _lap(self.options.timings, "derived", t)
        self.conn.execute("COMMIT")
        detach_scratch(self.conn)
        self._warn_empty(touched)
        self.summary.messages_added = self.projector.messages_added
        self._finish_run(started)
        # copy what the run wrote into the database file now; PASSIVE never waits for readers
        self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        return self.summary

    def _rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
        self.by_line = SourcesByLine()  # the lines are read again from what the database holds
        self.projector.discard()
        self.names.discard()

    # -- transactions: several files' batches share one
    def _begin(self) -> None:
        if not self.conn.in_transaction:
            self._temp_store("MEMORY")
            self.conn.execute("BEGIN IMMEDIATE")
            self._tx_started, self._tx_bytes = time.monotonic(), 0

    def _temp_store(self, where: str) -> None:
        """Where the statement journals of the next transaction go (``_INGEST_PRAGMAS``):
        SQLite reads ``temp_store`` when a transaction begins. Changing it drops the temp
        tables: the projector's (``_write_blocks``) is empty between flushes, and ``Live``
        keeps its rows in a scratch database of its own."""
        if self._temp != where:
            self.conn.execute(f"PRAGMA temp_store = {where}")
            self._temp = where

    def _maybe_commit(self) -> None:
        o = self.options
        if self._tx_bytes >= o.commit_bytes or time.monotonic() - self._tx_started >= o.commit_seconds:
            self._commit_tx()

    def _fold(self) -> None:
        """Fold the threads the transaction's files wrote (``threads`` rows), once a thread.

        A thread whose rows come in several files (a context and its wire log, a journal and
        its snapshots, a session and its subagents' files) was folded after each of them.
        Nothing in the file loop reads a dirty thread's row but the ranking of copies, which
        folds it itself (``Projector._created_at``); what reads rows after the loop (the
        project folders' walk, the end of the run) comes after this. A failure part-way rolls
        the transaction back: a commit after it would keep half."""
        if not self.conn.in_transaction:
            return
        try:
            self.projector.refold()
        except BaseException:
            self._rollback()
            raise

    def _folded(self) -> Iterator[Candidate]:
        """Nothing, once the transaction's threads are folded (a chained walk reads them)."""
        self._fold()
        yield from ()

    def _commit_tx(self) -> None:
        if self.conn.in_transaction:
            tm = self.options.timings
            t = time.perf_counter()
            self._fold()
            if tm is not None:
                t = _lap(tm, "insert", t)
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

    def _may_be_stored(self, path: str) -> bool:
        """Whether ``source_paths`` may hold ``path``: it did when the run started
        (``path_stats``), or the run wrote it since (``recorded_paths``). A new file's path
        is in neither, and its lookups are skipped (two statements of a first ingest's
        dozen-odd a file)."""
        return path in self.path_stats or path in self.recorded_paths

    def _source_for_path(self, path: Path) -> tuple[int, str, str] | None:
        if not self._may_be_stored(str(path)):
            return None
        return self.conn.execute(
            "SELECT s.id, s.uid, s.kind FROM source_paths p JOIN sources s ON s.id = p.source_id WHERE p.path = ?",
            (str(path),),
        ).fetchone()

    def _ingest_lines(self, cand: Candidate, st: os.stat_result) -> int | None:
        path, adapter = cand.path, cand.adapter
        idle = (time.time() - st.st_mtime) >= self.options.idle_seconds
        with _open_stream(path) as f:  # opened once: the first line, then the lines from the offset
            first = _first_line(f, self.max_line)
            if first is None:
                return None
            fingerprint, terminated, line = first
            if not terminated and not (idle and (line is None or _parses(line))):
                return None  # no complete first line yet: nothing is recorded, the next run retries
            self._reidentify(adapter, fingerprint, path)
            gen = self._choose_generation(adapter, fingerprint, path, st)
            return self._read_lines(cand, st, gen, idle, f if f.seekable() else None)

    def _reidentify(self, adapter: Any, fingerprint: str, path: Path) -> None:
        """A file recognised by its content alone (given by hand, outside its vendor's folders)
        may open with lines two vendors share: OpenClaw 2026.7.1's session header and first
        entries are pi's format 3, and OpenClaw's own records come later. Read while it was
        that short, it went to the first vendor that recognised it; once more of it shows
        whose it is, the source (same path, same first line) changes hands, and its stored
        lines are derived again by the right adapter, as one read of the whole file gives."""
        if not self._may_be_stored(str(path)):
            return  # a path no source was read at: nothing to hand over
        at = self.conn.execute(
            "SELECT s.id, s.kind, s.provider FROM source_paths p JOIN sources s ON s.id = p.source_id WHERE p.path = ?",
            (str(path),)).fetchone()  # fmt: skip
        if at is None or at[2] == adapter.name:
            return  # the common case, one indexed lookup: a new file, or the same vendor's
        sid, kind, old = at
        if self.conn.execute(
                "SELECT 1 FROM source_fingerprints WHERE source_id = ? AND provider = ? AND fingerprint = ?",
                (sid, old, fingerprint)).fetchone() is None:  # fmt: skip
            return
        self.projector.flush()  # the source's rows read in this transaction, if any, are read back below
        threads = {r[0] for r in self.conn.execute(
            "SELECT thread_id FROM thread_facts WHERE source_id = ? UNION SELECT thread_id FROM messages WHERE source_id = ?",
            (sid, sid))}  # fmt: skip
        uid = self._new_uid(adapter.name, fingerprint, adapter.session_key(path), path)
        self.conn.execute("UPDATE sources SET provider = ?, uid = ? WHERE id = ?", (adapter.name, uid, sid))
        self.conn.execute("UPDATE source_fingerprints SET provider = ? WHERE source_id = ?", (adapter.name, sid))
        for (fp,) in self.conn.execute("SELECT fingerprint FROM source_fingerprints WHERE source_id = ?", (sid,)).fetchall():
            self.by_line.add(sid, adapter.name, fp, None)  # now among this vendor's sources of the line
        for tid in threads:  # the old vendor's claim on the ids, unless another of its sources holds them
            vendor_id = tid.removeprefix(f"{old}-")
            if self.conn.execute(
                    "SELECT 1 FROM sources s WHERE s.provider = ? AND s.id != ? AND (EXISTS (SELECT 1 FROM thread_facts f "
                    "WHERE f.source_id = s.id AND f.thread_id = ?) OR EXISTS (SELECT 1 FROM messages m "
                    "WHERE m.source_id = s.id AND m.thread_id = ?))", (old, sid, tid, tid)).fetchone() is None:  # fmt: skip
                self.conn.execute("DELETE FROM thread_claims WHERE thread_id = ? AND provider = ?", (vendor_id, old))
        self.names.discard()
        rederive(self, [(sid, uid, adapter.name, kind)])
        self.summary.warnings.append(f"{path}: read as {old} while it was short, now {adapter.name}'s: derived again")

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
        """A warning for each line source the run read that holds no message (one statement
        for all of them: it was one a source)."""
        for (path,) in self.conn.execute(
            "SELECT s.last_path FROM sources s WHERE s.id IN (SELECT value FROM json_each(?)) AND s.kind = ? "
            "AND NOT EXISTS (SELECT 1 FROM message_occurrences o WHERE o.source_id = s.id) AND NOT EXISTS (SELECT 1 "
            "FROM reports r WHERE r.source_id = s.id AND r.reason IN (?, ?)) ORDER BY s.id",
            (dumps(sorted(touched)), LINES, PROMPT_HISTORY, SIDE_FILE),  # a side file holds prompts or side data, never messages
        ):
            self.summary.warnings.append(f"{path}: no messages in this source")





def ingest_paths(
    db: Database,
    paths: Iterable[str | os.PathLike[str]] | None = None,
    options: IngestOptions | None = None,
) -> Summary:
    """Ingest explicit files/folders, or every vendor's default locations when paths is empty.
    The caller holds ``ingest_lock`` when other processes may write."""
    return Engine(db, options).ingest(paths)


# The cyclic collector's first generation, during an ingest run (Python's default is 700).
GC_YOUNG = 50_000
_GC_LOCK = threading.Lock()
_gc_state: dict[str, Any] = {"runs": 0, "threshold": None, "froze": False}  # shared by the process's runs


@contextmanager
def _few_collections() -> Iterator[None]:
    """Fewer cyclic collections while a run allocates its rows: the objects alive when it
    starts (modules, adapters, the run's indexes) move out of the collector's reach
    (``gc.freeze``), and the youngest generation is collected every ``GC_YOUNG`` allocations
    instead of 700. Reference counting frees the rows as before; only cycles wait longer.
    Undone when the last run of the process ends (``watch`` ingests in a thread of ``serve``);
    a process that froze objects itself keeps them frozen. Time in collections, first ingest
    (the CLI's, with the secret scan and semantic index): replicated real 320 MB, 0.14 s (638)
    -> 0.05 s (157); 20,000 two-line files, 0.27-0.29 s (757-771) -> 0.05-0.06 s (222), 3% of
    that run."""
    st = _gc_state
    with _GC_LOCK:
        if st["runs"] == 0:
            st["threshold"], st["froze"] = gc.get_threshold(), gc.get_freeze_count() == 0
            if st["froze"]:
                gc.freeze()
            gc.set_threshold(GC_YOUNG, *st["threshold"][1:])
        st["runs"] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            st["runs"] -= 1
            if st["runs"] == 0:
                gc.set_threshold(*st["threshold"])
                if st["froze"]:
                    gc.unfreeze()
