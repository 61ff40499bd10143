"""Signals per thread and the user's tags, stars and notes (issue 42: archive/signals.py,
archive/marks.py, the threads/tag/untag/star/note/marks commands)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_paths, rebuild
from archive.marks import annotate
from archive.signals import compute

FIX = Path(__file__).parent / "fixtures"
TS = "2026-11-29T10:%02d:%02d.000Z"


def _canonical(tid: str, messages: list[tuple[str, int, list[dict[str, Any]]]]) -> bytes:
    recs: list[dict[str, Any]] = [{"v": 1, "id": tid, "createdAt": TS % (0, 0), "metadata": {"cwd": "/repo"}}]
    for i, (role, sec, content) in enumerate(messages, start=1):
        recs.append({"v": 1, "id": f"{tid}-m{i}", "threadId": tid, "role": role, "ts": TS % divmod(sec, 60),
                     "content": content})  # fmt: skip
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


def _edit(cid: str, path: str, old: str, new: str) -> list[dict[str, Any]]:
    return [{"type": "tool_call", "callId": cid, "name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new}}]


def _result(cid: str, error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "callId": cid, "output": "boom" if error else "ok", "isError": error}]


# 0s user, then edits of a.py three times (one retried as is), a failing test run, an
# answer; a 10-minute pause in the middle (not active time)
CHURN = _canonical("churn", [
    ("user", 0, [{"type": "text", "text": "fix a.py"}]),
    ("assistant", 10, _edit("c1", "a.py", "1", "2")),
    ("tool", 11, _result("c1")),
    ("assistant", 20, _edit("c2", "a.py", "2", "3")),
    ("tool", 21, _result("c2", error=True)),
    ("assistant", 30, _edit("c3", "a.py", "2", "3")),  # the same call again: a retry
    ("tool", 31, _result("c3")),
    ("assistant", 631, [{"type": "tool_call", "callId": "c4", "name": "Bash", "input": {"command": "pytest"}}]),
    ("tool", 632, _result("c4", error=True)),
    ("assistant", 640, [{"type": "text", "text": "Fixed a.py."}]),
])  # fmt: skip
FAILED = _canonical("failed", [
    ("user", 0, [{"type": "text", "text": "run it"}]),
    ("assistant", 5, [{"type": "tool_call", "callId": "x1", "name": "Bash", "input": {"command": "make"}}]),
    ("tool", 6, _result("x1", error=True)),
])  # fmt: skip


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("signals")
    (d / "canon").mkdir()
    (d / "canon" / "churn.jsonl").write_bytes(CHURN)
    (d / "canon" / "failed.jsonl").write_bytes(FAILED)
    db = open_db(d / "a.db")
    assert not ingest_paths(db, [d / "canon", FIX / "claude-code", FIX / "codex"]).failed
    db.conn.close()
    return d / "a.db"


def _signals(db: Any, tid: str) -> dict[str, Any]:
    return annotate(db.conn, [{"id": tid}])[0]["signals"]


def test_signals_of_a_churning_session(archive: Path) -> None:
    s = _signals(open_db(archive), "churn")
    assert (s["tool_calls"], s["tool_errors"], s["retries"], s["same_file_edits"]) == (4, 2, 1, 2)
    assert s["ending"] == "completed" and s["outcome"] == "completed"
    assert s["duration_seconds"] == 640.0
    assert s["active_seconds"] == 40.0  # the 600 s gap is idle
    f = _signals(open_db(archive), "failed")
    assert f["ending"] == "errored" and f["outcome"] == "errored"


def test_outcome_of_an_open_session_is_read_against_the_clock(tmp_path: Path) -> None:
    msgs = [("m1", "user", "2020-01-01T00:00:00Z", 0, None, "hi")]
    s = compute(msgs, [("m1", "text", None, None, None, None, True)], [], None)
    assert s["ending"] == "open"
    db = open_db(tmp_path / "a.db")
    db.execute("INSERT INTO thread_signals VALUES ('old', 0,0,0,0,0,0,'open', ?, ?, 0, 0)", (msgs[0][2], msgs[0][2]))
    db.execute("INSERT INTO thread_signals VALUES ('new', 0,0,0,0,0,0,'open', datetime('now'), datetime('now'), 0, 0)")
    got = {r["id"]: r["signals"]["outcome"] for r in annotate(db.conn, [{"id": "old"}, {"id": "new"}])}
    assert got == {"old": "abandoned", "new": "running"}


def test_vendor_compactions_and_interruptions(archive: Path) -> None:
    db = open_db(archive)
    got = dict(db.execute("SELECT t.provider, sum(s.compactions) FROM thread_signals s JOIN threads t ON t.id = s.thread_id "
                          "GROUP BY 1").fetchall())  # fmt: skip
    assert got["claude-code"] >= 1 and got["codex"] >= 1
    interrupted = db.execute("SELECT sum(interrupted_turns) FROM thread_signals s JOIN threads t ON t.id = s.thread_id "
                             "WHERE t.provider = 'claude-code'").fetchone()[0]  # fmt: skip
    assert interrupted >= 1


def test_threads_json_carries_signals_and_marks(archive: Path) -> None:
    r = CliRunner().invoke(cli, ["--db", str(archive), "threads", "--json", "--limit", "0"], catch_exceptions=False)
    rows = {t["id"]: t for t in orjson.loads(r.stdout)}
    assert rows["churn"]["signals"]["retries"] == 1 and rows["churn"]["tags"] == [] and rows["churn"]["starred"] is False


def test_tags_stars_notes_survive_rebuild_and_travel_by_export(archive: Path, tmp_path: Path) -> None:
    run = CliRunner().invoke
    db = ["--db", str(archive)]
    assert run(cli, [*db, "tag", "churn", "flaky", "review"], catch_exceptions=False).stdout.strip() == "churn: flaky review"
    assert run(cli, [*db, "tag", "failed", "flaky"], catch_exceptions=False).exit_code == 0
    assert run(cli, [*db, "tag", "failed", "two words"]).exit_code == 1
    assert run(cli, [*db, "star", "failed"], catch_exceptions=False).exit_code == 0
    assert run(cli, [*db, "note", "churn", "edits a.py three times"], catch_exceptions=False).exit_code == 0

    def ids(*args: str) -> list[str]:
        r = run(cli, [*db, "threads", "--json", *args], catch_exceptions=False)
        return sorted(t["id"] for t in orjson.loads(r.stdout))

    assert ids("--tag", "flaky") == ["churn", "failed"]
    assert ids("--tag", "flaky", "--tag", "review") == ["churn"]
    assert ids("--starred") == ["failed"]
    assert ids("--tag", "nobody") == []
    run(cli, [*db, "untag", "churn", "review"], catch_exceptions=False)
    assert ids("--tag", "review") == []
    # user data, not derived: a rebuild keeps it
    rebuild(open_db(archive))
    assert ids("--tag", "flaky") == ["churn", "failed"]
    assert run(cli, [*db, "note", "churn"], catch_exceptions=False).stdout.strip() == "edits a.py three times"
    # exported, then imported into another archive
    out = run(cli, [*db, "marks", "export"], catch_exceptions=False).stdout
    lines = [orjson.loads(x) for x in out.splitlines()]
    assert {(m["thread_id"], tuple(m["tags"]), m["starred"]) for m in lines} == {
        ("churn", ("flaky",), False), ("failed", ("flaky",), True)}  # fmt: skip
    other = open_db(tmp_path / "b.db")
    other.conn.close()
    r = run(cli, ["--db", str(tmp_path / "b.db"), "marks", "import", "-"], input=out, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert run(cli, ["--db", str(tmp_path / "b.db"), "marks", "export"], catch_exceptions=False).stdout == out
