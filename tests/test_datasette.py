"""Datasette: metadata matches the schema, canned queries run, search works, the conversation
page renders real fixture threads (child links, images from blobs), and serving is read-only
on loopback. In-process through ``ds.client``; no network beyond loopback."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import shutil
import struct
import threading
import time
import urllib.request
import zlib
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from archive import serve as serve_mod
from archive.cli import cli
from archive.datasette_plugin import render_markdown
from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths
from archive.serve import bound_url, load_metadata, make_datasette, make_server

FIXTURES = Path(__file__).parent / "fixtures"
NEVER_IDLE = IngestOptions(idle_seconds=10**9)
PARENT = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7"  # Claude Code session with two sidechains
SIDECHAIN = f"{PARENT}/sidechain-6340ddef-f656-4b72-a065-82390f637678"
CANON = "canon-thread-1"
CANON_CHILD = "canon-thread-1-child"


def tiny_png(w: int = 160, h: int = 48) -> bytes:
    """A valid PNG (an orange gradient), so browsers and the screenshot show a real image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(c for x in range(w) for c in (240, 60 + x, 20)) for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))  # fmt: skip


PNG = tiny_png()


def canonical_file(path: Path) -> Path:
    """A canonical thread with an image attachment, hostile text, and a child thread."""
    b64 = base64.b64encode(PNG).decode()
    svg = base64.b64encode(b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>").decode()
    records: list[dict[str, Any]] = [
        {"v": 1, "id": CANON, "createdAt": "2026-03-01T10:00:00Z", "title": "Screenshot review",
         "metadata": {"cwd": "/work/canon-project"}},
        {"v": 1, "id": "cm1", "threadId": CANON, "role": "user", "ts": "2026-03-01T10:00:01Z",
         "content": [{"type": "text", "text": "Why is the **zanzibarquux** button misaligned? <script>alert(1)</script>"},
                     {"type": "attachment", "mediaType": "image/png", "data": b64},
                     {"type": "attachment", "mediaType": "image/svg+xml", "data": svg}]},
        {"v": 1, "id": "cm2", "threadId": CANON, "role": "assistant", "ts": "2026-03-01T10:00:05Z",
         "content": [{"type": "text", "text": "Let me look.\n\n```css\n.btn { margin: 0 }\n```"},
                     {"type": "tool_call", "callId": "c1", "name": "Bash", "input": {"command": "grep -r btn src/"}}],
         "usage": {"inputTokens": 120, "outputTokens": 30}},
        {"v": 1, "id": "cm3", "threadId": CANON, "role": "tool", "ts": "2026-03-01T10:00:06Z",
         "content": [{"type": "tool_result", "callId": "c1", "output": "src/app.css: .btn { margin: 4px }", "isError": False}]},
        {"v": 1, "id": CANON_CHILD, "createdAt": "2026-03-01T10:00:07Z", "title": "Subagent: inspect CSS",
         "parentThreadId": CANON, "originMessageId": "cm2", "metadata": {"cwd": "/work/canon-project"}},
        {"v": 1, "id": "cc1", "threadId": CANON_CHILD, "role": "user", "ts": "2026-03-01T10:00:08Z",
         "content": [{"type": "text", "text": "Inspect the CSS of the button."}]},
    ]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


OLD_MTIME = 1_767_225_600  # 2026-01-01: long before any run of the suite


def aged_copies(files: list[Path], into: Path) -> list[Path]:
    """Copies of ``files`` under ``into`` (``<vendor dir>/<name>``) whose mtime is long past.

    A fresh checkout gives the fixtures the checkout's time, and a source changed in the last
    minutes marks its session "being written" on the web pages: the copies keep every page the
    same whenever the suite runs."""
    out = []
    for f in files:
        dest = into / f.parent.name / f.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, dest)
        os.utime(dest, (OLD_MTIME, OLD_MTIME))
        out.append(dest)
    return out


