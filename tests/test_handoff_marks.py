"""Recognising our own output (issue 17): a session ``emit`` wrote, installed where its client
finds it and ingested again, is one conversation with the thread it came from, not two.

Every line a cross-vendor emit writes carries a mark (``seshArchive``: the canonical message
it was written from, the source thread on the first line, the archived response key of its
usage, a digest of the line); the target's parser reads a marked line back under the canonical
id, so the message is stored once and the new thread is linked as a hand-off
(``thread_lineage.kind``) whose view inherits the original's history. Through the CLI, as a
user types it, with the real clients' recordings (tests/fixtures/recorded/).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.store import SqliteMessageStore
from archive.vendors.base import EMIT_MARK
from test_forks import order_free_dump

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
CLAUDE_BASH = RECORDED / "claude-code-2.1.197" / "bash"
CLAUDE_AGENT = RECORDED / "claude-code-2.1.197" / "agent"
CODEX_EXEC = RECORDED / "codex-0.171.0" / "exec"
# (recording, target, a phrase said once in the conversation)
CASES = [
    pytest.param(CLAUDE_BASH, "codex", "failed as expected", id="claude-code->codex"),
    pytest.param(CLAUDE_BASH, "clm", "failed as expected", id="claude-code->clm"),
    pytest.param(CLAUDE_AGENT, "codex", "Ask a helper to count", id="claude-code-agent->codex"),
    pytest.param(CODEX_EXEC, "claude-code", "Run two commands", id="codex->claude-code"),
    pytest.param(CODEX_EXEC, "clm", "Run two commands", id="codex->clm"),
    pytest.param(CLAUDE_BASH, "qwen", "failed as expected", id="claude-code->qwen"),
    pytest.param(CLAUDE_BASH, "pi", "failed as expected", id="claude-code->pi"),
    pytest.param(CLAUDE_BASH, "copilot", "failed as expected", id="claude-code->copilot"),
    pytest.param(CODEX_EXEC, "pi", "Run two commands", id="codex->pi"),
    pytest.param(CLAUDE_BASH, "gemini", "failed as expected", id="claude-code->gemini"),
    pytest.param(CODEX_EXEC, "gemini", "Run two commands", id="codex->gemini"),
    pytest.param(CLAUDE_AGENT, "gemini", "Ask a helper to count", id="claude-code-agent->gemini"),
    pytest.param(CLAUDE_BASH, "opencode", "failed as expected", id="claude-code->opencode"),
    pytest.param(CODEX_EXEC, "opencode", "Run two commands", id="codex->opencode"),
    pytest.param(CLAUDE_BASH, "vibe", "failed as expected", id="claude-code->vibe"),
    pytest.param(CODEX_EXEC, "vibe", "Run two commands", id="codex->vibe"),
    pytest.param(CLAUDE_BASH, "kilo", "failed as expected", id="claude-code->kilo"),
]


def run(*args: str, env: dict[str, str | None] | None = None) -> str:
    res = CliRunner().invoke(cli, list(args), env=env)
    assert res.exit_code == 0, res.output
    return res.stdout


def session_id(rec: Path) -> str:
    return orjson.loads((rec / "scenario.json").read_bytes())["session_id"]


def home_env(home: Path) -> dict[str, str | None]:
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    # the other vendors' homes follow HOME
    return {"GEMINI_CLI_HOME": None, "QWEN_HOME": None, "QWEN_RUNTIME_DIR": None, "PI_CODING_AGENT_DIR": None,
            "PI_CODING_AGENT_SESSION_DIR": None, "COPILOT_HOME": None, "VIBE_HOME": None, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "CODEX_HOME": str(home / ".codex"),
            "XDG_STATE_HOME": str(home / ".local" / "state"), "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_CONFIG_HOME": str(home / ".config")}


def archive_of(rec: Path, tmp_path: Path) -> tuple[str, Path]:
    """The recording ingested into a fresh archive: (db path, the folder of its files)."""
    src = tmp_path / "src"
    for d in rec.iterdir():
        if d.is_dir():
            shutil.copytree(d, src / d.name)
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", str(src))
    return db, src


def install(db: str, thread: str, target: str, home: Path, *extra: str) -> dict:
    """``emit THREAD --to TARGET --install`` into ``home``: the JSON report."""
    return json.loads(run("--db", db, "emit", thread, "--to", target, "--install", *extra, "--json-report",
                          env=home_env(home)))


def counts(db: str) -> tuple[int, int, int]:
    conn = open_db(db).conn
    try:
        return tuple(conn.execute(  # type: ignore[return-value]
            "SELECT (SELECT count(*) FROM messages), (SELECT count(*) FROM usage), "
            "(SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM usage)").fetchone())
    finally:
        conn.close()


@pytest.mark.parametrize("rec,target,phrase", CASES)
def test_an_installed_emit_ingested_again_is_one_conversation(rec: Path, target: str, phrase: str, tmp_path: Path) -> None:
    db, _ = archive_of(rec, tmp_path)
    original = session_id(rec)
    before = counts(db)
    store = SqliteMessageStore(db)
    view = store.get_messages(original)
    home = tmp_path / "home"
    report = install(db, original, target, home, "--cwd", str(tmp_path / "work"))
    assert not report["exact"]
    new = report["target_id"]
    run("--db", db, "ingest", "-q", str(home))
    # nothing stored twice: messages, responses and tokens as before
    assert counts(db) == before
    store = SqliteMessageStore(db)
    t = store.get_thread(new)
    assert t is not None and t.parent_thread_id == original and (t.metadata or {}).get("emittedFrom") == original
    conn = store.conn
    assert conn.execute("SELECT parent_thread_id, kind FROM thread_lineage WHERE thread_id = ?", (new,)).fetchall() == [(original, "handoff")]
    assert conn.execute("SELECT lineage, forked_from, messages FROM thread_summary WHERE id = ?", (new,)).fetchone() == ("handoff", original, 0)
    # the new thread's conversation is the original's; the original is unchanged
    assert store.get_messages(new) == view
    assert store.get_messages(original) == view
    # search finds the conversation once, also in the hand-off
    hits = json.loads(run("--db", db, "search", "--json", f'"{phrase}"'))
    assert len(hits) == 1 and hits[0]["thread_id"] == original and hits[0]["also_in"] == [new], hits
    # threads and show say what it is
    listed = json.loads(run("--db", db, "threads", "--all", "--json"))
    assert {r["id"]: r.get("lineage") for r in listed}[new] == "handoff"
    assert "handed off from" in run("--db", db, "show", new)
    # the original's page names the child as `threads` does (it said "fork, 0 messages": issue 32)
    shown = run("--db", db, "show", original, "--no-pager")
    assert f"{new}  hand-off, 0 own messages" in shown and "fork, " not in shown


def _installed_log(report: dict) -> Path:
    (path,) = [Path(p) for p in report["written"]
               if (p.endswith(".jsonl") and "/subagents/" not in p) or "/opencode-import/" in p]
    return path


def test_a_turn_added_after_the_resume_is_the_new_threads_own(tmp_path: Path) -> None:
    """Codex appends the resumed turn to the rollout it resumed (0.171.0): written here as
    the client writes it, it is the hand-off's own message, after the inherited history."""
    db, _ = archive_of(CLAUDE_BASH, tmp_path)
    original = session_id(CLAUDE_BASH)
    report = install(db, original, "codex", tmp_path / "home")
    log = _installed_log(report)
    with log.open("ab") as f:
        for payload in ({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "[resumed] one more"}]},
                        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done again."}]}):
            f.write(orjson.dumps({"timestamp": "2026-12-01T10:00:00.000Z", "type": "response_item", "payload": payload}) + b"\n")
    before = counts(db)[0]
    run("--db", db, "ingest", "-q", str(tmp_path / "home"))
    store = SqliteMessageStore(db)
    new = report["target_id"]
    own = store.conn.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (new,)).fetchone()[0]
    assert own == 2 and counts(db)[0] == before + 2
    view = store.get_messages(new)
    trunk = store.get_messages(original)
    assert view[: len(trunk)] == trunk and [m.thread_id for m in view[len(trunk):]] == [new, new]
    assert [b.text for m in view[len(trunk):] for b in m.content] == ["[resumed] one more", "Done again."]  # type: ignore[union-attr]


