"""Issue 22, the everyday CLI: cron safety, the database path, serve, progress, time zones,
show, threads, prices, tool kinds and wording, each through the CLI (click's runner or a
subprocess)."""

from __future__ import annotations

import datetime as dt
import json
import os
import pty
import re
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_paths
from archive.model import Message, Text, Thread
from archive.store import SqliteMessageStore

FIX = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).parent.parent
CLAUDE = FIX / "claude-code" / "recorded" / "cc-2.1.197-bash-resume.jsonl"
AGTRACE = FIX / "codex" / "lanegrid__agtrace__codex_session.jsonl"
CODEX171 = FIX / "codex" / "recorded" / "codex-0.171.0-exec-resume.jsonl"
SIDECHAINS = FIX / "claude-code" / "d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
INIT = FIX / "claude-code" / "d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
FILES = (FIX / "recorded" / "claude-code-2.1.197" / "files" / "projects" / "-tmp-sesh-record-claude-code-files-work"
         / "3173dbe4-d1d1-4bf2-a8b8-76f39befa950.jsonl")
T_CLAUDE = "7767af10-96b1-4f0a-b48d-8e085110fdc1"
T_SIDE = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def invoke(*args: str, env: dict[str, str] | None = None, code: int = 0, color: bool = False) -> tuple[str, str]:
    r = CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False, color=color)
    assert r.exit_code == code, (r.exit_code, r.stdout, r.stderr)
    return r.stdout, r.stderr


def build(path: Path, files: list[Path]) -> Path:
    db = open_db(path)
    assert not ingest_paths(db, files).failed
    db.conn.close()
    return path


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("ev") / "a.db", [CLAUDE, AGTRACE, CODEX171])


def env_sub(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SESH_", "COLUMNS", "LESS", "PAGER"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "d"), XDG_STATE_HOME=str(home / "s"),
               CLAUDE_CONFIG_DIR=str(home / "c"), CODEX_HOME=str(home / "x"), PYTHONPATH=str(ROOT), TZ="UTC")  # fmt: skip
    env.update(extra)
    return env


# ---------------------------------------------------------------- 1. cron safety


def test_ingest_of_a_missing_path_exits_1(tmp_path: Path) -> None:
    _, err = invoke("--db", str(tmp_path / "a.db"), "ingest", str(tmp_path / "nope"), code=1)
    assert "not found" in err and "1 problem," in err
    # a real file next to the missing one is still ingested, and the run still exits 1
    out, _ = invoke("--db", str(tmp_path / "a.db"), "ingest", "--json", str(CLAUDE), str(tmp_path / "nope"), code=1)
    assert json.loads(out)["files_changed"] == 1


def test_first_run_that_finds_nothing_names_the_folders(tmp_path: Path) -> None:
    from archive.vendors import VENDORS

    _, err = invoke("--db", str(tmp_path / "a.db"), "ingest")
    assert "no session files found; searched:" in err
    home = Path(os.environ["HOME"])
    for a in VENDORS:
        for root in a.default_roots(os.environ, home):
            assert f"{a.name}: " in err and str(root) in err
    _, err = invoke("--db", str(tmp_path / "a.db"), "ingest", "--quiet")
    assert "searched" not in err  # cron output unchanged


# ---------------------------------------------------------------- 2. database path


def test_db_after_the_subcommand_and_env(archive: Path, tmp_path: Path) -> None:
    before = json.loads(invoke("--db", str(archive), "status", "--json")[0])
    after = json.loads(invoke("status", "--json", "--db", str(archive))[0])
    env = json.loads(invoke("status", "--json", env={"SESH_ARCHIVE_DB": str(archive)})[0])
    assert before == after == env and before["database"] == str(archive)
    # after the subcommand wins over before it
    assert json.loads(invoke("--db", str(tmp_path / "x.db"), "threads", "--json", "--db", str(archive))[0])
    db = tmp_path / "later.db"
    invoke("ingest", "--db", str(db), str(CLAUDE))
    assert db.exists()


@pytest.mark.parametrize("args", [["status"], ["threads"], ["search", "x"], ["show", "x"], ["stats"],
                                  ["emit", "x", "--to", "canonical"], ["restore", "OUT"], ["serve"],
                                  ["rebuild"]])  # fmt: skip
