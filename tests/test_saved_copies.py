"""A ``/chat save`` checkpoint linked to the session it was saved from (issue 33,
``archive/saved_copies.py``): by content, in the same project folder, as a saved copy of that
session at one of its messages; shown by ``show`` and the web page; no link when no session
holds it; the same rows whatever order the files arrive in.

Inputs: the real Gemini CLI 0.19.4 and Qwen Code 0.1.4 recordings (three checkpoints beside the
session they were saved from, the third after ``/chat resume one``), the 0.1.22 recording (no
session file) and a public real checkpoint beside its session (tests/fixtures/gemini/public).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.db import dump_tables, open_db
from archive.ingest import IngestOptions, ingest_paths, rebuild
from archive.serve import make_datasette
from test_web import ok

RECORDED = Path(__file__).parent / "fixtures" / "recorded"
PUBLIC = Path(__file__).parent / "fixtures" / "gemini" / "public" / "KuantumQuest__MyDotFiles-HyDE"
HOMES = {"gemini-0.19.4": ".gemini", "qwen-0.1.4": ".qwen", "gemini-0.1.22": ".gemini"}


def tmp_folder(release: str) -> Path:
    (folder,) = (RECORDED / release / "checkpoints" / HOMES[release] / "tmp").iterdir()
    return folder


def options(home: Path, vendor: str) -> IngestOptions:
    return IngestOptions(providers=(vendor,), env={"HOME": str(home)}, idle_seconds=10**9)


def install(home: Path, release: str, names: list[str] | None = None) -> Path:
    """The release's project folder under ``home`` (only ``names`` when given)."""
    src = tmp_folder(release)
    dst = home / HOMES[release] / "tmp" / src.name
    for f in sorted(src.rglob("*")):
        if f.is_file() and (names is None or f.name in names):
            (dst / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dst / f.relative_to(src))
    return dst


def links(db) -> list[tuple[str, str, str]]:
    """(checkpoint title, session, text of the message it was saved at)."""
    return db.execute(
        "SELECT t.title, c.session_thread_id, (SELECT group_concat(b.text, '') FROM blocks b "
        "WHERE b.message_id = c.message_id AND b.type = 'text') FROM saved_copies c JOIN threads t ON t.id = c.thread_id "
        "ORDER BY t.title").fetchall()


@pytest.mark.parametrize("release", ["gemini-0.19.4", "qwen-0.1.4"])
def test_each_checkpoint_is_a_saved_copy_of_its_session(release: str, tmp_path: Path) -> None:
    """one and two end where the session stood when they were saved; three was saved after
    ``/chat resume one`` in the same session: the session's turns between are not in it, it
    is still that session's copy, at the answer after the resume."""
    vendor = release.split("-")[0]
    home = tmp_path / "home"
    folder = install(home, release)
    db = open_db(tmp_path / "a.db")
    assert ingest_paths(db, None, options(home, vendor)).failed == 0
    (doc,) = folder.glob("chats/session-*.json")
    sid = orjson.loads(doc.read_bytes())["sessionId"]
    answers = [m["content"] for m in orjson.loads(doc.read_bytes())["messages"] if m["type"] in ("gemini", "qwen")]
    got = links(db)
    assert [(title, session) for title, session, _ in got] == [
        ("checkpoint one", sid), ("checkpoint three", sid), ("checkpoint two", sid)]
    one, three, two = (text for _, _, text in got)
    assert one == answers[1] == "The second command failed as expected." or vendor == "qwen"
    assert (one, two, three) == (answers[-3], answers[-2], answers[-1])
    # rebuild derives the same rows; a rerun changes nothing
    before = dump_tables(db)
    assert ingest_paths(db, None, options(home, vendor)).files_changed == 0 and dump_tables(db) == before
    rebuild(db)
    assert dump_tables(db) == before


@pytest.mark.parametrize("first", [["checkpoint-one.json", "checkpoint-two.json", "checkpoint-three.json"],
                                   ["session"], ["checkpoint-three.json", "session"]])
