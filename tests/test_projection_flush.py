"""The projection's flush writes less for the same tables (issue 37): a response streamed
over several lines of one flush is written once, and copies of a history (forks, resumes,
replicated sessions) are not folded again when their lineage did not change."""

from __future__ import annotations

import pytest

from archive.db import open_db
from archive.model import Message, Text, Usage
from archive.projection import Projector, fold_thread, resolve_lineage
from archive.vendors.base import UsageRow

RECOMPUTED = (
    "SELECT coalesce(substr(ts, 1, 10), ''), coalesce(provider, ''), coalesce(model, ''), thread_id, count(*), "
    "sum(coalesce(input_tokens, 0)), sum(coalesce(output_tokens, 0)), sum(coalesce(cache_read_tokens, 0)), "
    "sum(coalesce(cache_write_tokens, 0)), sum(coalesce(reasoning_tokens, 0)) FROM usage GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4"
)
TOTALS = "SELECT * FROM usage_totals ORDER BY 1, 2, 3, 4"


def _db(tmp_path):
    db = open_db(tmp_path / "x.db")
    conn = db.conn
    for i in (1, 2, 3):
        conn.execute("INSERT INTO sources (id, uid, provider, kind) VALUES (?, ?, 'canonical', 'lines')", (i, f"u{i}"))
    # counts the rows written to usage and threads (temp triggers: this connection only)
    conn.executescript(
        "CREATE TEMP TABLE writes (t); "
        "CREATE TEMP TRIGGER count_u AFTER INSERT ON main.usage BEGIN INSERT INTO writes VALUES ('usage'); END; "
        "CREATE TEMP TRIGGER count_uu AFTER UPDATE ON main.usage BEGIN INSERT INTO writes VALUES ('usage'); END; "
        "CREATE TEMP TRIGGER count_t AFTER INSERT ON main.threads BEGIN INSERT INTO writes VALUES (new.id); END;"
    )
    return db, conn


def _writes(conn, what: str | None = None) -> list[str]:
    rows = [r[0] for r in conn.execute("SELECT t FROM writes ORDER BY rowid")]
    conn.execute("DELETE FROM writes")
    return [r for r in rows if what is None or r == what]


def _usage(key: str, thread: str, message: str | None, out: int, model: str = "m1") -> UsageRow:
    return UsageRow(key, thread, Usage(input_tokens=10, output_tokens=out, cache_read_tokens=3), message, model, "2026-12-01T10:00:00Z")


def _msg(mid: str, thread: str) -> Message:
    return Message(id=mid, thread_id=thread, role="assistant", ts=None, content=[Text(mid)])


def test_a_response_streamed_over_lines_is_written_once_per_flush(tmp_path):
    """Rows of one response key from one source, each line carrying its own message of the
    same thread: the last wins the upsert anyway, so it is the one row written. A row of that
    key whose message another thread owns is still ranked by the upsert."""
    db, conn = _db(tmp_path)
    p = Projector(conn)
    conn.execute("BEGIN")
    for i in range(5):
        p.put_message(_msg(f"s{i}", "t1"), (1, 1, 10 + i, 0))
        p.apply("canonical", (1, 1, 10 + i), [_usage("r", "t1", f"s{i}", i)])
    p.flush()
    assert len(_writes(conn, "usage")) == 1  # five before
    assert conn.execute("SELECT message_id, output_tokens, offset FROM usage").fetchall() == [("s4", 4, 14)]
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    # the same key again from a line whose message t1 does not own (t0 does): ranked lower
    # than the stored row whatever its offset, it changes nothing; the next line's row wins
    p.put_message(_msg("x", "t0"), (1, 1, 30, 0))
    p.apply("canonical", (1, 1, 31), [_usage("r", "t1", "x", 99)])
    p.apply("canonical", (1, 1, 32), [_usage("r", "t1", "s4", 5)])
    p.flush()
    assert conn.execute("SELECT message_id, output_tokens, offset FROM usage").fetchall() == [("s4", 5, 32)]
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    conn.execute("COMMIT")


