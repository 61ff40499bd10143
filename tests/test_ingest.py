"""Ingest engine invariants (DESIGN.md): idempotent, incremental = whole, rebuild = ingest,
restore is byte-exact, rewrites become generations, moves and copies are not duplicated,
deleted files lose nothing, concurrent ingests serialise, bad input is reported."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths, rebuild, restore
from tests.ingest_helpers import NEVER_IDLE, canonical_lines, ingest, portable_dump, write_lines


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_rerun_changes_nothing(tmp_path):
    a = tmp_path / "a.jsonl"
    write_lines(a, canonical_lines("t1", 50))
    db, s1 = ingest(tmp_path / "x.db", [a])
    assert s1.messages_added == 50
    before = dump_tables(db)
    db, s2 = ingest(tmp_path / "x.db", [a])
    assert s2.files_changed == 0 and s2.lines == 0 and s2.bytes_read == 0
    assert dump_tables(db) == before
    # even when the stat shortcut cannot be used (touch), nothing changes
    os.utime(a, None)
    db, s3 = ingest(tmp_path / "x.db", [a])
    assert s3.messages_added == 0
    assert portable_dump(db) == portable_dump(open_db(tmp_path / "x.db"))
    assert dump_tables(db)["messages"] == before["messages"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.floats(0, 1), min_size=1, max_size=6), seed=st.integers(0, 1000))
def test_incremental_equals_whole(tmp_path_factory, cuts, seed):
    tmp = tmp_path_factory.mktemp("inc")
    data = b"".join(line + b"\n" for line in canonical_lines("t", 40, seed=seed))
    data += b'{"v":1,"id":"tail","threadId":"t","role":"user","ts":null,"content":[]}\n'
    whole = tmp / "whole" / "s.jsonl"
    whole.parent.mkdir()
    whole.write_bytes(data)
    db_whole, _ = ingest(tmp / "whole.db", [whole])

    growing = tmp / "grow" / "s.jsonl"
    growing.parent.mkdir()
    positions = sorted({int(c * len(data)) for c in cuts} | {len(data)})
    written = 0
    for pos in positions:
        with open(growing, "ab") as f:
            f.write(data[written:pos])
        written = pos
        if pos == 0:
            continue
        db_inc, _ = ingest(tmp / "inc.db", [growing], IngestOptions(idle_seconds=10**9, batch_lines=7))
    assert portable_dump(db_inc) == portable_dump(db_whole)


def test_torn_last_line_waits_then_is_taken_when_idle(tmp_path):
    a = tmp_path / "a.jsonl"
    lines = canonical_lines("t", 3)
    a.write_bytes(b"\n".join(lines))  # no newline after the last line
    db, s = ingest(tmp_path / "x.db", [a])
    assert s.messages_added == 2
    db, s = ingest(tmp_path / "x.db", [a])  # still torn, still not idle: nothing
    assert s.messages_added == 0
    old = a.stat().st_mtime - 7200
    os.utime(a, (old, old))
    db, s = ingest(tmp_path / "x.db", [a], IngestOptions(idle_seconds=3600))
    assert s.messages_added == 1
    out = restore(db, tmp_path / "restored")
    assert out[0].sha256 == sha(a.read_bytes())


def test_torn_line_that_does_not_parse_is_not_taken(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_bytes(b"\n".join(canonical_lines("t", 2)) + b'\n{"v":1,"id":"half')
    old = a.stat().st_mtime - 7200
    os.utime(a, (old, old))
    db, s = ingest(tmp_path / "x.db", [a], IngestOptions(idle_seconds=60))
    assert s.messages_added == 2
    assert db.execute("SELECT pending FROM source_paths").fetchone()[0] == len(b'{"v":1,"id":"half')


def test_rebuild_equals_ingest(tmp_path):
    files = []
    for i in range(3):
        f = tmp_path / f"s{i}.jsonl"
        write_lines(f, canonical_lines(f"t{i}", 30, seed=i) + [b"garbage", b""])
        files.append(f)
    db, _ = ingest(tmp_path / "x.db", files)
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before
    rebuild(db, source=db.execute("SELECT uid FROM sources ORDER BY id LIMIT 1").fetchone()[0])
    assert dump_tables(db) == before


def test_restore_is_byte_exact(tmp_path):
    a = tmp_path / "in" / "a.jsonl"
    data = write_lines(a, canonical_lines("t", 20) + [b"\x00\x00\x00", b"\xff\xfe not utf8", b"  ", b"{}\r"])
    db, _ = ingest(tmp_path / "x.db", [a])
    (out,) = restore(db, tmp_path / "out")
    assert out.sha256 == sha(data) and out.path.read_bytes() == data
    assert out.path == tmp_path / "out" / str(a).lstrip("/")


def test_rewrite_becomes_new_generation_and_keeps_old(tmp_path):
    a = tmp_path / "a.jsonl"
    lines = canonical_lines("t", 20)
    gen1 = write_lines(a, lines)
    db, _ = ingest(tmp_path / "x.db", [a])
    # compaction-like rewrite: same first line, a summary, then the last messages; shorter
    summary = orjson.dumps({"v": 1, "id": "summary", "threadId": "t", "role": "user", "ts": None,
                            "content": [{"type": "text", "text": "summary of earlier work"}]})  # fmt: skip
    gen2 = write_lines(a, [lines[0], summary] + lines[-3:])
    db, s = ingest(tmp_path / "x.db", [a])
    assert s.messages_added == 1
    assert db.execute("SELECT current_generation FROM sources").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 21
    superseded = {r[0] for r in db.execute("SELECT message_id FROM superseded_messages")}
    assert superseded == {f"t-m{i}" for i in range(17)}
    files = {f.generation: f for f in restore(db, tmp_path / "out", all_generations=True)}
    assert files[1].sha256 == sha(gen1) and files[2].sha256 == sha(gen2)
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before


def test_file_continuing_an_older_generation_extends_it(tmp_path):
    """clm keeps the pre-compaction log as .bak, possibly with lines we never saw."""
    log = tmp_path / "s.jsonl"
    lines = canonical_lines("t", 10)
    write_lines(log, lines[:6])
    db, _ = ingest(tmp_path / "x.db", [log])
    bak = tmp_path / "s.jsonl.bak"
    write_lines(bak, lines)  # the old log grew by 5 lines before compaction
    write_lines(log, [lines[0], lines[-1]])
    db, s = ingest(tmp_path / "x.db", [log, bak])
    gens = db.execute("SELECT generation, line_count FROM generations ORDER BY generation").fetchall()
    assert gens == [(1, 11), (2, 2)]
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == 10
    files = {f.generation: f for f in restore(db, tmp_path / "out", all_generations=True)}
    assert files[1].sha256 == sha(bak.read_bytes())


def test_move_and_copy_are_not_duplicated(tmp_path):
    a = tmp_path / "sessions" / "a.jsonl"
    lines = canonical_lines("t", 10)
    write_lines(a, lines[:6])
    db, _ = ingest(tmp_path / "x.db", [a])
    before = db.execute("SELECT count(*) FROM source_lines").fetchone()[0]
    moved = tmp_path / "archived" / "a.jsonl"
    moved.parent.mkdir()
    shutil.move(a, moved)
    write_lines(moved, lines)  # it grew after the move
    db, s = ingest(tmp_path / "x.db", [moved])
    assert s.messages_added == 5
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM source_lines").fetchone()[0] == before + 5
    assert db.execute("SELECT current_generation FROM sources").fetchone()[0] == 1
    # a copy beside its live original is a file of its own (issue 33: two files that exist
    # at once are two sources, both restored); its messages are the original's, not added
    copy = tmp_path / "copy.jsonl"
    shutil.copy(moved, copy)
    db, s = ingest(tmp_path / "x.db", [copy])
    assert s.messages_added == 0
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    restored = {f.path.name: f.sha256 for f in restore(db, tmp_path / "out")}
    assert restored == {"a.jsonl": sha(moved.read_bytes()), "copy.jsonl": sha(copy.read_bytes())}
    paths = {r[0] for r in db.execute("SELECT path FROM source_paths")}
    assert paths == {str(a), str(moved), str(copy)}
    # copied from elsewhere, its original not here: it continues the source, nothing read again
    elsewhere = tmp_path / "elsewhere" / "a.jsonl"
    elsewhere.parent.mkdir()
    shutil.copy(moved, elsewhere)
    moved.unlink()
    db, s = ingest(tmp_path / "x.db", [elsewhere])
    assert s.messages_added == 0 and s.lines == 0


def test_deleted_and_moved_vendor_files_lose_nothing(tmp_path):
    """Default discovery under CODEX_HOME (set by conftest): Codex archives, then deletes."""
    codex_home = Path(os.environ["CODEX_HOME"])
    fixture = Path(__file__).parent / "fixtures" / "codex" / "recorded" / "codex-0.171.0-exec-resume.jsonl"
    live = codex_home / "sessions" / "2026" / "11" / "01" / "rollout-2026-11-01T10-00-00-x.jsonl"
    live.parent.mkdir(parents=True)
    shutil.copy(fixture, live)
    db, s = ingest(tmp_path / "x.db", [])
    assert s.messages_added > 0
    before = portable_dump(db)
    archived = codex_home / "archived_sessions" / live.name
    archived.parent.mkdir(parents=True)
    shutil.move(live, archived)
    db, s = ingest(tmp_path / "x.db", [])
    assert s.messages_added == 0 and portable_dump(db) == before
    archived.unlink()
    db, s = ingest(tmp_path / "x.db", [])
    assert portable_dump(db) == before
    missing = db.execute("SELECT path, missing FROM source_paths ORDER BY path").fetchall()
    assert missing == [(str(archived), 1), (str(live), 1)]
    from archive.stats import archive_status

    info = archive_status(db, tmp_path / "x.db")
    assert [g["path"] for g in info["missing_sources"]] == [str(archived), str(live)]


def test_bad_input_is_reported_not_fatal(tmp_path):
    lines = canonical_lines("t", 6)
    bad = [b"\x00" * 100, bytes(range(256)), b"\xc3\x28 broken utf-8", b'{"v":1,"id":"x"', b"[1,2]",
           b"{" + b'"pad":"' + b"z" * (50 << 20) + b'"}']  # fmt: skip
    a = tmp_path / "a.jsonl"
    data = write_lines(a, lines[:3] + bad + lines[3:])
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(os.urandom(4096).replace(b"\n", b"x"))
    db, s = ingest(tmp_path / "x.db", [a, empty, garbage])
    assert s.messages_added == 6
    kinds = dict(db.execute("SELECT kind, count(*) FROM reports GROUP BY kind").fetchall())
    # bytes(range(256)) holds a newline, so it is two lines: 6 unparseable lines in all, and
    # the 50 MB object is valid JSON but no canonical record
    assert kinds == {"parse_error": 6, "invalid": 1}
    problems = {p["path"]: p["problem"] for p in s.problems}
    assert problems == {str(empty): "no adapter recognises this file", str(garbage): "no adapter recognises this file"}
    (out,) = restore(db, tmp_path / "out")
    assert out.sha256 == sha(data)


def test_broken_links_and_loops_are_reported(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    write_lines(root / "ok.jsonl", canonical_lines("t", 2))
    (root / "dangling.jsonl").symlink_to(tmp_path / "nowhere")
    (root / "loop").symlink_to(root)
    from archive.ingest import discover
    from archive.vendors import canonical

    class Claims(type(canonical.ADAPTER)):
        def classify(self, path):
            return "lines" if path.suffix == ".jsonl" else None

    problems: list = []
    found = list(discover([root], [Claims()], {}, problems))
    assert [c.path.name for c in found] == ["ok.jsonl"]
    kinds = sorted(p["problem"] for p in problems)
    assert kinds == ["broken link", "link loop"]


def test_concurrent_ingests_equal_one(tmp_path):
    files = []
    for i in range(4):
        f = tmp_path / "in" / f"s{i}.jsonl"
        write_lines(f, canonical_lines(f"t{i}", 300, seed=i))
        files.append(str(f))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    cmd = [sys.executable, "-m", "archive", "--db", str(tmp_path / "c.db"), "ingest", "-q", *files]
    procs = [subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE) for _ in range(2)]
    for p in procs:
        assert p.wait(120) == 0, p.stderr.read()
    db_one, _ = ingest(tmp_path / "one.db", [Path(f) for f in files])
    assert portable_dump(open_db(tmp_path / "c.db")) == portable_dump(db_one)


def test_no_wait_fails_fast_when_locked(tmp_path):
    from click.testing import CliRunner

    from archive.cli import cli
    from archive.ingest import ingest_lock

    db_path = tmp_path / "x.db"
    with ingest_lock(db_path, wait=None):
        result = CliRunner().invoke(cli, ["--db", str(db_path), "ingest", "--no-wait", str(tmp_path)])
    assert result.exit_code == 1
    assert "another ingest is running" in result.output


def test_new_first_line_at_a_known_path_is_a_new_generation(tmp_path):
    a = tmp_path / "a.jsonl"
    first = write_lines(a, canonical_lines("t", 5))
    db, _ = ingest(tmp_path / "x.db", [a])
    lines = canonical_lines("t", 8, seed=3)
    lines[0] = lines[0].replace(b'"title":"thread t"', b'"title":"renamed"')
    second = write_lines(a, lines)
    db, s = ingest(tmp_path / "x.db", [a])
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM source_fingerprints").fetchone()[0] == 2
    assert db.execute("SELECT current_generation FROM sources").fetchone()[0] == 2
    assert db.execute("SELECT title FROM threads").fetchone()[0] == "renamed"
    files = {f.generation: f.sha256 for f in restore(db, tmp_path / "out", all_generations=True)}
    assert files == {1: sha(first), 2: sha(second)}
    db, s = ingest(tmp_path / "x.db", [a])  # and it is stable afterwards
    assert s.lines == 0


def test_agent_meta_json_resolves_origin_whatever_the_order(tmp_path):
    """meta.json names the spawning tool call; the message holding it may be archived later."""
    import shutil as sh

    fixture = Path(__file__).parent / "fixtures" / "recorded" / "claude-code-2.1.197" / "agent" / "projects"
    (project,) = list(fixture.iterdir())
    (session,) = [p for p in project.iterdir() if p.suffix == ".jsonl"]
    meta = next((project / session.stem / "subagents").glob("*.meta.json"))
    agent = meta.with_name(meta.name.replace(".meta.json", ".jsonl"))
    home = tmp_path / "home" / ".claude" / "projects" / project.name
    sub = home / session.stem / "subagents"
    sub.mkdir(parents=True)
    sh.copy(meta, sub / meta.name)
    sh.copy(agent, sub / agent.name)
    # the agent and its meta.json first, the session that spawned it in a later run
    db, _ = ingest(tmp_path / "x.db", [sub / meta.name, sub / agent.name])
    child = f"{session.stem}/agent-{agent.stem.removeprefix('agent-')}"
    assert db.execute("SELECT origin_message_id FROM threads WHERE id = ?", (child,)).fetchone() == (None,)
    sh.copy(session, home / session.name)
    db, _ = ingest(tmp_path / "x.db", [home / session.name])
    origin = db.execute("SELECT origin_message_id FROM threads WHERE id = ?", (child,)).fetchone()[0]
    spawner = db.execute(
        "SELECT b.message_id FROM blocks b WHERE b.type = 'tool_call' AND b.tool_name = 'Agent'"
    ).fetchone()[0]
    assert origin == spawner
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before


def test_file_vanishing_mid_run_is_not_a_failure(tmp_path, monkeypatch):
    from archive import ingest as ingest_mod

    a = tmp_path / "a.jsonl"
    write_lines(a, canonical_lines("t", 3))
    real = ingest_mod.Engine._ingest_file

    def vanish(self, cand):
        cand.path.unlink()
        return real(self, cand)

    monkeypatch.setattr(ingest_mod.Engine, "_ingest_file", vanish)
    db, s = ingest(tmp_path / "x.db", [a])
    assert s.failed == 0 and s.problems == [{"path": str(a), "problem": "vanished during ingest"}]


def test_invariants_on_every_vendor_fixture(tmp_path):
    """Idempotent, rebuild = ingest and byte-exact restore over the real session files of all
    vendors, laid out as the vendors lay them out (subagents, meta.json, clm logs)."""
    from tests.vendor_home import build_home, vendor_env

    home = tmp_path / "home"
    placed = build_home(home)
    options = IngestOptions(env=vendor_env(home), idle_seconds=10**9)
    db = open_db(tmp_path / "x.db")
    s = ingest_paths(db, None, options)
    assert s.failed == 0 and s.files_changed == len(placed)
    assert not s.reports.get("unexplained") and not s.reports.get("adapter_error")
    before = dump_tables(db)
    again = ingest_paths(db, None, options)
    assert again.files_changed == 0 and dump_tables(db) == before
    rebuild(db)
    assert dump_tables(db) == before
    restored = {f.sha256 for f in restore(db, tmp_path / "out")}
    assert restored == {sha(p.read_bytes()) for p in placed.values()}


def _fail_reading(monkeypatch, name: str, after: int, exc: BaseException) -> None:
    """Make reading the file called ``name`` raise ``exc`` after ``after`` lines."""
    from archive.ingest import reader as ingest_mod

    real = ingest_mod._LineReader.__iter__

    def failing(self):
        for i, item in enumerate(real(self)):
            if Path(self.f.name).name == name and i == after:
                raise exc
            yield item

    monkeypatch.setattr(ingest_mod._LineReader, "__iter__", failing)


def test_files_share_a_commit_and_a_failing_file_keeps_a_consistent_prefix(tmp_path, monkeypatch):
    files = [tmp_path / f"{n}.jsonl" for n in "abc"]
    for i, f in enumerate(files):
        write_lines(f, canonical_lines(f.stem, 12, seed=i))
    whole, _ = ingest(tmp_path / "whole.db", files)

    # b fails after two batches: a and c are whole, b keeps its two batches (lines, rows and
    # offset together) but no path record, so the next run reads it again from there
    options = IngestOptions(idle_seconds=10**9, batch_lines=3)
    db = open_db(tmp_path / "x.db")
    commits: list[str] = []
    db.conn.set_trace_callback(lambda sql: commits.append(sql) if sql.strip().upper() == "COMMIT" else None)
    with monkeypatch.context() as m:  # undoes this patch only, never the test's home isolation
        _fail_reading(m, "b.jsonl", 7, OSError(5, "Input/output error"))
        s = ingest_paths(db, files, options)
    assert s.failed == 1 and [p["path"] for p in s.problems] == [str(files[1])]
    assert db.execute("SELECT count(*) FROM source_lines WHERE source_id = 2").fetchone()[0] == 6
    assert db.execute("SELECT end_offset FROM generations WHERE source_id = 2").fetchone()[0] == sum(
        len(line) for line in files[1].read_bytes().splitlines(keepends=True)[:6]
    )
    assert db.execute("SELECT count(*) FROM source_paths WHERE path = ?", (str(files[1]),)).fetchone()[0] == 0
    # three files of four batches each, one commit for all of them (then origins, run log)
    assert len(commits) <= 3, commits
    ingest_paths(db, files, options)
    assert portable_dump(db) == portable_dump(whole)


def test_interrupt_keeps_what_was_written(tmp_path, monkeypatch):
    files = [tmp_path / f"{n}.jsonl" for n in "ab"]
    for i, f in enumerate(files):
        write_lines(f, canonical_lines(f.stem, 12, seed=i))
    whole, _ = ingest(tmp_path / "whole.db", files)
    db = open_db(tmp_path / "x.db")
    with monkeypatch.context() as m, pytest.raises(KeyboardInterrupt):
        _fail_reading(m, "b.jsonl", 5, KeyboardInterrupt())
        ingest_paths(db, files, IngestOptions(idle_seconds=10**9, batch_lines=2))
    assert not db.conn.in_transaction
    assert db.execute("SELECT count(*) FROM source_lines").fetchone()[0] == 13 + 4
    ingest_paths(db, files, NEVER_IDLE)
    assert portable_dump(db) == portable_dump(whole)


def _assert_fts_complete(db) -> None:
    """blocks_fts indexes exactly the committed blocks, with their current text."""
    db.execute("INSERT INTO blocks_fts(blocks_fts, rank) VALUES ('integrity-check', 1)")
    indexed = {r[0] for r in db.execute("SELECT id FROM blocks_fts_docsize")}
    assert indexed == {r[0] for r in db.execute("SELECT id FROM blocks")}
    upto = db.execute("SELECT indexed_upto FROM blocks_fts_progress").fetchone()[0]
    assert upto >= (db.execute("SELECT max(id) FROM blocks").fetchone()[0] or 0)


def test_full_text_index_follows_every_write(tmp_path):
    from archive.model import Message, Text
    from archive.store import SqliteMessageStore

    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    lines = canonical_lines("ta", 30)
    write_lines(a, lines[:20])
    write_lines(b, canonical_lines("tb", 10, seed=1))
    db, _ = ingest(tmp_path / "x.db", [a, b])
    _assert_fts_complete(db)
    assert db.execute("SELECT count(*) FROM blocks_fts WHERE blocks_fts MATCH 'quokka'").fetchone()[0] > 0
    write_lines(a, lines)  # appended: new blocks above the indexed ones
    ingest_paths(db, [a], NEVER_IDLE)
    _assert_fts_complete(db)
    store = SqliteMessageStore(tmp_path / "x.db")  # a block above the indexed ones
    store.append_message(Message(id="s1", thread_id="ts", role="user", ts=None, content=[Text("xylophone solo")]))
    _assert_fts_complete(db)
    hits = db.execute(
        "SELECT b.message_id FROM blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid WHERE blocks_fts MATCH 'xylophone'"
    ).fetchall()
    assert hits == [("s1",)]
    rebuild(db, source=str(b))  # the newest blocks deleted and written again
    _assert_fts_complete(db)
    rebuild(db)  # every block deleted and written again: rowids at or below the mark reused
    _assert_fts_complete(db)


@pytest.mark.parametrize("given", ["vendor roots", "a folder"])
def test_rerun_passes_over_unchanged_files_before_any_work(tmp_path, monkeypatch, given):
    """A nightly rerun stats each known file and nothing more: no adapter is asked about an
    unchanged path (nor its head read); a grown file is classified and read again."""
    from archive.vendors import VENDORS
    from tests.vendor_home import build_home, vendor_env

    home = tmp_path / "home"
    placed = build_home(home)
    env = vendor_env(home)
    db = open_db(tmp_path / "x.db")
    paths = None if given == "vendor roots" else [home]
    first = ingest_paths(db, paths, IngestOptions(env=env, idle_seconds=10**9))
    asked: list[str] = []
    for a in VENDORS:
        real = type(a).classify

        def counting(self, path, real=real):
            asked.append(str(path))
            return real(self, path)

        monkeypatch.setattr(type(a), "classify", counting)
    again = ingest_paths(db, paths, IngestOptions(env=env, idle_seconds=10**9))
    assert again.files_seen == first.files_seen > 20 and again.files_changed == 0 and asked == []
    grown = next(p for p in placed.values() if p.suffix == ".jsonl" and ".codex" in p.parts)
    with grown.open("ab") as f:
        f.write(grown.read_bytes().splitlines(keepends=True)[-1])
    third = ingest_paths(db, paths, IngestOptions(env=env, idle_seconds=10**9))
    assert str(grown) in asked and third.files_changed == 1 and third.files_seen == first.files_seen


def test_smallest_key_owns_a_message_whatever_the_order(tmp_path):
    """Within one flush and across flushes, the copy of a message at the smallest
    (source, generation, offset, sub) is the stored one, with its own blocks."""
    from archive.model import Message, Text
    from archive.projection import Projector, index_text

    db = open_db(tmp_path / "x.db")
    conn = db.conn
    conn.execute("INSERT INTO sources (id, uid, provider, kind) VALUES (1, 'u', 'canonical', 'lines')")

    def copy(text: str) -> Message:
        return Message(id="m", thread_id="t", role="user", ts=None, content=[Text(text)])

    p = Projector(conn)
    conn.execute("BEGIN")
    p.put_message(copy("at fifty"), (1, 1, 50, 0))
    p.flush()
    p.put_message(copy("at ninety"), (1, 1, 90, 0))
    p.put_message(copy("at twenty"), (1, 1, 20, 0))
    p.put_message(copy("at ten"), (1, 1, 10, 0))
    p.put_message(copy("at thirty"), (1, 1, 30, 0))
    p.flush()
    index_text(conn)
    conn.execute("COMMIT")
    assert db.execute("SELECT offset FROM messages").fetchall() == [(10,)]
    assert db.execute("SELECT text FROM blocks").fetchall() == [("at ten",)]
    assert p.messages_added == 1
    assert db.execute("SELECT count(*) FROM message_occurrences").fetchone()[0] == 5
    _assert_fts_complete(db)


@pytest.mark.parametrize("more", [0, 2])
def test_idle_taken_last_line_whose_newline_comes_later_equals_whole(tmp_path, more):
    """A torn last line taken while idle, then the file goes on with its newline (and maybe
    more lines): the archive equals one ingest of the finished file (no empty line, the
    taken line terminated), and restore gives the file back."""
    a = tmp_path / "a.jsonl"
    lines = canonical_lines("t", 3 + more)
    a.write_bytes(b"\n".join(lines[:4]))  # header + 3 messages, the last without newline
    old = a.stat().st_mtime - 7200
    os.utime(a, (old, old))
    db, s = ingest(tmp_path / "x.db", [a], IngestOptions(idle_seconds=3600))
    assert s.messages_added == 3
    a.write_bytes(b"\n".join(lines) + b"\n")
    db, s = ingest(tmp_path / "x.db", [a])
    assert s.messages_added == more and s.reports.get("skipped", 0) == 0
    whole, _ = ingest(tmp_path / "whole.db", [a])
    assert portable_dump(db) == portable_dump(whole)
    out = restore(db, tmp_path / "restored")
    assert out[0].sha256 == sha(a.read_bytes())
    _, s = ingest(tmp_path / "x.db", [a])
    assert s.files_changed == 0


def test_rebuild_after_a_move_equals_ingest_when_the_parser_reads_the_file_name(tmp_path):
    """Claude Code names a session's leading summary by the file name. Ingest and rebuild
    give parsers the source's first path, so a file moved (and grown) since rebuilds to the
    same rows."""
    sid = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
    summary = {"type": "summary", "summary": "Fix the parser", "leafUuid": "11111111-1111-4111-8111-111111111111"}

    def user(i: int) -> dict:
        return {"type": "user", "uuid": f"22222222-2222-4222-8222-00000000000{i}", "sessionId": sid,
                "timestamp": f"2026-01-01T00:00:0{i}Z", "cwd": "/w",
                "message": {"role": "user", "content": f"prompt {i}"}}  # fmt: skip

    first = tmp_path / "home" / ".claude" / "projects" / "-w" / f"{sid}.jsonl"
    write_lines(first, [orjson.dumps(summary), orjson.dumps(user(1))])
    db, _ = ingest(tmp_path / "x.db", [first])
    assert db.execute("SELECT title FROM threads WHERE id = ?", (sid,)).fetchone() == ("Fix the parser",)
    moved = tmp_path / "backup" / "33333333-3333-4333-8333-333333333333.jsonl"
    moved.parent.mkdir()
    first.rename(moved)
    write_lines(moved, [orjson.dumps(summary), orjson.dumps(user(1)), orjson.dumps(user(2))])
    ingest_paths(db, [moved], NEVER_IDLE)
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before


def test_parser_failures_are_recorded_and_the_file_goes_on(tmp_path, monkeypatch):
    """Nothing silent: a line whose parser raises is stored with an adapter_error report, a
    line it explains with nothing gets an unexplained report, and the lines after both are
    ingested as usual."""
    from archive.vendors import canonical

    a = tmp_path / "a.jsonl"
    lines = canonical_lines("t", 6)
    write_lines(a, lines)
    offsets = [sum(len(x) + 1 for x in lines[:i]) for i in range(len(lines))]
    real_parser = canonical.ADAPTER.parser

    def parser(source, state=None):
        p = real_parser(source, state)
        real_feed = p.feed

        def feed(offset, line):
            if offset == offsets[2]:
                raise RuntimeError("boom")
            if offset == offsets[3]:
                return iter(())
            return real_feed(offset, line)

        p.feed = feed
        return p

    monkeypatch.setattr(canonical.ADAPTER, "parser", parser)
    db, s = ingest(tmp_path / "x.db", [a])
    assert s.reports["adapter_error"] == 1 and s.reports["unexplained"] == 1
    stored = dict(db.execute("SELECT offset, kind FROM reports WHERE kind IN ('adapter_error', 'unexplained')").fetchall())
    assert stored == {offsets[2]: "adapter_error", offsets[3]: "unexplained"}
    ids = {r[0] for r in db.execute("SELECT id FROM messages")}
    assert {"t-m0", "t-m3", "t-m4", "t-m5"} <= ids and not {"t-m1", "t-m2"} & ids
    assert db.execute("SELECT count(*) FROM source_lines").fetchone()[0] == len(lines)


def test_compressed_source_restores_as_the_plain_file(tmp_path):
    """A .jsonl.zst (Codex archives) is read decompressed; restore writes those exact bytes
    as the plain .jsonl, never decompressed bytes under a .zst name."""
    import zstandard

    data = b"".join(line + b"\n" for line in canonical_lines("z", 5))
    a = tmp_path / "in" / "a.jsonl.zst"
    a.parent.mkdir()
    a.write_bytes(zstandard.ZstdCompressor().compress(data))
    db, s = ingest(tmp_path / "x.db", [a])
    assert s.messages_added == 5
    (out,) = restore(db, tmp_path / "restored")
    assert out.path.name == "a.jsonl" and out.sha256 == sha(data) and out.path.read_bytes() == data


def test_a_thread_belongs_to_the_folder_it_started_in(tmp_path):
    """A session that `cd`s into a subfolder stays filed under where it started (project,
    --project, emit): the later folder is kept as metadata.lastCwd."""
    sid = "0f000000-0000-4000-8000-00000000cd01"

    def claude(uuid, parent, cwd, role="user"):
        msg = {"role": role, "content": [{"type": "text", "text": f"in {cwd}"}]}
        if role == "assistant":
            msg.update(id=f"msg_{uuid}", model="m", type="message", usage={"input_tokens": 1, "output_tokens": 1})
        return {"type": role, "uuid": uuid, "parentUuid": parent, "sessionId": sid, "cwd": cwd,
                "timestamp": "2026-03-01T10:00:00.000Z", "message": msg}  # fmt: skip

    claude_lines = [claude("u1", None, "/work/app"), claude("a1", "u1", "/work/app", "assistant"),
                    claude("u2", "a1", "/work/app/sub"), claude("a2", "u2", "/work/app/sub", "assistant")]  # fmt: skip
    codex_meta = {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
                  "payload": {"id": "01a229dd-0000-7000-8000-00000000cd02", "timestamp": "2026-03-01T10:00:00.000Z",
                              "cwd": "/work/tool", "originator": "codex_cli_rs", "cli_version": "0.171.0"}}  # fmt: skip
    codex_lines = [codex_meta] + [
        {"timestamp": "2026-03-01T10:00:01.000Z", "type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5"}}
        for cwd in ("/work/tool", "/work/tool/crate", "/work/tool/crate")
    ]
    home = tmp_path / "home"
    claude_file = home / ".claude" / "projects" / "-work-app" / f"{sid}.jsonl"
    codex_file = home / ".codex" / "sessions" / "2026" / "03" / "01" / "rollout-2026-03-01T10-00-00-x.jsonl"
    for path, lines in ((claude_file, claude_lines), (codex_file, codex_lines)):
        write_lines(path, [orjson.dumps(x) for x in lines])
    db, s = ingest(tmp_path / "a.db", [claude_file, codex_file])
    assert s.failed == 0
    got = {r[0]: (r[1], orjson.loads(r[2]).get("lastCwd")) for r in db.execute("SELECT id, cwd, metadata FROM threads")}
    assert got == {sid: ("/work/app", "/work/app/sub"), "01a229dd-0000-7000-8000-00000000cd02": ("/work/tool", "/work/tool/crate")}


def test_an_ingest_run_collects_cycles_rarely_and_gives_the_collector_back(tmp_path, monkeypatch):
    """During a run the objects alive at its start are frozen and the youngest generation is
    collected far less often (engine._few_collections); afterwards the process's collector
    is as it was, even when the run fails."""
    import gc

    from archive import ingest as ingest_mod

    a = tmp_path / "a.jsonl"
    write_lines(a, canonical_lines("t", 3))
    real = ingest_mod.Engine._ingest
    during: list[tuple[tuple[int, int, int], int]] = []

    def spy(self, paths, started):
        during.append((gc.get_threshold(), gc.get_freeze_count()))
        return real(self, paths, started)

    monkeypatch.setattr(ingest_mod.Engine, "_ingest", spy)
    before = gc.get_threshold()
    ingest(tmp_path / "x.db", [a])
    (threshold, frozen), = during
    assert threshold[0] >= 10 * before[0] and threshold[1:] == before[1:]
    assert frozen > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0

    def fail(self, paths, started):
        raise RuntimeError("boom")

    monkeypatch.setattr(ingest_mod.Engine, "_ingest", fail)
    with pytest.raises(RuntimeError):
        ingest(tmp_path / "y.db", [a])
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_collector_is_given_back_once_by_nested_runs_and_a_callers_freeze_is_kept():
    """``watch`` ingests in a thread of ``serve``: runs that overlap give the collector back
    when the last one ends, and objects the process froze itself stay frozen."""
    import gc

    from archive.ingest.engine import GC_YOUNG, _few_collections

    before = gc.get_threshold()
    with _few_collections():
        with _few_collections():
            assert gc.get_threshold()[0] == GC_YOUNG
        assert gc.get_threshold()[0] == GC_YOUNG and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.freeze()
    try:
        with _few_collections():
            assert gc.get_threshold()[0] == GC_YOUNG
        assert gc.get_freeze_count() > 0 and gc.get_threshold() == before  # not thawed
    finally:
        gc.unfreeze()