def build_archive(path: Path, extra: Path) -> Path:
    db = open_db(path)
    files = sorted((FIXTURES / "claude-code").glob("*.jsonl")) + sorted((FIXTURES / "codex").glob("*.jsonl"))
    files = aged_copies(files + [FIXTURES / "clm" / "20260824-060842-544d4eb3.jsonl"], path.parent / "sources")
    canonical = canonical_file(extra)
    os.utime(canonical, (OLD_MTIME, OLD_MTIME))  # written just now: as old as the copies
    files += [canonical]
    for f in files:
        ingest_paths(db, [f], NEVER_IDLE)
    db.conn.close()
    return path


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("ds")
    return build_archive(d / "archive.db", d / "canon.jsonl")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def fetch(ds: Any, *urls: str) -> list[Any]:
    await ds.invoke_startup()
    out = []
    for url in urls:
        r = await ds.client.get(url)
        assert r.status_code == 200, (url, r.status_code, r.text[:500])
        out.append(r)
    return out


# ---------------------------------------------------------------- metadata


def test_every_table_and_column_in_the_metadata_exists(archive_path: Path):
    db = open_db(archive_path)
    tables = load_metadata()["databases"]["archive"]["tables"]
    existing = set(db.table_names()) | set(db.view_names())
    for name, meta in tables.items():
        assert name in existing, name
        cols = {r[1] for r in db.execute(f"PRAGMA table_xinfo([{name}])")}
        named = set(meta.get("columns", {})) | set(meta.get("facets", []))
        named |= {meta[k] for k in ("sort", "sort_desc", "label_column", "fts_pk") if k in meta}
        assert named <= cols, (name, named - cols)
        if "fts_table" in meta:
            assert meta["fts_table"] in existing


def test_every_visible_table_and_column_is_described(archive_path: Path):
    db = open_db(archive_path)
    tables = load_metadata()["databases"]["archive"]["tables"]
    for name in db.table_names() + db.view_names():
        meta = tables.get(name, {})
        if meta.get("hidden") or name.startswith("blocks_fts"):
            continue
        assert meta.get("description"), name
        cols = {r[1] for r in db.execute(f"PRAGMA table_xinfo([{name}])")}
        assert cols <= set(meta.get("columns", {})), (name, cols - set(meta.get("columns", {})))


def test_bookkeeping_is_hidden_and_the_rest_listed(archive_path: Path):
    ds = make_datasette(archive_path)
    (r,) = run(fetch(ds, "/archive.json"))
    listed = {t["name"]: t["hidden"] for t in r.json()["tables"]}
    for name in ("source_fingerprints", "generations", "thread_facts", "message_occurrences", "_sqlite_migrations"):
        assert listed[name] is True, name
    for name in ("threads", "messages", "blocks", "sources", "source_lines", "reports", "ingest_runs"):
        assert listed[name] is False, name


PARAMS = {"q": "zanzibarquux", "project": "/work/canon-project", "thread_id": CANON}


def test_every_canned_query_runs(archive_path: Path):
    ds = make_datasette(archive_path)
    queries = load_metadata()["databases"]["archive"]["queries"]
    assert len(queries) >= 10
    urls = {}
    for name, q in queries.items():
        params = set(re.findall(r":(\w+)", q["sql"]))
        assert params <= set(PARAMS), (name, params)
        args = "".join(f"&{p}={PARAMS[p]}" for p in sorted(params))
        urls[name] = f"/archive/{name}.json?_shape=array{args}"
    results = run(fetch(ds, *urls.values()))
    rows = {name: r.json() for name, r in zip(urls, results)}
    for name, got in rows.items():
        assert got, f"{name} returned no rows"
    assert rows["search"][0]["thread_id"] == CANON and "\u27e6zanzibarquux\u27e7" in rows["search"][0]["snippet"]
    assert {r["thread_id"] for r in rows["project_threads"]} == {CANON, CANON_CHILD}
    assert [r["text"] for r in rows["thread_transcript"]][0].startswith("Why is the")
    assert any(r["tool_name"] == "Bash" for r in rows["tool_frequency"])