def test_totals_follow_updates_and_moves_between_threads(tmp_path):
    """A response reported again (a later line wins: new model), and a message whose
    ownership moves to another thread (its responses follow it)."""
    db, conn = _db(tmp_path)
    p = Projector(conn)
    conn.execute("BEGIN")
    p.apply("canonical", (1, 1, 50), [_usage("a", "t1", None, 1), _usage("b", "t1", None, 2)])
    p.put_message(_msg("m2", "t2"), (1, 1, 60, 0))
    p.apply("canonical", (1, 1, 61), [_usage("c", "t2", "m2", 5)])
    p.flush()
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    p.apply("canonical", (1, 1, 70), [_usage("a", "t1", None, 7, model="m9"), _usage("b", "t1", None, 2)])
    p.flush()
    assert ("2026-12-01", "canonical", "m9", "t1", 1, 10, 7, 3, 0, 0) in conn.execute(TOTALS).fetchall()
    # a copy of m2 in t1 (same creation time, smaller thread id: it ranks first) takes m2 over
    p.put_message(_msg("m2", "t1"), (1, 1, 80, 0))
    p.flush()
    assert conn.execute("SELECT thread_id FROM usage WHERE key = 'c'").fetchone() == ("t1",)
    assert conn.execute(TOTALS).fetchall() == conn.execute(RECOMPUTED).fetchall()
    assert {r[3] for r in conn.execute(TOTALS)} == {"t1"}
    conn.execute("COMMIT")


def test_a_new_copy_of_a_history_folds_only_the_threads_it_changes(tmp_path):
    """Three files holding the same two messages, each with one of its own: the first owns
    the shared ones and the others are its forks. The third copy changes no other thread's
    lineage, so only its own thread is folded (every holder of a copy was, before)."""
    db, conn = _db(tmp_path)
    p = Projector(conn)
    conn.execute("BEGIN")
    for source, thread in ((1, "t1"), (2, "t2"), (3, "t3")):
        for off, mid in enumerate(("a", "b", f"own-{thread}")):
            p.put_message(_msg(mid, thread), (source, 1, off, 0))
        p.refold()
        folded = sorted(set(_writes(conn)) - {"usage"})
        assert folded == [thread]
    lineage = "SELECT thread_id, parent_thread_id, origin_message_id, kind FROM thread_lineage ORDER BY 1"
    assert conn.execute(lineage).fetchall() == [("t2", "t1", "b", "fork"), ("t3", "t1", "b", "fork")]
    # what a fold of every copy gives: the same rows (nothing was left stale)
    stored = conn.execute("SELECT * FROM threads ORDER BY id").fetchall()
    for t in ("t1", "t2", "t3"):
        assert resolve_lineage(conn, t) is False
        fold_thread(conn, t)
    assert conn.execute("SELECT * FROM threads ORDER BY id").fetchall() == stored
    assert conn.execute(lineage).fetchall() == [("t2", "t1", "b", "fork"), ("t3", "t1", "b", "fork")]
    conn.execute("COMMIT")


def test_a_new_copy_resolves_the_lineage_only_of_the_threads_it_can_change(tmp_path, monkeypatch):
    """A copy that takes no message over can change no other holder's lineage: only its own
    thread is resolved. A copy that takes the shared messages over (it ranks first) changes
    every holder's: all are resolved, and what is stored is what resolving all of them gives."""
    from archive import projection

    db, conn = _db(tmp_path)
    conn.execute("INSERT INTO sources (id, uid, provider, kind) VALUES (4, 'u4', 'canonical', 'lines')")
    resolved: list[str] = []
    real = projection.resolve_lineage
    monkeypatch.setattr(projection, "resolve_lineage", lambda c, t: resolved.append(t) or real(c, t))
    p = Projector(conn)
    conn.execute("BEGIN")
    seen = {}
    for source, thread in ((1, "t1"), (2, "t2"), (3, "t3"), (4, "t0")):  # t0 ranks first: it takes a and b
        resolved.clear()
        for off, mid in enumerate(("a", "b", f"own-{thread}")):
            p.put_message(_msg(mid, thread), (source, 1, off, 0))
        p.refold()
        seen[thread] = sorted(resolved)
    assert seen == {"t1": [], "t2": ["t2"], "t3": ["t3"], "t0": ["t0", "t1", "t2", "t3"]}
    lineage = "SELECT thread_id, parent_thread_id, origin_message_id, kind FROM thread_lineage ORDER BY 1"
    expected = [("t1", "t0", "b", "fork"), ("t2", "t0", "b", "fork"), ("t3", "t0", "b", "fork")]
    assert conn.execute(lineage).fetchall() == expected
    for t in ("t0", "t1", "t2", "t3"):
        assert real(conn, t) is False  # nothing left stale
    conn.execute("COMMIT")