def test_the_same_links_whatever_order_the_files_arrive_in(first: list[str], tmp_path: Path) -> None:
    release = "gemini-0.19.4"
    (doc,) = tmp_folder(release).glob("chats/session-*.json")
    names = [doc.name if n == "session" else n for n in first]
    whole = open_db(tmp_path / "whole.db")
    install(tmp_path / "all", release)
    ingest_paths(whole, None, options(tmp_path / "all", "gemini"))
    home = tmp_path / "home"
    install(home, release, names)
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, options(home, "gemini"))
    partial = links(db)
    assert len(partial) == (len(names) - 1 if doc.name in names else 0)
    install(home, release)
    ingest_paths(db, None, options(home, "gemini"))
    assert links(db) == links(whole) and len(links(db)) == 3
    tables = ("saved_copies", "threads")
    assert {t: dump_tables(db)[t] for t in tables} == {t: dump_tables(whole)[t] for t in tables}


def test_no_link_when_no_session_holds_it(tmp_path: Path) -> None:
    """Gemini CLI 0.1.22 writes no session file; a session of the folder that begins
    otherwise, or whose answer differs, holds no checkpoint."""
    home = tmp_path / "home"
    install(home, "gemini-0.1.22")
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, None, options(home, "gemini"))
    assert db.execute("SELECT count(*) FROM threads WHERE title LIKE 'checkpoint %'").fetchone()[0] == 3
    assert links(db) == []
    # the 0.19.4 session with its first answer changed: nothing holds checkpoint one/two/three
    home2 = tmp_path / "home2"
    folder = install(home2, "gemini-0.19.4")
    (doc,) = folder.glob("chats/session-*.json")
    d = orjson.loads(doc.read_bytes())
    d["messages"][1]["content"] = "Running something else."
    doc.write_bytes(orjson.dumps(d, option=orjson.OPT_INDENT_2))
    db2 = open_db(tmp_path / "b.db")
    ingest_paths(db2, None, options(home2, "gemini"))
    assert links(db2) == []
    assert db2.execute("SELECT count(*) FROM threads WHERE title LIKE 'checkpoint %'").fetchone()[0] == 3


def test_a_public_checkpoint_beside_its_session_shown_as_a_saved_copy(tmp_path: Path) -> None:
    """A real /chat save (September 2025) beside the session it was saved from: the
    checkpoint keeps thought signatures, the calls and their results, the session document
    only the texts; they match on prompts and answers, whitespace aside. ``show`` and the web
    page name the link both ways."""
    home = tmp_path / "home"
    shutil.copytree(PUBLIC, home / ".gemini" / "tmp")
    db_path = tmp_path / "a.db"
    db = open_db(db_path)
    assert ingest_paths(db, None, options(home, "gemini")).failed == 0
    sid = "90d45f43-a359-479a-beab-d75dd1c8359a"
    ((copy, session, mid),) = db.execute("SELECT thread_id, session_thread_id, message_id FROM saved_copies").fetchall()
    assert session == sid
    # saved at the session's last answer (the save came after it)
    last = db.execute("SELECT id FROM messages WHERE thread_id = ? AND role = 'assistant' "
                      "ORDER BY ts DESC LIMIT 1", (sid,)).fetchone()[0]
    assert mid == last
    shown = CliRunner().invoke(cli, ["--db", str(db_path), "show", copy, "--no-pager"], catch_exceptions=False).output
    assert f"saved copy of: {sid} at {mid}" in shown
    shown = CliRunner().invoke(cli, ["--db", str(db_path), "show", sid, "--no-pager"], catch_exceptions=False).output
    assert f"saved copies: {copy} (at {mid})" in shown
    ds = make_datasette(db_path)
    html = ok(ds, f"/-/sesh/thread/{copy}")
    assert "saved copy of" in html and f'href="/-/sesh/thread/{sid}"' in html
    assert "saved copies" in ok(ds, f"/-/sesh/thread/{sid}")

