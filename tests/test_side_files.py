"""Side files (issue 38): what the vendors keep beside their transcripts is archived (byte
for byte, generations on rewrite, restored), prompts of sessions whose transcript is gone
are lost sessions, file checkpoints link to the edit they preceded, and ingest and status
warn before a vendor's cleanup outruns the runs.

Recordings: tests/fixtures/side-files/ (Claude Code 2.1.332 and 1.0.56 in their terminal
UI, scripts/record_side_files.py); the ``clients`` test records afresh with the newest client.
"""

from __future__ import annotations

import hashlib
import re
import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths, rebuild, restore, stored_file_bytes
from archive.side_files import checkpoints, lost_counts, lost_sessions, mask_prompts, retention_warnings

FIXTURES = Path(__file__).parent / "fixtures" / "side-files"
NEW = FIXTURES / "claude-code-2.1.332"
OLD = FIXTURES / "claude-code-1.0.56"
SESSION = "e564a847-c137-468a-843f-3b0b0e285f0a"  # the 2.1.332 recording's session
OLD_SESSION = "62dd2eb4-2964-4f56-bb5d-26d80d2b2d03"
# what 1.0.56 and 2.1.332 keep in .claude.json beside the prompt history (never archived)
ACCOUNT_KEYS = ("userID", "machineID", "customApiKeyResponses", "firstStartTime", "tipsHistory", "numStartups",
                "lastSessionId", "lastCost", "hasTrustDialogAccepted", "installMethod")


def lay_out(fixture: Path, home: Path) -> Path:
    """The recording's config folder at ``home/.claude``; returns it."""
    config = home / ".claude"
    shutil.copytree(fixture / ".claude", config)
    return config


def env_for(home: Path) -> dict[str, str]:
    return {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}


def ingest_home(db, home: Path):
    return ingest_paths(db, None, IngestOptions(providers=("claude-code",), env=env_for(home), idle_seconds=0))


def side_paths(config: Path) -> list[Path]:
    return sorted(p for p in config.rglob("*") if p.is_file() and "projects" not in p.relative_to(config).parts)


def sources_by_path(db) -> dict[str, tuple[int, int]]:
    return {r[0]: (r[1], r[2]) for r in db.execute("SELECT last_path, id, current_generation FROM sources")}


def test_every_claude_side_file_is_a_source_restored_byte_exact(tmp_path: Path) -> None:
    config = lay_out(NEW, tmp_path / "home")
    db = open_db(tmp_path / "a.db")
    summary = ingest_home(db, tmp_path / "home")
    assert summary.failed == 0 and not summary.warnings and not summary.reports.get("unknown")
    found = sources_by_path(db)
    names = {str(p.relative_to(config)) for p in side_paths(config)}
    assert names == {"history.jsonl", ".claude.json", "plans/cheerful-giggling-bunny.md", f"tasks/{SESSION}/1.json",
                     *(f"file-history/{SESSION}/{n}" for n in ("1c98b80ef0313627@v1", "1c98b80ef0313627@v2",
                                                               "1c98b80ef0313627@v3", "59c67dbc36321ba4@v2"))}
    for p in side_paths(config):
        assert str(p) in found, p
    restored = {Path("/", *r.path.relative_to(tmp_path / "out").parts): r for r in restore(db, tmp_path / "out")}
    for p in side_paths(config):
        if p.name == ".claude.json":
            continue  # derived: test_claude_json_keeps_only_the_prompt_history
        assert restored[p].sha256 == hashlib.sha256(p.read_bytes()).hexdigest(), p
    # the side files belong to the session they were written for
    kinds = dict(db.execute("SELECT path, kind FROM side_files WHERE thread_id = ?", (SESSION,)).fetchall())
    assert sorted(kinds.values()) == ["file backup"] * 4 + ["task"]