@pytest.mark.parametrize("rec,target", [(CLAUDE_BASH, "codex"), (CODEX_EXEC, "claude-code"), (CLAUDE_BASH, "clm"),
                                        (CLAUDE_BASH, "gemini"), (CLAUDE_BASH, "opencode")],
                         ids=["claude-code->codex", "codex->claude-code", "claude-code->clm", "claude-code->gemini",
                              "claude-code->opencode"])
def test_ingest_order_changes_no_table(rec: Path, target: str, tmp_path: Path) -> None:
    """The original and its installed hand-off, one file per run, in both orders (and the
    hand-off alone first, as on a machine that never had the original): the same tables."""
    db, src = archive_of(rec, tmp_path)
    report = install(db, session_id(rec), target, tmp_path / "home")
    files = [p for p in src.rglob("*.jsonl")] + [_installed_log(report)]
    dumps = []
    for i, order in enumerate(itertools.permutations(files)):
        d = open_db(tmp_path / f"{i}.db")
        for f in order:
            assert ingest_paths(d, [f], IngestOptions(idle_seconds=10**9)).failed == 0
        dumps.append(order_free_dump(d))
        d.conn.close()
    assert len(dumps) >= 2
    for table in dumps[0]:
        for other in dumps[1:]:
            assert other[table] == dumps[0][table], table