def test_a_message_moving_between_keys_of_its_own_thread_keeps_the_threads_lineage(tmp_path):
    """As before the lineage was resolved only where a flush can change it: a thread's own
    message taken over by a key of the same thread that ranks first (a session its client
    rewrote, read again: Gemini CLI resuming an emitted hand-off) resolves no lineage, so the
    fork found when the copies came is kept."""
    db, conn = _db(tmp_path)
    conn.execute("INSERT INTO sources (id, uid, provider, kind) VALUES (4, 'u0', 'canonical', 'lines')")
    p = Projector(conn)
    conn.execute("BEGIN")
    for source, thread in ((1, "t1"), (2, "t2")):
        for off, mid in enumerate(("a", "b", f"own-{thread}")):
            p.put_message(_msg(mid, thread), (source, 1, off, 0))
        p.refold()
    lineage = "SELECT thread_id, parent_thread_id, origin_message_id, kind FROM thread_lineage ORDER BY 1"
    assert conn.execute(lineage).fetchall() == [("t2", "t1", "b", "fork")]
    p.put_message(_msg("own-t2", "t2"), (4, 1, 0, 0))  # u0 ranks before u2: the same thread's key moves
    p.refold()
    assert conn.execute("SELECT source_id FROM messages WHERE id = 'own-t2'").fetchone() == (4,)
    assert conn.execute(lineage).fetchall() == [("t2", "t1", "b", "fork")]
    conn.execute("COMMIT")


def _counting_folds(monkeypatch) -> list[str]:
    from archive import projection

    folded: list[str] = []
    real = projection.fold_thread

    def counted(conn, thread_id):
        folded.append(thread_id)
        return real(conn, thread_id)

    monkeypatch.setattr(projection, "fold_thread", counted)
    return folded


def test_a_thread_written_by_several_files_is_folded_once_a_transaction(tmp_path, monkeypatch):
    """A session spread over several files (Kimi CLI's context and wire, Mistral Vibe's 17, a
    Claude Code session and its subagents') was folded after each file; its row is now
    folded once, when the transaction commits."""
    from tests.ingest_helpers import canonical_lines, ingest, write_lines

    lines = canonical_lines("t", 12, seed=4)
    paths = []
    for i in range(4):  # the thread record in the first file, three messages in each
        paths.append(tmp_path / f"part{i}.jsonl")
        write_lines(paths[-1], (lines[:1] if i == 0 else []) + lines[1 + 3 * i : 4 + 3 * i])
    folded = _counting_folds(monkeypatch)
    db, s = ingest(tmp_path / "x.db", paths)
    assert s.failed == 0 and s.messages_added == 12
    assert folded.count("t") == 1
    row = db.execute("SELECT title, created_at, cwd FROM threads WHERE id = 't'").fetchone()
    assert row == ("thread t", "2026-01-01T00:00:00Z", "/work/t")