def test_rerun_rebuild_and_generations_of_a_rewritten_side_file(tmp_path: Path) -> None:
    config = lay_out(NEW, tmp_path / "home")
    db = open_db(tmp_path / "a.db")
    ingest_home(db, tmp_path / "home")
    before = dump_tables(db)
    assert ingest_home(db, tmp_path / "home").files_changed == 0 and dump_tables(db) == before
    rebuild(db)
    assert dump_tables(db) == before
    # the plan rewritten in place (plan mode edits it): a new generation, the old one kept
    plan = config / "plans" / "cheerful-giggling-bunny.md"
    old = plan.read_bytes()
    plan.write_bytes(old + b"2. Then run it.\n")
    # history.jsonl appended: the same source continues (no new generation)
    history = config / "history.jsonl"
    history.write_bytes(history.read_bytes() + history.read_bytes().splitlines(keepends=True)[0])
    ingest_home(db, tmp_path / "home")
    sid, gen = sources_by_path(db)[str(plan)]
    assert gen == 2 and stored_file_bytes(db, sid, 1) == old and stored_file_bytes(db, sid, 2) == plan.read_bytes()
    hid, hgen = sources_by_path(db)[str(history)]
    assert hgen == 1 and stored_file_bytes(db, hid, 1) == history.read_bytes()
    out = restore(db, tmp_path / "out", source=str(plan), all_generations=True)
    assert sorted(r.sha256 for r in out) == sorted(hashlib.sha256(b).hexdigest() for b in (old, plan.read_bytes()))


@pytest.mark.parametrize("fixture", [NEW, OLD], ids=["2.1.332", "1.0.56"])
def test_claude_json_keeps_only_the_prompt_history(tmp_path: Path, fixture: Path) -> None:
    config = lay_out(fixture, tmp_path / "home")
    original = orjson.loads((config / ".claude.json").read_bytes())
    db = open_db(tmp_path / "a.db")
    ingest_home(db, tmp_path / "home")
    sid, gen = sources_by_path(db)[str(config / ".claude.json")]
    kept = orjson.loads(stored_file_bytes(db, sid, gen))
    assert kept == {"projects": {k: {"history": v["history"]} for k, v in original["projects"].items() if "history" in v}}
    # no account field, and no value of one, anywhere in the archive: stored bytes and tables
    values = [original[k] for k in ("userID", "machineID", "firstStartTime") if k in original]
    values += original["customApiKeyResponses"]["approved"]
    assert len(values) >= 3 and all(len(v) >= 8 for v in values)
    stored = b"".join(stored_file_bytes(db, s, g) for s, g in db.execute(
        "SELECT source_id, generation FROM generations WHERE source_id = ?", (sid,)))
    every_row = orjson.dumps(dump_tables(db), default=str).decode()
    for key in ACCOUNT_KEYS:
        assert f'"{key}"'.encode() not in stored and key not in every_row, key
    for v in values:
        assert v.encode() not in stored and v not in every_row, v


def test_claude_json_history_of_1_0_56_is_prompt_history(tmp_path: Path) -> None:
    config = lay_out(OLD, tmp_path / "home")
    db = open_db(tmp_path / "a.db")
    ingest_home(db, tmp_path / "home")
    prompts = [r[0] for r in db.execute("SELECT prompt FROM prompt_history WHERE project = '/tmp/sesh-record-side/proj'")]
    assert prompts == ["[side] Track a task and edit hello.py.", "/exit "]  # oldest first (the file: newest first)
    assert lost_sessions(db) == []  # the project's transcript is archived
    # the transcript deleted before the archive saw it: the project's prompts are lost
    db2 = open_db(tmp_path / "b.db")
    shutil.rmtree(config / "projects")
    ingest_home(db2, tmp_path / "home")
    (lost,) = lost_sessions(db2)
    assert lost["thread_id"] is None and lost["project"] == "/tmp/sesh-record-side/proj" and lost["prompts"] == 2
    assert lost_counts(db2) == [{"provider": "claude-code", "project": "/tmp/sesh-record-side/proj", "sessions": 0,
                                 "prompts": 2, "prompts_without_session": True}]