def test_an_edited_marked_line_does_not_replace_the_archived_message(tmp_path: Path) -> None:
    """A marked line changed afterwards (edited, or rewritten on another machine) no longer
    matches its digest: it is the hand-off's own message, and the archived one stays."""
    db, _ = archive_of(CLAUDE_BASH, tmp_path)
    original = session_id(CLAUDE_BASH)
    view = SqliteMessageStore(db).get_messages(original)
    report = install(db, original, "codex", tmp_path / "home")
    log = _installed_log(report)
    lines = log.read_bytes().splitlines()
    i = next(i for i, ln in enumerate(lines) if b"failed as expected" in ln and b"response_item" in ln)
    lines[i] = lines[i].replace(b"failed as expected", b"failed as EDITED")
    assert EMIT_MARK.encode() in lines[i]
    log.write_bytes(b"\n".join(lines) + b"\n")
    before = counts(db)[0]
    run("--db", db, "ingest", "-q", str(tmp_path / "home"))
    store = SqliteMessageStore(db)
    assert store.get_messages(original) == view
    new = report["target_id"]
    own = store.get_messages(new)[len(view) - 1:]
    assert counts(db)[0] == before + 1
    assert [b.text for m in own if m.thread_id == new for b in m.content] == ["The second command failed as EDITED."]  # type: ignore[union-attr]
    assert store.conn.execute("SELECT count(*) FROM reports WHERE reason = 'emitted line changed'").fetchone()[0] == 1


def test_a_byte_exact_copy_installed_and_ingested_again_is_the_same_source(tmp_path: Path) -> None:
    """``emit --to claude-code --cwd`` of a Claude Code thread copies its file byte for byte
    (filed under the new project folder): ingest knows the source and adds nothing."""
    db, _ = archive_of(CLAUDE_BASH, tmp_path)
    original = session_id(CLAUDE_BASH)
    before = counts(db)
    conn = open_db(db).conn
    tables = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("threads", "sources", "source_lines")}
    conn.close()
    report = install(db, original, "claude-code", tmp_path / "home", "--cwd", str(tmp_path / "work"))
    assert report["exact"] and report["target_id"] == original
    run("--db", db, "ingest", "-q", str(tmp_path / "home"))
    assert counts(db) == before
    conn = open_db(db).conn
    assert {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables} == tables
    conn.close()


# ---------------------------------------------------------------- with the real clients

# which targets' clients keep the marks of the lines they resume (checked below with the
# real client: it appends the resumed turn to the emitted file, or rewrites it keeping them)
CLIENT_TARGETS = ["claude-code", "codex", "gemini", "qwen", "pi", "copilot", "opencode"]


