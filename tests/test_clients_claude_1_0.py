"""Claude Code 1.0.56, the real client (marker ``clients``, issue 33), offline against the
Anthropic mock: the release before 1.0.128 whose ``--resume`` writes a new file repeating
the resumed turns under new uuids (tests/test_resume_1_0.py reads the static recordings).

One recording per module (a session with a Bash call, then ``-p --resume`` with a second
prompt, the scenario of scripts/record_claude_resume.py); every test reads it:

* the home is archived whole: both files are sources, nothing unexplained, every prompt,
  tool call, result and answer read;
* the resume file is a continuation of the session it repeats (parent, origin message),
  its repeated turns stored once, in the original, and each response's usage counted once;
* every file restores sha256-equal.

Installed pinned by scripts/install_clients.sh (``<clients>/old/claude-code-<version>``,
``runner.find_old_client``); skipped when absent. Cost: two ``-p`` runs, ~20 s here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.model import Text, ToolCall, ToolResult
from archive.projection import load_messages, load_threads
from clients import runner
from clients.mock_servers import AnthropicMock, Script, Text as Say, Tool

pytestmark = pytest.mark.clients

CLAUDE_OLD = "1.0.56"
PROMPTS = ("[resume-a] Run a command.", "[resume-b] Say what it printed.")
SCRIPT = Script(turns={
    "[resume-a]": [[Tool("Bash", {"command": "echo one", "description": "Print one"})], [Say("It printed one.")]],
    "[resume-b]": [[Say("It printed the word one.")]],
})  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    exe = runner.find_old_client("claude", CLAUDE_OLD)
    if exe is None:
        pytest.skip(f"Claude Code {CLAUDE_OLD} not found (scripts/install_clients.sh installs it under <clients>/old/)")
    base = tmp_path_factory.mktemp("claude-1.0")
    home, cwd = base / "home", base / "work"
    cwd.mkdir()
    with AnthropicMock(SCRIPT) as mock:
        first = runner.run_claude(exe, home, cwd, mock.url, PROMPTS[0], timeout=180).check()
        sid = first.json()["session_id"]
        second = runner.run_claude(exe, home, cwd, mock.url, PROMPTS[1], resume=sid, timeout=180).check()
    files = runner.claude_sessions(home)
    db = open_db(base / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
                                                   idle_seconds=10**9))
    return {"base": base, "home": home, "sid": sid, "resumed": second.json()["session_id"], "files": files,
            "db": db, "summary": summary}


def test_both_files_archived_whole(recorded: dict) -> None:
    db, files, sid, resumed = recorded["db"], recorded["files"], recorded["sid"], recorded["resumed"]
    assert recorded["summary"].failed == 0
    assert sorted(f.stem for f in files) == sorted([sid, resumed]) and sid != resumed
    bad = db.execute("SELECT kind, reason FROM reports WHERE kind IN ('unknown', 'invalid', 'parse_error', "
                     "'unexplained', 'adapter_error')").fetchall()
    assert bad == []
    archived = {r[0] for r in db.execute("SELECT path FROM source_paths")}
    assert {str(f) for f in files} <= archived  # with its side files (.claude.json, todos/)
    trunk = load_messages(db.conn, "m.thread_id = ?", (sid,))
    blocks = [b for m in trunk for b in m.content]
    # 1.0.56's follow-up request holds two user messages with tool results, so the mock takes
    # it for a step past the script and gives its default reply (so does the static recording)
    assert [b.text for b in blocks if isinstance(b, Text)] == [PROMPTS[0], SCRIPT.default]
    (use,) = [b for b in blocks if isinstance(b, ToolCall)]
    (result,) = [b for b in blocks if isinstance(b, ToolResult)]
    assert use.name == "Bash" and use.input["command"] == "echo one" and result.call_id == use.call_id
    assert "one" in str(result.output)
    own = load_messages(db.conn, "m.thread_id = ?", (resumed,))
    assert [b.text for m in own for b in m.content if isinstance(b, Text)] == [PROMPTS[1], "It printed the word one."]


def test_the_resume_file_is_a_continuation_counted_once(recorded: dict) -> None:
    db, sid, resumed = recorded["db"], recorded["sid"], recorded["resumed"]
    threads = {t.id: t for t in load_threads(db.conn, "provider = 'claude-code'")}
    assert set(threads) == {sid, resumed}
    t = threads[resumed]
    trunk = load_messages(db.conn, "m.thread_id = ?", (sid,))
    assert t.parent_thread_id == sid and t.origin_message_id == trunk[-1].id
    # the repeated lines are occurrences of the original's messages, not messages of their own
    own = db.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (resumed,)).fetchone()[0]
    assert own == 2
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == len(trunk) + own
    # each response once: the repeated ones credited to the original (1.0.56 logs their usage there too)
    usage = dict(db.execute("SELECT thread_id, count(*) FROM usage GROUP BY 1").fetchall())
    assert usage == {sid: 2, resumed: 1}


def test_every_file_restores_sha256_equal(recorded: dict) -> None:
    db = recorded["db"]
    # .claude.json is archived as a derived document (only its prompt history: docs/side-files.md)
    archived = sorted(Path(r[0]) for r in db.execute("SELECT path FROM source_paths") if not r[0].endswith("/.claude.json"))
    restored = sorted(r.sha256 for r in restore(db, recorded["base"] / "restored") if r.path.name != ".claude.json")
    assert restored == sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in archived)
    assert set(recorded["files"]) <= set(archived)