def test_a_session_whose_transcript_was_deleted_is_lost(tmp_path: Path) -> None:
    home = tmp_path / "home"
    config = lay_out(NEW, home)
    db = open_db(tmp_path / "a.db")
    ingest_home(db, home)
    assert lost_sessions(db) == []
    # another machine's state: Claude Code's cleanup deleted the transcript, history.jsonl survives
    shutil.rmtree(config / "projects")
    db2 = open_db(tmp_path / "b.db")
    ingest_home(db2, home)
    (lost,) = lost_sessions(db2)
    assert (lost["provider"], lost["thread_id"], lost["project"], lost["prompts"]) == (
        "claude-code", SESSION, "/tmp/sesh-record-side/proj", 4)
    assert [p["prompt"] for p in lost["history"]] == [
        "[side] Track a task and edit hello.py.", "[plan] Plan the next step.", "[again] Edit it again.", "/exit"]
    # a history rewritten (a new generation repeating its lines) counts each prompt once
    (config / "history.jsonl").write_bytes(b'{"display":"x","pastedContents":{},"timestamp":1,"project":"/p"}\n'
                                           + (config / "history.jsonl").read_bytes())
    ingest_home(db2, home)
    assert [r["prompts"] for r in lost_sessions(db2) if r["thread_id"] == SESSION] == [4]
    # the CLI: status counts them per vendor and project, `lost` lists them with their prompts
    env = {**env_for(home), "SESH_ARCHIVE_DB": str(tmp_path / "b.db")}
    status = CliRunner().invoke(cli, ["status"], env=env, catch_exceptions=False)
    assert "claude-code  /tmp/sesh-record-side/proj: 1 session, 4 prompts" in status.output
    js = orjson.loads(CliRunner().invoke(cli, ["status", "--json"], env=env, catch_exceptions=False).stdout)
    assert {"provider": "claude-code", "project": "/tmp/sesh-record-side/proj", "sessions": 1, "prompts": 4,
            "prompts_without_session": False} in js["lost_sessions"]
    out = CliRunner().invoke(cli, ["lost"], env=env, catch_exceptions=False).output
    assert SESSION in out and "[plan] Plan the next step." in out
    listed = orjson.loads(CliRunner().invoke(cli, ["lost", "--json"], env=env, catch_exceptions=False).stdout)
    assert [r["thread_id"] for r in listed if r["thread_id"]] == [SESSION]
    # a secret typed into a prompt: found by the ingest scan, masked with --redact
    with (config / "history.jsonl").open("ab") as f:
        f.write(orjson.dumps({"display": "deploy with ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "timestamp": 2,
                              "project": "/tmp/sesh-record-side/proj", "sessionId": SESSION}) + b"\n")
    ingest_home(db2, home)
    plain = CliRunner().invoke(cli, ["lost"], env=env, catch_exceptions=False).stdout
    redacted = CliRunner().invoke(cli, ["lost", "--redact"], env=env, catch_exceptions=False).stdout
    assert "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8" in plain and "[REDACTED github-token]" not in plain
    assert "ghp_a1B2" not in redacted and "deploy with [REDACTED github-token]" in redacted
    found = orjson.loads(CliRunner().invoke(cli, ["secrets", "--json"], env=env, catch_exceptions=False).stdout)
    assert [(f["rule"], f["field"], f["thread_id"]) for f in found] == [("github-token", "prompt", SESSION)]


