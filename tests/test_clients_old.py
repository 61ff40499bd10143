"""Gemini CLI 0.1.22 and Qwen Code 0.1.4, the real clients (marker ``clients``): one old
release of each layout that nothing else covers (issue 33), driven through its terminal UI
under tmux (tests/clients/old_clients.py), offline against the mock servers.

* The scenario run live writes the files the recording holds (same names, same shapes);
  ingesting that home archives every one of them with nothing unexplained, each checkpoint's
  view is the whole conversation saved, and every file restores sha256-equal.
* A checkpoint copied back byte for byte from the archive (``emit``, same vendor) into a
  fresh home is resumed by the client (``/chat resume TAG``): its next request carries the
  saved history.

Skipped with a reason when the old release is not installed (scripts/install_clients.sh puts
them in ``$SESH_CLIENTS_DIR/old/``; ``$SESH_CLIENTS_OLD_DIR`` is looked at too). Cost: two
TUI runs per vendor, about a minute each.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import orjson
import pytest

from archive.emit import emit_thread, install_base, write_files
from archive.ingest import restore
from archive.thread_view import MessagePages
from clients import old_clients as old
from clients.mock_servers import ChatCompletionsMock, GeminiMock
from ingest_helpers import ingest

pytestmark = pytest.mark.clients
RECORDED = Path(__file__).parent / "fixtures" / "recorded"
MOCKS = {"gemini": GeminiMock, "qwen": ChatCompletionsMock}


def _exe(vendor: str) -> Path:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (.ci/run installs it)")
    exe = old.find_old(vendor)
    if exe is None:
        package, version, _ = old.OLD[vendor]
        pytest.skip(f"{package} {version} not installed in $SESH_CLIENTS_DIR/old or $SESH_CLIENTS_OLD_DIR; "
                    "run scripts/install_clients.sh")
    return exe


def _env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for var, value in (("HOME", home), ("GEMINI_CLI_HOME", home), ("QWEN_HOME", home / ".qwen")):
        monkeypatch.setenv(var, str(value))


@pytest.mark.parametrize("vendor", ["gemini", "qwen"])
def test_old_release_archived_whole_and_resumed_from_the_archive(vendor: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    exe = _exe(vendor)
    scenario = old.old_scenario(vendor)
    home, cwd = tmp_path / "home", tmp_path / "work"
    cwd.mkdir()
    with MOCKS[vendor](scenario.script) as mock:
        old.run_tui(vendor, exe, home, cwd, mock.url, scenario.steps)
    files = old.written_files(vendor, home)
    recorded = json.loads((RECORDED / f"{vendor}-{old.OLD[vendor][1]}" / "checkpoints" / "steps.json").read_text())
    # the same files as the recording (the project folder is the hash of another cwd, and a
    # chat file is named by the day and time it was written: the recording's were another day)
    def shape(rel: str) -> str:
        parts = Path(rel).parts
        name = parts[-1]
        return "/".join(parts[:2] + parts[3:-1] + ("session-*" + Path(name).suffix if name.startswith("session-") else name,))
    assert sorted(shape(str(f.relative_to(home))) for f in files) == sorted(shape(r) for r in recorded["files"])

    _env(monkeypatch, home)
    db, summary = ingest(tmp_path / "a.db", None)
    assert summary.failed == 0
    bad = db.execute("SELECT kind, reason FROM reports WHERE kind IN ('unknown', 'invalid', 'parse_error', "
                     "'unexplained', 'adapter_error')").fetchall()
    assert bad == []
    assert {r[0] for r in db.execute("SELECT path FROM source_paths")} == {str(f) for f in files}
    for f in files:
        if f.name.startswith("checkpoint-"):
            (tid,) = db.execute("SELECT id FROM threads WHERE title = ?", (f"checkpoint {f.name[11:-5]}",)).fetchone()
            assert len(MessagePages(db, tid)) == len(orjson.loads(f.read_bytes()))
    restored = sorted(r.sha256 for r in restore(db, tmp_path / "restored"))
    assert restored == sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in files)

    # the archive gives the checkpoint back where the client looks, and the client resumes it
    (tid,) = db.execute("SELECT id FROM threads WHERE title = 'checkpoint one'").fetchone()
    fresh = tmp_path / "fresh"
    _env(monkeypatch, fresh)
    out = emit_thread(db, tid, vendor, exact=True)
    assert out.exact
    write_files(out, install_base(vendor, os.environ, fresh))
    (one,) = [f for f in files if f.name == "checkpoint-one.json"]
    (back,) = [p for p in (fresh / old.vendor_tmp(vendor, fresh).relative_to(fresh)).rglob("*.json")]
    assert back.relative_to(fresh) == one.relative_to(home) and back.read_bytes() == one.read_bytes()
    with MOCKS[vendor](scenario.script) as mock:
        old.run_tui(vendor, exe, fresh, cwd, mock.url, [
            old.Step("/chat resume one", None), old.Step("[resume-check] One more thing: reply OK.", "OK.")])
        sent = json.dumps([r.body for r in mock.requests if isinstance(r.body, dict)])
    assert "[shell] Run two commands." in sent and "hello-from-shell" in sent
