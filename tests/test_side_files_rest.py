"""Side files (issue 38) of the agents added last: Kimi CLI's prompt history, Hermes Agent's
prompt history and its session pruning, Mistral Vibe's prompt history. Each is a source
(byte-exact, restored), feeds ``prompt_history`` and the lost sessions, is scanned for
secrets, and never brings credentials or account data into the archive.

Recordings: tests/fixtures/recorded/<vendor>-<version>-side/ (the real clients in their
terminal UI, scripts/record_side_files_rest.py; SOURCES.md in each).
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from archive.side_files import lost_sessions, mask_prompts, retention_warnings

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
KIMI = RECORDED / "kimi-1.51.0-side"
KIMI_HISTORY = "user-history/55dcb7eb1cae1c245efffd8b2aadd3ed.jsonl"
TOKEN = "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def ingest(db, provider: str, env: dict[str, str]):
    return ingest_paths(db, None, IngestOptions(providers=(provider,), env=env, idle_seconds=0))


def sources(db) -> dict[str, int]:
    return {r[0]: r[1] for r in db.execute("SELECT last_path, id FROM sources")}


def dump(db) -> bytes:
    """Every text the archive holds about its sources: what no credential may reach."""
    rows = [db.execute(f"SELECT * FROM {t}").fetchall() for t in ("reports", "prompt_history", "side_files")]
    return orjson.dumps(rows, default=str)


# -- Kimi CLI -----------------------------------------------------------------------------


def kimi_home(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    shutil.copytree(KIMI / ".kimi", home / ".kimi")
    return home / ".kimi", {"HOME": str(home), "KIMI_SHARE_DIR": str(home / ".kimi")}


def test_kimi_prompt_history_is_a_side_file_and_feeds_lost_sessions(tmp_path: Path) -> None:
    share, env = kimi_home(tmp_path)
    history = share / KIMI_HISTORY
    db = open_db(tmp_path / "a.db")
    summary = ingest(db, "kimi", env)
    assert summary.failed == 0 and not summary.reports.get("invalid") and not summary.reports.get("unknown")
    assert str(history) in sources(db)
    # "/exit" is a slash command, not a prompt; the session's transcript has both prompts
    assert db.execute("SELECT provider, thread_id, project, prompt FROM prompt_history ORDER BY offset").fetchall() == [
        ("kimi", None, None, "say hello"), ("kimi", None, None, "now say goodbye")]
    assert db.execute("SELECT count(*) FROM threads WHERE provider = 'kimi'").fetchone()[0] == 1
    assert lost_sessions(db) == []
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
    # appended: a rerun reads only the new line; a prompt no archived session has is lost
    with history.open("ab") as f:
        f.write(b'{"content":"a session Kimi lost"}\n')
    ingest(db, "kimi", env)
    assert db.execute("SELECT count(*) FROM prompt_history").fetchone()[0] == 3
    (lost,) = lost_sessions(db)
    assert (lost["provider"], lost["thread_id"], lost["history"]) == ("kimi", None, [{"ts": None, "prompt": "a session Kimi lost"}])


def test_kimi_history_without_its_sessions_is_all_lost_and_scanned_for_secrets(tmp_path: Path) -> None:
    share, env = kimi_home(tmp_path)
    shutil.rmtree(share / "sessions")
    with (share / KIMI_HISTORY).open("ab") as f:
        f.write(orjson.dumps({"content": f"deploy with {TOKEN}"}) + b"\n")
    db = open_db(tmp_path / "a.db")
    ingest(db, "kimi", env)
    (lost,) = lost_sessions(db)
    assert [p["prompt"] for p in lost["history"]] == ["say hello", "now say goodbye", f"deploy with {TOKEN}"]
    from archive import secrets

    found = secrets.list_findings(db.conn)
    assert [(f["rule"], f["field"]) for f in found] == [("github-token", "prompt")]
    (masked,) = mask_prompts(db, lost_sessions(db))
    assert masked["history"][-1]["prompt"] == "deploy with [REDACTED github-token]"
    env2 = {**env, "SESH_ARCHIVE_DB": str(tmp_path / "a.db")}
    status = CliRunner().invoke(cli, ["status"], env=env2, catch_exceptions=False).output
    assert "kimi" in status and "3 prompts" in status


def test_kimi_credentials_and_config_never_reach_the_archive(tmp_path: Path) -> None:
    share, env = kimi_home(tmp_path)
    # what a logged-in Kimi keeps beside the history (kimi-cli 1.51.0 auth/oauth.py, config.py)
    (share / "credentials").mkdir()
    (share / "credentials" / "kimi-code.json").write_text('{"access_token": "kimi-secret-access-token"}')
    (share / "config.toml").write_text('[providers.kimi]\napi_key = "sk-kimi-secret-key"\n')
    (share / "device_id").write_text("kimi-secret-device-id")
    db = open_db(tmp_path / "a.db")
    ingest(db, "kimi", env)
    paths = set(sources(db))
    assert not any(p.startswith(str(share / "credentials")) or p.endswith(("config.toml", "device_id")) for p in paths)
    for secret in (b"kimi-secret-access-token", b"sk-kimi-secret-key", b"kimi-secret-device-id"):
        assert secret not in dump(db)
        assert not db.execute("SELECT count(*) FROM blobs WHERE instr(data, ?) > 0", (secret,)).fetchone()[0]


# -- Hermes Agent -------------------------------------------------------------------------

HERMES = RECORDED / "hermes-0.19.0-side"
HERMES_SESSION = "20261202_111705_7678f5"


def hermes_home(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    home = tmp_path / "home"
    shutil.copytree(HERMES / ".hermes", home / ".hermes")
    return home / ".hermes", {"HOME": str(home), "HERMES_HOME": str(home / ".hermes")}


def test_hermes_prompt_history_is_a_side_file_and_feeds_lost_sessions(tmp_path: Path) -> None:
    hh, env = hermes_home(tmp_path)
    history = hh / ".hermes_history"
    db = open_db(tmp_path / "a.db")
    summary = ingest(db, "hermes", env)
    assert summary.failed == 0 and not summary.reports.get("invalid") and not summary.reports.get("warning")
    assert str(history) in sources(db)
    # "/exit" is a slash command; the times are the client's local time as it wrote them
    assert db.execute("SELECT provider, thread_id, ts, prompt FROM prompt_history ORDER BY offset").fetchall() == [
        ("hermes", None, "2026-12-02T11:17:18.850635", "say hello"),
        ("hermes", None, "2026-12-02T11:17:34.874546", "now say goodbye")]
    assert db.execute("SELECT count(*) FROM threads WHERE provider = 'hermes' AND id LIKE ?",
                      (f"%{HERMES_SESSION}%",)).fetchone()[0] >= 1
    assert lost_sessions(db) == []
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
    # appended as prompt_toolkit appends: a multi-line input and a secret, both read incrementally
    with history.open("ab") as f:
        f.write(f"\n# 2026-12-02 12:00:00.000001\n+first line\n+deploy with {TOKEN}\n".encode())
        f.write(b"\n# 2026-12-02 12:01:00.000001\n+/help\n+not a prompt either\n")
    ingest(db, "hermes", env)
    (lost,) = lost_sessions(db)
    assert [p["prompt"] for p in lost["history"]] == ["first line", f"deploy with {TOKEN}"]
    from archive import secrets

    assert [(f["rule"], f["field"]) for f in secrets.list_findings(db.conn)] == [("github-token", "prompt")]
    # the database gone (another machine): every prompt is lost
    (hh / "state.db").unlink()
    db2 = open_db(tmp_path / "b.db")
    ingest(db2, "hermes", env)
    assert [p["prompt"] for r in lost_sessions(db2) for p in r["history"]] == [
        "say hello", "now say goodbye", "first line", f"deploy with {TOKEN}"]


def test_hermes_config_is_never_archived_and_its_pruning_warns(tmp_path: Path) -> None:
    hh, env = hermes_home(tmp_path)
    config = hh / "config.yaml"
    config.write_text("model:\n  provider: custom\n  api_key: sk-hermes-secret-key\n"
                      "sessions:\n  # prune ended sessions\n  auto_prune: true   # opt in\n  retention_days: 3\n"
                      "checkpoints:\n  retention_days: 7\n")
    (hh / "auth.json").write_text('{"providers": {"nous": {"access_token": "hermes-secret-token"}}}')
    (hh / ".env").write_text("OPENROUTER_API_KEY=sk-or-hermes-secret\n")
    db = open_db(tmp_path / "a.db")
    ingest(db, "hermes", env)
    assert not any(p.endswith(("config.yaml", "auth.json", ".env")) for p in sources(db))
    for secret in (b"sk-hermes-secret-key", b"hermes-secret-token", b"sk-or-hermes-secret"):
        assert secret not in dump(db)
        assert not db.execute("SELECT count(*) FROM blobs WHERE instr(data, ?) > 0", (secret,)).fetchone()[0]
    now = datetime.now(timezone.utc)
    db.execute("UPDATE ingest_runs SET started_at = ?", ((now - timedelta(days=4)).isoformat(),))
    (warn,) = [w for w in retention_warnings(db, env, now=now) if w["provider"] == "hermes"]
    assert warn["days"] == 3
    assert f"sessions.retention_days = 3 in {config}" in warn["warning"]
    assert "sessions.auto_prune" in warn["warning"] and "run ingest more often" in warn["warning"]
    db.conn.commit()
    status = CliRunner().invoke(cli, ["status"], env={**env, "SESH_ARCHIVE_DB": str(tmp_path / "a.db")},
                                catch_exceptions=False)
    assert "warning: hermes deletes transcripts after 3 days (sessions.retention_days = 3" in status.output
    # off (Hermes 0.19.0's default), or no config: no warning
    config.write_text("sessions:\n  auto_prune: false\n  retention_days: 3\n")
    assert [w for w in retention_warnings(db, env, now=now) if w["provider"] == "hermes"] == []
    config.unlink()
    assert [w for w in retention_warnings(db, env, now=now) if w["provider"] == "hermes"] == []
    # on, with the default period
    config.write_text("sessions:\n    auto_prune: yes\n")
    db.execute("UPDATE ingest_runs SET started_at = ?", ((now - timedelta(days=91)).isoformat(),))
    (warn,) = [w for w in retention_warnings(db, env, now=now) if w["provider"] == "hermes"]
    assert warn["days"] == 90 and "default 90" in warn["warning"]


# -- Mistral Vibe -------------------------------------------------------------------------

VIBE = RECORDED / "vibe-3.0.3-side"


def test_vibe_prompt_history_is_a_side_file_and_feeds_lost_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(VIBE / ".vibe", home / ".vibe")
    env = {"HOME": str(home), "VIBE_HOME": str(home / ".vibe")}
    history = home / ".vibe" / "vibehistory"
    db = open_db(tmp_path / "a.db")
    summary = ingest(db, "vibe", env)
    assert summary.failed == 0 and not summary.reports.get("invalid")
    assert str(history) in sources(db)
    # the seed Vibe writes into a new home and "/exit" are not prompts
    assert db.execute("SELECT provider, thread_id, prompt FROM prompt_history ORDER BY offset").fetchall() == [
        ("vibe", None, "say hello"), ("vibe", None, "now say goodbye")]
    assert db.execute("SELECT count(*) FROM threads WHERE provider = 'vibe'").fetchone()[0] == 1
    # 3.0.3's TUI snapshots the session into a new generation after a turn and deletes the
    # journal segment that held it: the archive, first run after the session, has only the
    # last turn's messages (archive/vendors/vibe/unified.py "Not done"); the history names
    # the first prompt, which no archived message has
    (lost,) = lost_sessions(db)
    assert (lost["provider"], lost["thread_id"], lost["history"]) == ("vibe", None, [{"ts": None, "prompt": "say hello"}])
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
    # rewritten whole by the client: grown (an append), then trimmed to its limit (a new
    # generation, the old one kept); a raw line is the text itself, as the client reads it
    first = history.read_bytes()
    history.write_bytes(first + orjson.dumps(f"deploy with {TOKEN}") + b"\n")
    ingest(db, "vibe", env)
    (gen,) = db.execute("SELECT current_generation FROM sources WHERE last_path = ?", (str(history),)).fetchone()
    trimmed = b"".join(first.splitlines(keepends=True)[2:]) + orjson.dumps(f"deploy with {TOKEN}") + b"\nraw line\n"
    history.write_bytes(trimmed)
    ingest(db, "vibe", env)
    (gen2,) = db.execute("SELECT current_generation FROM sources WHERE last_path = ?", (str(history),)).fetchone()
    assert gen2 == gen + 1
    (lost,) = lost_sessions(db)
    assert [p["prompt"] for p in lost["history"]] == ["say hello", f"deploy with {TOKEN}", "raw line"]
    (masked,) = mask_prompts(db, lost_sessions(db))
    assert masked["history"][1]["prompt"] == "deploy with [REDACTED github-token]"
    (restored,) = restore(db, tmp_path / "out2", source=str(history))
    assert Path(restored.path).read_bytes() == trimmed


def test_vibe_env_file_and_config_never_reach_the_archive(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(VIBE / ".vibe", home / ".vibe")
    env = {"HOME": str(home), "VIBE_HOME": str(home / ".vibe")}
    (home / ".vibe" / ".env").write_text("MISTRAL_API_KEY=vibe-secret-api-key\n")  # Vibe's own credentials file
    (home / ".vibe" / "config.toml").write_text('[[providers]]\napi_key = "vibe-secret-config-key"\n')
    db = open_db(tmp_path / "a.db")
    ingest(db, "vibe", env)
    assert not any(p.endswith((".env", "config.toml")) for p in sources(db))
    for secret in (b"vibe-secret-api-key", b"vibe-secret-config-key"):
        assert secret not in dump(db)
        assert not db.execute("SELECT count(*) FROM blobs WHERE instr(data, ?) > 0", (secret,)).fetchone()[0]


# -- OpenClaw -----------------------------------------------------------------------------


def test_openclaw_reset_archive_retention_warns_before_the_cleanup(tmp_path: Path) -> None:
    from archive.vendors.openclaw.side import duration_days

    # OpenClaw 2026.9.6's parseDurationMs with days as the default unit
    assert [duration_days(v) for v in ("30d", "12h", "1d12h", 3, "2", "0", "5x", False, "1h30", None)] == [
        30.0, 0.5, 1.5, 3.0, 2.0, None, None, None, None, None]
    home = tmp_path / "home"
    state = home / ".openclaw"
    (state / "agents" / "main" / "sessions").mkdir(parents=True)
    env = {"HOME": str(home), "OPENCLAW_STATE_DIR": str(state)}
    db = open_db(tmp_path / "a.db")
    ingest(db, "openclaw", env)
    now = datetime.now(timezone.utc)
    db.execute("UPDATE ingest_runs SET started_at = ?", ((now - timedelta(days=4)).isoformat(),))

    def warned() -> list[dict]:
        return [w for w in retention_warnings(db, env, now=now) if w["provider"] == "openclaw"]

    assert warned() == []  # no config: archives are kept until the disk budget evicts them
    config = state / "openclaw.json"
    config.write_text(orjson.dumps({"gateway": {"auth": {"token": "openclaw-secret-token"}},
                                    "session": {"maintenance": {"pruneAfter": "30d", "resetArchiveRetention": "3d"}}}).decode())
    (warn,) = warned()
    assert warn["days"] == 3 and f"session.maintenance.resetArchiveRetention = 3d in {config}" in warn["warning"]
    # JSON5, as people write it (comments, unquoted keys)
    config.write_text('// mine\n{ session: { maintenance: { resetArchiveRetention: "2d", }, }, }\n')
    assert [w["days"] for w in warned()] == [2.0]
    config.write_text('{ session: { maintenance: { mode: "warn", resetArchiveRetention: "2d" } } }\n')
    assert warned() == []  # warn mode applies nothing
    config.write_text(orjson.dumps({"session": {"maintenance": {"pruneAfter": "1d"}}}).decode())
    assert warned() == []  # pruneAfter archives in place: nothing deleted
    # OPENCLAW_CONFIG_PATH names the file
    other = tmp_path / "elsewhere.json"
    other.write_text(orjson.dumps({"session": {"maintenance": {"resetArchiveRetention": "36h"}}}).decode())
    assert [w["days"] for w in retention_warnings(db, {**env, "OPENCLAW_CONFIG_PATH": str(other)}, now=now)
            if w["provider"] == "openclaw"] == [1.5]
    assert b"openclaw-secret-token" not in dump(db) and not any(p.endswith(".json") for p in sources(db))


# -- Cline CLI ----------------------------------------------------------------------------

CLINE = RECORDED / "cline-3.0.65-side"


def test_cline_prompt_history_is_a_side_file_and_feeds_lost_sessions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CLINE / ".cline", home / ".cline")
    env = {"HOME": str(home), "CLINE_DIR": str(home / ".cline")}
    history = home / ".cline" / "data" / "cache" / "user_input_history.jsonl"
    db = open_db(tmp_path / "a.db")
    summary = ingest(db, "cline", env)
    assert summary.failed == 0 and not summary.reports.get("invalid")
    assert str(history) in sources(db)
    # only the prompt typed in the TUI (the first run was `cline --json`); no time: the client
    # stamps every line with the time of the rewrite
    assert db.execute("SELECT provider, thread_id, ts, prompt FROM prompt_history").fetchall() == [
        ("cline", None, None, "what is two plus two")]
    assert lost_sessions(db) == []
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
    # the client rewrites it whole at the next prompt (each line restamped): a generation
    first = history.read_bytes()
    history.write_bytes(b'{"prompt":"what is two plus two","ts":1796210800000}\n'
                        + orjson.dumps({"prompt": f"deploy with {TOKEN}", "ts": 1796210800000}) + b"\n")
    ingest(db, "cline", env)
    assert db.execute("SELECT current_generation FROM sources WHERE last_path = ?", (str(history),)).fetchone()[0] == 2
    (lost,) = lost_sessions(db)
    assert lost["history"] == [{"ts": None, "prompt": f"deploy with {TOKEN}"}]
    (masked,) = mask_prompts(db, lost_sessions(db))
    assert masked["history"][0]["prompt"] == "deploy with [REDACTED github-token]"
    restored = {Path(r.path).read_bytes() for r in restore(db, tmp_path / "out2", source=str(history))}
    assert history.read_bytes() in restored
    assert first != history.read_bytes()
    # the sessions gone: the prompts are all that is left
    shutil.rmtree(home / ".cline" / "data" / "sessions")
    db2 = open_db(tmp_path / "b.db")
    ingest(db2, "cline", env)
    assert [p["prompt"] for r in lost_sessions(db2) for p in r["history"]] == [
        "what is two plus two", f"deploy with {TOKEN}"]


def test_cline_provider_settings_never_reach_the_archive(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(CLINE / ".cline", home / ".cline")
    env = {"HOME": str(home), "CLINE_DIR": str(home / ".cline")}
    settings = home / ".cline" / "data" / "settings" / "providers.json"
    settings.parent.mkdir(parents=True)
    settings.write_text('{"providers": {"openai-compatible": {"settings": {"apiKey": "cline-secret-key"}}}}')
    db = open_db(tmp_path / "a.db")
    ingest(db, "cline", env)
    assert not any(p.endswith("providers.json") for p in sources(db))
    assert b"cline-secret-key" not in dump(db)
    assert not db.execute("SELECT count(*) FROM blobs WHERE instr(data, ?) > 0", (b"cline-secret-key",)).fetchone()[0]


def test_the_lost_page_shows_a_kimi_prompt_without_its_session(tmp_path: Path) -> None:
    import asyncio

    from archive.serve import make_datasette

    share, env = kimi_home(tmp_path)
    with (share / KIMI_HISTORY).open("ab") as f:
        f.write(orjson.dumps({"content": "a prompt Kimi kept no session of"}) + b"\n")
        f.write(orjson.dumps({"content": f"push with {TOKEN}"}) + b"\n")
    db = open_db(tmp_path / "a.db")
    ingest(db, "kimi", env)
    db.conn.close()
    ds = make_datasette(tmp_path / "a.db")

    async def go():  # type: ignore[no-untyped-def]
        await ds.invoke_startup()
        return await ds.client.get("/-/sesh/lost")

    page = asyncio.run(go())
    assert page.status_code == 200 and "kimi" in page.text and "a prompt Kimi kept no session of" in page.text
    assert "say hello" not in page.text  # its session is archived
    assert TOKEN not in page.text and "[REDACTED github-token]" in page.text


def test_a_history_given_by_hand_goes_to_its_vendor(tmp_path: Path) -> None:
    """Each history file, copied out of its home and given as a path, is read by its own
    adapter (the names are the vendors' own: no other adapter claims them)."""
    cases = ((KIMI / ".kimi" / KIMI_HISTORY, "user-history/55dcb7eb1cae1c245efffd8b2aadd3ed.jsonl", "kimi"),
             (HERMES / ".hermes" / ".hermes_history", ".hermes_history", "hermes"),
             (VIBE / ".vibe" / "vibehistory", "vibehistory", "vibe"),
             (CLINE / ".cline" / "data" / "cache" / "user_input_history.jsonl", "cache/user_input_history.jsonl", "cline"))
    for src, rel, provider in cases:
        folder = tmp_path / provider
        (folder / rel).parent.mkdir(parents=True)
        shutil.copyfile(src, folder / rel)
        db = open_db(tmp_path / f"{provider}.db")
        assert ingest_paths(db, [folder], IngestOptions(idle_seconds=0)).failed == 0
        assert {r[0] for r in db.execute("SELECT provider FROM prompt_history")} == {provider}
        assert not db.execute("SELECT count(*) FROM reports WHERE kind IN ('invalid', 'unknown')").fetchone()[0]