def test_metadata_follows_the_file_name(tmp_path: Path, archive_path: Path):
    other = tmp_path / "my-sessions.db"
    shutil.copy(archive_path, other)
    ds = make_datasette(other)
    assert "my-sessions" in ds.databases
    r1, r2, r3 = run(fetch(ds, "/my-sessions/search.json?_shape=array&q=zanzibarquux", "/my-sessions.json",
                           f"/-/sesh/thread/{CANON}"))  # fmt: skip
    assert r1.json()[0]["thread_id"] == CANON
    assert next(t for t in r2.json()["tables"] if t["name"] == "thread_facts")["hidden"] is True
    assert "zanzibarquux" in r3.text


# ---------------------------------------------------------------- search


def test_datasette_search_box_on_blocks_and_conversation(archive_path: Path):
    ds = make_datasette(archive_path)
    blocks, conv, html = run(fetch(ds, "/archive/blocks.json?_search=zanzibarquux&_shape=array",
                                   "/archive/conversation.json?_search=zanzibarquux&_shape=array",
                                   "/archive/blocks?_search=zanzibarquux"))  # fmt: skip
    assert [b["text"].split()[3] for b in blocks.json()] == ["**zanzibarquux**"]
    assert [c["thread_id"] for c in conv.json()] == [CANON]
    assert 'name="_search"' in html.text


def test_search_page_links_hits_to_their_block(archive_path: Path):
    ds = make_datasette(archive_path)
    (r,) = run(fetch(ds, "/-/sesh/search?q=zanzibarquux"))
    block_id = open_db(archive_path).execute("SELECT rowid FROM blocks_fts WHERE blocks_fts MATCH 'zanzibarquux'").fetchone()[0]
    assert "<mark>zanzibarquux</mark>" in r.text
    assert f'href="/-/sesh/thread/{CANON}#b{block_id}"' in r.text
    assert "Screenshot review" in r.text


def test_search_page_survives_fts_syntax(archive_path: Path):
    ds = make_datasette(archive_path)
    for q in ('"unbalanced', "foo-bar", "AND", "spot*", "(("):
        (r,) = run(fetch(ds, "/-/sesh/search?q=" + urllib.request.quote(q)))
        assert "Search sessions" in r.text


# ---------------------------------------------------------------- conversation page


def test_conversation_page_of_a_claude_code_thread(archive_path: Path):
    ds = make_datasette(archive_path)
    (r,) = run(fetch(ds, f"/-/sesh/thread/{PARENT}"))
    db = open_db(archive_path)
    first_user = db.execute("SELECT b.text FROM messages m JOIN blocks b ON b.message_id = m.id WHERE m.thread_id = ? "
                            "AND m.role = 'user' AND b.type = 'text' ORDER BY m.source_id, m.offset LIMIT 1", [PARENT]).fetchone()[0]  # fmt: skip
    assert str(render_markdown(first_user))[:60] in r.text
    assert f'href="/-/sesh/thread/{SIDECHAIN}"' in r.text  # child thread link
    assert "Check package configuration" in r.text  # the child's title
    assert re.search(r'<details class="sesh-block sesh-tool[ "]', r.text)  # tool calls folded
    ids = [row[0] for row in db.execute("SELECT b.id FROM blocks b JOIN messages m ON m.id = b.message_id WHERE m.thread_id = ?", [PARENT])]
    for i in ids:
        assert f'id="b{i}"' in r.text
    (child,) = run(fetch(ds, f"/-/sesh/thread/{SIDECHAIN}"))
    assert f'href="/-/sesh/thread/{PARENT}"' in child.text  # parent link


