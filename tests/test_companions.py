"""Companion files: Claude Code keeps a large tool output in ``<session>/tool-results/*.txt``
and only a 2 KB preview in the transcript (recorded with Claude Code 2.1.197: ``seq 1 20000``,
108,894 bytes). The archive keeps the file, restores it, and shows and hands off the full
output."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import orjson
import pytest

from archive.db import open_db
from archive.emit import emit_thread
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.model import ToolResult
from archive.projection import load_messages
from archive.thread_view import load_view
from archive.vendors.base import COMPANION

RECORDING = Path(__file__).parent / "fixtures" / "recorded" / "claude-code-2.1.197" / "bigoutput"
SCENARIO = orjson.loads((RECORDING / "scenario.json").read_bytes())
SID = SCENARIO["session_id"]
FULL = "".join(f"{i}\n" for i in range(1, 20001)).encode()


@pytest.fixture
def archive(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(RECORDING / "projects", home / ".claude" / "projects")
    files = sorted(p for p in (home / ".claude").rglob("*") if p.is_file())
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")},
                                                   idle_seconds=10**9))  # fmt: skip
    assert summary.failed == 0 and summary.files_changed == len(files) == 2
    return db, files


def companion_file(files: list[Path]) -> Path:
    (path,) = [p for p in files if p.parent.name == "tool-results"]
    return path


def test_the_companion_is_archived_and_linked_to_its_tool_result(archive):
    db, files = archive
    assert companion_file(files).read_bytes() == FULL  # the recording is what the test says
    (result,) = [b for m in load_messages(db.conn, "m.thread_id = ?", (SID,)) for b in m.content if isinstance(b, ToolResult)]
    assert result.extra[COMPANION] == f"{SID}/tool-results/{companion_file(files).name}"
    assert isinstance(result.output, str) and result.output.startswith("<persisted-output>") and len(result.output) < 4000
    assert db.execute("SELECT count(*) FROM blobs WHERE sha256 = ?", (hashlib.sha256(FULL).hexdigest(),)).fetchone()[0] == 1
    kinds = db.execute("SELECT kind, reason FROM reports WHERE reason = 'tool-results file'").fetchall()
    assert kinds == [("metadata", "tool-results file")]


def test_restore_gives_both_files_back_byte_exact(archive, tmp_path):
    db, files = archive
    restored = {f.sha256 for f in restore(db, tmp_path / "out")}
    assert restored == {hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def test_same_vendor_emit_brings_the_companion(archive):
    db, files = archive
    out = emit_thread(db, SID, "claude-code")
    assert out.exact
    by_name = {Path(rel).name: data for rel, data in out.files.items()}
    assert by_name[companion_file(files).name] == FULL
    rel = next(r for r in out.files if r.endswith(companion_file(files).name))
    assert rel.endswith(f"{SID}/tool-results/{companion_file(files).name}") and rel.startswith("projects/")


def test_cross_vendor_emit_and_show_use_the_full_output(archive):
    db, _ = archive
    out = emit_thread(db, SID, "codex", exact=False)
    assert out.counts["tool_result: full output from its companion file, not the transcript's preview"] == 1
    (rollout,) = out.files.values()
    outputs = [d["payload"]["output"] for d in map(orjson.loads, rollout.splitlines())
               if d.get("payload", {}).get("type") == "function_call_output"]  # fmt: skip
    assert outputs == [FULL.decode()]
    view = load_view(db, SID)
    (result,) = [b for m in view.messages for b in m.content if isinstance(b, ToolResult)]
    assert result.output == FULL.decode()


def test_a_companion_never_archived_leaves_the_preview(tmp_path):
    home = tmp_path / "home"
    shutil.copytree(RECORDING / "projects", home / ".claude" / "projects")
    for p in (home / ".claude").rglob("tool-results"):
        shutil.rmtree(p)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, IngestOptions(env={"CLAUDE_CONFIG_DIR": str(home / ".claude")}, idle_seconds=10**9))
    out = emit_thread(db, SID, "codex", exact=False)
    assert not any("companion" in k for k in out.counts)
    (rollout,) = out.files.values()
    outputs = [d["payload"]["output"] for d in map(orjson.loads, rollout.splitlines())
               if d.get("payload", {}).get("type") == "function_call_output"]  # fmt: skip
    assert len(outputs) == 1 and outputs[0].startswith("<persisted-output>")
