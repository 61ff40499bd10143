"""Source identity (DESIGN.md "Identity", issue 16 item 4): a first line is not enough. Two
files that exist at the same time at different paths and open with the same line are two
sources, each restored byte for byte, nothing superseded; a moved or archived file, a copy
and clm's ``.bak`` still continue the source they came from."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest

from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths, open_archive, rebuild, restore
from archive.vendors import get as get_adapter
from tests.ingest_helpers import portable_dump
from tests.vendor_home import vendor_env

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = [FIXTURES / "claude-code" / f"d-kimuson__claude-code-viewer__{s}.jsonl"
          for s in ("1af7fc5e-8455-4414-9ccd-011d40f70b2a", "5c0375b4-57a5-4f26-b12d-d022ee4e51b7")]  # fmt: skip
CODEX = [FIXTURES / "codex" / "lanegrid__agtrace__codex_session.jsonl",
         FIXTURES / "codex" / "lanegrid__agtrace__rollout-parent-019b88e0.jsonl"]  # fmt: skip
# Claude Code writes summary records of earlier sessions at the top of a resumed one
SUMMARY = b'{"type":"summary","summary":"Fix the login flow","leafUuid":"0b6a9d4e-3d1c-4a8e-9a43-5f0c2f4e1a77"}'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _claude_pair(home: Path) -> list[tuple[Path, bytes]]:
    out = []
    for f in CLAUDE:
        sid = orjson.loads(f.read_bytes().splitlines()[0])["sessionId"]
        path = home / ".claude" / "projects" / "-path-to-Demo" / f"{sid}.jsonl"
        out.append((path, SUMMARY + b"\n" + f.read_bytes()))
    return out


def _codex_pair(home: Path) -> list[tuple[Path, bytes]]:
    # both open with the same turn_context line (the one of the first fixture)
    context = next(line for line in CODEX[0].read_bytes().splitlines() if b'"type":"turn_context"' in line)
    out = []
    for f in CODEX:
        sid = orjson.loads(f.read_bytes().splitlines()[0])["payload"]["id"]
        path = home / ".codex" / "sessions" / "2026" / "01" / "01" / f"rollout-2026-01-01T00-00-00-{sid}.jsonl"
        out.append((path, context + b"\n" + f.read_bytes()))
    return out


def _ingest(db_path: Path, home: Path):
    db = open_db(db_path)
    s = ingest_paths(db, None, IngestOptions(env=vendor_env(home), idle_seconds=10**9))
    assert s.failed == 0 and s.reports["adapter_error"] == 0
    return db


def _alone(tmp_path: Path, home: Path, path: Path, data: bytes) -> set[str]:
    """Message ids of the file ingested by itself."""
    alone = tmp_path / f"alone-{sha(data)[:8]}"
    target = alone / path.relative_to(home)
    target.parent.mkdir(parents=True)
    target.write_bytes(data)
    return {r[0] for r in _ingest(alone.with_suffix(".db"), alone).execute("SELECT id FROM messages")}


def _check_two_sources(tmp_path: Path, home: Path, db, files: list[tuple[Path, bytes]]) -> None:
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM generations").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM superseded_messages").fetchone()[0] == 0
    out = tmp_path / f"restored{len(list(tmp_path.glob('restored*')))}"
    restored = {f.path: f for f in restore(db, out)}
    for path, data in files:
        f = restored[out / str(path).lstrip("/")]
        assert f.sha256 == sha(data) and f.path.read_bytes() == data
    ids = {r[0] for r in db.execute("SELECT id FROM messages")}
    assert ids == set().union(*(_alone(tmp_path, home, p, d) for p, d in files))
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before


@pytest.mark.parametrize("pair", [_claude_pair, _codex_pair], ids=["claude-code", "codex"])
@pytest.mark.parametrize("how", ["one run", "one after the other", "first read when it held only the shared line"])
def test_two_live_files_sharing_a_first_line_are_two_sources(tmp_path, pair, how):
    home = tmp_path / "home"
    files = pair(home)
    assert files[0][1].split(b"\n", 1)[0] == files[1][1].split(b"\n", 1)[0]
    for path, _ in files:
        path.parent.mkdir(parents=True, exist_ok=True)
    (a, data_a), (b, data_b) = files
    if how == "one run":
        a.write_bytes(data_a)
        b.write_bytes(data_b)
    elif how == "one after the other":
        a.write_bytes(data_a)
        _ingest(tmp_path / "x.db", home)
        b.write_bytes(data_b)
    else:
        a.write_bytes(data_a.split(b"\n", 1)[0] + b"\n")
        _ingest(tmp_path / "x.db", home)
        a.write_bytes(data_a)
        b.write_bytes(data_b)
    db = _ingest(tmp_path / "x.db", home)
    _check_two_sources(tmp_path, home, db, files)
    before = dump_tables(db)
    db = _ingest(tmp_path / "x.db", home)
    assert dump_tables(db) == before


def test_sessions_sharing_a_first_line_do_not_read_each_other(tmp_path, monkeypatch):
    """Many sessions can open with one line (a summary, a common system prompt). A new file
    whose key differs from every live file of a source that opened with its line is a
    session of its own without reading that file's bytes: reading them for every earlier
    session made a first ingest quadratic in the sessions sharing the line."""
    from archive.ingest import generations

    home = tmp_path / "home"
    body = CLAUDE[0].read_bytes()
    sid = orjson.loads(body.splitlines()[0])["sessionId"]
    files = []
    for n in range(10):
        other = f"{sid[:-2]}{n:02d}"
        path = home / ".claude" / "projects" / "-path-to-Demo" / f"{other}.jsonl"
        files.append((path, SUMMARY + b"\n" + body.replace(sid.encode(), other.encode())))
    for path, data in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    read: list[Path] = []
    real = generations._sha_range
    monkeypatch.setattr(generations, "_sha_range", lambda path, *a: read.append(path) or real(path, *a))
    keyed: list[Path] = []
    adapter = type(get_adapter("claude-code"))
    key = adapter.session_key
    monkeypatch.setattr(adapter, "session_key", lambda self, path: keyed.append(path) or key(self, path))
    looked: list[str] = []  # another source's path looked at (its place, its key) for a new file
    monkeypatch.setattr(generations.SourcesByLine, "SHARED", 2)  # a line of 3 sessions is indexed
    exists = generations.Generations._exists
    monkeypatch.setattr(generations.Generations, "_exists", lambda self, p: looked.append(p) or exists(self, p))
    db = _ingest(tmp_path / "x.db", home)
    assert read == []
    # the sessions this run stored are known by key: a new file is not compared with each
    # earlier one (45 paths looked at for ten files, 4,950 for a hundred)
    assert len(looked) <= len(files)
    # each file's key once for itself and once as another session's path: not once for every
    # earlier session (45 for ten files)
    assert len(keyed) <= 3 * len(files)
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == len(files)
    assert db.execute("SELECT count(*) FROM generations").fetchone()[0] == len(files)
    out = tmp_path / "restored"
    restored = {f.path: f for f in restore(db, out)}
    for path, data in files:
        assert restored[out / str(path).lstrip("/")].path.read_bytes() == data
    before = dump_tables(db)
    db = _ingest(tmp_path / "x.db", home)  # a rerun changes nothing
    assert dump_tables(db) == before
    rebuild(db)
    assert dump_tables(db) == before
    # a night's new sessions: the line's sources are looked at once, not for each new file
    # (10 + 11 + ... + 14 paths before)
    for n in range(10, 15):
        other = f"{sid[:-2]}{n:02d}"
        path = home / ".claude" / "projects" / "-path-to-Demo" / f"{other}.jsonl"
        path.write_bytes(SUMMARY + b"\n" + body.replace(sid.encode(), other.encode()))
    looked.clear()
    db = _ingest(tmp_path / "x.db", home)
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 15
    assert read == [] and len(looked) <= 15
    # a file moved away from its place (its project folder renamed) still continues its
    # source, read once to know it
    moved = home / ".claude" / "projects" / "-path-to-Renamed" / files[0][0].name
    moved.parent.mkdir()
    files[0][0].rename(moved)
    read.clear()
    before = db.execute("SELECT count(*) FROM sources").fetchone()[0]
    db = _ingest(tmp_path / "x.db", home)
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == before
    assert moved in read


def test_an_index_emptied_mid_run_decides_as_a_full_one(tmp_path, monkeypatch):
    """Past ``SourcesByLine.LIMIT`` the index is emptied between files and the lines are read
    again: the archive is the one an index kept whole makes, and the one no index makes."""
    from archive.ingest import generations

    home = tmp_path / "home"
    body = CLAUDE[0].read_bytes()
    sid = orjson.loads(body.splitlines()[0])["sessionId"]
    for n in range(12):
        other = f"{sid[:-2]}{n:02d}"
        path = home / ".claude" / "projects" / f"-path-to-P{n % 3}" / f"{other}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(SUMMARY + b"\n" + body.replace(sid.encode(), other.encode()))
    dumps = []
    for shared, limit in ((2, 10**9), (2, 3), (10**9, 10**9)):
        monkeypatch.setattr(generations.SourcesByLine, "SHARED", shared)
        monkeypatch.setattr(generations.SourcesByLine, "LIMIT", limit)
        db = _ingest(tmp_path / f"{shared}-{limit}.db", home)
        assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 12
        dumps.append(dump_tables(db))
    assert dumps[0] == dumps[1] == dumps[2]


def test_a_run_failing_mid_line_then_continued_ends_as_one_whole_run(tmp_path, monkeypatch):
    """Crash-safe with the index: a first ingest of sessions sharing a line that fails part-way
    (the disk full), then continued from what it committed (the line indexed again from the
    database), ends with the tables one uninterrupted run makes."""
    from archive.ingest import generations

    monkeypatch.setattr(generations.SourcesByLine, "SHARED", 2)
    home = tmp_path / "home"
    body = CLAUDE[0].read_bytes()
    sid = orjson.loads(body.splitlines()[0])["sessionId"]
    for n in range(12):
        other = f"{sid[:-2]}{n:02d}"
        path = home / ".claude" / "projects" / "-path-to-Demo" / f"{other}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(SUMMARY + b"\n" + body.replace(sid.encode(), other.encode()))
    whole = _ingest(tmp_path / "whole.db", home)
    db = open_db(tmp_path / "x.db")
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages + 60}")  # SQLITE_FULL part-way through
    with pytest.raises(Exception, match="full"):
        ingest_paths(db, None, IngestOptions(env=vendor_env(home), idle_seconds=10**9, commit_bytes=1))
    kept = db.execute("SELECT count(*) FROM sources").fetchone()[0]
    assert 2 < kept < 12  # the continued run indexes the line from what was committed
    db.execute(f"PRAGMA max_page_count = {2**31 - 2}")
    db = _ingest(tmp_path / "x.db", home)
    assert portable_dump(db) == portable_dump(whole)


def test_a_path_read_twice_in_one_run_continues_its_source(tmp_path, monkeypatch):
    """A new file's path is looked up in ``source_paths`` only if the archive held it when the
    run began or the run wrote it since (``Engine._may_be_stored``). A path met again in the
    same run, rewritten with another first line in between, is then the source's next
    generation, as two runs make it, not a second source."""
    from archive.ingest import engine

    home = tmp_path / "home"
    body = CLAUDE[0].read_bytes()
    sid = orjson.loads(body.splitlines()[0])["sessionId"]
    path = home / ".claude" / "projects" / "-path-to-Demo" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(body)
    rewritten = SUMMARY + b"\n" + body
    adapter = get_adapter("claude-code")

    def twice(*_args, **_kwargs):
        yield engine.Candidate(path, adapter, engine.LINES)
        path.write_bytes(rewritten)
        yield engine.Candidate(path, adapter, engine.LINES)

    monkeypatch.setattr(engine, "discover", twice)
    db = _ingest(tmp_path / "once.db", home)
    assert db.execute("SELECT count(*), max(current_generation) FROM sources").fetchone() == (1, 2)
    monkeypatch.undo()
    path.write_bytes(body)
    two_runs = _ingest(tmp_path / "two.db", home)
    path.write_bytes(rewritten)
    two_runs = _ingest(tmp_path / "two.db", home)
    assert two_runs.execute("SELECT count(*), max(current_generation) FROM sources").fetchone() == (1, 2)


def test_sources_by_line_name_every_source_a_file_may_continue():
    """``SourcesByLine`` leaves out only a source whose paths in place all have known keys
    other than the file's: one with no path in place, one read at a path of unknown key, one
    that lost a path, one that changed vendor or opened with a second line is compared with
    every file again. A line not indexed holds nothing (the database is read for it)."""
    from archive.ingest.generations import SourcesByLine

    by = SourcesByLine()
    by.add(1, "claude-code", "fp", "a")
    assert not by.indexed("claude-code", "fp") and len(by) == 0
    by.index("claude-code", "fp", {5: ["a"], 6: [], 7: ["b", None]})  # 6: no path in place
    assert by.indexed("claude-code", "fp") and not by.indexed("codex", "fp")
    assert by.wanted("claude-code", "fp", "a") == [5, 6, 7]
    assert by.wanted("claude-code", "fp", "c") == [6, 7]
    by.add(11, "claude-code", "fp", "a")  # stored in this run
    by.add(12, "claude-code", "fp", "b")
    assert by.wanted("claude-code", "fp", "a") == [5, 6, 7, 11]
    assert by.wanted("claude-code", "fp", "z") == [6, 7]
    assert by.wanted("claude-code", "fp", None) is None  # a file of unknown key: every source
    by.key(12, "a")  # read at one more path, of key a (a rollout being archived)
    assert by.wanted("claude-code", "fp", "a") == [5, 6, 7, 11, 12]
    by.open(5)  # its path now continues another source
    assert by.wanted("claude-code", "fp", "z") == [5, 6, 7]
    by.index("openclaw", "fp", {})
    by.add(12, "openclaw", "fp", None)  # read again as another vendor's (Engine._reidentify)
    assert by.wanted("openclaw", "fp", "z") == [12]
    by.index("claude-code", "fp2", {})
    by.add(11, "claude-code", "fp2", None)  # rewritten in place with a new first line
    assert by.wanted("claude-code", "fp2", "q") == [11]
    # a source's keys hold under each of its lines
    assert by.wanted("claude-code", "fp", "q") == [5, 6, 7, 11, 12]
    assert len(by) == 5


def test_rollout_at_its_live_and_archived_path_at_once_is_one_source(tmp_path):
    """Codex archives a rollout by moving it; a run can find it in both places (the same
    file name) or only in the new one: either way one source, nothing read twice."""
    home = tmp_path / "home"
    ((live, data), _) = _codex_pair(home)
    live.parent.mkdir(parents=True)
    lines = data.splitlines(keepends=True)
    live.write_bytes(b"".join(lines[:1]))  # only the first line so far
    db = _ingest(tmp_path / "x.db", home)
    live.write_bytes(data)
    archived = home / ".codex" / "archived_sessions" / live.name
    archived.parent.mkdir(parents=True)
    shutil.copy(live, archived)
    db = _ingest(tmp_path / "x.db", home)
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM generations").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM source_lines").fetchone()[0] == len(lines)
    live.unlink()
    before = dump_tables(db)["source_lines"]
    db = _ingest(tmp_path / "x.db", home)
    assert dump_tables(db)["source_lines"] == before


SHARED_ID = "0123abcd-0000-4000-8000-00000000abcd"


def _shared_id_pair(home: Path) -> list[tuple[Path, bytes]]:
    """A Codex rollout and a Copilot CLI session given one session id (agentsview's
    fixtures name both ``abc-123``; Copilot's folder must be a uuid to be read)."""
    codex = (FIXTURES / "codex" / "lanegrid__agtrace__codex_session.jsonl").read_bytes()
    copilot = (FIXTURES / "copilot" / "copilot-1.0.102-text.events.jsonl").read_bytes()
    return [
        (home / ".codex" / "sessions" / "2026" / "01" / "01" / f"rollout-2026-01-01T00-00-00-{SHARED_ID}.jsonl",
         codex.replace(b"019b04ae-b1c6-7c72-a134-a4c2de66058c", SHARED_ID.encode())),
        (home / ".copilot" / "session-state" / SHARED_ID / "events.jsonl",
         copilot.replace(b"01628e4f-e3e5-4a21-aac0-1f26a2d7ca18", SHARED_ID.encode())),
    ]  # fmt: skip


@pytest.mark.parametrize("order", ["one run", "codex first", "copilot first"])
def test_two_vendors_sharing_a_session_id_are_two_threads(tmp_path, order):
    """Issue 33: a thread is its vendor and the vendor's id. The vendor registered first
    keeps the id (no existing id moves); the other's thread is namespaced, whatever order
    the files arrive in; rebuild gives the same archive."""
    home = tmp_path / "home"
    files = _shared_id_pair(home)
    if order == "copilot first":
        files.reverse()
    db = None
    for n, (path, data) in enumerate(files):
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        if order != "one run" or n == len(files) - 1:
            db = _ingest(tmp_path / "x.db", home)
    assert db is not None
    threads = db.execute("SELECT id, provider FROM threads ORDER BY provider").fetchall()
    assert threads == [(SHARED_ID, "codex"), (f"copilot-{SHARED_ID}", "copilot")]
    if order == "copilot first":  # the Copilot rows re-derived: the run still counts only what it read
        (lines, added), codex = db.execute(
            "SELECT lines, messages_added FROM ingest_runs ORDER BY id DESC LIMIT 1").fetchone(), files[1][1]
        assert lines == len(codex.splitlines())
        assert added == db.execute(
            "SELECT count(*) FROM messages m JOIN sources s ON s.id = m.source_id WHERE s.provider = 'codex'").fetchone()[0]
    for tid, provider in threads:
        mixed = db.execute(
            "SELECT DISTINCT s.provider FROM messages m JOIN sources s ON s.id = m.source_id WHERE m.thread_id = ?", (tid,)
        ).fetchall()
        assert mixed == [(provider,)]
        assert db.execute("SELECT DISTINCT provider FROM usage WHERE thread_id = ?", (tid,)).fetchall() in ([], [(provider,)])
    alone = {p.name: _alone(tmp_path, home, p, d) for p, d in files}
    assert {r[0] for r in db.execute("SELECT id FROM messages")} == set().union(*alone.values())
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before
    other = tmp_path / "other"
    for path, data in reversed(files):
        target = other / path.relative_to(home)
        target.parent.mkdir(parents=True)
        target.write_bytes(data)
        again = _ingest(tmp_path / "other.db", other)
    for sql in ("SELECT * FROM threads", "SELECT id, thread_id, role, ts FROM messages",
                "SELECT key, thread_id, message_id, provider, input_tokens, output_tokens FROM usage"):
        assert sorted(again.execute(sql).fetchall()) == sorted(db.execute(sql).fetchall())


@pytest.mark.parametrize("how", ["one run", "parent first", "branch first", "branch while it repeats the parent"])
def test_a_live_file_extending_another_live_files_bytes_is_a_second_source(tmp_path, how):
    """Issue 33: a Codex branch file begins with its parent's bytes and goes on; both exist
    at once (different session ids in their names), so they are two sources and restore
    gives both back byte for byte, whatever order they were read in and even when the
    branch was first read while it held only the parent's bytes."""
    home = tmp_path / "home"
    ((parent, data), (other, _)) = _codex_pair(home)
    branch = other.with_name(other.name.replace(".jsonl", "-branch.jsonl"))
    extra = b"".join(line + b"\n" for line in CODEX[1].read_bytes().splitlines()[1:6])
    files = [(parent, data), (branch, data + extra)]
    parent.parent.mkdir(parents=True)
    if how == "one run":
        for p, d in files:
            p.write_bytes(d)
    elif how == "branch while it repeats the parent":
        parent.write_bytes(data)
        branch.write_bytes(data)
        _ingest(tmp_path / "x.db", home)
        branch.write_bytes(data + extra)
    else:
        first, second = files if how == "parent first" else files[::-1]
        first[0].write_bytes(first[1])
        _ingest(tmp_path / "x.db", home)
        second[0].write_bytes(second[1])
    db = _ingest(tmp_path / "x.db", home)
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    out = tmp_path / "restored"
    restored = {f.path: f for f in restore(db, out)}
    assert len(restored) == 2
    for path, d in files:
        f = restored[out / str(path).lstrip("/")]
        assert f.sha256 == sha(d) and f.path.read_bytes() == d
    ids = {r[0] for r in db.execute("SELECT id FROM messages")}
    assert ids == _alone(tmp_path, home, branch, data + extra)
    before = dump_tables(db)
    rebuild(db)
    assert dump_tables(db) == before
    db = _ingest(tmp_path / "x.db", home)
    assert dump_tables(db) == before


def test_an_archive_where_two_vendors_shared_a_thread_is_split_on_open(tmp_path):
    """Before m070 the Codex rollout and the Copilot session above were one thread. Such an
    archive claims what its rows name (m070) and is split on its next open: the same tables
    as an archive made today."""
    from archive import migrations

    home = tmp_path / "home"
    for path, data in _shared_id_pair(home):
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    db = _ingest(tmp_path / "x.db", home)
    want = dump_tables(db)
    # the archive as the code before m070 left it: the Copilot rows in the Codex thread
    ns = f"copilot-{SHARED_ID}"
    for table in ("messages", "message_occurrences", "thread_facts", "usage"):
        db.execute(f"UPDATE {table} SET thread_id = ? WHERE thread_id = ?", (SHARED_ID, ns))
    db.execute("DELETE FROM threads WHERE id = ?", (ns,))
    db.execute("DELETE FROM thread_claims")
    migrations.m070_33_thread_claims(db)
    assert db.execute("SELECT count(*) FROM thread_claims WHERE thread_id = ?", (SHARED_ID,)).fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM threads").fetchone()[0] == 1
    db.conn.close()
    db = open_archive(tmp_path / "x.db")  # the commands' open: migrations, then the rows re-derived
    assert dump_tables(db) == want


@pytest.mark.parametrize("order", ["copy first", "one run"])
def test_an_emitted_copy_read_back_before_its_original_is_not_split_on_every_open(tmp_path, order, monkeypatch):
    """A canonical copy of a Codex session (``emit --to canonical``) read back before the
    rollout it came from, in an archive as the code before the next test's change left it
    (only the copy re-derived when the rollout claimed the id): the copy's usage rows report
    the rollout's responses (same response keys) and stay in the rollout's thread, counted
    once. Those rows are not left by a merge: the open that splits archives from before the
    claims must not re-derive the copy again on every command (it did, recording a
    ``rebuild`` run each time)."""
    from archive.ingest import rederive
    from archive.ingest.rebuild import split_merged

    monkeypatch.setattr(rederive, "sharing_messages", lambda conn, sources: sources)
    copy = FIXTURES / "canonical" / "from-codex-01a229dd.jsonl"
    rollout = FIXTURES / "codex" / "recorded" / "codex-0.171.0-exec-resume.jsonl"
    db = open_db(tmp_path / "x.db")
    if order == "copy first":
        for f in (copy, rollout):
            ingest_paths(db, [f], IngestOptions())
    else:
        ingest_paths(db, [copy, rollout], IngestOptions())
    shared = "01a229dd-03c9-7373-8563-568dd22f194d"
    linked = db.execute(
        "SELECT count(*) FROM usage u JOIN sources s ON s.id = u.source_id JOIN messages m ON m.id = u.message_id "
        "JOIN sources ms ON ms.id = m.source_id WHERE u.thread_id = ? AND s.provider = 'canonical' AND ms.provider = 'codex'",
        (shared,),
    ).fetchone()[0]
    assert linked == 3  # the case itself: the copy's usage rows report the rollout's messages
    assert split_merged(db) == []
    before = dump_tables(db)
    db.conn.close()
    for _ in range(2):
        db = open_archive(tmp_path / "x.db")
        assert dump_tables(db) == before
        db.conn.close()
    db = open_db(tmp_path / "x.db")
    assert [r[0] for r in db.execute("SELECT command FROM ingest_runs ORDER BY id")] == ["ingest"] * (2 if order == "copy first" else 1)


@pytest.mark.parametrize("original", ["claude-code/recorded/cc-2.1.197-bash-resume.jsonl",
                                      "codex/recorded/codex-0.171.0-exec-resume.jsonl"])  # fmt: skip
@pytest.mark.parametrize("order", ["copy first", "one run", "original first"])
def test_rebuild_equals_ingest_for_an_emitted_copy_and_its_original(tmp_path, original, order):
    """An emitted canonical copy carries its original's message ids. Read before the
    original, the copy first owned them under the shared id; when the original claimed the
    id, re-deriving the copy alone left the messages with the copy's thread, while a rebuild,
    applying both sources, gave them to the original's (Claude Code: threads, messages,
    usage, lineage and signals differed; Codex: usage). The sources that share a message with
    a re-derived one are derived again with it."""
    orig = FIXTURES / original
    copy = FIXTURES / "canonical" / ("from-claude-code-7767af10.jsonl" if "claude" in original else "from-codex-01a229dd.jsonl")
    db = open_db(tmp_path / "x.db")
    if order == "one run":
        ingest_paths(db, [copy, orig], IngestOptions())
    else:
        for f in (copy, orig) if order == "copy first" else (orig, copy):
            ingest_paths(db, [f], IngestOptions())
    ingested = portable_dump(db)
    rebuild(db)
    assert portable_dump(db) == ingested