def _mixed_home(tmp_path):
    """Every vendor's fixtures with each Claude Code session copied beside itself (copies of
    one history: forks), and given files: threads without a createdAt sharing messages
    (ranked by the folded row), one with its own older message, and (``later``, read in a
    run after them) copies of stored messages ranked by the message before them. Returns
    (home, given, later)."""
    import shutil

    import orjson

    from tests.ingest_helpers import canonical_lines, write_lines
    from tests.vendor_home import build_home

    home = tmp_path / "home"
    build_home(home)
    for f in sorted((home / ".claude" / "projects").glob("*/*.jsonl")):
        shutil.copyfile(f, f.with_name(f.stem + "-copy.jsonl"))
    given = tmp_path / "given"
    bare = [orjson.loads(x) for x in canonical_lines("d", 6, seed=3)[1:]]  # no thread record
    for m in bare:
        m.pop("usage", None)
    for name, thread in (("d1", "zd"), ("d2", "d")):
        write_lines(given / f"{name}.jsonl", [orjson.dumps({**m, "threadId": thread}) for m in bare])
    early = {"v": 1, "id": "e-own", "threadId": "e", "role": "user", "ts": "2025-06-01T00:00:00Z",
             "content": [{"type": "text", "text": "older than the copies"}]}  # fmt: skip
    write_lines(given / "e1.jsonl", [orjson.dumps(early)])
    write_lines(given / "e2.jsonl", [orjson.dumps({**m, "threadId": "e"}) for m in bare])
    for i in range(6):  # small sessions of their own: these share flushes
        write_lines(given / f"f{i}.jsonl", canonical_lines(f"f{i}", 3, seed=10 + i))
    # a thread whose copies of stored messages rank by the message before them in the same
    # run (its own, older than the stored ones': it takes them over when that one is stored)
    shared = [orjson.loads(x) for x in canonical_lines("g", 4, seed=5)[1:]]
    for m in shared:
        m.pop("usage", None)
    write_lines(given / "g0.jsonl", [orjson.dumps({**m, "threadId": "zg"}) for m in shared])
    later = tmp_path / "later"
    write_lines(later / "a.jsonl", [orjson.dumps({**early, "id": "g-own", "threadId": "g"})])
    write_lines(later / "b.jsonl", [orjson.dumps({**m, "threadId": "g"}) for m in shared])
    return home, given, later


def _ingest_mixed(db, home, given, later):
    from archive.ingest import IngestOptions, ingest_paths
    from tests.ingest_helpers import NEVER_IDLE
    from tests.vendor_home import vendor_env

    assert ingest_paths(db, None, IngestOptions(env=vendor_env(home), idle_seconds=10**9)).failed == 0
    assert ingest_paths(db, sorted(given.glob("*.jsonl")), NEVER_IDLE).failed == 0
    assert ingest_paths(db, sorted(later.glob("*.jsonl")), NEVER_IDLE).failed == 0


def test_folding_once_a_transaction_gives_the_rows_of_a_fold_a_file(tmp_path, monkeypatch):
    """Every vendor's fixtures, copies and threads ranked by their folded rows
    (``_mixed_home``): the same tables as when every flush folded its threads at once."""
    from archive.db import dump_tables
    from archive.ingest import rebuild

    home, given, later = _mixed_home(tmp_path)
    real_flush = Projector.flush

    def flush_and_fold(self):  # what every file's write did before: fold what the flush wrote
        real_flush(self)
        for tid in sorted(self.dirty_threads):
            fold_thread(self.conn, tid)
        self.dirty_threads.clear()

    dumps = {}
    for arm in ("each flush", "each transaction"):
        if arm == "each flush":
            monkeypatch.setattr(Projector, "flush", flush_and_fold)
        else:
            monkeypatch.setattr(Projector, "flush", real_flush)
        db = open_db(tmp_path / f"{arm}.db")
        _ingest_mixed(db, home, given, later)
        d = dump_tables(db)
        d.pop("ingest_runs", None)
        dumps[arm] = d
        if arm == "each transaction":  # and rebuild gives them (a thread of copies only, "d", included)
            rebuild(db)
            again = dump_tables(db)
            again.pop("ingest_runs", None)
            assert again == d
    assert dumps["each flush"] == dumps["each transaction"]
    assert "d" in {r[0] for r in dumps["each transaction"]["threads"]}
    owners = {r[1] for r in dumps["each transaction"]["messages"] if r[0].startswith("d-m")}
    assert len(owners) == 1


def test_files_sharing_a_flush_give_the_tables_of_a_flush_a_file(tmp_path, monkeypatch):
    """Small files' rows wait and are written together (``LineWriter._flush_rows``), in
    groups of files whose rows cannot meet (``Projector.flush``). On every vendor's fixtures,
    copies of histories, Kimi CLI's usage linked across files and threads ranked by their
    folded rows, the tables are those of a flush after every file, and fewer flushes wrote
    them."""
    from archive.db import dump_tables
    from archive.ingest.writer import LineWriter

    home, given, later = _mixed_home(tmp_path)
    groups = []
    real_group = Projector._flush_group
    monkeypatch.setattr(Projector, "_flush_group", lambda self, owner: groups.append(1) or real_group(self, owner))
    real_rows = LineWriter._flush_rows
    dumps, counts = {}, {}
    for arm in ("a flush a file", "files sharing flushes"):
        if arm == "a flush a file":
            monkeypatch.setattr(LineWriter, "_flush_rows", lambda self, nbytes, nlines, final: self.projector.flush())
        else:
            monkeypatch.setattr(LineWriter, "_flush_rows", real_rows)
        groups.clear()
        db = open_db(tmp_path / f"{arm}.db")
        _ingest_mixed(db, home, given, later)
        counts[arm] = len(groups)
        d = dump_tables(db)
        d.pop("ingest_runs", None)
        dumps[arm] = d
    for table in dumps["a flush a file"]:
        assert dumps["files sharing flushes"][table] == dumps["a flush a file"][table], table
    assert counts["files sharing flushes"] < counts["a flush a file"] / 2, counts