@pytest.mark.clients
@pytest.mark.parametrize("target", CLIENT_TARGETS)
def test_a_handoff_resumed_by_its_client_is_ingested_as_one_conversation(target: str, tmp_path: Path) -> None:
    """``emit --to TARGET --install`` of a recorded thread of the other vendor, resumed by the
    real client against the mock server, then ingested again: the history is the original's
    (stored once), the resumed turn is the hand-off's own."""
    from clients import runner
    from clients.mock_servers import Script, Text
    from clients.recordings import recordings
    from clients.scenarios import RESUME_PROMPT
    from test_clients import archive_threads, client, dirs, emit_into, mock_for
    from test_clients import run as run_client

    client(target)
    source = "codex" if target == "claude-code" else "claude-code"
    rec = next(r for r in recordings(source) if r.meta["scenario"] == ("exec" if source == "codex" else "bash"))
    thread, _, _ = archive_threads(rec, tmp_path)
    db = str(tmp_path / "archive.db")
    before = counts(db)
    store = SqliteMessageStore(db)
    view = store.get_messages(thread.id)
    usage_before = store.conn.execute("SELECT key, input_tokens, output_tokens FROM usage WHERE thread_id = ? ORDER BY key",
                                      (thread.id,)).fetchall()
    store.conn.close()
    home, cwd = dirs(tmp_path)
    resume_id, _ = emit_into(target, thread.id, tmp_path / "archive.db", home, cwd)
    with mock_for(target, Script(turns={"[resume-check]": [[Text("OK.")]]})) as mock:
        run_client(target, home, cwd, mock.url, RESUME_PROMPT, resume=resume_id).check()
    run("--db", db, "ingest", "-q", str(home / runner.HOMES[target][0]))
    store = SqliteMessageStore(db)
    after = counts(db)
    resumed = [t for t in store.list_threads() if (t.metadata or {}).get("emittedFrom") == thread.id]
    assert len(resumed) == 1, [(t.id, t.metadata) for t in store.list_threads()]
    new = resumed[0]
    assert new.parent_thread_id == thread.id
    own = store.conn.execute("SELECT role, injected FROM messages WHERE thread_id = ? ORDER BY source_id, generation, offset, sub",
                             (new.id,)).fetchall()
    # the resumed turn: the prompt, the context the client injects with it, the answer; and
    # nothing of the history again (one response more)
    assert [r for r in own if not r[1]] == [("user", 0), ("assistant", 0)], own
    assert after[0] == before[0] + len(own), (own, before, after)
    # the history's responses counted once, in the original; the resumed turn's in the hand-off
    # (Qwen Code 0.24.4 makes a second, helper call)
    assert store.conn.execute("SELECT key, input_tokens, output_tokens FROM usage WHERE thread_id = ? ORDER BY key",
                              (thread.id,)).fetchall() == usage_before
    assert {r[0] for r in store.conn.execute("SELECT thread_id FROM usage WHERE key NOT IN (SELECT value FROM json_each(?))",
                                             (json.dumps([k for k, _, _ in usage_before]),))} == {new.id}
    got = store.get_messages(new.id)
    assert got[: len(view)] == view
    texts = [b.text for m in got[len(view):] for b in m.content if hasattr(b, "text")]
    assert RESUME_PROMPT in texts and "OK." in texts, texts
    assert store.conn.execute("SELECT kind FROM thread_lineage WHERE thread_id = ?", (new.id,)).fetchone() == ("handoff",)


@pytest.mark.postgres
@pytest.mark.parametrize("rec,target", [pytest.param(CLAUDE_BASH, "codex", id="claude-code->codex"),
                                        pytest.param(CODEX_EXEC, "claude-code", id="codex->claude-code"),
                                        pytest.param(CLAUDE_BASH, "gemini", id="claude-code->gemini"),
                                        pytest.param(CLAUDE_BASH, "opencode", id="claude-code->opencode")])
def test_the_team_copy_of_a_handed_off_message_is_the_originals(rec: Path, target: str, tmp_path: Path, pg_server) -> None:
    """On the team database too, a message an installed emit repeats belongs to the thread it
    was written from, as in one archive holding both (the hand-off repeats its origin's
    times, so the creation time alone does not decide): a machine that has only the
    hand-off's file and one that has both push, in both orders, either machine id first."""
    from archive.pg import connect as pg_connect
    from archive.pg import queries as pg_queries
    from archive.push import push
    from test_forks import _local_forks, _named_machine, _team_forks

    db, _ = archive_of(rec, tmp_path)
    original = session_id(rec)
    home = tmp_path / "home"
    report = install(db, original, target, home, "--cwd", str(tmp_path / "work"))
    log = _installed_log(report)
    run("--db", db, "ingest", "-q", str(home))
    expected = _local_forks(open_db(db).conn)
    assert {t for _i, t, *_k in expected["owners"]} == {original}
    only = str(tmp_path / "only.db")
    run("--db", only, "ingest", "-q", str(log))
    for first, second in (("0" * 32, "f" * 32), ("f" * 32, "0" * 32)):
        for order in ("handoff-first", "both-first"):
            paths = {}
            for name, src, mid in (("handoff", only, first), ("both", db, second)):
                paths[name] = tmp_path / f"{name}-{first[0]}-{order}.db"
                shutil.copy(src, paths[name])
                _named_machine(paths[name], mid)
            url = pg_server.new_database()
            for name in (("handoff", "both") if order == "handoff-first" else ("both", "handoff")):
                push(open_db(paths[name]), url)
            got = _team_forks(url)
            assert got["owners"] == expected["owners"], (first[0], order)
            assert got["lineage"] == expected["lineage"], (first[0], order)
            # the server's lineage has no kind column: the team store reads it from emittedFrom
            assert [r["lineage"] for r in pg_queries.threads(pg_connect(url), ids=[report["target_id"]])] == ["handoff"]



