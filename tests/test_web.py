"""The web pages (issue 21) in-process through ``ds.client``: the Host check, 400 for bad
paging and time-outs, the sessions home, the conversation page (label, bubbles, tool calls
by kind, results beside calls, pages of a long thread), search filters, the usage
dashboard, and Markdown through markdown-it-py + nh3."""

from __future__ import annotations

import http.client
import re
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from test_datasette import (
    CANON,
    CANON_CHILD,
    NEVER_IDLE,
    PARENT,
    SIDECHAIN,
    build_archive,
    run,
)

from archive import serve as serve_mod
from archive.cli import cli
from archive.db import open_db
from archive.ingest import ingest_paths
from archive.pricing import cost, load_prices
from archive.queries import first_prompts
from archive.serve import (
    SETTINGS,
    bound_url,
    load_metadata,
    make_datasette,
    make_server,
)
from archive.web.conversation import PAGE_SIZE
from archive.web.markup import render_markdown

CODEX_SHELL = "cf4def41-21e0-4b91-adb4-5397c1492084"
LONG = "long-thread"
LONG_MESSAGES = PAGE_SIZE * 2 + 37


def long_thread(path: Path) -> Path:
    """A canonical thread longer than two pages: prompts, answers and shell calls with results."""
    records: list[dict[str, Any]] = [{"v": 1, "id": LONG, "createdAt": "2026-05-01T00:00:00Z",
                                      "metadata": {"cwd": "/work/long"}}]  # fmt: skip
    n = 0
    while n < LONG_MESSAGES:
        i = n
        records.append({"v": 1, "id": f"L{i}", "threadId": LONG, "role": "user", "ts": f"2026-05-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z",
                        "content": [{"type": "text", "text": f"prompt number {i} about pelicans"}]})  # fmt: skip
        records.append({"v": 1, "id": f"L{i}a", "threadId": LONG, "role": "assistant", "ts": f"2026-05-01T01:{i // 60 % 60:02d}:{i % 60:02d}Z",
                        "content": [{"type": "text", "text": f"answer {i}"},
                                    {"type": "tool_call", "callId": f"c{i}", "name": "shell", "input": {"command": f"echo {i}"}}]})  # fmt: skip
        records.append({"v": 1, "id": f"L{i}r", "threadId": LONG, "role": "tool", "ts": f"2026-05-01T02:{i // 60 % 60:02d}:{i % 60:02d}Z",
                        "content": [{"type": "tool_result", "callId": f"c{i}", "output": f"output {i}"}]})  # fmt: skip
        n += 3
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    return path


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("web")
    path = build_archive(d / "archive.db", d / "canon.jsonl")
    db = open_db(path)
    ingest_paths(db, [long_thread(d / "long.jsonl")], NEVER_IDLE)
    db.conn.close()
    return path


@pytest.fixture(scope="module")
def ds(archive_path: Path) -> Any:
    return make_datasette(archive_path)


def get(ds: Any, url: str, **kw: Any) -> Any:
    async def go() -> Any:
        await ds.invoke_startup()
        return await ds.client.get(url, **kw)

    return run(go())


def ok(ds: Any, url: str) -> str:
    r = get(ds, url)
    assert r.status_code == 200, (url, r.status_code, r.text[:300])
    return r.text


def label_of(archive_path: Path, thread_id: str) -> str:
    db = open_db(archive_path)
    try:
        return first_prompts(db.conn, [thread_id], width=140)[thread_id]
    finally:
        db.conn.close()


