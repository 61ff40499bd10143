"""The web side of issue 42 in-process through ``ds.client``: the file page's timeline, the
session list's outcome/errors/active columns, filters and sorts, and the conversation
page's signals panel (archive/web/files.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from archive.db import open_db
from archive.ingest import ingest_paths
from archive.marks import star, tag
from archive.serve import make_datasette
from test_datasette import run

REC = Path(__file__).parent / "fixtures" / "recorded"
CLAUDE_FILES = REC / "claude-code-2.1.332" / "files"
CODEX_PATCH = REC / "codex-0.171.0" / "patch"
CLAUDE_ID = "0ad0b999-f830-47c4-94d7-486ac7956ab1"


@pytest.fixture(scope="module")
def ds(tmp_path_factory: pytest.TempPathFactory) -> Any:
    d = tmp_path_factory.mktemp("webfiles")
    db = open_db(d / "a.db")
    assert not ingest_paths(db, [CLAUDE_FILES, CODEX_PATCH]).failed
    tag(db.conn, CLAUDE_ID, ["keep"])
    star(db.conn, CLAUDE_ID)
    db.conn.close()
    return make_datasette(d / "a.db")


def get(ds: Any, url: str) -> Any:
    async def go() -> Any:
        await ds.invoke_startup()
        return await ds.client.get(url)

    return run(go())


def test_the_file_page_shows_both_vendors_calls_with_their_changes(ds: Any) -> None:
    r = get(ds, "/-/sesh/file?path=hello.py")
    assert r.status_code == 200
    html = r.text
    assert "/tmp/sesh-record/claude-code-files/work/hello.py" in html and "/tmp/sesh-record/codex-patch/work/hello.py" in html
    assert "Edit" in html and "apply_patch" in html and "+print(&#39;hello, world&#39;)" in html
    assert "in 2 sessions" in html
    assert "No tool call in the archive names this file" in get(ds, "/-/sesh/file?path=nothing.here").text


def test_session_list_columns_filters_and_sorts(ds: Any) -> None:
    html = get(ds, "/-/sesh/sessions").text
    assert "<th>outcome</th>" in html and "tool errors" in html and 'class="sesh-badge sesh-tag">keep<' in html
    only = get(ds, "/-/sesh/sessions?tag=keep").text
    assert CLAUDE_ID in only and "1 session" in only
    assert "1 session" in get(ds, "/-/sesh/sessions?starred=1").text
    assert get(ds, "/-/sesh/sessions?sort=errors").status_code == 200
    assert get(ds, "/-/sesh/sessions?sort=active").status_code == 200
    assert "0 sessions" in get(ds, "/-/sesh/sessions?outcome=running").text
    assert get(ds, "/-/sesh/sessions?outcome=bogus").status_code == 400


def test_the_conversation_page_shows_signals_marks_and_changed_files(ds: Any) -> None:
    html = get(ds, f"/-/sesh/thread/{CLAUDE_ID}").text
    assert 'class="sesh-meta sesh-signals"' in html and "tool calls" in html and "starred" in html
    assert "/-/sesh/file?path=%2Ftmp%2Fsesh-record%2Fclaude-code-files%2Fwork%2Fhello.py" in html
