"""OpenClaw, both generations: the per-agent SQLite store (2026.9) read read-only as one JSONL
document per session, the JSONL files of the releases before it (and their rotated copies),
discovery under ``OPENCLAW_STATE_DIR`` and the legacy roots, emit and its marks.
The contract test covers the documents themselves (tests/fixtures/openclaw)."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import orjson
import zstandard

from archive.db import dump_tables, open_db
from archive.emit import emit_thread
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.projection import load_messages
from archive.readonly import ReadOnlyDatabase
from archive.vendors import get
from ingest_helpers import NEVER_IDLE

FIXTURES = Path(__file__).parent / "fixtures" / "openclaw"
EXEC = FIXTURES / "openclaw-2026.9.6-exec.jsonl"
TRAJECTORY = FIXTURES / "openclaw-2026.9.6-exec.trajectory.jsonl"
SID = "5e55a0c1-0000-4000-8000-00000000c1a0"
ADAPTER = get("openclaw")

# the two tables read, as OpenClaw 2026.9.6 creates them (agent schema 23; CHECKs left out)
SCHEMA = """
CREATE TABLE transcript_events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, event_json TEXT, created_at INTEGER NOT NULL,
  event_zstd BLOB, event_utf8_bytes INTEGER, navigation_json TEXT, PRIMARY KEY (session_id, seq)) STRICT;
CREATE TABLE trajectory_runtime_events (
  session_id TEXT NOT NULL, seq INTEGER NOT NULL, run_id TEXT, event_json TEXT NOT NULL,
  created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq)) STRICT;
"""


def msgs_of(db, thread: str) -> list:
    return load_messages(db.conn, "m.thread_id = ?", (thread,))


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def make_db(path: Path, stop: int | None = None, packed: set[int] = frozenset(), trajectory: bool = True) -> None:
    """A store holding the recorded session's rows (the first ``stop``), rows in ``packed``
    compressed as 2026.9.6 stores large ones (event_json NULL, event_zstd)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    conn = sqlite3.connect(path, isolation_level=None)
    if new:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(SCHEMA)
    have = conn.execute("SELECT count(*) FROM transcript_events").fetchone()[0]
    for seq, line in enumerate(_lines(EXEC)[:stop]):
        if seq < have:
            continue
        if seq in packed:
            conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, "
                         "event_utf8_bytes, navigation_json) VALUES (?, ?, NULL, ?, ?, ?, '{}')",
                         (SID, seq, 1796185984377 + seq, zstandard.ZstdCompressor().compress(line), len(line)))
        else:
            conn.execute("INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
                         (SID, seq, line.decode(), 1796185984377 + seq))
    if trajectory and new:
        for seq, line in enumerate(_lines(TRAJECTORY)):
            conn.execute("INSERT INTO trajectory_runtime_events VALUES (?, ?, NULL, ?, ?)",
                         (SID, seq, line.decode(), 1796185984377 + seq))
    conn.close()


def test_documents_are_the_rows_byte_for_byte_and_restore_gives_them_back(tmp_path: Path) -> None:
    db_path = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    make_db(db_path, packed={5, 8})  # two rows stored compressed
    assert ADAPTER.classify(db_path) == "records"
    with ReadOnlyDatabase(db_path) as database:
        docs = {d.path: d.data for d in ADAPTER.documents(db_path, database.query)}
    assert docs == {f"{db_path}#{SID}.jsonl": EXEC.read_bytes(), f"{db_path}#{SID}.trajectory.jsonl": TRAJECTORY.read_bytes()}
    db = open_db(tmp_path / "a.db")
    s = ingest_paths(db, [db_path], NEVER_IDLE)
    assert s.failed == 0 and s.lines == len(_lines(EXEC)) + len(_lines(TRAJECTORY))
    restored = {r.sha256 for r in restore(db, tmp_path / "out")}
    assert restored == {hashlib.sha256(EXEC.read_bytes()).hexdigest(), hashlib.sha256(TRAJECTORY.read_bytes()).hexdigest()}


def test_the_session_archived_whole(tmp_path: Path) -> None:
    """One prompt, reasoning, an ``exec`` call and its result, the answer, then the resumed
    turn; usage in the neutral buckets with OpenClaw's figures kept; the client release from
    the trajectory."""
    db_path = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    make_db(db_path)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [db_path], NEVER_IDLE)
    msgs = msgs_of(db, SID)
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    kinds = [type(b).__name__ for b in msgs[1].content]
    assert kinds == ["Reasoning", "Text", "ToolCall"]
    call = msgs[1].content[2]
    assert call.name == "exec" and call.input == {"command": "echo hello-from-exec"}
    result = msgs[2].content[0]
    assert result.call_id == call.call_id and result.output == "hello-from-exec" and result.is_error is False
    assert msgs[1].usage.input_tokens == 669 and msgs[1].usage.cache_read_tokens == 668
    assert msgs[1].usage.output_tokens == 52 and msgs[1].usage.reasoning_tokens == 8
    assert msgs[1].usage.extra["vendor"]["totalTokens"] == 669 + 52 + 668
    meta = orjson.loads(db.execute("SELECT metadata FROM threads WHERE id = ?", (SID,)).fetchone()[0])
    assert meta["version"] == "2026.9.6" and meta["cwd"] and meta["model"] == "mock-model"
    assert db.execute("SELECT provider FROM threads WHERE id = ?", (SID,)).fetchone()[0] == "openclaw"


