"""Gemini CLI 0.10.0, the real client (marker ``clients``, issue 33), offline against the
Gemini mock: one release of the 0.4-0.19 layout, ``tmp/<hash>/chats/session-*.json``, one
JSON document rewritten on every message (later releases write JSONL; 0.1.x only
checkpoints, tests/test_clients_old.py). 0.10.0's ``-p`` writes the document, so no TUI.

One recording (module fixture): a shell turn (text, a call that succeeds, one that fails,
an answer). Ingesting the home archives the document whole: every prompt and answer,
each call with its result, each answer's tokens once with its model; it restores
sha256-equal.

Installed pinned by scripts/install_clients.sh (``<clients>/old/gemini-cli-<version>``);
skipped when absent. Cost: one ``-p`` run, ~20 s here.
"""

from __future__ import annotations

import hashlib

import orjson
import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.model import Text, ToolCall, ToolResult
from archive.projection import load_messages
from clients import old_clients as old
from clients import runner
from clients.mock_servers import GeminiMock

pytestmark = pytest.mark.clients

GEMINI_DOC = "0.10.0"
PROMPT = "[shell] Run two commands."


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    exe = runner.find_old_bin("gemini-cli", GEMINI_DOC, "gemini")
    if exe is None:
        pytest.skip(f"Gemini CLI {GEMINI_DOC} not found (scripts/install_clients.sh installs it under <clients>/old/)")
    base = tmp_path_factory.mktemp("gemini-doc")
    home, cwd = base / "home", base / "work"
    cwd.mkdir()
    old._settings("gemini", home)  # the settings shape of the 0.x releases
    with GeminiMock(old.old_scenario("gemini").script) as mock:
        args = runner.node_argv(exe) + ["--model", runner.GEMINI_MODEL, "--yolo", "-p", PROMPT]
        runner._run(args, cwd, old.old_env("gemini", home, mock.url), 180).check()
    (doc,) = old.written_files("gemini", home)
    db = open_db(base / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(home), "GEMINI_CLI_HOME": str(home)},
                                                   idle_seconds=10**9))
    return {"base": base, "doc": doc, "db": db, "summary": summary}


def test_the_session_document_is_archived_whole(recorded: dict) -> None:
    db, doc = recorded["db"], recorded["doc"]
    assert doc.parent.name == "chats" and doc.name.startswith("session-") and doc.suffix == ".json"
    s = recorded["summary"]
    assert s.failed == 0 and not s.reports.get("unexplained") and not s.reports.get("adapter_error")
    d = orjson.loads(doc.read_bytes())
    msgs = load_messages(db.conn, "m.thread_id = ?", (d["sessionId"],))
    texts = [b.text for m in msgs for b in m.content if isinstance(b, Text)]
    assert texts == [PROMPT, "Running echo.", "The second command failed as expected."]
    assert [m["content"] for m in d["messages"]] == [PROMPT, "Running echo.", "The second command failed as expected."]
    calls = [b for m in msgs for b in m.content if isinstance(b, ToolCall)]
    results = [b for m in msgs for b in m.content if isinstance(b, ToolResult)]
    assert [c.input["command"] for c in calls] == ["echo hello-from-shell", "ls /nonexistent-sesh-dir"]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert "hello-from-shell" in str(results[0].output)
    # each answer the document logs tokens for, once, with its model
    answers = [m for m in d["messages"] if m["type"] == "gemini"]
    usage = db.execute("SELECT model, output_tokens FROM usage WHERE thread_id = ?", (d["sessionId"],)).fetchall()
    assert sorted(usage) == sorted((m["model"], m["tokens"]["output"]) for m in answers)
    assert {m for m, _ in usage} == {runner.GEMINI_MODEL}


def test_the_document_restores_sha256_equal(recorded: dict) -> None:
    (restored,) = restore(recorded["db"], recorded["base"] / "restored")
    assert restored.sha256 == hashlib.sha256(recorded["doc"].read_bytes()).hexdigest()
