"""OpenCode's JSON storage before 1.2 (0.1.x, 0.5.x, 1.0-1.1), recorded with the real clients:
found under the default root, read whole, a rerun opens nothing, a changed file is read
again, every file restores byte for byte, and a session kept both in the storage and in the
``opencode.db`` OpenCode 1.2 migrated it into is one thread (the contract test covers the
session documents themselves)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.vendors import get
from archive.vendors.opencode import storage

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
ADAPTER = get("opencode")
LAYOUTS = {"0.1.174": "project/global/storage/session/info", "0.5.29": "project/global/storage/session/info",
           "1.0.0": "storage/session/global", "1.1.65": "storage/session/global"}
PAST = 1_700_000_000  # file times well before the settle window of a record's signature


def install(version: str, home: Path, sub: str = "bash/opencode") -> Path:
    """The recorded data folder as ``~/.local/share/opencode``, with settled file times."""
    data = home / ".local" / "share" / "opencode"
    shutil.copytree(RECORDED / f"opencode-{version}" / sub, data)
    for p in data.rglob("*"):
        os.utime(p, (PAST, PAST))
    return data


def run(db, home: Path):
    return ingest_paths(db, None, IngestOptions(providers=("opencode",), env={"HOME": str(home)}, idle_seconds=10**9))


def info_file(data: Path, version: str) -> Path:
    (info,) = sorted((data / LAYOUTS[version]).glob("ses_*.json"))
    return info


@pytest.mark.parametrize("version", sorted(LAYOUTS))
def test_each_layout_is_read_whole_from_the_default_root(version: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = install(version, home)
    sid = info_file(data, version).stem
    db = open_db(tmp_path / "a.db")
    s = run(db, home)
    assert s.failed == 0 and s.files_changed == 1
    assert not s.reports.get("unexplained") and not s.reports.get("adapter_error") and not s.reports.get("unknown")
    (thread,) = db.execute("SELECT id, json_extract(metadata, '$.version'), json_extract(metadata, '$.cwd') FROM threads").fetchall()
    assert thread[0] == sid and thread[1] == version and thread[2].endswith("/proj")
    rows = db.execute("SELECT m.role, b.type, b.text, b.tool_name, b.output FROM messages m JOIN blocks b ON b.message_id = m.id "
                      "ORDER BY m.source_id, m.offset, m.sub, b.position").fetchall()
    texts = [r[2] for r in rows if r[1] == "text"]
    assert any("[bash] Run a command." in (t or "") for t in texts) and any("[text-2]" in (t or "") for t in texts)
    assert "Hello again." in texts
    assert [r[3] for r in rows if r[1] == "tool_call"] == ["bash"]
    (output,) = [r[4] or r[2] for r in rows if r[1] == "tool_result"]
    assert "hello-from-bash" in output
    if version != "0.1.174":  # 0.1.174 with @ai-sdk/openai-compatible 0.2.16 wrote no reasoning part
        assert any(r[1] == "reasoning" and r[2] == "The user wants a command run." for r in rows)
    usage = db.execute("SELECT model, input_tokens, output_tokens, message_id FROM usage").fetchall()
    assert usage and all(u[0] == "m" and u[1] > 0 and u[2] > 0 and u[3] for u in usage)


def test_a_rerun_opens_nothing_and_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    install("1.1.65", home)
    db = open_db(tmp_path / "a.db")
    run(db, home)
    before = dump_tables(db)

    def opened(*a: object, **k: object) -> None:
        raise AssertionError("a file of an unchanged session was opened")

    monkeypatch.setattr(storage, "document", opened)
    again = run(db, home)
    assert again.files_changed == 0 and again.lines == 0 and again.failed == 0
    assert dump_tables(db) == before


def test_a_new_part_and_a_rewritten_file_are_new_generations(tmp_path: Path) -> None:
    """Found by their stats alone; the document read again is a new generation of the same
    source (the older one kept), its messages stored once."""
    home = tmp_path / "home"
    data = install("1.1.65", home)
    db = open_db(tmp_path / "a.db")
    run(db, home)
    messages = db.execute("SELECT count(*) FROM messages").fetchone()[0]
    # a part the client adds to the last message
    msg_dir = sorted((data / "storage" / "part").iterdir())[-1]
    last = sorted(msg_dir.glob("prt_*.json"))[-1]
    part = orjson.loads(last.read_bytes())
    new = {**part, "id": "prt_zzzzzzzzzzzz0000000000000", "type": "text", "text": "An added answer.",
           "time": {"start": 1796172349000, "end": 1796172349001}}
    added = msg_dir / f"{new['id']}.json"
    added.write_bytes(orjson.dumps(new, option=orjson.OPT_INDENT_2))
    os.utime(added, (PAST + 10, PAST + 10))
    s = run(db, home)
    assert s.files_changed == 1
    assert db.execute("SELECT count(*) FROM blocks WHERE text = 'An added answer.'").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == messages + 1
    assert db.execute("SELECT count(*), max(generation) FROM generations").fetchone() == (2, 2)
    # the title rewritten in place (the info file): a new generation, the old one kept
    info = info_file(data, "1.1.65")
    d = orjson.loads(info.read_bytes())
    info.write_bytes(orjson.dumps({**d, "title": "Renamed"}, option=orjson.OPT_INDENT_2))
    os.utime(info, (PAST + 20, PAST + 20))
    s = run(db, home)
    assert s.files_changed == 1
    assert db.execute("SELECT title FROM threads").fetchone()[0] == "Renamed"
    assert db.execute("SELECT count(*), max(generation) FROM generations").fetchone() == (3, 3)
    assert db.execute("SELECT count(*) FROM blocks WHERE text = 'An added answer.'").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM messages").fetchone()[0] == messages + 1
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 1


@pytest.mark.parametrize("version", sorted(LAYOUTS))
def test_restore_gives_every_file_back_byte_for_byte(version: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = install(version, home)
    db_path = tmp_path / "a.db"
    run(open_db(db_path), home)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["--db", str(db_path), "restore", str(out), "--json"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    files = ADAPTER.record_files(info_file(data, version))
    assert files and len(files) > 3
    for f in files:
        restored = out / f.lstrip("/")
        assert hashlib.sha256(restored.read_bytes()).hexdigest() == hashlib.sha256(Path(f).read_bytes()).hexdigest(), f
    listed = {e["path"] for e in orjson.loads(res.stdout) if e.get("unpacked")}
    assert listed == {str(out / f.lstrip("/")) for f in files}


def test_a_session_in_the_storage_and_in_the_migrated_database_is_one_thread(tmp_path: Path) -> None:
    """OpenCode 1.2.1 migrated the recorded 1.1.65 storage into opencode.db and left the JSON
    files in place: both are read, and they make one thread, each message and response once."""
    home = tmp_path / "home"
    data = install("1.1.65", home)
    shutil.copyfile(RECORDED / "opencode-1.1.65" / "bash" / "migrated-1.2.1" / "opencode.db", data / "opencode.db")
    db = open_db(tmp_path / "both.db")
    s = run(db, home)
    assert s.failed == 0 and s.files_changed == 2
    assert db.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM threads").fetchone()[0] == 1
    alone = open_db(tmp_path / "storage.db")
    (data / "opencode.db").unlink()
    run(alone, home)

    def content(d):
        return (d.execute("SELECT id, role FROM messages ORDER BY id").fetchall(),
                d.execute("SELECT key, input_tokens, output_tokens, cache_read_tokens FROM usage ORDER BY key").fetchall())

    assert content(db) == content(alone)
    assert len(content(db)[1]) == 3  # one per step-finish part


def test_emit_for_a_release_before_1_2_writes_its_json_storage(tmp_path: Path) -> None:
    """``--client-version 1.1.65``: the session as the 1.0-1.1 storage (one file per session,
    message and part), which the archive reads back as the same conversation; releases
    before 1.0 are refused (their layouts are read only)."""
    home = tmp_path / "home"
    install("1.1.65", home)
    db_path = tmp_path / "a.db"
    run(open_db(db_path), home)
    sid = open_db(db_path).execute("SELECT id FROM threads").fetchone()[0]
    out = tmp_path / "emitted"
    res = CliRunner().invoke(cli, ["--db", str(db_path), "emit", sid, "--to", "opencode", "--client-version", "1.1.65",
                                   "--rebuild-format", "-o", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    info = out / "opencode" / "storage" / "session" / "global" / f"{sid}.json"
    assert orjson.loads(info.read_bytes())["version"] == "1.1.65"
    assert len(list((out / "opencode" / "storage" / "part").rglob("*.json"))) >= 10
    back = open_db(tmp_path / "back.db")
    s = ingest_paths(back, None, IngestOptions(providers=("opencode",), env={"HOME": str(tmp_path / "h2"),
                                                                            "XDG_DATA_HOME": str(out)}, idle_seconds=10**9))
    assert s.failed == 0 and s.files_changed == 1

    def conversation(d):
        return d.execute("SELECT m.role, b.type, coalesce(b.text, ''), coalesce(b.tool_name, '') FROM messages m "
                         "JOIN blocks b ON b.message_id = m.id ORDER BY m.ts, m.id, b.position").fetchall()

    assert sorted(conversation(back)) == sorted(conversation(open_db(db_path)))
    refused = CliRunner().invoke(cli, ["--db", str(db_path), "emit", sid, "--to", "opencode", "--client-version", "0.5.29",
                                       "--rebuild-format", "-o", str(tmp_path / "old")])
    assert refused.exit_code == 1 and "before 1.0" in refused.output


def test_which_files_are_sessions() -> None:
    """A session's info file is the record, in each layout; its message and part files, and
    the other folders under 0.x ``storage/session/`` (``share``), are not records."""
    data = Path("/h/.local/share/opencode")
    assert ADAPTER.classify(data / "project/global/storage/session/info/ses_a.json") == "records"
    assert ADAPTER.classify(data / "storage/session/global/ses_a.json") == "records"
    assert ADAPTER.classify(data / "storage/session/4b0ea68d7af9a6031a7ffda7ad66e0cb83315750/ses_a.json") == "records"
    for other in ("project/global/storage/session/share/ses_a.json", "project/global/storage/session/message/ses_a/msg_b.json",
                  "project/global/storage/session/part/ses_a/msg_b/prt_c.json", "storage/message/ses_a/msg_b.json",
                  "storage/part/msg_b/prt_c.json", "storage/session_diff/ses_a.json", "storage/project/global.json"):
        assert ADAPTER.classify(data / other) is None, other


def test_public_real_files_are_read_with_their_usage_model_and_tool_calls(tmp_path: Path) -> None:
    """OpenCode 1.1.12's storage as a user committed it (a slice of one session,
    tests/fixtures/opencode/SOURCES.md): each response's tokens under the model that gave them,
    the bash call with its output, the cwd; every file restores byte for byte."""
    home = tmp_path / "home"
    data = home / ".local" / "share" / "opencode"
    shutil.copytree(Path(__file__).parent / "fixtures" / "opencode" / "public-anshgrag-1.1.12", data)
    db_path = tmp_path / "a.db"
    db = open_db(db_path)
    s = run(db, home)
    assert s.failed == 0 and s.files_changed == 1 and not s.reports.get("unexplained")
    assert db.execute("SELECT id, json_extract(metadata, '$.version'), json_extract(metadata, '$.cwd'), "
                      "json_extract(metadata, '$.model') FROM threads").fetchall() == [
        ("ses_4567b0e1affeRu0da2D26ls6sf", "1.1.12", "/home/bot4u/Desktop/GEMINI/Mini_project", "big-pickle")]
    assert db.execute("SELECT key, model, input_tokens, cache_read_tokens, output_tokens FROM usage ORDER BY key").fetchall() == [
        ("opencode:prt_ba984fa14001NzOA0qfwnWUxeq", "big-pickle", 10930, 448, 48),
        ("opencode:prt_ba9860caf001MW2IVuiG9A7kUr", "big-pickle", 11679, 448, 42)]
    (call,) = db.execute("SELECT tool_name, json_extract(input, '$.command') FROM blocks WHERE type = 'tool_call'").fetchall()
    assert call == ("bash", "ls -la /home/bot4u/Desktop/GEMINI/Mini_project")
    (output,) = db.execute("SELECT coalesce(output, text) FROM blocks WHERE type = 'tool_result'").fetchone()
    assert output.startswith("total 14144")
    out = tmp_path / "out"
    assert CliRunner().invoke(cli, ["--db", str(db_path), "restore", str(out)], catch_exceptions=False).exit_code == 0
    for f in data.rglob("*.json"):
        assert (out / str(f).lstrip("/")).read_bytes() == f.read_bytes(), f