def test_a_store_read_while_the_client_appends_equals_one_read(tmp_path: Path) -> None:
    db_path = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    db = open_db(tmp_path / "a.db")
    make_db(db_path, stop=5)
    first = ingest_paths(db, [db_path], NEVER_IDLE)
    assert first.messages_added == 1
    make_db(db_path)  # the rest, appended
    second = ingest_paths(db, [db_path], NEVER_IDLE)
    assert second.messages_added == 5
    before = dump_tables(db)
    again = ingest_paths(db, [db_path], NEVER_IDLE)
    assert again.lines == 0 and dump_tables(db) == before
    whole = open_db(tmp_path / "b.db")
    make_db(tmp_path / "w" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    ingest_paths(whole, [tmp_path / "w" / "agents" / "main" / "agent" / "openclaw-agent.sqlite"], NEVER_IDLE)
    assert [(m.id, m.content) for m in msgs_of(db, SID)] == [(m.id, m.content) for m in msgs_of(whole, SID)]


def test_both_generations_are_one_thread(tmp_path: Path) -> None:
    """The JSONL file of the releases before the store (what ``openclaw doctor`` imports), a
    rotated copy of it and the store's rows give the same messages, stored once."""
    home = tmp_path / "home"
    sessions = home / ".openclaw" / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    lines = _lines(EXEC)
    (sessions / f"{SID}.jsonl").write_bytes(b"".join(line + b"\n" for line in lines[:7]))
    (sessions / f"{SID}.jsonl.reset.2026-12-02T04-36-00.000Z").write_bytes(b"".join(line + b"\n" for line in lines[:5]))
    (sessions / "sessions.json").write_text('{"agent:main:explicit:%s": {"sessionId": "%s"}}' % (SID, SID))
    make_db(home / ".openclaw" / "agents" / "main" / "agent" / "openclaw-agent.sqlite")
    db = open_db(tmp_path / "a.db")
    s = ingest_paths(db, None, IngestOptions(providers=("openclaw",), env={"HOME": str(home)}, idle_seconds=10**9))
    assert s.failed == 0 and not s.unread
    assert db.execute("SELECT count(*) FROM threads WHERE provider = 'openclaw'").fetchone()[0] == 1
    assert len(msgs_of(db, SID)) == 6
    assert db.execute("SELECT count(*) FROM sources WHERE provider = 'openclaw'").fetchone()[0] == 4


def test_roots_honour_the_state_dir_and_the_legacy_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert ADAPTER.default_roots({}, home) == [home / ".openclaw" / "agents", home / ".clawdbot" / "agents",
                                               home / ".moltbot" / "agents"]
    state = tmp_path / "state"
    assert ADAPTER.default_roots({"OPENCLAW_STATE_DIR": str(state)}, home) == [state / "agents"]
    make_db(state / "agents" / "ops" / "agent" / "openclaw-agent.sqlite")
    legacy = home / ".clawdbot" / "agents" / "main" / "sessions"
    legacy.mkdir(parents=True)
    (legacy / "1f0c9a8e-0000-4000-8000-000000000001.jsonl").write_bytes(EXEC.read_bytes().replace(SID.encode(), b"1f0c9a8e-0000-4000-8000-000000000001"))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, IngestOptions(providers=("openclaw",), env={"HOME": str(home), "OPENCLAW_STATE_DIR": str(state)}))
    assert [r[0] for r in db.execute("SELECT id FROM threads ORDER BY id")] == [SID]
    db = open_db(tmp_path / "b.db")
    ingest_paths(db, None, IngestOptions(providers=("openclaw",), env={"HOME": str(home)}))
    assert [r[0] for r in db.execute("SELECT id FROM threads ORDER BY id")] == ["1f0c9a8e-0000-4000-8000-000000000001"]


def test_rotated_copies_checkpoints_and_trajectories_are_read(tmp_path: Path) -> None:
    d = tmp_path / "agents" / "main" / "sessions"
    for name, want in [(f"{SID}.jsonl", "lines"), (f"{SID}.jsonl.reset.2026-01-01T00-00-00.000Z", "lines"),
                       (f"{SID}.jsonl.deleted.2026-01-01T00-00-00.000Z", "lines"), (f"{SID}.jsonl.bak.1767225600", "lines"),
                       (f"{SID}.checkpoint.0b7d.jsonl", "lines"), (f"{SID}.trajectory.jsonl", "lines"),
                       ("sessions.json", None), (f"{SID}.jsonl.lock", None)]:
        assert ADAPTER.classify(d / name) == want, name
    assert ADAPTER.session_key(d / f"{SID}.jsonl.reset.x") == SID
    assert ADAPTER.session_key(d / f"{SID}.checkpoint.0b7d.jsonl") != SID
    assert ADAPTER.classify(tmp_path / "elsewhere" / f"{SID}.jsonl") is None