def test_conversation_page_with_image_child_and_escaping(archive_path: Path):
    ds = make_datasette(archive_path)
    (r,) = run(fetch(ds, f"/-/sesh/thread/{CANON}"))
    sha = __import__("hashlib").sha256(PNG).hexdigest()
    assert f'<img src="/-/sesh/blob/{sha}"' in r.text
    assert "<strong>zanzibarquux</strong>" in r.text
    assert "<script>alert(1)</script>" not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    # the fenced CSS, coloured by Pygments (classes only; pygments.css styles them)
    assert '<pre class="highlight"><code class="language-css"><span class="p">.</span><span class="nc">btn</span>' in r.text
    assert f'href="/-/sesh/thread/{CANON_CHILD}"' in r.text
    assert "src/app.css: .btn { margin: 4px }" in r.text  # the tool result, folded
    assert "120 in, 30 out" in r.text
    (img,) = run(fetch(ds, f"/-/sesh/blob/{sha}"))
    assert img.content == PNG and img.headers["content-type"] == "image/png"
    assert img.headers["x-content-type-options"] == "nosniff"


def test_svg_blob_is_a_download_not_a_page(archive_path: Path):
    ds = make_datasette(archive_path)
    sha = open_db(archive_path).execute("SELECT sha256 FROM blobs WHERE media_type = 'image/svg+xml'").fetchone()[0]
    (r,) = run(fetch(ds, f"/-/sesh/blob/{sha}"))
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.headers["content-disposition"].startswith("attachment")


def test_unknown_thread_and_blob_are_404(archive_path: Path):
    ds = make_datasette(archive_path)

    async def go() -> tuple[int, int]:
        await ds.invoke_startup()
        a = await ds.client.get("/-/sesh/thread/no-such-thread")
        b = await ds.client.get("/-/sesh/blob/" + "0" * 64)
        return a.status_code, b.status_code

    assert run(go()) == (404, 404)


def test_thread_ids_link_to_the_conversation_page(archive_path: Path):
    ds = make_datasette(archive_path)
    summary, calls, row, canned = run(fetch(ds, "/archive/thread_summary", "/archive/tool_calls",
                                            f"/archive/threads/{CANON}", "/archive/longest_threads"))  # fmt: skip
    assert f'href="/-/sesh/thread/{CANON}"' in summary.text
    assert re.search(r'href="/-/sesh/thread/[^"#]+#b\d+"', calls.text)
    assert f'href="/-/sesh/thread/{CANON}"' in row.text
    assert f'href="/-/sesh/thread/{CANON}"' in canned.text


def test_markdown_is_escaped_and_links_are_restricted():
    html = str(render_markdown('<img src=x onerror=alert(1)> [a](javascript:alert(1)) [b](https://x.org/"q) '
                               "**bold** `<b>` http://e.com/x?a=1&b=2.\n\n- one\n- two\n\n# Head"))  # fmt: skip
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert 'href="javascript' not in html
    assert '<a href="https://x.org/%22q" rel="noopener noreferrer nofollow">b</a>' in html  # the quote cannot end href
    assert "<strong>bold</strong>" in html and "<code>&lt;b&gt;</code>" in html
    assert '<a href="http://e.com/x?a=1&amp;b=2"' in html
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in html and "<h3>Head</h3>" in html


# ---------------------------------------------------------------- serving


