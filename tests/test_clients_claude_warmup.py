"""Claude Code 2.0.30, the real client (marker ``clients``, issue 33), offline against the
Anthropic mock: the 2.0.x layout whose warmup sidechains are ``agent-<8hex>.jsonl`` files
beside the session (tests/clients/claude_warmup.py; tests/test_claude_warmup_2_0.py reads
the recording). One run per module: the home ingested holds the session and one child
thread per warmup file (parent: the session), and every transcript restores sha256-equal.

Installed pinned by scripts/install_clients.sh (``<clients>/old/claude-code-<version>``);
skipped when absent. Cost: one ``-p`` run, ~12 s here.
"""

from __future__ import annotations

import hashlib

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.projection import load_messages, load_threads
from clients import claude_warmup, runner

pytestmark = pytest.mark.clients


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    exe = claude_warmup.find()
    if exe is None:
        pytest.skip(f"Claude Code {claude_warmup.RELEASE} not found (scripts/install_clients.sh installs it under <clients>/old/)")
    base = tmp_path_factory.mktemp("claude-2.0")
    home, cwd = base / "home", base / "work"
    cwd.mkdir()
    sid = claude_warmup.run(exe, home, cwd)
    db = open_db(base / "a.db")
    s = ingest_paths(db, None, IngestOptions(env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
                                             idle_seconds=10**9))
    assert s.failed == 0 and not s.reports.get("unexplained") and not s.reports.get("adapter_error")
    return {"base": base, "sid": sid, "db": db, "files": runner.claude_sessions(home)}


def test_warmup_files_are_children_of_the_session(recorded: dict) -> None:
    db, sid = recorded["db"], recorded["sid"]
    agents = [f for f in recorded["files"] if f.name.startswith("agent-") and f.suffix == ".jsonl"]
    assert agents, [f.name for f in recorded["files"]]  # 2.0.30 writes its warmups there
    threads = {t.id: t for t in load_threads(db.conn, "provider = 'claude-code'")}
    assert set(threads) == {sid} | {f"{sid}/{a.stem}" for a in agents}
    for a in agents:
        t = threads[f"{sid}/{a.stem}"]
        assert t.parent_thread_id == sid
        msgs = load_messages(db.conn, "m.thread_id = ?", (t.id,))
        assert msgs and msgs[0].content[0].text == "Warmup"
    main = load_messages(db.conn, "m.thread_id = ?", (sid,))
    assert main[0].content[0].text == claude_warmup.PROMPT and "Warmup" not in str([m.content for m in main])


def test_every_transcript_restores_sha256_equal(recorded: dict) -> None:
    restored = {r.sha256 for r in restore(recorded["db"], recorded["base"] / "restored")}
    assert {hashlib.sha256(f.read_bytes()).hexdigest() for f in recorded["files"]} <= restored