def _result_with_text(folder: Path) -> Path:
    """A canonical thread whose user message holds a tool result and a text (as Claude Code
    writes an interrupted result with the user's words): a Gemini emit puts the result in the
    call's record and the text in a user record, two lines claiming one message."""
    from archive.model import Message, Text, Thread, ToolCall, ToolResult

    t = Thread(id="mixed-thread", created_at="2026-01-01T00:00:00Z", metadata={"cwd": "/w"})
    msgs = [
        Message(id="u1", thread_id=t.id, role="user", ts="2026-01-01T00:00:01Z", content=(Text("go"),)),
        Message(id="a1", thread_id=t.id, role="assistant", ts="2026-01-01T00:00:02Z",
                content=(Text("Running."), ToolCall(call_id="c1", name="Bash", input={"command": "ls"}))),
        Message(id="u2", thread_id=t.id, role="user", ts="2026-01-01T00:00:03Z",
                content=(ToolResult(call_id="c1", output="a b"), Text("and check the logs"))),
        Message(id="a2", thread_id=t.id, role="assistant", ts="2026-01-01T00:00:04Z", content=(Text("Done."),)),
    ]
    folder.mkdir(parents=True)
    path = folder / "mixed.jsonl"
    path.write_bytes(b"".join(orjson.dumps(x.to_dict()) + b"\n" for x in [t, *msgs]))
    return path


@pytest.mark.parametrize("source,target", [(CLAUDE_BASH, "gemini"), (CLAUDE_AGENT, "gemini"), (CODEX_EXEC, "gemini"),
                                           (None, "gemini")],
                         ids=["claude-code->gemini", "claude-code-agent->gemini", "codex->gemini", "result-and-text->gemini"])
def test_a_marked_session_read_line_by_line_equals_it_read_whole(source: Path | None, target: str, tmp_path: Path) -> None:
    """Incremental = whole for the marks' parser state (the message a record claimed last,
    which the next line may extend): the installed session alone, read after each line it
    gains, gives the tables of one whole read. (OpenCode's import file is a snapshot, read whole.)"""
    from ingest_helpers import portable_dump

    if source is None:
        db = str(tmp_path / "a.db")
        run("--db", db, "ingest", "-q", str(_result_with_text(tmp_path / "src")))
        thread = "mixed-thread"
    else:
        db, _ = archive_of(source, tmp_path)
        thread = session_id(source)
    data = _installed_log(install(db, thread, target, tmp_path / "home", "--cwd", "/w")).read_bytes()
    whole = tmp_path / "whole" / "session.jsonl"
    whole.parent.mkdir()
    whole.write_bytes(data)
    db_whole = open_db(tmp_path / "whole.db")
    ingest_paths(db_whole, [whole], IngestOptions(idle_seconds=10**9))
    growing = tmp_path / "grow" / "session.jsonl"
    growing.parent.mkdir()
    for line in data.splitlines(keepends=True):
        with open(growing, "ab") as f:
            f.write(line)
        db_inc = open_db(tmp_path / "inc.db")
        ingest_paths(db_inc, [growing], IngestOptions(idle_seconds=10**9))
        db_inc.conn.close()
    db_inc = open_db(tmp_path / "inc.db")
    assert counts(str(tmp_path / "whole.db"))[0] > 0
    assert portable_dump(db_inc) == portable_dump(db_whole)