def test_read_commands_never_create_an_archive(tmp_path: Path, args: list[str]) -> None:
    db = tmp_path / "sub" / "none.db"
    args = [str(tmp_path / "out") if a == "OUT" else a for a in args]
    _, err = invoke(*args, "--db", str(db), code=1)
    assert err.strip() == f"Error: no archive at {db}: run `sesh-archive ingest` first (or give --db)"
    assert not db.exists() and not db.parent.exists()


def test_a_file_that_is_not_an_archive_is_one_line(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello\n" * 100)
    other = tmp_path / "other.db"
    import sqlite3

    c = sqlite3.connect(other)
    c.execute("CREATE TABLE x (a)")
    c.commit()
    c.close()
    for path in (text, other):
        before = path.read_bytes()
        for args in (["status"], ["threads"], ["stats"], ["ingest", str(CLAUDE)]):
            _, err = invoke("--db", str(path), *args, code=1)
            assert len(err.strip().splitlines()) == 1 and "is not a sesh-archive database" in err, err
        assert path.read_bytes() == before  # nothing migrated into someone else's file


def test_an_archive_stopped_before_its_first_migration_is_ingested_into(tmp_path: Path) -> None:
    """SIGKILL right after the file was created (WAL set, no table yet) leaves an SQLite file
    with no tables: the next ingest carries on (the crash loop met this)."""
    import sqlite3

    db = tmp_path / "a.db"
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode = WAL")
    c.close()
    assert db.stat().st_size > 0
    invoke("--db", str(db), "ingest", str(CLAUDE))
    assert json.loads(invoke("--db", str(db), "threads", "--json")[0])
    # killed a little later: sqlite-utils' migrations table exists, the first migration not
    db2 = tmp_path / "b.db"
    c = sqlite3.connect(db2)
    c.execute("CREATE TABLE _sqlite_migrations (id INTEGER PRIMARY KEY, migration_set TEXT, name TEXT, applied_at TEXT)")
    c.commit()
    c.close()
    invoke("--db", str(db2), "ingest", str(CLAUDE))
    assert json.loads(invoke("--db", str(db2), "threads", "--json")[0])



def test_an_archive_killed_while_its_file_was_set_up_is_ingested_into(tmp_path: Path) -> None:
    """SQLite switches a new file to WAL through a rollback journal. Killed in that moment, the
    first ingest left a file with a journal to roll back, which the read-only check may not do
    (SQLITE_READONLY_ROLLBACK): every later run, read commands too, said the file was "not a
    sesh-archive database" (the crash loop met it once in CI). The check now lets SQLite
    recover it, and the next ingest carries on."""
    writer = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA cache_size = 1')\n"
        "c.execute('CREATE TABLE _sqlite_migrations (id INTEGER PRIMARY KEY, migration_set TEXT, name TEXT, '\n"
        "          'applied_at TEXT)')\n"
        "c.execute('BEGIN')\n"
        "c.executemany('INSERT INTO _sqlite_migrations (name) VALUES (?)', [(str(i) * 50,) for i in range(5000)])\n"
        "os._exit(0)  # killed mid-transaction: the journal stays, hot\n"
    )
    db = tmp_path / "a.db"
    subprocess.run([sys.executable, "-c", writer, str(db)], check=True)
    assert Path(f"{db}-journal").stat().st_size > 0 and db.stat().st_size > 0
    invoke("--db", str(db), "ingest", str(CLAUDE))
    assert json.loads(invoke("--db", str(db), "threads", "--json")[0])
    assert not Path(f"{db}-journal").exists() or Path(f"{db}-journal").stat().st_size == 0