def test_prompt_histories_are_scanned_for_secrets_at_ingest(tmp_path: Path) -> None:
    from archive import secrets

    home = tmp_path / "home"
    shutil.copytree(CODEX_TS / ".codex", home / ".codex")
    history = home / ".codex" / "history.json"
    key = "AKIAQWERTYUIOPASDFGH"
    # the client leaves out prompts matching its own patterns ("key", 20 word characters), not this one
    grown = orjson.loads(history.read_bytes()) + [{"command": f"aws {key.lower()[:4]} is AKIA QWERTYUIOPASDFGH", "timestamp": 1},
                                                   {"command": f"deploy with {key}!", "timestamp": 1796199700000}]
    history.write_bytes(orjson.dumps(grown, option=orjson.OPT_INDENT_2))
    db = open_db(tmp_path / "a.db")
    env = {"HOME": str(home)}
    ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    found = secrets.list_findings(db.conn)
    assert [(f["rule"], f["field"], f["thread_id"], f["source_id"]) for f in found] == [
        ("aws-access-key", "prompt", None, sources_by_path(db)[str(history)][0])]
    assert secrets.summary(db.conn)["findings"] == 1
    # scanned once: another run, and a rewrite that repeats the line in a new generation
    ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    assert len(secrets.list_findings(db.conn)) == 1
    history.write_bytes(history.read_bytes() + b"\n")
    ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    assert len(secrets.list_findings(db.conn)) == 2 and secrets.summary(db.conn)["distinct_values"] == 1
    assert secrets.rescan(db.conn) == 2
    # masked wherever the prompts are shown, and by restore --redact
    (lost,) = lost_sessions(db)
    assert any(key in p["prompt"] for p in lost["history"])
    (masked,) = mask_prompts(db, lost_sessions(db))
    assert "deploy with [REDACTED aws-access-key]!" in [p["prompt"] for p in masked["history"]]
    assert key not in orjson.dumps(masked).decode()
    assert key.encode() not in secrets.redactor_all(db.conn).bytes(history.read_bytes())
    # a rebuild derives the same findings
    from archive.ingest import rebuild as rebuild_all

    rebuild_all(db)
    assert len(secrets.list_findings(db.conn)) == 2
    # forget takes the value out of the stored history and its prompts
    from archive.forget import forget

    forget(db, finding=secrets.list_findings(db.conn)[0]["id"], vacuum=False)
    assert key not in orjson.dumps(lost_sessions(db)).decode()
    assert not db.execute("SELECT count(*) FROM reports WHERE instr(detail, ?) > 0", (key,)).fetchone()[0]


def test_a_checkpoint_links_the_edit_to_the_file_before_it(tmp_path: Path) -> None:
    lay_out(NEW, tmp_path / "home")
    db = open_db(tmp_path / "a.db")
    ingest_home(db, tmp_path / "home")
    links = checkpoints(db, SESSION)
    edits = {m: c for m, cs in links.items() for c in cs if c["at"] == "edit"}
    (edit_message, c), = edits.items()  # the first Edit of hello.py (2.1.332 writes a file-history-delta)
    assert c["path"] == "/tmp/sesh-record-side/proj/hello.py" and c["version"] == 1
    assert stored_file_bytes(db, c["source_id"], 1) == b"print('hi')\n"  # the file before the edit
    call = db.execute("SELECT b.tool_name, json_extract(b.input, '$.old_string') FROM blocks b "
                      "WHERE b.message_id = ? AND b.type = 'tool_call'", (edit_message,)).fetchone()
    assert call == ("Edit", "print('hi')")
    # the third prompt's checkpoint: hello.py as the second edit found it
    at_prompt = [c for cs in links.values() for c in cs if c["at"] == "prompt" and c["path"].endswith("hello.py")]
    assert {stored_file_bytes(db, c["source_id"], 1) for c in at_prompt} == {b"print('hello')\n"}


def _settings(home: Path, days: float) -> None:
    (home / ".claude" / "settings.json").write_text(orjson.dumps({"cleanupPeriodDays": days}).decode())


