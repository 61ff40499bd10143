"""Kimi CLI (archive/vendors/kimi): the recorded home read through discovery (subagent as a
child thread, each response's usage once although the parent's wire repeats the subagent's),
a context Kimi rewrites with its system prompt in front keeps its message ids, and the emit
side: ``kimi.json`` merged into the user's own, a hand-off counted once when read back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.vendors.kimi.emit import merge_index

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
KIMI = RECORDED / "kimi-1.51.0" / "tools"
CLAUDE_BASH = RECORDED / "claude-code-2.1.197" / "bash"
SESSION = "cdb28fff-7296-4ce7-80ff-62f4c098a485"


def run(*args: str, env: dict[str, str] | None = None, code: int = 0) -> str:
    res = CliRunner().invoke(cli, list(args), env=env)
    assert res.exit_code == code, res.output
    return res.stdout


def kimi_home(tmp_path: Path) -> Path:
    share = tmp_path / "home" / ".kimi"
    shutil.copytree(KIMI / "sessions", share / "sessions")
    return share


def test_the_recorded_home_is_one_session_with_its_subagent_and_each_response_once(tmp_path: Path) -> None:
    share = kimi_home(tmp_path)
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(share.parent), "KIMI_SHARE_DIR": str(share)},
                                                   idle_seconds=0))
    assert summary.failed == 0 and not summary.warnings, summary.warnings
    threads = {r[0]: r[1:] for r in db.execute("SELECT id, parent_thread_id, title, json_extract(metadata, '$.cwd') "
                                               "FROM threads")}
    child = f"{SESSION}/a808b7820"
    assert threads == {SESSION: (None, "[tools] Run echo hello-from-shell, then ask a cod…", "/tmp/kimirec/r1/proj"),
                       child: (SESSION, "Say hi", "/tmp/kimirec/r1/proj")}
    # four responses of the session (three steps, then the resumed prompt), two of the subagent:
    # the parent's wire repeats the subagent's (SubagentEvent), counted once
    per_thread = dict(db.execute("SELECT thread_id, count(*) FROM usage GROUP BY 1").fetchall())
    assert per_thread == {SESSION: 4, child: 2}
    assert db.execute("SELECT sum(input_tokens), sum(cache_read_tokens), sum(output_tokens) FROM usage").fetchone() \
        == (1467, 1464, 149)
    roles = [r[0] for r in db.execute("SELECT role FROM messages WHERE thread_id = ? ORDER BY rowid", (SESSION,))]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant"]


def test_a_context_rewritten_with_the_system_prompt_in_front_keeps_its_messages(tmp_path: Path) -> None:
    # kimi-cli 1.51.0 prepends a _system_prompt record to a context that has none when it
    # opens it (an emitted session, an older release's): the file is rewritten in place
    share = kimi_home(tmp_path)
    context = next(share.glob(f"sessions/*/{SESSION}/context.jsonl"))
    lines = context.read_bytes().split(b"\n", 1)
    context.write_bytes(lines[1])  # as an older release wrote it: no system prompt
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [context], IngestOptions(idle_seconds=0))
    before = [r[0] for r in db.execute("SELECT id FROM messages ORDER BY id")]
    context.write_bytes(lines[0] + b"\n" + lines[1])
    ingest_paths(db, [context], IngestOptions(idle_seconds=0))
    assert [r[0] for r in db.execute("SELECT id FROM messages ORDER BY id")] == before and len(before) == 8


def test_kimi_json_is_merged_into_the_users_own() -> None:
    emitted = json.dumps({"work_dirs": [{"path": "/w", "kaos": "local", "last_session_id": "s2"}]}).encode()
    theirs = {"work_dirs": [{"path": "/a", "kaos": "local", "last_session_id": "s0"},
                            {"path": "/w", "kaos": "local", "last_session_id": "s1"}], "other": 1}
    merged = json.loads(merge_index("sessions/../kimi.json", json.dumps(theirs).encode(), emitted))
    assert merged == {"work_dirs": [{"path": "/a", "kaos": "local", "last_session_id": "s0"},
                                    {"path": "/w", "kaos": "local", "last_session_id": "s2"}], "other": 1}
    added = json.loads(merge_index("kimi.json", b'{"work_dirs": []}', emitted))
    assert added["work_dirs"] == [{"path": "/w", "kaos": "local", "last_session_id": "s2"}]
    assert merge_index("kimi.json", b"not json", emitted) is None
    assert merge_index("sessions/x/y/context.jsonl", b"{}", emitted) is None


def test_a_claude_session_handed_to_kimi_and_read_back_is_counted_once(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(CLAUDE_BASH / "projects", src / "projects")
    db = str(tmp_path / "a.db")
    run("--db", db, "ingest", "-q", str(src))
    original = json.loads((CLAUDE_BASH / "scenario.json").read_text())["session_id"]
    totals = "SELECT count(*), sum(input_tokens), sum(output_tokens) FROM usage"
    conn = open_db(Path(db))
    before = (conn.execute("SELECT count(*) FROM messages").fetchone(), conn.execute(totals).fetchone())
    share, cwd = tmp_path / "home" / ".kimi", tmp_path / "proj"
    share.mkdir(parents=True)
    (share / "kimi.json").write_text('{"work_dirs": []}')
    env = {"HOME": str(tmp_path / "home"), "KIMI_SHARE_DIR": str(share)}
    report = json.loads(run("--db", db, "emit", original, "--to", "kimi", "--install", "--cwd", str(cwd),
                            "--json-report", env=env))
    assert report["target_id"] != original  # a thread of its own, not the Claude thread's id
    assert json.loads((share / "kimi.json").read_text())["work_dirs"] == [
        {"path": str(cwd), "kaos": "local", "last_session_id": report["target_id"]}]
    # a second install of another emit into the same home: the index merged, the session refused
    run("--db", db, "emit", original, "--to", "kimi", "--install", "--cwd", str(cwd), env=env, code=1)
    run("--db", db, "ingest", "-q", str(share / "sessions"))
    conn = open_db(Path(db))
    assert (conn.execute("SELECT count(*) FROM messages").fetchone(), conn.execute(totals).fetchone()) == before
    (emitted_from,) = conn.execute("SELECT json_extract(metadata, '$.emittedFrom') FROM threads WHERE id = ?",
                                   (report["target_id"],)).fetchone()
    assert emitted_from == original


def _usage_on_messages(db) -> list[tuple]:
    """(thread, the first block of the message carrying each response, its input tokens), by time."""
    return db.execute(
        "SELECT u.thread_id, m.role, (SELECT coalesce(b.tool_name, b.text) FROM blocks b WHERE b.message_id = m.id "
        "ORDER BY b.position LIMIT 1), u.input_tokens FROM usage u LEFT JOIN messages m ON m.id = u.message_id "
        "ORDER BY u.ts").fetchall()


# each step's usage on the assistant message the step wrote (the wire's StatusUpdate, the
# context's message: linked by the step's tool call, the step before it, or the turn's prompt)
STEPS = [
    (SESSION, "assistant", "I should run the command.", 237),
    (SESSION, "assistant", "Agent", 243),
    (f"{SESSION}/a808b7820", "assistant", "hi from the subagent", 241),
    (f"{SESSION}/a808b7820", "assistant", "Done.", 246),
    (SESSION, "assistant", "The command printed hello-from-shell and the agent said hi.", 249),
    (SESSION, "assistant", "OK, again.", 251),
]


def test_each_steps_usage_is_on_the_message_it_wrote(tmp_path: Path) -> None:
    share = kimi_home(tmp_path)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, IngestOptions(env={"HOME": str(share.parent), "KIMI_SHARE_DIR": str(share)}, idle_seconds=0))
    assert _usage_on_messages(db) == STEPS
    # every assistant message carries one response, so a thread emitted elsewhere carries its usage
    from archive.projection import load_messages

    msgs = load_messages(db.conn, "m.thread_id = ?", (SESSION,))
    assert [m.usage.input_tokens for m in msgs if m.role == "assistant"] == [237, 243, 249, 251]


def test_the_link_holds_whichever_file_is_read_first(tmp_path: Path) -> None:
    share = kimi_home(tmp_path)
    folder = next((share / "sessions").glob("*/*"))
    files = sorted(folder.rglob("*.jsonl"))
    for order in (sorted(files, key=lambda p: p.name != "wire.jsonl"), sorted(files, key=lambda p: p.name == "wire.jsonl")):
        db = open_db(tmp_path / f"{order[0].name}.db")
        env = {"HOME": str(share.parent), "KIMI_SHARE_DIR": str(share)}
        for path in order:  # one run per file: the other file's rows are already stored
            ingest_paths(db, [path], IngestOptions(env=env, idle_seconds=0))
        assert _usage_on_messages(db) == STEPS, order[0].name


def test_the_thread_page_says_plainly_what_the_files_do_not_hold(tmp_path: Path) -> None:
    """Kimi's context has no times and no file names the model: the page's last activity is
    the last response's time (the wire's), and the cost names responses without a model."""
    from archive.pricing import load_prices
    from archive.web.conversation import NO_MODEL, load_page

    share = kimi_home(tmp_path)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, IngestOptions(env={"HOME": str(share.parent), "KIMI_SHARE_DIR": str(share)}, idle_seconds=0))
    data = load_page(db.conn, SESSION, 1, load_prices(env={}), {})
    assert data["first_ts"] == "2026-12-02T08:00:07.922Z" and data["last_ts"] == "2026-12-02T08:00:30.404Z"
    assert data["cost"] is None and data["unpriced"] == [NO_MODEL]
    assert data["no_time"]  # and a thread without any time says so (the template shows it)
