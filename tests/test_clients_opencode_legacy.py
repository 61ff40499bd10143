"""OpenCode before 1.2 (JSON storage), with the real pinned releases of each layout
(0.1.174, 0.5.29, 1.1.65; marker ``clients``): a session recorded live against the mock,
continued with ``--session``, is archived whole (prompts, answers, tool call and result,
usage with the model), and every file of it restores byte for byte. Skipped with a reason
when the release is not installed (scripts/install_clients.sh installs them)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import os
import shutil

from archive.db import open_db
from archive.emit import emit_thread, write_files
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.records import unpack_restored
from archive.vendors import get
from archive.vendors.base import EmitOptions
from clients import opencode_legacy as legacy
from clients.mock_servers import ChatCompletionsMock, Script, Text, Thinking, Tool
from clients.scenarios import RESUME_PROMPT, RESUME_REPLY

pytestmark = pytest.mark.clients

SCRIPT = Script(turns={
    "[bash]": [[Thinking("The user wants a command run."), Text("Running echo."),
                Tool("bash", {"command": "echo hello-from-bash", "description": "Print a greeting"})],
               [Text("The command printed hello-from-bash.")]],
    "[text-2]": [[Text("Hello again.")]],
    "[resume-check]": [[Text(RESUME_REPLY)]],
})
RECORDED = Path(__file__).parent / "fixtures" / "recorded"


@pytest.mark.parametrize("version", legacy.CI)
def test_a_recorded_session_is_archived_whole_and_restores_byte_for_byte(version: str, tmp_path: Path) -> None:
    exe = legacy.find_legacy(version)
    if exe is None or legacy.cache_package(version) is None:
        pytest.skip(f"OpenCode {version} (or its provider package) is not installed")
    home, cwd = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    cwd.mkdir()
    with ChatCompletionsMock(SCRIPT).start() as mock:
        first = legacy.run_legacy(exe, version, home, cwd, mock, "[bash] Run a command.", 2)
        assert first.returncode == 0, first.stderr[-3000:]
        (sid,) = legacy.sessions(home)
        again = legacy.run_legacy(exe, version, home, cwd, mock, "[text-2] Say it again.", 1, session=sid)
        assert again.returncode == 0, again.stderr[-3000:]
    db = open_db(tmp_path / "a.db")
    s = ingest_paths(db, None, IngestOptions(providers=("opencode",), env={"HOME": str(home)}, idle_seconds=10**9))
    assert s.failed == 0 and not s.reports.get("unexplained") and not s.reports.get("adapter_error")
    assert [r[0] for r in db.execute("SELECT id FROM threads")] == [sid]
    assert db.execute("SELECT json_extract(metadata, '$.version') FROM threads").fetchone()[0] == version
    texts = [r[0] or "" for r in db.execute("SELECT text FROM blocks WHERE type = 'text'")]
    # 0.1.174 keeps a streamed answer as several text parts ("Hello " and "again.")
    assert any("[bash]" in t for t in texts) and any("[text-2]" in t for t in texts) and "Hello again." in "".join(texts)
    assert [r[0] for r in db.execute("SELECT tool_name FROM blocks WHERE type = 'tool_call'")] == ["bash"]
    assert "hello-from-bash" in db.execute("SELECT coalesce(output, text) FROM blocks WHERE type = 'tool_result'").fetchone()[0]
    assert db.execute("SELECT count(*) FROM usage WHERE model = 'm' AND output_tokens > 0").fetchone()[0] >= 2
    out = tmp_path / "out"
    restored = restore(db, out)
    unpacked = dict(unpack_restored(lambda uid: "opencode", restored, out))
    info = next(p for p in legacy.storage_root(home).rglob(f"{sid}.json") if get("opencode").classify(p))
    files = get("opencode").record_files(info)
    assert files and set(unpacked) == {out / f.lstrip("/") for f in files}
    for f in files:
        assert unpacked[out / f.lstrip("/")] == hashlib.sha256(Path(f).read_bytes()).hexdigest(), f


def test_a_session_emitted_for_1_1_65_resumes_in_it(tmp_path: Path) -> None:
    """The archived 1.1.65 recording, emitted with ``--client-version 1.1.65`` (the JSON
    storage) into a fresh home: ``opencode --session`` of 1.1.65 continues it, sending the
    archived prompt, tool call and result to the model."""
    exe = legacy.find_legacy("1.1.65")
    if exe is None or legacy.cache_package("1.1.65") is None:
        pytest.skip("OpenCode 1.1.65 (or its provider package) is not installed")
    src = tmp_path / "src" / ".local" / "share" / "opencode"
    shutil.copytree(RECORDED / "opencode-1.1.65" / "bash" / "opencode", src)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, IngestOptions(providers=("opencode",), env={"HOME": str(tmp_path / "src")}, idle_seconds=10**9))
    sid = db.execute("SELECT id FROM threads").fetchone()[0]
    home, cwd = tmp_path / "home", tmp_path / "proj"
    cwd.mkdir()
    outcome = emit_thread(db, sid, "opencode", exact=False, options=EmitOptions(cwd=str(cwd), client_version="1.1.65"))
    write_files(outcome, home / ".local" / "share")
    with ChatCompletionsMock(SCRIPT).start() as mock:
        res = legacy.run_legacy(exe, "1.1.65", home, cwd, mock, RESUME_PROMPT, 1, session=sid)
        assert res.returncode == 0, res.stderr[-3000:]
        sent = mock.model_requests()[-1].body["messages"]
    text = os.linesep.join(str(m.get("content")) + str(m.get("tool_calls")) for m in sent)
    assert "[bash] Run a command." in text and "hello-from-bash" in text and "echo hello-from-bash" in text
    assert RESUME_PROMPT.split(" ")[0] in str(sent[-1].get("content"))
