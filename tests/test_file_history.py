"""File history (issue 42): the file index built from every vendor's tool calls, ``files``,
and the index kept current by ingest and rebuild (archive/file_index.py, file_touches.py,
derived.py, vendors/tool_paths.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.file_touches import file_history, sessions_touching
from archive.ingest import ingest_paths, rebuild
from archive.vendors.tool_paths import default_touched_paths, patch_paths, shell_paths

FIX = Path(__file__).parent / "fixtures"
REC = FIX / "recorded"
CLAUDE_FILES = REC / "claude-code-2.1.332" / "files"  # Write then Edit of hello.py
CODEX_PATCH = REC / "codex-0.171.0" / "patch"  # apply_patch Add File then Update File of hello.py
TS = "2026-11-29T10:00:%02d.000Z"
AWS = "AKIA" + "QX7TZ2M4PL9WB3RK"  # a made-up key of the AWS shape: the scan finds it


def _canonical(tid: str, cwd: str | None, messages: list[tuple[str, list[dict[str, Any]]]]) -> bytes:
    head: dict[str, Any] = {"v": 1, "id": tid, "createdAt": TS % 0, "metadata": {"cwd": cwd} if cwd else {}}
    recs = [head] + [{"v": 1, "id": f"{tid}-m{i}", "threadId": tid, "role": role, "ts": TS % i, "content": c}
                     for i, (role, c) in enumerate(messages, start=1)]  # fmt: skip
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


def _call(cid: str, name: str, inp: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "tool_call", "callId": cid, "name": name, "input": inp}]


def _result(cid: str, out: str = "ok", error: bool = False) -> list[dict[str, Any]]:
    return [{"type": "tool_result", "callId": cid, "output": out, "isError": error}]


BAD_INPUT = _canonical("bad-input", "/home/dev/my repo", [
    ("user", [{"type": "text", "text": "tidy the odd files"}]),
    ("assistant", _call("c1", "Edit", {"file_path": "docs/a b.md", "old_string": "x", "new_string": "y"})),
    ("tool", _result("c1")),
    ("assistant", _call("c2", "Bash", {"command": "cat 'docs/a b.md' | head -n 3 && rm -f build/old.log"})),
    ("tool", _result("c2")),
    ("assistant", _call("c3", "apply_patch", {"input": "*** Begin Patch\n*** Update File: src/old_name.py\n"
                                                        "*** Move to: src/new_name.py\n@@\n-a\n+b\n*** End Patch\n"})),
    ("tool", _result("c3")),
    ("assistant", _call("c4", "Read", {"file_path": "../other/../common/conf.toml"})),
    ("tool", _result("c4")),
    ("assistant", _call("c5", "Edit", {"file_path": "config/deploy.env", "old_string": "KEY=",
                                        "new_string": f"aws_access_key_id = {AWS}"})),
    ("tool", _result("c5")),
    ("assistant", [{"type": "text", "text": "Done."}]),
])  # fmt: skip


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("files")
    (d / "canon").mkdir()
    (d / "canon" / "bad.jsonl").write_bytes(BAD_INPUT)
    db = open_db(d / "a.db")
    summary = ingest_paths(db, [CLAUDE_FILES, CODEX_PATCH, d / "canon"])
    assert not summary.failed
    db.conn.close()
    return d / "a.db"


def test_a_claude_code_edit_and_a_codex_apply_patch_of_the_same_file_are_both_found(archive: Path) -> None:
    db = open_db(archive)
    calls = file_history(db, "hello.py")
    by = {(c["provider"], c["tool_name"], c["action"]) for c in calls}
    assert {("claude-code", "Write", "changed"), ("claude-code", "Edit", "changed"),
            ("codex", "apply_patch", "created"), ("codex", "apply_patch", "changed")} <= by  # fmt: skip
    assert {c["path"] for c in calls} == {"/tmp/sesh-record/claude-code-files/work/hello.py",
                                          "/tmp/sesh-record/codex-patch/work/hello.py"}  # fmt: skip
    ts = [c["ts"] or "" for c in calls]
    assert ts == sorted(ts, reverse=True)  # newest first
    edit = next(c for c in calls if c["tool_name"] == "Edit")
    assert "-print('hello')" in edit["diff"] and "+print('hello, world')" in edit["diff"]
    add = next(c for c in calls if c["provider"] == "codex" and c["action"] == "created")
    assert add["diff"].startswith("*** Add File: hello.py")
    # an absolute path is that file only; a suffix must match whole components
    assert {c["provider"] for c in file_history(db, "/tmp/sesh-record/codex-patch/work/hello.py")} == {"codex"}
    assert file_history(db, "llo.py") == []
    # a glob, relative (any folder) or absolute
    assert {c["provider"] for c in file_history(db, "*.py")} >= {"claude-code", "codex"}
    assert {c["provider"] for c in file_history(db, "/tmp/sesh-record/claude-code-files/*")} == {"claude-code"}


@pytest.mark.parametrize("query", ["hello.py", "work/hello.py", "/tmp/sesh-record/codex-patch/work/hello.py", "*.py",
                                   "/tmp/sesh-record/claude-code-files/*", "work/*/hello.py"])  # fmt: skip
def test_a_page_is_read_in_order_not_sorted(archive: Path, query: str) -> None:
    """The page comes out of an index in the history's order (m126): no sort of every touch
    of a common name (144 ms for 4,849 touches of one name at 1 GB, docs/file-history.md)."""
    from archive.file_touches import touch_sql
    from archive.queries import Filters

    db = open_db(archive)
    sql, params = touch_sql(query, Filters(), 50)
    plan = " | ".join(r[-1] for r in db.conn.execute("EXPLAIN QUERY PLAN " + sql, params))
    assert "TEMP B-TREE" not in plan and "file_touches_" in plan, plan
    rows = db.conn.execute(sql, params).fetchall()
    by_call = sorted(rows, key=lambda r: (r[0], r[1], r[2]))
    assert rows == sorted(by_call, key=lambda r: r[3] or "", reverse=True)  # newest first, then thread, message, call


def test_bad_input_spaces_relative_paths_and_a_rename(archive: Path) -> None:
    db = open_db(archive)
    spaced = file_history(db, "docs/a b.md")
    assert [(c["action"], c["tool_name"]) for c in spaced] == [("read", "Bash"), ("changed", "Edit")]
    assert spaced[0]["path"] == "/home/dev/my repo/docs/a b.md"  # relative, joined to the session's cwd
    assert [c["action"] for c in file_history(db, "/home/dev/my repo/build/old.log")] == ["deleted"]
    # a rename is the old file deleted and the new one created
    assert [c["action"] for c in file_history(db, "src/old_name.py")] == ["deleted"]
    assert [c["action"] for c in file_history(db, "src/new_name.py")] == ["created"]
    # .. folded against the cwd
    assert file_history(db, "/home/dev/common/conf.toml")[0]["action"] == "read"
    s = sessions_touching(db, "a b.md")
    assert s[0]["thread_id"] == "bad-input" and s[0]["actions"] == {"read": 1, "changed": 1}


def test_files_redact_masks_what_the_scan_found(archive: Path) -> None:
    args = ["--db", str(archive), "files", "config/deploy.env", "--json"]
    plain = CliRunner().invoke(cli, args, catch_exceptions=False).stdout
    assert AWS in plain
    masked = CliRunner().invoke(cli, [*args, "--redact"], catch_exceptions=False).stdout
    assert AWS not in masked and "REDACTED" in masked


def test_files_command_text_and_json(archive: Path) -> None:
    r = CliRunner().invoke(cli, ["--db", str(archive), "files", "hello.py", "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    rows = orjson.loads(r.stdout)
    assert {r["provider"] for r in rows} == {"claude-code", "codex"}
    assert {"thread_id", "label", "ts", "action", "path", "tool_name", "diff", "message_id"} <= set(rows[0])
    r = CliRunner().invoke(cli, ["--db", str(archive), "files", "hello.py", "--utc"], catch_exceptions=False)
    assert "changed" in r.stdout and "+print('hello, world')" in r.stdout
    assert "in 2 sessions" in r.stderr
    r = CliRunner().invoke(cli, ["--db", str(archive), "files", "no/such/file.txt"], catch_exceptions=False)
    assert r.exit_code == 0 and r.stdout == "" and "0 calls" in r.stderr


@pytest.mark.parametrize("command,expected", [
    ("cat src/a.py", [("src/a.py", "read")]),
    ("sed -n '1,200p' docs/fs-scanner.md", [("docs/fs-scanner.md", "read")]),
    ("sed -i 's/a/b/' x.txt", [("x.txt", "changed")]),
    ("head -n 20 a.log && tail -5 b.log", [("a.log", "read"), ("b.log", "read")]),
    ("echo hi > out.txt", [("out.txt", "changed")]),
    ("python run.py 2>&1 | tee log.txt", []),  # tee: not in the list of certain commands
    ("mv old.py new.py", [("old.py", "deleted"), ("new.py", "created")]),
    ("rm -rf build/", [("build/", "deleted")]),
    ("cat $HOME/x.txt", []),  # a variable: not a path we can name
    ("cat *.py", []),  # a glob
    ("cat \"unterminated", []),  # does not parse
    ("echo hello-from-shell", []),
    ("ls -la src", []),
    ("cat $(find . -name x.py)", []),
])  # fmt: skip
def test_shell_commands_are_read_conservatively(command: str, expected: list[tuple[str, str]]) -> None:
    assert list(shell_paths(command)) == expected


def test_patch_headers_and_the_codex_argv_form() -> None:
    diff = "--- /dev/null\n+++ b/new.txt\n@@\n+x\n--- a/old.txt\n+++ b/old.txt\n@@\n-a\n+b\n"
    assert list(patch_paths(diff)) == [("new.txt", "created"), ("old.txt", "changed")]
    cmd = {"command": ["bash", "-lc", "cat README.md"], "workdir": "/repo/sub"}
    assert list(default_touched_paths("shell", cmd)) == [("/repo/sub/README.md", "read")]


def test_every_vendor_fixture_indexes_what_its_calls_name(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [FIX / v for v in ("claude-code", "codex", "copilot", "opencode", "pi", "gemini", "qwen", "clm")])
    got = {p: n for p, n in db.execute(
        "SELECT t.provider, count(*) FROM file_touches f JOIN threads t ON t.id = f.thread_id GROUP BY 1")}  # fmt: skip
    # the vendors whose fixtures name files in tool calls (Qwen's public real files read files;
    # Gemini's and clm's only run echo or name none)
    assert {"claude-code", "codex", "copilot", "opencode", "pi", "qwen"} <= set(got)
    assert not {"gemini", "clm"} & set(got)
    # every touch of a thread with a cwd is absolute
    rel = db.execute("SELECT count(*) FROM file_touches f JOIN threads t ON t.id = f.thread_id "
                     "WHERE t.cwd IS NOT NULL AND f.path NOT LIKE '/%' AND f.path NOT LIKE '~%'").fetchone()[0]  # fmt: skip
    assert rel == 0
    # every thread of every vendor has its signals
    providers = {r[0] for r in db.execute("SELECT DISTINCT provider FROM threads")}
    assert {"claude-code", "codex", "copilot", "opencode", "pi", "gemini", "qwen", "clm"} <= providers
    assert db.execute("SELECT count(*) FROM threads t LEFT JOIN thread_signals s ON s.thread_id = t.id "
                      "WHERE s.thread_id IS NULL").fetchone()[0] == 0  # fmt: skip


def test_rebuild_and_a_build_from_nothing_give_the_index_ingest_built(tmp_path: Path) -> None:
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [CLAUDE_FILES, CODEX_PATCH, FIX / "pi"])
    tables = ("file_touches", "thread_signals", "_derived_dirty")
    before = {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    assert before["file_touches"] and before["thread_signals"] and not before["_derived_dirty"]
    rebuild(db)
    after = {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables}
    assert after == before
    # every thread queued with the tables empty (what migration m110 does to an older archive)
    from archive.derived import refresh

    db.execute("DELETE FROM file_touches")
    db.execute("DELETE FROM thread_signals")

    db.execute("INSERT INTO _derived_dirty SELECT id FROM threads")
    refresh(db.conn)
    assert {t: sorted(db.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables} == before
