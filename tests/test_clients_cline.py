"""Cline CLI 3.0.65, the real client (marker ``clients``), offline against the Chat Completions mock.

One session is recorded per module (tests/clients/cline.py: a prompt with a shell call and a
subagent, then a resume under tmux with a reasoning answer) and every test reads it: archived
whole (the subagent a child thread, usage as the mock returned it), restored byte-exact,
emitted, installed (with its ``sessions.db`` row) and resumed by the client with its history,
the archive's marks kept, and read back as a hand-off. Three client runs in all (the CI
budget): the hand-offs with Claude Code both ways are checked on the files
(tests/test_cline.py). Skips when the client is not installed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from archive.db import open_db
from archive.emit import emit_thread, install_files
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.projection import load_messages
from archive.vendors.base import EMIT_MARK, EmitOptions
from clients import cline
from clients.mock_servers import ChatCompletionsMock

pytestmark = pytest.mark.clients

EXE = cline.find_cline()
NEVER_IDLE = IngestOptions(idle_seconds=10**9)


@pytest.fixture(scope="module")
def mock():
    with ChatCompletionsMock(cline.script(), max_seconds=900) as m:
        yield m


@pytest.fixture(scope="module")
def recorded(mock, tmp_path_factory) -> cline.Recording:
    if EXE is None:
        pytest.skip("Cline CLI not installed (scripts/install_clients.sh; SESH_CLIENTS_DIR)")
    return cline.record(EXE, tmp_path_factory.mktemp("cline"), mock)


@pytest.fixture(scope="module")
def archive(recorded, tmp_path_factory):
    db = open_db(tmp_path_factory.mktemp("db") / "a.db")
    summary = ingest_paths(db, [recorded.home.data / "sessions"], NEVER_IDLE)
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    return db


def chat_usage(requests) -> list[tuple[int, int, int]]:
    return [(r.usage["prompt_tokens"] - r.usage["prompt_tokens_details"]["cached_tokens"],
             r.usage["prompt_tokens_details"]["cached_tokens"], r.usage["completion_tokens"])
            for r in requests if getattr(r, "usage", None) and r.body.get("tools")]


def test_recorded_session_is_archived_whole(recorded, archive) -> None:
    sid = recorded.session_id
    root = load_messages(archive.conn, "m.thread_id = ?", (sid,))
    roles = [m.role for m in root]
    # prompt, call, result, spawn, its result, answer; resumed: prompt, reasoning answer
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant", "user", "assistant"]
    assert root[0].content[0].text == cline.FIRST and root[6].content[0].text == cline.SECOND
    assert [type(b).__name__ for b in root[7].content] == ["Reasoning", "Text"]
    child = archive.execute("SELECT id FROM threads WHERE parent_thread_id = ?", (sid,)).fetchall()
    assert len(child) == 1
    assert [m.role for m in load_messages(archive.conn, "m.thread_id = ?", (child[0][0],))] == [
        "user", "assistant", "tool", "assistant"]
    meta = json.loads(archive.execute("SELECT metadata FROM threads WHERE id = ?", (sid,)).fetchone()[0])
    assert meta["version"] == cline.VERSION and meta["cwd"] == str(recorded.home.cwd)
    # every model response once, in the neutral buckets, as the mock counted it
    got = archive.execute("SELECT input_tokens, cache_read_tokens, output_tokens FROM usage ORDER BY ts").fetchall()
    assert sorted(map(tuple, got)) == sorted(chat_usage(recorded.requests))


def test_restore_is_byte_exact(recorded, archive, tmp_path: Path) -> None:
    files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
             for p in (recorded.home.data / "sessions" / recorded.session_id).iterdir()}
    restored = {Path(r.path).name: r.sha256 for r in restore(archive, tmp_path / "out")}
    assert {k: v for k, v in restored.items() if k in files} == files


def test_first_generation_is_kept(recorded, archive, tmp_path: Path) -> None:
    """The file before the resume and after it: two generations, the shared messages once."""
    db = open_db(tmp_path / "g.db")
    folder = tmp_path / "sessions"
    for rel, data in recorded.first.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    ingest_paths(db, [folder], NEVER_IDLE)
    assert db.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (recorded.session_id,)).fetchone()[0] == 6
    for p in (recorded.home.data / "sessions" / recorded.session_id).iterdir():
        (folder / recorded.session_id / p.name).write_bytes(p.read_bytes())
    ingest_paths(db, [folder], NEVER_IDLE)
    assert db.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (recorded.session_id,)).fetchone()[0] == 8
    gens = db.execute("SELECT count(*) FROM generations g JOIN sources s ON s.id = g.source_id "
                      "WHERE s.last_path LIKE ?", (f"%{recorded.session_id}.messages.json",)).fetchone()[0]
    assert gens == 2


def _resume_emitted(ch: cline.ClineHome, mock, db, thread: str, prompt: str):
    """Emit ``thread`` into the recording's home (its ``db/sessions.db`` exists), resume it."""
    try:
        out = emit_thread(db, thread, "cline", exact=False, options=EmitOptions(cwd=str(ch.cwd)))
        install_files(out, ch.env(), ch.home)
        assert any("row added" in n for n in out.notes), out.notes
        mock.clear()
        cline.resume_in_tui(ch, out.target_id, prompt)
    finally:
        ch.stop_hub()
    return ch, out


