"""The real OpenClaw clients (marker ``clients``), offline against the chat-completions mock:
the newest release's SQLite store archived whole and restored byte-exact, and a Claude Code
thread emitted as an OpenClaw session that the last JSONL release (2026.7.1) resumes, coming
back as a hand-off. One recording per release (module-scoped); skipped when a release is not
installed (scripts/install_clients.sh installs them)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import orjson
import pytest

from archive.db import open_db
from archive.emit import emit_thread, write_files
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.projection import load_messages
from archive.readonly import ReadOnlyDatabase
from archive.vendors import get
from clients import openclaw as oc
from clients.mock_servers import ChatCompletionsMock
from ingest_helpers import NEVER_IDLE

pytestmark = pytest.mark.clients

CLAUDE_BASH = Path(__file__).parent / "fixtures" / "recorded" / "claude-code-2.1.332" / "bash"


def _record(version: str | None, tmp: Path) -> Path:
    exe = oc.find_openclaw(version)
    if exe is None or oc.node24() is None:
        pytest.skip(f"openclaw {version or oc.OPENCLAW_VERSION} or node 24 not installed")
    home, cwd = tmp / "home", tmp / "work"
    home.mkdir()
    cwd.mkdir()
    with ChatCompletionsMock(oc.SCRIPT, max_seconds=1800) as mock:
        oc.onboard(exe, home, cwd, mock.url).check()
        oc.run_agent(exe, home, cwd, oc.PROMPT).check()
        oc.run_agent(exe, home, cwd, oc.RESUME).check()
    return home


@pytest.fixture(scope="module")
def newest(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record(None, tmp_path_factory.mktemp("openclaw-new"))


@pytest.fixture(scope="module")
def jsonl_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record(oc.OPENCLAW_OLD_VERSION, tmp_path_factory.mktemp("openclaw-old"))


def _ingest_home(home: Path, db_path: Path):
    db = open_db(db_path)
    env = {"HOME": str(home), "OPENCLAW_STATE_DIR": str(oc.state_dir(home))}
    s = ingest_paths(db, None, IngestOptions(providers=("openclaw",), env=env, idle_seconds=10**9))
    assert s.failed == 0
    return db


def test_the_newest_store_is_archived_whole_and_restored_byte_exact(newest: Path, tmp_path: Path) -> None:
    db = _ingest_home(newest, tmp_path / "a.db")
    msgs = load_messages(db.conn, "m.thread_id = ?", (oc.SESSION_ID,))
    assert [m.role for m in msgs] == ["user", "assistant", "tool", "assistant", "user", "assistant"]
    assert [type(b).__name__ for b in msgs[1].content] == ["Reasoning", "Text", "ToolCall"]
    assert msgs[2].content[0].output == "hello-from-exec" and msgs[5].content[0].text == "OK."
    meta = orjson.loads(db.execute("SELECT metadata FROM threads WHERE id = ?", (oc.SESSION_ID,)).fetchone()[0])
    assert meta["version"] == oc.OPENCLAW_VERSION
    store = oc.state_dir(newest) / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    with ReadOnlyDatabase(store) as database:
        docs = {hashlib_of(d.data) for d in get("openclaw").documents(store, database.query)}
    assert {r.sha256 for r in restore(db, tmp_path / "out")} == docs


def hashlib_of(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def test_the_jsonl_release_is_read_and_resumes_an_emitted_claude_thread(jsonl_release: Path, tmp_path: Path) -> None:
    """2026.7.1's own files are archived; a Claude Code thread emitted as an OpenClaw session is
    resumed by it with its history, and comes back as a hand-off of the Claude thread."""
    db = _ingest_home(jsonl_release, tmp_path / "a.db")
    assert len(load_messages(db.conn, "m.thread_id = ?", (oc.SESSION_ID,))) == 6
    home = tmp_path / "home"
    shutil.copytree(jsonl_release, home, symlinks=True)
    sessions = oc.state_dir(home) / "agents" / "main" / "sessions"
    shutil.rmtree(sessions)
    src = open_db(tmp_path / "claude.db")
    ingest_paths(src, [CLAUDE_BASH], NEVER_IDLE)
    sid = json.loads((CLAUDE_BASH / "scenario.json").read_text())["session_id"]
    configured = get("openclaw").configured_options({"OPENCLAW_STATE_DIR": str(oc.state_dir(home))}, home)
    out = emit_thread(src, sid, "openclaw", exact=False, configured=configured)
    write_files(out, oc.state_dir(home))
    session = sessions / f"{out.target_id}.jsonl"
    before = session.read_bytes()
    exe = oc.find_openclaw(oc.OPENCLAW_OLD_VERSION)
    with ChatCompletionsMock(oc.SCRIPT, max_seconds=1800) as mock:
        config = oc.state_dir(home) / "openclaw.json"
        config.write_text(re.sub(r"http://127\.0\.0\.1:\d+/v1", f"{mock.url}/v1", config.read_text()))
        oc.run_agent(exe, home, tmp_path, oc.RESUME, session_id=out.target_id, thinking=None).check()
        sent = [r.body for r in mock.requests if isinstance(r.body, dict) and r.body.get("messages")]
    # the Claude history reached the model (2026.7.1 leaves out calls of tools it lacks: Bash)
    assert "[bash] Run two commands." in json.dumps(sent[-1]["messages"])
    after = session.read_bytes()
    assert after.startswith(before) and len(after) > len(before)
    back = open_db(tmp_path / "back.db")
    ingest_paths(back, [session], NEVER_IDLE)
    (meta,) = [orjson.loads(r[0]) for r in back.execute("SELECT metadata FROM threads")]
    assert meta["emittedFrom"] == sid