def test_serve_command_defaults_to_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(serve_mod, "run_server", lambda db_path, **kw: calls.append({"db": db_path, **kw}))
    db = tmp_path / "a.db"
    open_db(db).conn.close()  # serve reads an existing archive; it no longer creates one (issue 22)
    result = CliRunner().invoke(cli, ["--db", str(db), "serve"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert calls == [{"db": db, "host": "127.0.0.1", "port": 8001, "open_browser": False, "allow_hosts": (),
                      "show_secrets": False, "watch": True}]
    CliRunner().invoke(cli, ["--db", str(db), "serve", "--host", "0.0.0.0", "-p", "9999", "--open"], catch_exceptions=False)
    assert calls[1] == {"db": db, "host": "0.0.0.0", "port": 9999, "open_browser": True, "allow_hosts": (),
                        "show_secrets": False, "watch": True}


def test_server_binds_loopback_and_serves_while_ingest_writes(tmp_path: Path, archive_path: Path):
    path = tmp_path / "archive.db"
    shutil.copy(archive_path, path)
    server = make_server(path, port=0)
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline and t.is_alive(), "server did not start"
            time.sleep(0.05)
        url = bound_url(server)
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "-/sesh/search?q=zanzibarquux", timeout=10) as r:
            assert "<mark>zanzibarquux</mark>" in r.read().decode()
        # An ingest writes to the archive while the server has it open (WAL).
        line = orjson.dumps({"v": 1, "id": "late", "createdAt": "2026-04-01T00:00:00Z", "title": "Late arrival qwertyplugh"})
        msg = orjson.dumps({"v": 1, "id": "late-m", "threadId": "late", "role": "user", "ts": "2026-04-01T00:00:01Z",
                            "content": [{"type": "text", "text": "qwertyplugh arrives"}]})  # fmt: skip
        (tmp_path / "late.jsonl").write_bytes(line + b"\n" + msg + b"\n")
        db = open_db(path)
        ingest_paths(db, [tmp_path / "late.jsonl"], NEVER_IDLE)
        db.conn.close()
        with urllib.request.urlopen(url + "-/sesh/search?q=qwertyplugh", timeout=10) as r:
            assert "Late arrival qwertyplugh" in r.read().decode()
    finally:
        server.should_exit = True
        t.join(10)
    assert not t.is_alive()


def test_datasette_never_opens_a_write_connection(archive_path: Path):
    ds = make_datasette(archive_path)
    run(fetch(ds, "/archive", "/archive/thread_summary", f"/-/sesh/thread/{CANON}", "/-/sesh/search?q=button"))
    db = ds.get_database("archive")
    assert db.is_mutable and not db.hash  # served live, not as an immutable snapshot
    assert db._write_connection is None
    plugins = {p["name"] for p in run(fetch(ds, "/-/plugins.json"))[0].json()}
    # registered by make_datasette, or through the entry point once the package is installed
    assert len(plugins) == 1 and plugins <= {"archive.datasette_plugin", "sesh-archive"}


def test_serve_keeps_datasette_on_the_standard_sqlite_module(tmp_path: Path):
    """Datasette takes ``pysqlite3`` when it can import it (people install it for a newer
    SQLite), and then every conversation page failed with a 500: the pages build
    ``sqlite3.Row`` and catch ``sqlite3.OperationalError`` of Python's own module. ``serve``
    imports Datasette with ``pysqlite3`` hidden, and gives it back to the rest of the process.
    A stand-in ``pysqlite3`` (a different module object) is importable in the child."""
    fake = tmp_path / "site" / "pysqlite3"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("from sqlite3 import *\nfrom sqlite3 import sqlite_version, connect\nSTAND_IN = True\n")
    (fake / "dbapi2.py").write_text("from sqlite3 import *\n")
    child = (
        "import sys, sqlite3\n"
        "import sqlite_utils  # it may import pysqlite3 first, as the CLI does\n"
        "from archive.serve import make_datasette\n"
        f"ds = make_datasette({str(tmp_path / 'a.db')!r})\n"
        "import datasette.utils.sqlite as u, datasette.database as d\n"
        "import pysqlite3\n"
        "print(u.using_pysqlite3, u.sqlite3 is sqlite3, d.sqlite3 is sqlite3, getattr(pysqlite3, 'STAND_IN', False))\n"
    )
    open_db(tmp_path / "a.db").conn.close()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *filter(None, [os.environ.get("PYTHONPATH")])])}
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["False", "True", "True", "True"]  # Datasette on sqlite3; pysqlite3 still importable
