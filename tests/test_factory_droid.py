"""Factory Droid (issue 35), read only: its session log and the settings file beside it (model,
token totals), laid out as droid 0.225.2 keeps them. The contract runs on
tests/fixtures/factory-droid/*.jsonl."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.projection import load_messages

FIXTURES = Path(__file__).parent / "fixtures" / "factory-droid"
SID = "19981be1-8492-4119-af9d-eda247f64a31"


def run(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_a_droid_home_is_read_with_its_usage(tmp_path: Path, isolated_home: Path) -> None:
    folder = isolated_home / ".factory" / "sessions" / "-tmp-droid-r1-work"
    folder.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "execute-0.225.2.jsonl", folder / f"{SID}.jsonl")
    shutil.copyfile(FIXTURES / "session-0.225.2" / f"{SID}.settings.json", folder / f"{SID}.settings.json")
    (folder / f"{SID}.settings.json.bak").write_bytes((folder / f"{SID}.settings.json").read_bytes())
    db = str(tmp_path / "a.db")
    summary = json.loads(run("--db", db, "ingest", "--json"))
    assert summary["failed"] == 0 and summary["unread"] == []
    archive = open_db(db)
    msgs = load_messages(archive.conn, "m.thread_id = ?", (SID,))
    assert [m.role for m in msgs] == ["user", "user", "assistant", "tool", "assistant"]
    assert (msgs[0].extra or {}).get("injected") and not (msgs[1].extra or {}).get("injected")
    assert msgs[2].content[1].name == "Execute"  # type: ignore[union-attr]
    assert "hello-from-droid" in msgs[3].content[0].output  # type: ignore[union-attr,operator]
    assert msgs[4].content[0].text == "The command printed the greeting."  # type: ignore[union-attr]
    meta = json.loads(archive.conn.execute("SELECT metadata FROM threads WHERE id = ?", (SID,)).fetchone()[0])
    assert meta["cwd"] == "/tmp/droid/r1/work" and meta["model"] == "custom:Mock-0"
    assert archive.conn.execute("SELECT input_tokens, cache_read_tokens, output_tokens FROM usage").fetchall() == \
        [(469, 469, 85)]
