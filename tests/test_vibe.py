"""Mistral Vibe beyond the contract test: discovery under ``VIBE_HOME``, a unified session
whose first journal segment Vibe deletes on resume (kept, new messages added once), the
legacy layout's meta.json (cwd, model, the session's usage), and the emitted legacy layout's
fingerprint (what lets Vibe 2.26.1 append after an emitted session rather than rewrite it).
Recordings: tests/fixtures/recorded/vibe-3.0.3, vibe-2.26.1 and tests/fixtures/vibe."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from archive.db import open_db
from archive.emit import emit_thread, write_files
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.projection import load_messages, load_threads
from archive.vendors import get
from archive.vendors.vibe.emit import fingerprint

FIXTURES = Path(__file__).parent / "fixtures"
UNIFIED = FIXTURES / "recorded" / "vibe-3.0.3" / "tools" / "session"
LEGACY = FIXTURES / "recorded" / "vibe-2.26.1" / "legacy" / "session"
SESSION = "094d3195-c217-265b-47e0-54880a8c38af"
FIRST_RUN = FIXTURES / "vibe" / "vibe-3.0.3-journal-first-run.jsonl"


def ingest_env(tmp_path: Path, env: dict[str, str], db_name: str = "a.db"):
    db = open_db(tmp_path / db_name)
    summary = ingest_paths(db, None, IngestOptions(env={"HOME": str(tmp_path / "home"), **env}, idle_seconds=10**9))
    assert summary.failed == 0 and not summary.reports.get("unexplained") and not summary.reports.get("adapter_error")
    return db, summary


def test_default_roots_and_layouts() -> None:
    vibe = get("vibe")
    assert vibe.default_roots({}, Path("/h")) == [Path("/h/.vibe/logs/session")]
    assert vibe.default_roots({"VIBE_HOME": "/v"}, Path("/h")) == [Path("/v/logs/session")]
    u = f"/v/logs/session/unified/{SESSION}"
    assert vibe.classify(Path(f"{u}/journal/0000000000000035.jsonl")) == "lines"
    for rel in ("meta.json", "CURRENT", "generations/0000000000000042/manifest.json", "chunks/ab12.json"):
        assert vibe.classify(Path(f"{u}/{rel}")) == "snapshot", rel
    legacy = "/v/logs/session/session_20261202_042651_f83559ed"
    assert vibe.classify(Path(f"{legacy}/messages.jsonl")) == "lines"
    assert vibe.classify(Path(f"{legacy}/meta.json")) == "snapshot"
    assert vibe.classify(Path("/v/logs/session/plugins/packages/90/x/plugin.json")) is None
    assert vibe.classify(Path("/elsewhere/messages.jsonl")) is None
    # identities: a generation's files repeat in every session, the session folder tells them apart
    assert vibe.snapshot_key(Path(f"{u}/generations/0000000000000042/manifest.json")) == \
        f"{SESSION}/generations/0000000000000042/manifest.json"
    assert vibe.session_key(Path(f"{u}/journal/0000000000000001.jsonl")) == f"{SESSION}/0000000000000001.jsonl"
    assert vibe.session_key(Path(f"{legacy}/messages.jsonl")) == "session_20261202_042651_f83559ed"


def test_a_resume_deletes_the_first_segment_the_archive_keeps_it(tmp_path: Path) -> None:
    """Vibe 3.0.3 on --resume snapshots the session and deletes journal/0000000000000001.jsonl;
    the archive read it before: after the resume it holds both turns, each message once,
    and restores the deleted segment byte for byte."""
    vibe_home = tmp_path / "home" / ".vibe"
    session = vibe_home / "logs" / "session"
    shutil.copytree(UNIFIED, session)
    journal = session / "unified" / SESSION / "journal"
    resumed = (journal / "0000000000000035.jsonl").read_bytes()
    # the first run: segment 1 whole, the next segment still empty
    shutil.copyfile(FIRST_RUN, journal / "0000000000000001.jsonl")
    (journal / "0000000000000035.jsonl").write_bytes(b"")
    env = {"VIBE_HOME": str(vibe_home)}
    db, _ = ingest_env(tmp_path, env)
    (thread,) = [t for t in load_threads(db.conn, "provider = 'vibe'") if t.id == SESSION]
    first = load_messages(db.conn, "m.thread_id = ?", (SESSION,))
    assert [m.role for m in first] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert thread.metadata["cwd"] == "/tmp/vibex/r3u/proj" and thread.metadata["model"] == "mock"
    # the resume
    (journal / "0000000000000001.jsonl").unlink()
    (journal / "0000000000000035.jsonl").write_bytes(resumed)
    _, summary = ingest_env(tmp_path, env)
    assert summary.messages_added == 2
    after = load_messages(db.conn, "m.thread_id = ?", (SESSION,))
    assert [m.id for m in after[:6]] == [m.id for m in first] and len(after) == 8
    texts = [b.text for m in after for b in m.content if type(b).__name__ == "Text"]
    assert texts[0].startswith("[tools]") and texts[-1] == "OK."
    # each response once, in the neutral buckets (input without the cached part)
    usage = db.execute("SELECT count(*), sum(input_tokens), sum(cache_read_tokens), sum(output_tokens) FROM usage "
                       "WHERE thread_id = ?", (SESSION,)).fetchone()  # fmt: skip
    vendor = [json.loads(r[0]) for r in db.execute("SELECT extra FROM usage WHERE thread_id = ?", (SESSION,))]
    raw = [e["vendor"] for e in vendor]
    assert usage[0] == 4 == len(raw)
    assert usage[1] == sum(u["input_tokens"] - u["cached_input_tokens"] for u in raw)
    assert usage[2] == sum(u["cached_input_tokens"] for u in raw) and usage[3] == sum(u["output_tokens"] for u in raw)
    # the deleted segment comes back byte for byte
    out = restore(db, tmp_path / "out")
    gone = [r for r in out if str(r.path).endswith("journal/0000000000000001.jsonl")]
    assert len(gone) == 1 and gone[0].sha256 == hashlib.sha256(FIRST_RUN.read_bytes()).hexdigest()


def test_legacy_session_meta_and_usage(tmp_path: Path) -> None:
    vibe_home = tmp_path / "home" / ".vibe"
    shutil.copytree(LEGACY, vibe_home / "logs" / "session")
    db, summary = ingest_env(tmp_path, {"VIBE_HOME": str(vibe_home)})
    assert summary.files_changed == 2
    (thread,) = load_threads(db.conn, "provider = 'vibe'")
    meta = json.loads(next((vibe_home / "logs" / "session").glob("session_*/meta.json")).read_text())
    assert thread.id == "f83559ed" and thread.metadata["sessionId"] == meta["session_id"]
    assert thread.metadata["cwd"] == meta["environment"]["working_directory"] and thread.metadata["model"] == "mock"
    messages = load_messages(db.conn, "m.thread_id = ?", (thread.id,))
    assert len(messages) == meta["total_messages"] == 8
    errors = [b.is_error for m in messages for b in m.content if type(b).__name__ == "ToolResult"]
    assert errors == [None, True]  # the failing ls: Vibe's <tool_error>
    stats = meta["stats"]
    row = db.execute("SELECT input_tokens, cache_read_tokens, output_tokens FROM usage WHERE thread_id = ?",
                     (thread.id,)).fetchone()  # fmt: skip
    assert tuple(row) == (stats["session_prompt_tokens"] - stats["session_cached_tokens"],
                          stats["session_cached_tokens"], stats["session_completion_tokens"])


def test_fingerprint_is_vibes_own() -> None:
    """meta.json's last_message_fingerprint, as vibe 2.26.1 wrote it, of its last line."""
    folder = next(LEGACY.glob("session_*"))
    meta = json.loads((folder / "meta.json").read_text())
    last = (folder / "messages.jsonl").read_bytes().splitlines()[-1]
    assert fingerprint(json.loads(last)) == meta["last_message_fingerprint"]