def test_retention_warning_names_the_setting(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lay_out(NEW, home)
    db = open_db(tmp_path / "a.db")
    ingest_home(db, home)
    now = datetime.now(timezone.utc)
    # default 30 days, one run just now: nothing to say
    assert retention_warnings(db, env_for(home), now) == []
    # no ingest for longer than the period
    (w,) = retention_warnings(db, env_for(home), now + timedelta(days=31))
    assert w["provider"] == "claude-code" and "cleanupPeriodDays (default 30" in w["warning"]
    # a short period in the user's settings, runs a week apart
    _settings(home, 5)
    db.execute("UPDATE ingest_runs SET started_at = ?", ((now - timedelta(days=7)).isoformat(timespec="seconds"),))
    ingest_home(db, home)
    (w,) = retention_warnings(db, env_for(home), now, during_ingest=True)
    assert f"cleanupPeriodDays = 5 in {home / '.claude' / 'settings.json'}" in w["warning"]
    assert 'set "cleanupPeriodDays" to a larger number' in w["warning"]
    _settings(home, 10)
    assert retention_warnings(db, env_for(home), now, during_ingest=True) == []
    (w,) = retention_warnings(db, env_for(home), now + timedelta(days=10))
    assert "the last ingest was" in w["warning"]
    shutil.rmtree(home / ".claude" / "projects")  # every transcript deleted: the history and settings are left
    assert len(retention_warnings(db, env_for(home), now + timedelta(days=10))) == 1


def test_ingest_and_status_warn_before_the_cleanup(tmp_path: Path) -> None:
    home = tmp_path / "home"
    lay_out(NEW, home)
    _settings(home, 3)
    env = {**env_for(home), "SESH_ARCHIVE_DB": str(tmp_path / "a.db")}
    first = CliRunner().invoke(cli, ["ingest", "-q"], env=env, catch_exceptions=False)
    assert "cleanupPeriodDays" not in first.output  # a first run has nothing to compare with
    db = open_db(tmp_path / "a.db")
    four_days_ago = (datetime.now(timezone.utc) - timedelta(days=4)).isoformat(timespec="seconds")
    db.execute("UPDATE ingest_runs SET started_at = ?", (four_days_ago,))
    db.conn.commit()
    second = CliRunner().invoke(cli, ["ingest", "-q"], env=env, catch_exceptions=False)
    assert "warning: claude-code deletes transcripts after 3 days (cleanupPeriodDays = 3" in second.output
    assert "previous ingest was 4.0 days ago" in second.output
    status = CliRunner().invoke(cli, ["status"], env=env, catch_exceptions=False)
    assert "ingest runs have been up to 4.0 days apart" in status.output
    _settings(home, 0)
    status = CliRunner().invoke(cli, ["status", "--json"], env=env, catch_exceptions=False)
    assert "claude-code keeps no transcripts" in orjson.loads(status.output)["retention_warnings"][0]["warning"]


@pytest.mark.clients
def test_recorded_with_the_real_claude_code_tui(tmp_path: Path) -> None:
    """The newest Claude Code, in its TUI (tmux), writes every side file this reads."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from clients import runner
    from clients.tui import run_tui, side_script

    exe = runner.find_client("claude")
    if exe is None or shutil.which("tmux") is None:
        pytest.skip("needs claude (SESH_CLIENTS_DIR) and tmux")
    run = run_tui(exe, tmp_path / "rec", ["[side] Track a task and edit hello.py.", "[plan] Plan the next step."],
                  side_script(tmp_path / "rec" / "proj"), socket=f"sesh-tui-{os.getpid()}")
    config = run.home / ".claude"
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(providers=("claude-code",), env=env_for(run.home), idle_seconds=0))
    assert summary.failed == 0 and not summary.reports.get("unknown"), summary.to_dict()
    kinds = {r[0] for r in db.execute("SELECT kind FROM side_files")}
    assert {"file backup", "task", "plan"} <= kinds, (kinds, run.screens[-1])
    assert db.execute("SELECT count(*) FROM prompt_history").fetchone()[0] >= 2
    assert db.execute("SELECT count(*) FROM file_checkpoints WHERE at = 'edit' AND backup_source_id IS NOT NULL").fetchone()[0] >= 1
    restored = {Path("/", *r.path.relative_to(tmp_path / "out").parts): r.sha256 for r in restore(db, tmp_path / "out")}
    for p in side_paths(config):
        if p.name != ".claude.json" and p.name not in (".lock", ".highwatermark") and "backups" not in p.parts:
            assert restored.get(p) == hashlib.sha256(p.read_bytes()).hexdigest(), p


CODEX = FIXTURES / "codex-0.171.0"
CODEX_SESSION = "01a23449-5007-7be3-bc5c-2c51e580dc3d"
QWEN = FIXTURES / "qwen-0.24.4"
QWEN_SESSION = "856fedc8-d7d3-4cb4-82b0-d5dddb820f32"


def test_an_older_codex_history_has_the_same_shape(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(FIXTURES / "codex-0.1.2505291658" / ".codex", home / ".codex")
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    db = open_db(tmp_path / "a.db")
    assert ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0)).failed == 0
    session = "34ae419f-1bda-4abb-a9ce-54f6dfd2d46d"
    assert db.execute("SELECT thread_id, prompt FROM prompt_history").fetchall() == [(session, " hello.")]
    assert db.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (session,)).fetchone()[0] == 1
    assert lost_sessions(db) == []


CODEX_TS = FIXTURES / "codex-0.1.2505172129"
CODEX_TS_PROMPTS = [("2026-12-02T08:19:56.108Z", "say hello"), ("2026-12-02T08:19:59.529Z", "please list the files")]


def test_codex_typescript_history_json_is_a_side_file_and_feeds_lost_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CODEX_TS / ".codex", home / ".codex")
    env = {"HOME": str(home)}
    history = home / ".codex" / "history.json"
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    assert summary.failed == 0 and not summary.warnings and not summary.reports.get("invalid")
    rows = db.execute("SELECT provider, thread_id, project, ts, prompt FROM prompt_history ORDER BY offset").fetchall()
    assert rows == [("codex", None, None, ts, text) for ts, text in CODEX_TS_PROMPTS]
    assert lost_sessions(db) == []  # the rollout holds both prompts
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
    # the client rewrites the whole file at each prompt: a new generation, the old one kept
    grown = orjson.loads(history.read_bytes()) + [{"command": "one more", "timestamp": 1796199700000}]
    history.write_bytes(orjson.dumps(grown, option=orjson.OPT_INDENT_2))
    ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    source, generation = sources_by_path(db)[str(history)]
    assert generation == 2 and stored_file_bytes(db, source, 1) == (CODEX_TS / ".codex" / "history.json").read_bytes()
    (lost,) = lost_sessions(db)
    assert (lost["provider"], lost["thread_id"], lost["project"], lost["prompts"]) == ("codex", None, None, 1)
    assert lost["history"] == [{"ts": "2026-12-02T08:21:40.000Z", "prompt": "one more"}]
    # the rollout gone before the archive saw it: every prompt is lost, each counted once
    shutil.rmtree(home / ".codex" / "sessions")
    db2 = open_db(tmp_path / "b.db")
    ingest_paths(db2, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    (lost,) = lost_sessions(db2)
    assert [(p["ts"], p["prompt"]) for p in lost["history"]] == CODEX_TS_PROMPTS + [("2026-12-02T08:21:40.000Z", "one more")]
    assert lost_counts(db2) == [{"provider": "codex", "project": None, "sessions": 0, "prompts": 3,
                                 "prompts_without_session": True}]


COPILOT = FIXTURES / "copilot-1.0.102"


def test_copilot_command_history_is_a_side_file_and_feeds_lost_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(COPILOT / ".copilot", home / ".copilot")
    env = {"HOME": str(home), "COPILOT_HOME": str(home / ".copilot")}
    history = home / ".copilot" / "command-history-state.json"
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(providers=("copilot",), env=env, idle_seconds=0))
    assert summary.failed == 0 and not summary.warnings and not summary.reports.get("invalid")
    # "/exit" is a slash command, not a prompt
    assert db.execute("SELECT provider, thread_id, prompt FROM prompt_history").fetchall() == [("copilot", None, "say hello")]
    assert lost_sessions(db) == []
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
    # the session state gone before the archive saw it: the prompt is all that is left
    shutil.rmtree(home / ".copilot" / "session-state")
    db2 = open_db(tmp_path / "b.db")
    ingest_paths(db2, None, IngestOptions(providers=("copilot",), env=env, idle_seconds=0))
    (lost,) = lost_sessions(db2)
    assert (lost["provider"], lost["thread_id"], lost["history"]) == ("copilot", None, [{"ts": None, "prompt": "say hello"}])


OPENCODE = FIXTURES / "opencode-1.18.33"


def test_opencode_prompt_history_is_a_side_file_and_feeds_lost_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(OPENCODE / ".local", home / ".local")
    env = {"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "XDG_STATE_HOME": str(home / ".local" / "state")}
    history = home / ".local" / "state" / "opencode" / "prompt-history.jsonl"
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(providers=("opencode",), env=env, idle_seconds=0))
    assert summary.failed == 0 and not summary.reports.get("invalid")
    assert db.execute("SELECT provider, thread_id, prompt FROM prompt_history").fetchall() == [("opencode", None, "say hello")]
    assert db.execute("SELECT count(*) FROM threads WHERE provider = 'opencode'").fetchone()[0] == 1
    assert lost_sessions(db) == []
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
    # a shell-mode line is not a prompt; a prompt of a session whose database row is gone is lost
    with history.open("ab") as f:
        f.write(b'{"input":"ls","parts":[],"mode":"shell"}\n{"input":"a deleted session","parts":[],"mode":"normal"}\n')
    ingest_paths(db, None, IngestOptions(providers=("opencode",), env=env, idle_seconds=0))
    (lost,) = lost_sessions(db)
    assert (lost["provider"], lost["thread_id"], lost["history"]) == ("opencode", None, [{"ts": None, "prompt": "a deleted session"}])


def test_codex_history_names_its_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CODEX / ".codex", home / ".codex")
    env = {"HOME": str(home), "CODEX_HOME": str(home / ".codex")}
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    assert summary.failed == 0 and not summary.warnings
    rows = db.execute("SELECT provider, thread_id, ts, prompt FROM prompt_history").fetchall()
    assert rows == [("codex", CODEX_SESSION, "2026-12-02T01:06:02.000Z", "[hi] Say hello./quit")]
    assert db.execute("SELECT count(*) FROM messages WHERE thread_id = ?", (CODEX_SESSION,)).fetchone()[0] > 0
    assert lost_sessions(db) == []
    history = home / ".codex" / "history.jsonl"
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert restored.sha256 == hashlib.sha256(history.read_bytes()).hexdigest()
    # the rollout gone before the archive saw it: the prompt is all that is left
    shutil.rmtree(home / ".codex" / "sessions")
    db2 = open_db(tmp_path / "b.db")
    ingest_paths(db2, None, IngestOptions(providers=("codex",), env=env, idle_seconds=0))
    (lost,) = lost_sessions(db2)
    assert (lost["provider"], lost["session_id"], lost["prompts"]) == ("codex", CODEX_SESSION, 1)


def test_a_history_file_given_by_hand_goes_to_its_vendor(tmp_path: Path) -> None:
    for fixture, rel, provider in ((NEW, ".claude/history.jsonl", "claude-code"), (CODEX, ".codex/history.jsonl", "codex")):
        folder = tmp_path / provider
        folder.mkdir()
        shutil.copyfile(fixture / rel, folder / "history.jsonl")
        db = open_db(tmp_path / f"{provider}.db")
        assert ingest_paths(db, [folder], IngestOptions(idle_seconds=0)).failed == 0
        assert {r[0] for r in db.execute("SELECT provider FROM prompt_history")} == {provider}
        assert not db.execute("SELECT count(*) FROM reports WHERE kind IN ('invalid', 'unknown')").fetchone()[0]


def test_qwen_usage_record_is_a_side_file_of_its_session(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(QWEN / ".qwen", home / ".qwen")
    env = {"HOME": str(home), "QWEN_HOME": str(home / ".qwen")}
    db = open_db(tmp_path / "a.db")
    summary = ingest_paths(db, None, IngestOptions(providers=("qwen",), env=env, idle_seconds=0))
    assert summary.failed == 0 and not summary.warnings
    rows = db.execute("SELECT provider, kind, thread_id, json_extract(detail, '$.project'), "
                      "json_extract(detail, '$.source') FROM side_files ORDER BY kind, source_id, detail").fetchall()
    assert rows == [("qwen", "token usage", QWEN_SESSION, None, "main"),
                    ("qwen", "token usage", QWEN_SESSION, None, "managed-auto-memory-extractor"),
                    ("qwen", "usage record", QWEN_SESSION, "/tmp/s38/qw2/proj", None)]
    assert db.execute("SELECT count(*) FROM threads WHERE id = ?", (QWEN_SESSION,)).fetchone()[0] == 1
    # the record's figures are not counted again: the usage is the chat's alone
    chat_only = open_db(tmp_path / "b.db")
    ingest_paths(chat_only, [home / ".qwen" / "projects"], IngestOptions(providers=("qwen",), idle_seconds=0))
    totals = "SELECT count(*), sum(input_tokens), sum(output_tokens) FROM usage"
    assert db.execute(totals).fetchone() == chat_only.execute(totals).fetchone() != (0, None, None)
    for record in (home / ".qwen" / "usage_record.jsonl", home / ".qwen" / "usage" / "token-usage-2026-12.jsonl"):
        (restored,) = restore(db, tmp_path / "out", source=str(record))
        assert restored.sha256 == hashlib.sha256(record.read_bytes()).hexdigest()


def test_web_pages_show_lost_sessions_and_the_file_before_an_edit(tmp_path: Path) -> None:
    import asyncio

    from archive.serve import make_datasette

    home = tmp_path / "home"
    config = lay_out(NEW, home)
    db = open_db(tmp_path / "a.db")
    ingest_home(db, home)
    # a second history line of a session whose transcript never reached the archive
    lost_id = "0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3"
    with (config / "history.jsonl").open("ab") as f:
        f.write(orjson.dumps({"display": "a prompt of a deleted session", "pastedContents": {}, "timestamp": 1796000000000,
                              "project": "/tmp/gone", "sessionId": lost_id}) + b"\n")
        f.write(orjson.dumps({"display": "use key AKIAQWERTYUIOPASDFGH", "pastedContents": {}, "timestamp": 1796000000001,
                              "project": "/tmp/gone", "sessionId": lost_id}) + b"\n")
    ingest_home(db, home)
    db.conn.close()
    ds = make_datasette(tmp_path / "a.db")

    async def go() -> tuple[Any, ...]:
        await ds.invoke_startup()
        thread = await ds.client.get(f"/-/sesh/thread/{SESSION}")
        lost = await ds.client.get("/-/sesh/lost")
        redirect = await ds.client.get(f"/-/sesh/thread/{lost_id}")
        href = re.search(r'href="([^"]*/-/sesh/source/\d+)">file before this edit', thread.text)
        backup = await ds.client.get(href.group(1)) if href else None
        other = await ds.client.get("/-/sesh/source/1")  # the transcript: not a backup a checkpoint names
        return thread, lost, redirect, backup, other

    thread, lost, redirect, backup, other = asyncio.run(go())
    assert thread.status_code == 200 and "file before this edit" in thread.text
    assert backup is not None and backup.status_code == 200 and backup.content == b"print('hi')\n"
    assert backup.headers["content-disposition"].startswith("attachment")
    assert other.status_code == 404
    assert lost.status_code == 200 and "a prompt of a deleted session" in lost.text and "/tmp/gone" in lost.text
    assert "AKIAQWERTYUIOPASDFGH" not in lost.text and "[REDACTED aws-access-key]" in lost.text  # masked on the way out
    assert redirect.status_code == 302 and "/-/sesh/lost?thread=" in redirect.headers["location"]