def html_text(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&#34;")


# ---------------------------------------------------------------- Host check


def test_a_foreign_host_gets_403_everywhere(ds: Any):
    for url in ("/", "/archive.json?sql=select+1", f"/-/sesh/thread/{CANON}", "/-/sesh/search?q=x", "/-/sesh/usage"):
        r = get(ds, url, headers={"host": "attacker.example"})
        assert r.status_code == 403, url
        assert "--allow-host" in r.text and "zanzibarquux" not in r.text
    for host in ("localhost", "127.0.0.1:8001", "LOCALHOST:9", "[::1]:8001"):
        assert get(ds, "/archive.json?sql=select+1", headers={"host": host}).status_code == 200, host


def test_allow_host_and_the_listen_address_are_let_through(archive_path: Path):
    ds = make_datasette(archive_path, host="192.168.5.9", allow_hosts=("box.lan",))
    assert get(ds, "/-/sesh/usage", headers={"host": "box.lan:8001"}).status_code == 200
    assert get(ds, "/-/sesh/usage", headers={"host": "192.168.5.9:8001"}).status_code == 200
    assert get(ds, "/-/sesh/usage", headers={"host": "box.lan.evil.example"}).status_code == 403
    everywhere = make_datasette(archive_path, host="0.0.0.0")  # what `serve --open` browses to
    assert get(everywhere, "/-/sesh/usage", headers={"host": "0.0.0.0:8001"}).status_code == 200
    assert get(everywhere, "/-/sesh/usage", headers={"host": "attacker.example"}).status_code == 403
    anyone = make_datasette(archive_path, allow_hosts=("*",))
    assert get(anyone, "/-/sesh/usage", headers={"host": "whatever.example"}).status_code == 200


def test_the_real_server_refuses_a_rebound_host(tmp_path: Path, archive_path: Path):
    server = make_server(archive_path, port=0)
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline and t.is_alive(), "server did not start"
            time.sleep(0.05)
        host, port = bound_url(server).split("//")[1].rstrip("/").split(":")

        def status(host_header: str) -> tuple[int, str]:
            c = http.client.HTTPConnection(host, int(port), timeout=10)
            c.putrequest("GET", "/archive.json?sql=select+text+from+blocks", skip_host=True)
            c.putheader("Host", host_header)
            c.endheaders()
            r = c.getresponse()
            body = r.read().decode()
            c.close()
            return r.status, body

        code, body = status("attacker.example:" + port)
        assert code == 403 and "zanzibarquux" not in body
        code, body = status(f"127.0.0.1:{port}")
        assert code == 200 and "zanzibarquux" in body
    finally:
        server.should_exit = True
        t.join(10)


def test_serve_warns_when_it_listens_beyond_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(serve_mod, "run_server", lambda db_path, **kw: calls.append(kw))
    db = str(tmp_path / "a.db")
    open_db(db).conn.close()  # serve reads an existing archive; only ingest creates one
    quiet = CliRunner().invoke(cli, ["--db", db, "serve", "--port", "0"], catch_exceptions=False)
    assert "warning" not in quiet.output
    loud = CliRunner().invoke(cli, ["--db", db, "serve", "--port", "0", "--host", "0.0.0.0", "--allow-host", "box.lan"],
                              catch_exceptions=False)
    assert loud.exit_code == 0 and "warning" in loud.output and "no authentication" in loud.output
    assert calls[-1]["allow_hosts"] == ("box.lan",)
    assert load_metadata("x", ["localhost"])["plugins"]["sesh-archive"] == {"database": "x", "allowed_hosts": ["localhost"]}


# ---------------------------------------------------------------- 400, never 500


@pytest.mark.parametrize("url", [
    "/-/sesh/search?q=zanzibarquux&offset=99999999999999999999999",
    "/-/sesh/search?q=zanzibarquux&offset=-1",
    "/-/sesh/search?q=zanzibarquux&offset=ten",
    "/-/sesh/search?q=zanzibarquux&since=yesterday",
    "/-/sesh/search?q=zanzibarquux&sort=loudest",
    f"/-/sesh/thread/{CANON}?page=2",
    f"/-/sesh/thread/{CANON}?page=0",
    f"/-/sesh/thread/{CANON}?page=99999999999999999999999",
    f"/-/sesh/thread/{LONG}?page=4",
    "/-/sesh/sessions?page=99",
    "/-/sesh/sessions?since=soon",
    "/-/sesh/sessions?sort=weird",
    "/-/sesh/usage?since=2026-13-45",
])  # fmt: skip
def test_bad_paging_and_filters_are_400_with_a_message(ds: Any, url: str):
    r = get(ds, url)
    assert r.status_code == 400, (url, r.status_code)
    assert r.text.startswith("400: ") and len(r.text) > 20


def test_a_search_past_the_time_limit_is_400(tmp_path: Path):
    path = tmp_path / "big.db"
    records = [{"v": 1, "id": "big", "createdAt": "2026-01-01T00:00:00Z"}]
    records += [{"v": 1, "id": f"m{i}", "threadId": "big", "role": "user", "ts": "2026-01-01T00:00:01Z",
                 "content": [{"type": "text", "text": f"common words here {i} " * 20}]} for i in range(4000)]  # fmt: skip
    (tmp_path / "big.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    db = open_db(path)
    ingest_paths(db, [tmp_path / "big.jsonl"], NEVER_IDLE)
    db.conn.close()
    from datasette.app import Datasette

    serve_mod.register_plugin()
    slow = Datasette([str(path)], metadata=load_metadata("big"), settings={**SETTINGS, "sql_time_limit_ms": 1})
    r = get(slow, "/-/sesh/search?q=common")
    assert r.status_code == 400 and "time limit" in r.text
    fine = Datasette([str(path)], metadata=load_metadata("big"), settings=SETTINGS)
    assert "4,000 matches" in ok(fine, "/-/sesh/search?q=common")


# ---------------------------------------------------------------- sessions


def test_home_lists_sessions_by_label_with_children_folded(ds: Any, archive_path: Path):
    html = ok(ds, "/")
    assert html == ok(ds, "/-/sesh/sessions")
    assert ">Screenshot review</a>" in html  # a title
    assert f">{html_text(label_of(archive_path, PARENT))}</a>" in html  # untitled: its first prompt
    rows = re.findall(r'<tr class="sesh-session" data-thread="([^"]+)">', html)
    assert PARENT in rows and CANON in rows and LONG in rows
    assert SIDECHAIN not in rows and CANON_CHILD not in rows  # children are not rows of their own...
    parent_row = html[html.index(f'data-thread="{PARENT}"'):].split("</tr>", 1)[0]
    assert f'href="/-/sesh/thread/{SIDECHAIN}"' in parent_row and "<details" in parent_row  # ...but folded under it
    assert "started (UTC)" in html and "2026-03-01 10:00" in html


def test_a_session_page_gives_the_figures_the_list_gives(ds: Any):
    """The sessions list counts a session with its subagents; the session's page says its own
    figures and, beside them, the list's (they differed with nothing to say why)."""
    html = ok(ds, "/")
    row = html[html.index(f'data-thread="{PARENT}"'):].split("</tr>", 1)[0]
    _errors, _active, listed, tokens, _cost = re.findall(r'<td class="num">([^<]*)</td>', row)
    page = ok(ds, f"/-/sesh/thread/{PARENT}")
    own = re.search(r"<dt>messages</dt><dd>([\d,]+)</dd>", page).group(1)
    line = re.search(r'<dt>with its (?:child thread|\d+ child threads)</dt><dd class="sesh-session-total">([\d,]+) messages, ([\d,]+) tokens', page)
    assert line is not None, "the page says nothing of the subagent's messages"
    assert line.group(1) == listed and int(own.replace(",", "")) < int(listed.replace(",", ""))
    assert line.group(2) == tokens
    for alone in (SIDECHAIN, LONG):  # a subagent's figures count with its session's; a thread without children
        assert "sesh-session-total" not in ok(ds, f"/-/sesh/thread/{alone}")


def test_a_fork_with_a_subagent_counts_its_own_messages_as_the_list_does(tmp_path: Path):
    """A fork's page shows the history it inherits (``count``), but the session line, like the
    sessions list, counts the fork's own messages and its subagent's."""
    from archive.pricing import load_prices
    from archive.web.conversation import load_page
    from archive.web.sessions import SessionFilters, sessions, with_children

    def msg(mid: str, tid: str, role: str, second: int) -> dict[str, Any]:
        return {"v": 1, "id": mid, "threadId": tid, "role": role, "ts": f"2026-06-01T00:00:{second:02d}Z",
                "content": [{"type": "text", "text": f"{mid} text"}]}  # fmt: skip

    records = [
        {"v": 1, "id": "orig", "createdAt": "2026-06-01T00:00:00Z"},
        msg("o1", "orig", "user", 1), msg("o2", "orig", "assistant", 2),
        {"v": 1, "id": "fork", "createdAt": "2026-06-01T00:00:03Z", "parentThreadId": "orig", "originMessageId": "o2",
         "metadata": {"forkedFrom": "orig"}},
        msg("f1", "fork", "user", 4), msg("f2", "fork", "assistant", 5),
        {"v": 1, "id": "fork-sub", "createdAt": "2026-06-01T00:00:06Z", "parentThreadId": "fork", "originMessageId": "f2"},
        msg("s1", "fork-sub", "user", 7),
    ]  # fmt: skip
    src = tmp_path / "forks.jsonl"
    src.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [src], NEVER_IDLE)
    page = load_page(db.conn, "fork", 1, load_prices(), {})
    assert page is not None and page["count"] == 4  # o1, o2 inherited, then f1, f2
    session = with_children(db.conn, "fork", load_prices())
    assert session is not None and session["count"] == 3 and session["children"] == 1
    listed = {r["id"]: r["messages"] for r in sessions(db.conn, SessionFilters(), load_prices())["rows"]}
    assert listed["fork"] == session["count"]


def test_home_filters_and_sorts(ds: Any):
    def rows(query: str) -> list[str]:
        return re.findall(r'<tr class="sesh-session" data-thread="([^"]+)">', ok(ds, "/-/sesh/sessions?" + query))

    every = rows("")
    codex = rows("provider=codex")
    assert codex and set(codex) < set(every) and CODEX_SHELL in codex and PARENT not in codex
    assert rows("project=/work/canon-project") == [CANON]
    assert rows("q=zanzibarquux") == [CANON]  # words inside the conversation
    assert rows("q=pelicans") == [LONG]
    assert rows("since=2026-05-01&until=2026-05-01") == [LONG]
    by_messages = rows("sort=messages")
    assert by_messages[0] == LONG and sorted(by_messages) == sorted(every)
    costs = [c for c in re.findall(r'<td class="num">(\$[\d,.]+|no price|)</td>\s*</tr>', ok(ds, "/-/sesh/sessions?sort=cost"))]
    dollars = [float(c[1:].replace(",", "")) for c in costs if c.startswith("$")]
    assert dollars and dollars == sorted(dollars, reverse=True)


# ---------------------------------------------------------------- conversation


def details_of(html: str, anchor: str) -> str:
    start = html.index(f'id="{anchor}"')
    return html[start : html.index("</details>", start)]


def test_conversation_is_titled_by_its_label_and_shows_cost(ds: Any, archive_path: Path):
    html = ok(ds, f"/-/sesh/thread/{PARENT}")
    label = html_text(label_of(archive_path, PARENT))
    assert f"<title>{label} - sesh-archive</title>" in html
    assert f'<h1 class="sesh-title">{label}</h1>' in html
    assert "Thread 5c0375b4" not in html
    db = open_db(archive_path)
    usage = db.execute("SELECT model, sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens) "
                       "FROM usage_totals WHERE thread_id = ? GROUP BY model", [PARENT]).fetchall()  # fmt: skip
    prices = load_prices()
    expected = sum(cost(prices.lookup(m)[1], *t) for m, *t in usage)
    assert expected > 0 and f"${expected:,.2f}" in html
    assert "times in UTC" in html and " UTC</time>" in html


def test_a_thread_without_usage_says_so_instead_of_no_price(ds: Any, archive_path: Path):
    """"no price" means tokens with no price to count them by; a thread that logged no usage at
    all (the canonical long thread here, a prompt log, an old release without token counts)
    has nothing to price. The sessions list leaves its cell empty; the page says why."""
    db = open_db(archive_path)
    assert not db.execute("SELECT count(*) FROM usage_totals WHERE thread_id = ?", [LONG]).fetchone()[0]
    db.conn.close()
    html = ok(ds, f"/-/sesh/thread/{LONG}")
    assert '<dd class="sesh-cost">no usage recorded' in html and "no price" not in html
    assert '<dd class="sesh-cost">no usage recorded' not in ok(ds, f"/-/sesh/thread/{PARENT}")


def test_tool_calls_by_kind_with_their_result_beside_them(ds: Any, archive_path: Path):
    db = open_db(archive_path)
    edit_id, call_id = db.execute("SELECT b.id, b.call_id FROM blocks b JOIN messages m ON m.id = b.message_id "
                                  "WHERE m.thread_id = ? AND b.tool_name = 'Edit'", [PARENT]).fetchone()  # fmt: skip
    result_id = db.execute("SELECT id FROM blocks WHERE call_id = ? AND type = 'tool_result'", [call_id]).fetchone()[0]
    html = ok(ds, f"/-/sesh/thread/{PARENT}")
    edit = details_of(html, f"b{edit_id}")
    assert 'sesh-kind-edit">edit</span>' in edit
    assert '<span class="gd">-' in edit and '<span class="gi">+' in edit  # a coloured diff, not JSON
    assert "old_string" not in edit
    assert f'id="b{result_id}"' in edit  # the result inside the call's fold
    assert html.count(f'id="b{result_id}"') == 1

    calls = re.findall(r'<div class="sesh-call">(.*?)</div>', html, re.S)
    assert len(calls) >= 10 and not any("\\n" in c for c in calls)  # text with its line breaks, not JSON's \n
    read = details_of(html, "b" + str(db.execute("SELECT b.id FROM blocks b JOIN messages m ON m.id = b.message_id "
                                                 "WHERE m.thread_id = ? AND b.tool_name = 'Read'", [PARENT]).fetchone()[0]))  # fmt: skip
    assert 'sesh-kind-read">read</span>' in read and "/path/to/Demo/" in read

    shell = ok(ds, f"/-/sesh/thread/{CODEX_SHELL}")
    assert 'sesh-kind-shell">shell</span>' in shell and '<span class="sesh-summary">ls -la</span>' in shell
    patch = ok(ds, "/-/sesh/thread/" + db.execute(
        "SELECT m.thread_id FROM blocks b JOIN messages m ON m.id = b.message_id WHERE b.tool_name = 'apply_patch'").fetchone()[0])  # fmt: skip
    assert 'sesh-kind-patch">patch</span>' in patch and '<span class="gi">+print(1 + 1)</span>' in patch


def test_one_bubble_per_response(ds: Any, archive_path: Path):
    db = open_db(archive_path)
    html = ok(ds, f"/-/sesh/thread/{PARENT}")
    bubbles = re.findall(r'<article class="sesh-msg sesh-role-(\w+)', html)
    assistant_messages = db.execute("SELECT count(*) FROM messages WHERE thread_id = ? AND role = 'assistant'", [PARENT]).fetchone()[0]
    assert 0 < bubbles.count("assistant") < assistant_messages  # several lines of one response, one bubble
    assert "tool" not in bubbles  # results sit with their calls, not in bubbles of their own
    assert all(a != b or a == "user" for a, b in zip(bubbles, bubbles[1:]) if a == "assistant")
    assert not re.search(r'<div class="sesh-block sesh-text" id="b\d+">\s*</div>', html)  # no empty text bubbles
    for m in db.execute("SELECT id FROM messages WHERE thread_id = ?", [PARENT]):
        assert f'id="msg-{m[0]}"' in html  # every message keeps its anchor


def test_a_long_thread_is_paged_with_a_table_of_contents(ds: Any):
    first = ok(ds, f"/-/sesh/thread/{LONG}")
    assert "page 1 of 3" in first and "?page=2" in first
    assert first.count('<article class="sesh-msg sesh-role-user"') == PAGE_SIZE // 3 + 1
    assert "prompt number 0 about pelicans" in first and "prompt number 600 " not in first
    toc = first[first.index('<aside class="sesh-toc">'):first.index("</aside>")]
    assert toc.count("<li>") == PAGE_SIZE // 3 + 1 and 'href="#msg-L0"' in toc
    last = ok(ds, f"/-/sesh/thread/{LONG}?page=3")
    assert f"prompt number {LONG_MESSAGES - 1 - (LONG_MESSAGES - 1) % 3} about" in last
    # a call at the end of page 2 whose result opens page 3 still shows its result
    c, second = 2 * PAGE_SIZE - 2, ok(ds, f"/-/sesh/thread/{LONG}?page=2")
    assert c % 3 == 0  # the fixture's groups of three put c's call last on page 2
    assert f"output {c}" in details_of(second, "b" + re.search(rf'<details class="sesh-block sesh-tool[^"]*" id="b(\d+)"><summary>'
                                                                rf'<span class="sesh-kind sesh-kind-shell">shell</span> <span class="sesh-tool-name">shell</span> '
                                                                rf'<span class="sesh-summary">echo {c}</span>', second).group(1))  # fmt: skip
    prompts = ok(ds, f"/-/sesh/prompts?thread={LONG}")
    assert prompts.count(f'<li><a href="/-/sesh/thread/{LONG}?page=') == -(-LONG_MESSAGES // 3)
    assert f'?page=3#msg-L{2 * PAGE_SIZE + 1}"' in prompts


def test_a_block_link_opens_the_page_that_holds_it(ds: Any, archive_path: Path):
    db = open_db(archive_path)
    assert PAGE_SIZE % 3 == 1  # the fixture's groups of three: L{2n+1} opens page 3, L{n+2} is on page 2
    block = db.execute("SELECT b.id FROM blocks b WHERE b.message_id = ? AND b.type = 'text'", [f"L{2 * PAGE_SIZE + 1}"]).fetchone()[0]
    html = ok(ds, f"/-/sesh/thread/{LONG}?block={block}")
    assert "page 3 of 3" in html and f'id="b{block}"' in html
    assert "page 2 of 3" in ok(ds, f"/-/sesh/thread/{LONG}?message=L{PAGE_SIZE + 2}")


def test_pages_load_nothing_from_outside(ds: Any):
    for url in ("/", f"/-/sesh/thread/{PARENT}", f"/-/sesh/thread/{CANON}", "/-/sesh/usage", "/-/sesh/search?q=the"):
        html = ok(ds, url)
        for attr in re.findall(r'(?:src|href)="([^"]+)"', html):
            external = attr.startswith(("http:", "https:", "//"))
            assert not external or re.search(r'<a [^>]*href="' + re.escape(attr), html), (url, attr)  # links only
        assert "<img" not in html or all(s.startswith("/-/sesh/blob/") for s in re.findall(r'<img src="([^"]+)"', html))


# ---------------------------------------------------------------- search and usage


def test_search_filters_sort_and_total(ds: Any):
    every = ok(ds, "/-/sesh/search?q=the")
    total = int(re.search(r"([\d,]+) match", every).group(1).replace(",", ""))
    assert total > 20
    def hits(query: str) -> list[tuple[str, str]]:
        return re.findall(r'class="sesh-hit-link" href="[^"]+">(\w+) &middot; (\w+)', ok(ds, "/-/sesh/search?q=the&" + query))

    assert {r for r, _ in hits("role=user")} == {"user"}
    assert {k for _, k in hits("kind=tool_result")} == {"tool_result"}
    codex = ok(ds, "/-/sesh/search?q=the&provider=codex")
    assert int(re.search(r"([\d,]+) match", codex).group(1).replace(",", "")) < total
    dated = ok(ds, "/-/sesh/search?q=the&sort=date")
    times = re.findall(r"&middot; (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC</a>", dated)
    assert len(times) > 5 and times == sorted(times, reverse=True)
    hit = ok(ds, "/-/sesh/search?q=pelicans&since=2026-05-01&until=2026-05-01&role=user")
    assert re.search(r"[\d,]+ matches", hit) and "2026-05-01" in hit
    assert ">No matches<" not in hit
    assert "0 matches" in ok(ds, "/-/sesh/search?q=pelicans&until=2026-04-30")


def test_search_takes_what_people_type(ds: Any, capsys: Any):
    """Issue 32: a path or a hyphenated word is searched as typed, the same hits as the CLI,
    with no SQL error on the way (Datasette logged 'fts5: syntax error' before the retry)."""
    html = ok(ds, "/-/sesh/search?q=myapp/hoge.py")
    assert re.search(r"[1-9][\d,]* match", html)
    assert ">No matches<" not in html
    grouped = ok(ds, "/-/sesh/search?q=" + "(myapp/hoge.py OR zzzqqq) hoge".replace(" ", "+"))
    assert ">No matches<" not in grouped
    # a dangling operator: FTS5 refuses it, the words are searched as typed, nothing is logged
    dangling = ok(ds, "/-/sesh/search?q=hoge+AND")
    assert re.search(r"[1-9][\d,]* match", dangling)
    captured = capsys.readouterr()
    assert "syntax error" not in captured.out + captured.err and "no such column" not in captured.out + captured.err


def test_usage_dashboard_draws_svg_charts(ds: Any, archive_path: Path):
    html = ok(ds, "/-/sesh/usage")
    assert html.count("<svg") >= 6 and "<rect" in html
    assert "<script src" not in html.replace('<script src="/-/sesh/static/sesh.js"></script>', "")
    db = open_db(archive_path)
    rows = db.execute("SELECT model, sum(input_tokens), sum(output_tokens), sum(cache_read_tokens), sum(cache_write_tokens) "
                      "FROM usage_totals WHERE day != '' GROUP BY model").fetchall()  # fmt: skip
    prices = load_prices()
    total = sum(cost(prices.lookup(m)[1], *t) for m, *t in rows if prices.lookup(m))
    assert f'<div class="sesh-card-n">${total:,.2f}</div>cost' in html
    assert "Top sessions by cost" in html
    # every x-axis date fits inside its chart (the last one showed as "2026-": issue 32)
    charts = re.findall(r'<svg class="sesh-chart" role="img" viewBox="0 0 (\d+) (\d+)"(.*?)</svg>', html, re.S)
    dated = 0
    for w, h, body in charts:
        for attrs, label in re.findall(r'<text ([^>]*y="%d"[^>]*)>(\d{4}-[\d-]+)</text>' % (int(h) - 6), body):
            x = float(re.search(r'x="([\d.]+)"', attrs).group(1))
            right = x if 'text-anchor="end"' in attrs else x + len(label) * 6.6
            assert right <= int(w), (label, attrs, w)
            dated += 1
    assert dated
    narrowed = ok(ds, "/-/sesh/usage?since=2026-02-10&until=2026-02-10")
    assert narrowed.count("<svg") >= 6 and "2025-09" not in narrowed


# ---------------------------------------------------------------- Markdown


def test_markdown_links_survive_emphasis():
    html = str(render_markdown("**[docs](https://e.org/a_b)** and [**bold** text](https://e.org/x) and **https://e.org/y**"))
    assert '<strong><a href="https://e.org/a_b" rel="noopener noreferrer nofollow">docs</a></strong>' in html
    assert '<a href="https://e.org/x" rel="noopener noreferrer nofollow"><strong>bold</strong> text</a>' in html
    assert '<a href="https://e.org/y"' in html
    assert not re.search(r'href="[^"]*(<|\*)', html)


def test_markdown_drops_remote_images_and_unsafe_markup():
    html = str(render_markdown('![x](https://tracker.example/p.png) <iframe src="https://e.org"></iframe>\n\n'
                               '<a href="javascript:alert(1)">x</a> [y](data:text/html,hi)'))  # fmt: skip
    assert "<img" not in html and "<iframe" not in html and "&lt;iframe" in html
    assert not re.search(r'<a [^>]*href="(javascript|data)', html)