def test_emitted_legacy_session_names_its_last_line(tmp_path: Path) -> None:
    """An emitted session's meta.json counts its lines and fingerprints the last one, so a
    resume appends after them (and keeps the marks) instead of rewriting the file."""
    vibe_home = tmp_path / "home" / ".vibe"
    shutil.copytree(LEGACY, vibe_home / "logs" / "session")
    db, _ = ingest_env(tmp_path, {"VIBE_HOME": str(vibe_home)})
    out = emit_thread(db, "f83559ed", "vibe", exact=False)
    write_files(out, tmp_path / "emitted")
    (folder,) = (tmp_path / "emitted" / "session").glob("session_*_f83559ed")
    meta = json.loads((folder / "meta.json").read_text())
    lines = (folder / "messages.jsonl").read_bytes().splitlines()
    assert meta["session_id"] == "f83559ed-33f9-3cdb-d957-a311838dd833" and meta["total_messages"] == len(lines) == 8
    last = {k: v for k, v in json.loads(lines[-1]).items() if k != "seshArchive"}
    assert meta["last_message_fingerprint"] == fingerprint(last)
    # read back: the same messages, claimed as the archived ones
    db2 = open_db(tmp_path / "b.db")
    ingest_paths(db2, [tmp_path / "emitted"], IngestOptions(idle_seconds=10**9))
    again = load_messages(db2.conn, "1", ())
    assert [m.id for m in again] == [m.id for m in load_messages(db.conn, "m.thread_id = ?", ("f83559ed",))]