# ---------------------------------------------------------------- 3. serve


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_prints_its_url_and_a_taken_port_is_exit_1(archive: Path, tmp_path: Path) -> None:
    port = _free_port()
    env = env_sub(tmp_path)
    # --no-watch: the module's archive is shared with later tests; a watcher's pass would write to it
    p = subprocess.Popen([sys.executable, "-m", "archive", "--db", str(archive), "serve", "-p", str(port), "--no-watch"],
                         stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True)  # fmt: skip
    try:
        line = p.stderr.readline()  # type: ignore[union-attr]
        assert f"http://127.0.0.1:{port}/" in line and "Ctrl-C to stop" in line
        for _ in range(100):  # wait until it listens
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        taken = subprocess.run([sys.executable, "-m", "archive", "--db", str(archive), "serve", "-p", str(port)],
                               check=False, capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
        assert taken.returncode == 1
        assert taken.stderr.strip() == f"Error: port {port} on 127.0.0.1 is in use: stop the other server or pick --port"
    finally:
        p.terminate()
        p.wait(timeout=30)


# ---------------------------------------------------------------- 4. progress


def _pty_run(args: list[str], env: dict[str, str], stdout_tty: bool = False) -> tuple[str, str, int]:
    """Run with stderr (and optionally stdout) on a pseudo-terminal; (stdout, tty text, rc)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "archive", *args], stdin=slave if stdout_tty else subprocess.DEVNULL,
                         stdout=slave if stdout_tty else subprocess.PIPE, stderr=slave, env=env)  # fmt: skip
    os.close(slave)
    chunks: list[bytes] = []
    out = b""
    while True:
        r, _, _ = select.select([master], [], [], 30)
        if not r:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    if not stdout_tty:
        out = p.stdout.read()  # type: ignore[union-attr]
    rc = p.wait(timeout=60)
    os.close(master)
    return out.decode(), b"".join(chunks).decode(errors="replace"), rc


def test_progress_bar_on_a_tty_only(tmp_path: Path) -> None:
    env = env_sub(tmp_path)
    _, tty, rc = _pty_run(["--db", str(tmp_path / "a.db"), "ingest", str(FIX / "codex")], env)
    assert rc == 0 and "%" in tty and re.search(r"\d+/\d+ files", tty) and "MB/s" in tty
    _, tty, rc = _pty_run(["--db", str(tmp_path / "b.db"), "ingest", "--quiet", str(FIX / "codex")], env)
    assert rc == 0 and "%" not in tty and "files," not in tty
    piped = subprocess.run([sys.executable, "-m", "archive", "--db", str(tmp_path / "c.db"), "ingest", str(FIX / "codex")],
                           check=False, capture_output=True, text=True, env=env)  # fmt: skip
    assert piped.returncode == 0 and piped.stderr.startswith("ingest: ") and "%" not in piped.stderr


# ---------------------------------------------------------------- 5. time zones


@pytest.fixture(scope="module")
def midnight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Claude session moved to 23:31 UTC on 2026-11-30: 00:31 on 1 December in Paris,
    18:31 on 30 November in New York."""
    d = tmp_path_factory.mktemp("midnight")
    f = d / "late.jsonl"
    f.write_bytes(CLAUDE.read_bytes().replace(b'"2026-11-30T00:', b'"2026-11-30T23:'))
    return build(d / "m.db", [f])


def test_local_day_buckets_follow_tz(midnight: Path) -> None:
    def days(*args: str, env: dict[str, str] | None = None) -> dict[str, int]:
        rep = json.loads(invoke("--db", str(midnight), "stats", "--json", *args, env=env)[0])
        return rep["tz"], {r["key"]: r["responses"] for r in rep["rows"]}

    assert days(env={"TZ": "Europe/Paris"}) == ("Europe/Paris", {"2026-12-01": 3})
    assert days("--by", "month", env={"TZ": "Europe/Paris"}) == ("Europe/Paris", {"2026-12": 3})
    assert days("--utc", env={"TZ": "Europe/Paris"}) == ("UTC", {"2026-11-30": 3})
    assert days("--tz", "America/New_York") == ("America/New_York", {"2026-11-30": 3})
    assert days(env={"TZ": "UTC"}) == ("UTC", {"2026-11-30": 3})
    # the local day is also what --since/--until mean
    assert days("--since", "2026-12-01", env={"TZ": "Europe/Paris"})[1] == {"2026-12-01": 3}
    assert days("--since", "2026-12-01", "--utc")[1] == {}
    assert days("--until", "2026-11-30", "--by", "model", env={"TZ": "Europe/Paris"})[1] == {}
    assert days("--until", "2026-11-30", "--by", "model", "--utc")[1] == {"claude-opus-4-8": 3}
    out, _ = invoke("--db", str(midnight), "stats", env={"TZ": "Europe/Paris"})
    assert out.splitlines()[0].startswith("DAY (Europe/Paris)")
    invoke("--db", str(midnight), "stats", "--tz", "Mars/Olympus", code=2)


def test_local_days_equal_utc_days_in_utc(archive: Path) -> None:
    """The quarter-hour path (any zone) and the daily-totals path (UTC) agree on UTC days."""
    from archive.pricing import load_prices
    from archive.queries import stats

    db = open_db(archive)
    for by in ("day", "week", "month"):
        fast = stats(db, by, load_prices(env={}), tz="UTC")
        # Africa/Abidjan is UTC+0 all year but not spelled UTC: it takes the per-response path
        slow = stats(db, by, load_prices(env={}), tz="Africa/Abidjan")
        assert fast["rows"] == slow["rows"] and fast["total"] == slow["total"]


def test_show_and_threads_times_in_the_zone(midnight: Path) -> None:
    out, _ = invoke("--db", str(midnight), "show", T_CLAUDE, env={"TZ": "Europe/Paris"})
    assert "started: 2026-12-01 00:31" in out and "(Europe/Paris)" in out
    out, _ = invoke("--db", str(midnight), "show", T_CLAUDE, "--utc")
    assert "started: 2026-11-30 23:31" in out
    out, _ = invoke("--db", str(midnight), "threads", env={"TZ": "Europe/Paris"})
    assert out.splitlines()[0].split()[:3] == ["ID", "LAST", "(CET)"] and "2026-12-01 00:3" in out


def test_relative_since() -> None:
    from archive.queries import parse_time

    now = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)
    assert parse_time("yesterday", now=now) == "2026-11-29"
    assert parse_time("yesterday", end=True, now=now) == "2026-11-30"
    assert parse_time("today", now=now) == "2026-11-30"
    assert parse_time("7d", now=now) == "2026-11-23"
    assert parse_time("2w", now=now) == "2026-11-16"
    assert parse_time("12h", now=now) == "2026-11-30T00:00:00"
    assert parse_time("2026-11-01", tz="Europe/Paris") == "2026-10-31T23:00:00"
    # 00:30 in Paris is still the 29th in UTC, but "yesterday" there is the 29th of Paris
    late = dt.datetime(2026, 11, 29, 23, 30, tzinfo=dt.timezone.utc)
    assert parse_time("yesterday", tz="Europe/Paris", now=late) == "2026-11-28T23:00:00"
    with pytest.raises(ValueError):
        parse_time("last tuesday")


