"""Codex CLI 0.20.0 and 0.47.0, the real clients (marker ``clients``, issue 33), offline
against the Responses mock: one release of each old JSONL rollout layout, 0.20's bare lines
(``record_type: state``, no timestamps, no token counts, resumed with ``-c
experimental_resume=<path>``) and 0.47's wrapped lines (each response's ``token_count``
written before its items, resumed with ``codex exec resume``). The scenario is
tests/clients/codex_old.py, the one scripts/record_codex_old.py recorded.

One recording per release (module fixture), every test reads it:

* ingested after the first prompt, then again after the resume appended to the same file:
  one thread, every prompt, reasoning, text, call and result, the new lines read as such;
* 0.47: each response's usage counted once, on an item of its own response;
* the rollout restores sha256-equal.

Installed pinned by scripts/install_clients.sh (``<clients>/old/codex-<version>``); a
release not installed is skipped. Cost: two ``codex exec`` runs per release, ~5 s here.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.model import Reasoning, Text, ToolCall, ToolResult
from archive.projection import load_messages, load_threads
from clients import codex_old
from clients.mock_servers import ResponsesMock

pytestmark = pytest.mark.clients


def _ingest(db, home: Path):
    s = ingest_paths(db, None, IngestOptions(env={"HOME": str(home), "CODEX_HOME": str(home / ".codex")},
                                             idle_seconds=10**9))
    assert s.failed == 0 and not s.reports.get("unexplained") and not s.reports.get("adapter_error")
    return s


@pytest.fixture(scope="module", params=codex_old.RELEASES)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    version = request.param
    exe = codex_old.find(version)
    if exe is None:
        pytest.skip(f"codex {version} not found (scripts/install_clients.sh installs it under <clients>/old/)")
    base = tmp_path_factory.mktemp(f"codex-{version}")
    home, cwd = base / "home", base / "work"
    cwd.mkdir()
    db = open_db(base / "a.db")
    with ResponsesMock(codex_old.SCRIPT) as mock:
        rollout = codex_old.first(exe, home, cwd, mock.url)
        _ingest(db, home)
        before = db.execute("SELECT count(*) FROM messages").fetchone()[0]
        codex_old.resume(exe, version, home, cwd, mock.url, rollout)
        replies = [r.usage for r in mock.requests if r.usage is not None]
    second = _ingest(db, home)
    return {"version": version, "base": base, "home": home, "rollout": rollout, "db": db, "before": before,
            "second": second, "sid": codex_old.session_id(rollout), "replies": replies}


def test_archived_whole_and_the_resume_read_incrementally(recorded: dict) -> None:
    db, sid = recorded["db"], recorded["sid"]
    (thread,) = load_threads(db.conn, "provider = 'codex'")
    assert thread.id == sid
    assert [f.name for f in (recorded["home"] / ".codex" / "sessions").rglob("rollout-*")] == [recorded["rollout"].name]
    assert recorded["second"].files_changed == 1
    msgs = [m for m in load_messages(db.conn, "m.thread_id = ?", (sid,)) if not (m.extra or {}).get("injected")]
    texts = [b.text for m in msgs for b in m.content if isinstance(b, Text)]
    assert texts == [codex_old.PROMPTS[0], "Running echo.", "The second command failed as expected.",
                     codex_old.PROMPTS[1], "The first printed hello-from-shell."]
    assert [b.text for m in msgs for b in m.content if isinstance(b, Reasoning)] == ["Two commands: one prints, one fails."]
    calls = [b for m in msgs for b in m.content if isinstance(b, ToolCall)]
    results = [b for m in msgs for b in m.content if isinstance(b, ToolResult)]
    assert [c.input["command"][-1] for c in calls] == ["echo hello-from-shell", "ls /nonexistent-sesh-dir"]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    # the resumed turn was appended: the first ingest held all but its two messages
    total = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    assert total - recorded["before"] == 2


def test_each_response_counted_once_on_its_own_items(recorded: dict) -> None:
    db, sid = recorded["db"], recorded["sid"]
    rows = db.execute("SELECT u.output_tokens, m.role, m.id FROM usage u LEFT JOIN messages m ON m.id = u.message_id "
                      "WHERE u.thread_id = ? ORDER BY u.rowid", (sid,)).fetchall()
    if recorded["version"] == "0.20.0":
        assert rows == []  # 0.20 writes no token counts
        return
    # one row per response the mock answered, each with the output it reported, on an
    # assistant item (0.47 writes the count before the items: never on the previous response's)
    assert len(rows) == len(recorded["replies"]) == 4
    assert [r[0] for r in rows] == [u["output_tokens"] for u in recorded["replies"]]
    assert all(r[1] == "assistant" for r in rows)
    msgs = load_messages(db.conn, "m.thread_id = ?", (sid,))
    first_of = {m.id: m for m in msgs}
    assert isinstance(first_of[rows[0][2]].content[0], Reasoning)
    assert first_of[rows[3][2]].content[0].text == "The first printed hello-from-shell."


def test_the_rollout_restores_sha256_equal(recorded: dict) -> None:
    (restored,) = restore(recorded["db"], recorded["base"] / "restored")
    assert restored.sha256 == hashlib.sha256(recorded["rollout"].read_bytes()).hexdigest()