def test_emit_writes_a_session_and_its_index_and_reads_back_as_a_hand_off(tmp_path: Path) -> None:
    db_path = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    make_db(db_path)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [db_path], NEVER_IDLE)
    out = emit_thread(db, SID, "openclaw", exact=False)
    files = dict(out.files)
    (session,) = [p for p in files if p.endswith(".jsonl")]
    assert session.startswith("agents/main/sessions/") and "agents/main/sessions/sessions.json" in files
    index = orjson.loads(files["agents/main/sessions/sessions.json"])
    (entry,) = index.values()
    assert entry["sessionFile"] == Path(session).name and "openclaw" in out.resume_hint
    target = tmp_path / "emitted"
    for rel, data in files.items():
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        (target / rel).write_bytes(data)
    again = open_db(tmp_path / "b.db")
    ingest_paths(again, [target / session], NEVER_IDLE)
    (tid,) = [r[0] for r in again.execute("SELECT id FROM threads")]
    meta = orjson.loads(again.execute("SELECT metadata FROM threads").fetchone()[0])
    assert meta.get("emittedFrom") == SID
    assert [m.id for m in msgs_of(again, tid)] == [m.id for m in msgs_of(db, SID)]


def test_detect_takes_openclaw_files_and_leaves_pi_files(tmp_path: Path) -> None:
    assert ADAPTER.detect(EXEC.read_bytes()[:65536])
    pi = next((Path(__file__).parent / "fixtures" / "pi").glob("pi-0.73.1-*.jsonl"))
    assert not ADAPTER.detect(pi.read_bytes()[:65536])
    shutil.copy(EXEC, tmp_path / "given.jsonl")


def test_emit_files_the_session_under_the_configured_workspace(tmp_path: Path) -> None:
    """2026.7.1 rewrites a resumed header's cwd to its workspace (losing the header's mark):
    the configured workspace is the emitted cwd."""
    state = tmp_path / "state"
    state.mkdir()
    assert ADAPTER.configured_options({"OPENCLAW_STATE_DIR": str(state)}, tmp_path) == {}
    (state / "openclaw.json").write_text('{"agents": {"defaults": {"workspace": "/srv/claw"}}}')
    configured = ADAPTER.configured_options({"OPENCLAW_STATE_DIR": str(state)}, tmp_path)
    assert configured == {"cwd": "/srv/claw"}
    db_path = tmp_path / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    make_db(db_path)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [db_path], NEVER_IDLE)
    out = emit_thread(db, SID, "openclaw", exact=False, configured=configured)
    (session,) = [p for p in out.files if p.endswith(".jsonl")]
    assert orjson.loads(dict(out.files)[session].split(b"\n", 1)[0])["cwd"] == "/srv/claw"


def test_a_file_given_by_hand_changes_hands_once_it_shows_whose_it_is(tmp_path: Path) -> None:
    """OpenClaw 2026.7.1's session header and first entries are pi's format 3: read by hand
    while that short, the file is pi's; once OpenClaw's records arrive, the source changes
    hands and the archive equals one read of the whole file (a cut Hypothesis found in
    test_contract's incremental test)."""
    from ingest_helpers import portable_dump

    data = (Path(__file__).parent / "fixtures" / "openclaw" / "openclaw-2026.7.1-exec.jsonl").read_bytes()
    whole = tmp_path / "whole" / "s.jsonl"
    whole.parent.mkdir()
    whole.write_bytes(data)
    db_whole = open_db(tmp_path / "whole.db")
    ingest_paths(db_whole, [whole], IngestOptions(idle_seconds=10**9, batch_lines=5))
    growing = tmp_path / "grow" / "s.jsonl"
    growing.parent.mkdir()
    head = data[: data.index(b"\n", data.index(b"\n") + 1) + 1]  # the header and the model change
    growing.write_bytes(head)
    db = open_db(tmp_path / "inc.db")
    ingest_paths(db, [growing], IngestOptions(idle_seconds=10**9, batch_lines=5))
    assert db.execute("SELECT provider FROM sources").fetchall() == [("pi",)]  # what those lines are alone
    growing.write_bytes(data)
    summary = ingest_paths(db, [growing], IngestOptions(idle_seconds=10**9, batch_lines=5))
    assert db.execute("SELECT provider FROM sources").fetchall() == [("openclaw",)]
    assert any("read as pi while it was short, now openclaw's" in w for w in summary.warnings)  # said, not silent
    assert portable_dump(db) == portable_dump(db_whole)
    ingest_paths(db, [growing], IngestOptions(idle_seconds=10**9, batch_lines=5))  # and a rerun changes nothing
    assert portable_dump(db) == portable_dump(db_whole)