def test_relative_since_through_the_cli(archive: Path) -> None:
    days = (dt.date.today() - dt.date(2026, 11, 30)).days
    rows = json.loads(invoke("--db", str(archive), "threads", "--json", "--since", f"{days}d", env={"TZ": "UTC"})[0])
    assert T_CLAUDE in {r["id"] for r in rows} and "019b04ae-b1c6-7c72-a134-a4c2de66058c" not in {r["id"] for r in rows}
    rows = json.loads(invoke("--db", str(archive), "threads", "--json", "--since", "yesterday", "--until", "yesterday")[0])
    assert all(r["last_ts"] >= (dt.date.today() - dt.timedelta(days=2)).isoformat() for r in rows)


# ---------------------------------------------------------------- 6. show


def test_show_pages_on_a_tty_and_not_with_no_pager(archive: Path, tmp_path: Path) -> None:
    env = env_sub(tmp_path, PAGER="sed s/^/PAGED:/")
    _, tty, rc = _pty_run(["--db", str(archive), "show", T_CLAUDE], env, stdout_tty=True)
    assert rc == 0 and "PAGED:" in tty and "SUBTASK" in tty
    _, tty, rc = _pty_run(["--db", str(archive), "show", T_CLAUDE, "--no-pager"], env, stdout_tty=True)
    assert rc == 0 and "PAGED:" not in tty and "SUBTASK" in tty
    out, _ = invoke("--db", str(archive), "show", T_CLAUDE)  # piped: never paged
    assert "PAGED" not in out


