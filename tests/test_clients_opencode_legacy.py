"""OpenCode before 1.2 (JSON storage), with the real pinned releases of each layout
(0.1.174, 0.5.29, 1.1.65; marker ``clients``): a session recorded live against the mock,
continued with ``--session``, is archived whole (prompts, answers, tool call and result,
usage with the model), and every file of it restores byte for byte. Skipped with a reason
when the release is not installed (scripts/install_clients.sh installs them)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.records import unpack_restored
from archive.vendors import get
from clients import opencode_legacy as legacy
from clients.mock_servers import ChatCompletionsMock, Script, Text, Thinking, Tool

pytestmark = pytest.mark.clients

SCRIPT = Script(turns={
    "[bash]": [[Thinking("The user wants a command run."), Text("Running echo."),
                Tool("bash", {"command": "echo hello-from-bash", "description": "Print a greeting"})],
               [Text("The command printed hello-from-bash.")]],
    "[text-2]": [[Text("Hello again.")]],
})


@pytest.mark.parametrize("version", sorted(legacy.RELEASES))
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