def test_emitted_session_resumes_with_its_history_and_comes_back_as_a_hand_off(recorded, archive, mock,
                                                                                 tmp_path: Path) -> None:
    ch, out = _resume_emitted(recorded.home, mock, archive, recorded.session_id, cline.THIRD)
    (req,) = [r for r in mock.requests if r.body.get("tools") and "three plus three" in json.dumps(r.body)][-1:]
    sent = [(m["role"], m.get("content")) for m in req.body["messages"]]
    texts = json.dumps(sent)
    assert cline.FIRST in texts and cline.SECOND in texts and "hello.txt" in texts
    doc = json.loads((ch.data / "sessions" / out.target_id / f"{out.target_id}.messages.json").read_bytes())
    assert all(EMIT_MARK in m for m in doc["messages"][:8]) and len(doc["messages"]) == 10
    before = archive.execute("SELECT count(*) FROM messages").fetchone()[0]
    ingest_paths(archive, [ch.data / "sessions" / out.target_id], NEVER_IDLE)
    meta = json.loads(archive.execute("SELECT metadata FROM threads WHERE id = ?", (out.target_id,)).fetchone()[0])
    assert meta["emittedFrom"] == recorded.session_id
    assert archive.execute("SELECT count(*) FROM messages").fetchone()[0] == before + 2  # only the new turn


def test_the_tui_prompt_history_is_a_side_file(recorded, tmp_path: Path) -> None:
    """The resume in the terminal UI wrote ``cache/user_input_history.jsonl`` (the ``--json``
    run writes none; the resume of the installed session, when its test ran first, adds its
    prompt): ingest of the home reads it as the prompt history, nothing lost."""
    history = recorded.home.data / "cache" / "user_input_history.jsonl"
    prompts = [json.loads(line)["prompt"] for line in history.read_text().splitlines()]
    assert prompts[0] == cline.SECOND and cline.FIRST not in prompts
    db = open_db(tmp_path / "side.db")
    env = {"HOME": str(recorded.home.home), "CLINE_DIR": str(recorded.home.home / ".cline")}
    ingest_paths(db, None, IngestOptions(providers=("cline",), env=env, idle_seconds=10**9))
    assert db.execute("SELECT provider, thread_id, prompt FROM prompt_history").fetchall() == [
        ("cline", None, p) for p in prompts]
    assert not db.execute("SELECT count(*) FROM lost_prompts").fetchone()[0]
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