def test_show_wraps_puts_results_under_their_call_and_diffs_edits(tmp_path: Path) -> None:
    db = build(tmp_path / "f.db", [FILES])
    out, _ = invoke("--db", str(db), "show", "3173dbe4", env={"COLUMNS": "40"}, color=True)
    plain = ANSI.sub("", out).splitlines()
    # Edit: a diff, red minus and green plus, then the result right under it, no header between
    i = next(n for n, line in enumerate(plain) if line.startswith("▸ Edit "))
    assert plain[i + 1 : i + 4] == ["  @@ -1 +1 @@", "  -print('hello')", "  +print('hello, world')"]
    assert plain[i + 4].startswith("  ◂ Edit: The file")
    assert "\x1b[31m-print('hello')" in out and "\x1b[32m+print('hello, world')" in out
    w = next(n for n, line in enumerate(plain) if line.startswith("▸ Write "))
    assert plain[w + 1] == "  +print('hello')" and plain[w + 2].startswith("  ◂ Write: File created")
    # text wrapped to 40 columns
    assert all(len(line) <= 40 for line in plain if not line.startswith(("▸", "  ◂", "──", "id:", "project:", "±")))


def test_show_reads_messages_a_page_at_a_time(tmp_path: Path) -> None:
    from archive.projection import load_messages
    from archive.thread_view import MessagePages, load_view

    store = SqliteMessageStore(tmp_path / "a.db")
    store.put_thread(Thread(id="big", created_at="2026-01-01T00:00:00Z"))
    for i in range(1234):
        store.append_message(Message(id=f"m{i:05d}", thread_id="big", role="user" if i % 2 else "assistant",
                                     ts=f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", content=[Text(text=f"n{i}")]))  # fmt: skip
    db = open_db(tmp_path / "a.db")
    pages = MessagePages(db, "big", page=100)
    assert len(pages) == 1234
    assert [m.to_dict() for m in pages] == [m.to_dict() for m in load_messages(db.conn, "m.thread_id = ?", ("big",))]
    assert len(list(pages)) == 1234  # iterable again
    view = load_view(db, "big")
    assert isinstance(view.messages, MessagePages)
    out, err = invoke("--db", str(tmp_path / "a.db"), "show", "big", "--format", "json")
    assert len(out.splitlines()) == 1235 and err.startswith("1,234 messages")


# ---------------------------------------------------------------- 7. threads


def test_threads_fit_80_columns_with_short_ids(archive: Path) -> None:
    out, _ = invoke("--db", str(archive), "threads", env={"COLUMNS": "80"})
    lines = out.splitlines()
    assert lines and all(len(line) <= 80 for line in lines), [len(x) for x in lines]
    assert lines[1].split()[0] == "01a229dd" and "PROJECT" not in lines[0]
    wide, _ = invoke("--db", str(archive), "threads", env={"COLUMNS": "120"})
    assert "PROJECT" in wide.splitlines()[0] and all(len(line) <= 120 for line in wide.splitlines())
    # a short id is enough for show
    invoke("--db", str(archive), "show", "01a229dd")


def test_threads_fold_subagents_and_hide_empty(tmp_path: Path) -> None:
    db = build(tmp_path / "s.db", [SIDECHAINS])
    store = SqliteMessageStore(db)
    store.put_thread(Thread(id="empty-thread", created_at="2026-01-01T00:00:00Z"))
    top = json.loads(invoke("--db", str(db), "threads", "--json")[0])
    assert [r["id"] for r in top] == [T_SIDE] and top[0]["children"] == 2
    out, _ = invoke("--db", str(db), "threads")
    assert "+2 " in out
    everything = json.loads(invoke("--db", str(db), "threads", "--json", "--all")[0])
    assert len(everything) == 4 and "empty-thread" in {r["id"] for r in everything}
    with_empty = json.loads(invoke("--db", str(db), "threads", "--json", "--empty")[0])
    assert {r["id"] for r in with_empty} == {T_SIDE, "empty-thread"}


def test_labels_are_never_harness_tags(tmp_path: Path) -> None:
    from archive.queries import prompt_label

    db = build(tmp_path / "l.db", [INIT, SIDECHAINS])
    labels = {r["id"]: r["label"] for r in json.loads(invoke("--db", str(db), "threads", "--json", "--all")[0])}
    assert labels["1af7fc5e-8455-4414-9ccd-011d40f70b2a"] == "/init"
    assert labels[T_SIDE] == "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"
    assert not any("<" in (v or "") and "command" in (v or "") for v in labels.values())
    assert prompt_label("<command-message>foo</command-message><command-name>/foo</command-name>"
                        "<command-args>x</command-args>") == "/foo x"  # fmt: skip
    caveat = ("<local-command-caveat>Caveat: The messages below were generated by the user while running local "
              "commands. DO NOT respond.</local-command-caveat>")  # fmt: skip
    assert prompt_label(caveat) is None
    assert prompt_label("<local-command-stdout>ok</local-command-stdout>") is None
    assert prompt_label("<system-reminder>x</system-reminder>fix the bug") == "fix the bug"
    # the label falls back to the next real prompt
    store = SqliteMessageStore(tmp_path / "l.db")
    store.put_thread(Thread(id="t-caveat", created_at="2026-01-01T00:00:00Z"))
    for i, text in enumerate([caveat, "<local-command-stdout>ok</local-command-stdout>", "rename the module"]):
        store.append_message(Message(id=f"c{i}", thread_id="t-caveat", role="user", ts=f"2026-01-01T00:00:0{i}Z",
                                     content=[Text(text=text)]))  # fmt: skip
    rows = json.loads(invoke("--db", str(tmp_path / "l.db"), "threads", "--json", "--thread", "t-caveat")[0])
    assert rows[0]["label"] == "rename the module"


# ---------------------------------------------------------------- 8. prices


def test_current_models_are_priced_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx2

    from archive.pricing import load_prices

    def no_network(*a: object, **k: object) -> None:
        raise AssertionError("pricing must not touch the network")

    monkeypatch.setattr(httpx2, "get", no_network)
    t = load_prices(env={})
    for model in ("claude-opus-4-8", "claude-opus-4-8[1m]", "gpt-5.3-codex", "claude-sonnet-4-5-20250929"):
        assert t.lookup(model) is not None, model
    assert t.lookup("claude-opus-4-8")[1].to_dict() == {"input": 5.0, "output": 25.0, "cache_read": 0.5, "cache_write": 6.25}
    p = t.lookup("gpt-5.3-codex")[1]
    assert p.cache_write == p.input  # OpenAI: no separate cache-write charge
    # never a guess across versions, bundled table or database
    assert t.lookup("claude-opus-4-10") is None and t.lookup("gpt-5x") is None and t.lookup("acme-model-9") is None
    d = t.describe()["database"]
    assert d["name"] == "genai-prices" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", d["as_of"])
    # the bundled table still wins for the models it names
    assert t.lookup("gpt-5.1-codex")[0] == "gpt-5.1-codex"


def test_unpriced_models_are_flagged_and_costs_per_thread(tmp_path: Path) -> None:
    f = tmp_path / "odd.jsonl"
    f.write_bytes(CLAUDE.read_bytes().replace(b'"claude-opus-4-8"', b'"acme-model-9"'))
    db = build(tmp_path / "u.db", [f, CODEX171])
    rep = json.loads(invoke("--db", str(db), "stats", "--by", "model", "--json")[0])
    assert rep["unpriced_models"] == [{"provider": "claude-code", "model": "acme-model-9", "responses": 3}]
    _, err = invoke("--db", str(db), "stats", "--by", "model")
    assert "no price for claude-code model acme-model-9 (3 responses)" in err and "genai-prices" in err
    rows = {r["id"]: r for r in json.loads(invoke("--db", str(db), "threads", "--json")[0])}
    assert rows[T_CLAUDE]["cost_usd"] is None and rows[T_CLAUDE]["unpriced_models"] == ["acme-model-9"]
    assert rows["01a229dd-03c9-7373-8563-568dd22f194d"]["cost_usd"] == pytest.approx(345 / 1e6)


def test_stats_by_thread_and_for_one_thread(archive: Path) -> None:
    rep = json.loads(invoke("--db", str(archive), "stats", "--by", "thread", "--json")[0])
    rows = {r["key"]: r for r in rep["rows"]}
    assert rows[T_CLAUDE]["responses"] == 3 and rows[T_CLAUDE]["cost_usd"] == pytest.approx(19837.5 / 1e6)
    assert rows[T_CLAUDE]["label"].startswith("SUBTASK")
    one = json.loads(invoke("--db", str(archive), "stats", "--thread", T_CLAUDE[:8], "--by", "model", "--json")[0])
    assert one["thread"] == T_CLAUDE and [r["model"] for r in one["rows"]] == ["claude-opus-4-8"]
    assert one["total"]["responses"] == 3
    out, _ = invoke("--db", str(archive), "stats", "--by", "thread")
    assert out.splitlines()[0].startswith("THREAD") and T_CLAUDE[:12] in out


# ---------------------------------------------------------------- 9. tool kinds


def test_every_adapter_maps_tools_to_neutral_kinds() -> None:
    from archive.vendors import VENDORS

    kinds = {"shell", "edit", "read", "search", "web", "agent", "plan"}
    mapped = [a for a in VENDORS if a.tool_kinds]
    assert len(mapped) >= 3
    for a in mapped:
        assert set(a.tool_kinds.values()) <= kinds, a.name


# ---------------------------------------------------------------- 10. wording


def test_wording_singular_and_thousands(archive: Path, tmp_path: Path) -> None:
    _, err = invoke("--db", str(archive), "search", "hoge", "--limit", "1")
    assert err.startswith("1 hit (limit reached)")
    _, err = invoke("--db", str(archive), "threads", "--limit", "1")
    assert err.startswith("1 session ")
    out, _ = invoke("--db", str(archive), "status")
    size = os.path.getsize(archive)
    assert f"({size:,} bytes)" in out and "1 source," in out and "1 thread," in out
    _, err = invoke("--db", str(archive), "rebuild")
    assert "messages rebuilt" in err and "messages added" not in err and "0 problems" in err
    out, _ = invoke("--db", str(archive), "status")
    assert "messages rebuilt" in out
    f = tmp_path / "odd.jsonl"
    f.write_bytes(CLAUDE.read_bytes().replace(b'"claude-opus-4-8"', b'"acme-model-9"'))
    db = build(tmp_path / "u.db", [f])
    _, err = invoke("--db", str(db), "stats")
    assert "(3 responses)" in err


def test_a_short_id_names_a_parent_with_many_children(tmp_path: Path) -> None:
    """threads prints 8-character ids; show must take one even when more than 20 child
    threads (``<id>/agent-…``) share it."""
    store = SqliteMessageStore(tmp_path / "k.db")
    store.put_thread(Thread(id="abcdef12-parent", created_at="2026-01-01T00:00:00Z"))
    store.append_message(Message(id="p0", thread_id="abcdef12-parent", role="user", ts="2026-01-01T00:00:00Z",
                                 content=[Text(text="lead the agents")]))  # fmt: skip
    for i in range(25):
        store.put_thread(Thread(id=f"abcdef12-parent/agent-{i:02d}", created_at="2026-01-01T00:00:01Z",
                                parent_thread_id="abcdef12-parent"))  # fmt: skip
    out, _ = invoke("--db", str(tmp_path / "k.db"), "threads")
    assert out.splitlines()[1].split()[0] == "abcdef12" and "+25 lead the agents" in out
    out, err = invoke("--db", str(tmp_path / "k.db"), "show", "abcdef12")
    assert "id: abcdef12-parent" in out and "25 child threads" in err
    store.put_thread(Thread(id="abcdef12-other", created_at="2026-01-01T00:00:00Z"))
    _, err = invoke("--db", str(tmp_path / "k.db"), "show", "abcdef12", code=1)
    assert "matches" in err


ZONES = ["Europe/Paris", "America/New_York", "Asia/Kolkata", "Asia/Kathmandu", "Pacific/Chatham", "America/St_Johns",
         "Pacific/Kiritimati", "Pacific/Pago_Pago", "America/Santiago", "Australia/Lord_Howe", "UTC"]  # fmt: skip


@pytest.fixture(scope="module")
def spread(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 responses at random instants over 21 months (DST changes both ways, responses
    minutes from midnight), some without a time."""
    import random

    from archive.vendors import names

    path = tmp_path_factory.mktemp("spread") / "s.db"
    db = open_db(path)
    rnd = random.Random(22)
    start = dt.datetime(2025, 3, 1, tzinfo=dt.timezone.utc).timestamp()
    provs = names()[:3]
    rows = []
    for i in range(3000):
        t = dt.datetime.fromtimestamp(start + rnd.random() * 640 * 86400, dt.timezone.utc)
        if i % 7 == 0:  # close to a midnight somewhere
            t = t.replace(minute=rnd.choice([0, 29, 30, 44, 45, 59]), second=rnd.choice([0, 59]))
        ts = None if i % 97 == 0 else t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
        rows.append((f"k{i}", f"t{i % 40}", provs[i % 3], ["m-a", "m-b", None][i % 5 % 3], ts,
                     rnd.randint(0, 900), rnd.randint(0, 90), rnd.randint(0, 5000), rnd.randint(0, 50), 0, 1, 1, i))  # fmt: skip
    db.conn.execute("BEGIN")
    db.conn.executemany(
        "INSERT INTO usage (key, thread_id, provider, model, ts, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens, reasoning_tokens, source_id, generation, offset) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)  # fmt: skip
    db.conn.execute("COMMIT")
    db.conn.close()
    store = SqliteMessageStore(path)  # threads with folders; odd ones are subagents of the one before
    for i in range(40):
        store.put_thread(Thread(id=f"t{i}", created_at="2025-03-01T00:00:00Z", parent_thread_id=f"t{i - 1}" if i % 2 else None,
                                metadata=None if i % 2 else {"cwd": f"/src/p{i % 6}"}))  # fmt: skip
    return path


def _oracle(db_path: Path, tz: str, by: str, since: dt.date | None = None, until: dt.date | None = None) -> dict:
    """Every response mapped to its local day one by one (zoneinfo), summed in Python."""
    from zoneinfo import ZoneInfo

    z = dt.timezone.utc if tz == "UTC" else ZoneInfo(tz)
    db = open_db(db_path)
    out: dict = {}
    for prov, model, ts, inp, outp, cr, cw, project in db.execute(
        "SELECT provider, model, ts, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, project "
        "FROM usage_responses"
    ):
        day = dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(z).date() if ts else None
        if (since or until) and (day is None or (since and day < since) or (until and day > until)):
            continue
        key = {"day": day and day.isoformat(), "month": day and day.isoformat()[:7], "model": (prov, model),
               "provider": prov, "project": project}[by]  # fmt: skip
        g = out.setdefault(key, [0, 0, 0, 0, 0])
        for i, v in enumerate((1, inp, outp, cr, cw)):
            g[i] += v
    return out


@pytest.mark.parametrize("tz", ZONES)
def test_local_days_from_daily_totals_equal_every_response_mapped(spread: Path, tz: str) -> None:
    from archive.pricing import load_prices
    from archive.queries import stats

    db = open_db(spread)
    prices = load_prices(env={}, database=False)
    fields = ("responses", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    cases = [("day", None, None), ("month", None, None), ("day", "2025-10-20", "2025-11-05"),
             ("model", "2026-03-01", "2026-04-30"), ("provider", "2025-03-30", None), ("day", None, "2025-03-31"),
             ("project", "2025-10-26", "2026-03-29")]  # fmt: skip
    for by, since, until in cases:
        rep = stats(db, by, prices, tz=tz, since=since, until=until)
        got = {((r["provider"], r["model"]) if by == "model" else r["key"]): [r[f] for f in fields] for r in rep["rows"]}
        want = _oracle(spread, tz, by, since and dt.date.fromisoformat(since), until and dt.date.fromisoformat(until))
        assert got == want, (by, since, until)
    # the quarter-hour path (a bound within a day takes it) agrees too
    rep = stats(db, "day", prices, tz=tz, since="2025-01-01T00:00:00")
    got = {r["key"]: [r[f] for f in fields] for r in rep["rows"]}
    assert got == _oracle(spread, tz, "day", dt.date(2025, 1, 1))
