"""The real Aider (aider-chat 0.86.2, ``-m clients``) resumes what ``emit --to aider`` wrote,
and the archive reads back what it then appended as a hand-off plus the new run's own turn.

One run of the client for the whole module (CI budget): a Claude Code recording is emitted as
``.aider.chat.history.md`` into a fresh git repository, then ``aider --restore-chat-history
--message ...`` runs there once against the mock (tests/clients/aider_client.py). Every test
reads that run: the request the mock saw, and the history Aider appended to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.store import SqliteMessageStore
from clients.aider_client import AiderMock, find_aider, git_repo, run_aider
from clients.mock_servers import Script, Text, Thinking

pytestmark = pytest.mark.clients

CLAUDE_BASH = Path(__file__).parent / "fixtures" / "recorded" / "claude-code-2.1.197" / "bash"
PROMPT = "Create hello.txt containing hello"
REPLY = "hello.txt\n```\nhello\n```\n\nCreated hello.txt."
THINKING = "The user wants hello.txt; whole edit format."


def run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    exe = find_aider()
    if exe is None:
        pytest.skip("aider-chat 0.86.2 is not installed (scripts/install_clients.sh puts it in <clients>/old/)")
    tmp = tmp_path_factory.mktemp("aider")
    src = tmp / "src"
    for d in CLAUDE_BASH.iterdir():
        if d.is_dir():
            shutil.copytree(d, src / d.name)
    original = orjson.loads((CLAUDE_BASH / "scenario.json").read_bytes())["session_id"]
    db = str(tmp / "a.db")
    run("--db", db, "ingest", "-q", str(src))
    repo = git_repo(tmp / "repo")
    run("--db", db, "emit", original, "--to", "aider", "--cwd", str(repo), "-o", str(repo))
    emitted = (repo / ".aider.chat.history.md").read_bytes()
    script = Script(turns={PROMPT: [[Thinking(THINKING), Text(REPLY)]]})
    with AiderMock(script) as mock:
        res = run_aider(exe, tmp / "home", repo, mock.url, PROMPT, restore=True)
        requests = [r.body for r in mock.model_requests()]
    assert res.returncode == 0, res.stderr[-2000:]
    return {"db": db, "repo": repo, "original": original, "emitted": emitted, "requests": requests}


def test_aider_restores_the_emitted_conversation_into_its_request(resumed) -> None:
    first = resumed["requests"][0]["messages"]
    texts = [m["content"] for m in first if isinstance(m.get("content"), str)]
    # the Claude Code conversation, as Aider's split_chat_history_markdown read it back
    assert any("[bash] Run two commands." in t for t in texts)
    assert any("The second command failed as expected." in t for t in texts)
    assert any("Bash {\"command\":\"echo hello-from-bash\"" in t for t in texts)
    assert not any("seshArchive" in t for t in texts)  # the marks never reach the model
    assert first[-1]["role"] == "user" and PROMPT in first[-1]["content"]


def test_the_resumed_history_is_a_handoff_plus_the_new_run(resumed) -> None:
    repo, db = resumed["repo"], resumed["db"]
    data = (repo / ".aider.chat.history.md").read_bytes()
    assert data.startswith(resumed["emitted"])  # Aider appends, never rewrites
    store = SqliteMessageStore(db)
    before = store.conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    summary = json.loads(run("--db", db, "ingest", "--json", str(repo / ".aider.chat.history.md")))
    assert summary["failed"] == 0 and not summary["reports"].get("warning")
    store = SqliteMessageStore(db)
    handoff = store.conn.execute(
        "SELECT id FROM threads WHERE json_extract(metadata, '$.emittedFrom') = ?", (resumed["original"],)).fetchall()
    assert len(handoff) == 1
    # the emitted messages are the archived ones; the new run's own turn is new
    assert store.get_messages(handoff[0][0]) == store.get_messages(resumed["original"])
    runs = store.conn.execute("SELECT id, json_extract(metadata, '$.restoredFrom'), json_extract(metadata, '$.version') "
                              "FROM threads WHERE provider = 'aider' ORDER BY created_at, id").fetchall()  # fmt: skip
    assert len(runs) == 2
    new = next(r for r in runs if r[0] != handoff[0][0])
    assert new[1] == handoff[0][0] and new[2] == "0.86.2"  # it read the emitted run as its context
    own = store.get_messages(new[0])
    replies = [m for m in own if m.role == "assistant"]
    assert [m.role for m in own if m.role != "tool"][:2] == ["user", "assistant"]
    assert replies[0].content[0].text == THINKING and replies[0].content[1].text == REPLY
    assert replies[0].usage is not None and replies[0].usage.output_tokens > 0
    added = store.conn.execute("SELECT count(*) FROM messages").fetchone()[0] - before
    assert added == len(store.get_messages(new[0]))  # nothing of the hand-off stored twice