def test_a_fold_failing_at_commit_keeps_nothing_of_the_transaction(tmp_path, monkeypatch):
    """The threads are folded when the transaction commits; a failure there rolls it back (a
    commit after it would keep threads half folded), and the next run reads the files again
    into the tables of a whole run."""
    from archive import projection
    from archive.db import dump_tables
    from archive.ingest import ingest_paths
    from tests.ingest_helpers import NEVER_IDLE, canonical_lines, ingest, write_lines

    paths = []
    for i in range(3):
        paths.append(tmp_path / f"s{i}.jsonl")
        write_lines(paths[-1], canonical_lines(f"t{i}", 4, seed=i))
    real = projection.fold_thread
    calls = []

    def failing(conn, thread_id):
        calls.append(thread_id)
        if len(calls) == 2:
            raise RuntimeError("disk trouble")
        return real(conn, thread_id)

    monkeypatch.setattr(projection, "fold_thread", failing)
    db = open_db(tmp_path / "x.db")
    with pytest.raises(RuntimeError):
        ingest_paths(db, paths, NEVER_IDLE)
    for table in ("sources", "messages", "threads"):
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table
    monkeypatch.setattr(projection, "fold_thread", real)
    assert ingest_paths(db, paths, NEVER_IDLE).messages_added == 12
    whole, _ = ingest(tmp_path / "whole.db", paths)
    mine, theirs = dump_tables(db), dump_tables(whole)
    for t in ("threads", "messages", "blocks", "usage", "thread_facts"):
        assert mine[t] == theirs[t], t


def _linked_usage_tables(tmp_path, name: str, together: bool) -> list:
    """A usage row stored before its message (source 3, linked by ``RESPONSE_LINK``), then
    the message (source 1) and another row of the same response (source 2) queued as two
    files' rows: flushed together, or each on its own."""
    from archive.vendors.base import RESPONSE_LINK

    db = open_db(tmp_path / f"{name}.db")
    conn = db.conn
    for i in (1, 2, 3):
        conn.execute("INSERT INTO sources (id, uid, provider, kind) VALUES (?, ?, 'canonical', 'lines')", (i, f"u{i}"))
    p = Projector(conn)
    conn.execute("BEGIN")

    def row(out: int) -> UsageRow:
        return UsageRow("k", "t", Usage(output_tokens=out, extra={RESPONSE_LINK: "L"}), None, "m1", "2026-12-01T10:00:00Z")

    p.parcel()
    p.apply("canonical", (3, 1, 0), [row(3)])
    p.flush()
    p.parcel()
    message = Message(id="m", thread_id="t", role="assistant", ts=None, content=[Text("m")], extra={RESPONSE_LINK: "L"})
    p.put_message(message, (1, 1, 0, 0))
    if not together:
        p.flush()
    p.parcel()
    p.apply("canonical", (2, 1, 0), [row(2)])
    p.flush()
    conn.execute("COMMIT")
    return conn.execute("SELECT key, thread_id, message_id, output_tokens, source_id FROM usage").fetchall()


def test_files_linking_usage_to_one_thread_are_not_flushed_together(tmp_path):
    """A file whose usage names no message of its own (Kimi CLI's wire) and a file of the
    same thread carrying response links are written in flushes of their own: linked before
    it ranks, the second row of the response would win against the stored one, which is
    linked only after the upsert (``_link_usage``)."""
    apart = _linked_usage_tables(tmp_path, "apart", together=False)
    assert apart == [("k", "t", "m", 3, 3)]  # both linked: the larger source uid keeps its row
    assert _linked_usage_tables(tmp_path, "together", together=True) == apart
