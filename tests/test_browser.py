"""End to end in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright):
``sesh-archive serve`` in a subprocess on a free loopback port over an archive of the
fixtures and recordings, then every page as a person uses it: the sessions list and its
filters, a conversation (title, folds that stay open, coloured diffs, expand/collapse all,
links into later pages), the usage charts, search filters. Every request the browser makes
is logged and must go to the server. Screenshots go to ``$SESH_SCREENSHOTS`` (default
tests/artifacts/, gitignored) for a person to look at; docs/screenshots/ holds copies."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_datasette import (
    CANON,
    CANON_CHILD,
    FIXTURES,
    NEVER_IDLE,
    PARENT,
    SIDECHAIN,
    build_archive,
)
from test_web import LONG, long_thread

from archive.db import open_db
from archive.ingest import ingest_paths
from archive.queries import first_prompts
from archive.web.conversation import PAGE_SIZE

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(os.environ.get("SESH_SCREENSHOTS") or Path(__file__).parent / "artifacts")
CHROMIUM = os.environ.get("SESH_CHROMIUM", "/usr/bin/chromium")

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is absent (install Debian's chromium: apt-get install -y chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("browser")
    db_path = build_archive(d / "archive.db", d / "canon.jsonl")
    db = open_db(db_path)
    ingest_paths(db, [FIXTURES / "recorded", long_thread(d / "long.jsonl")], NEVER_IDLE)
    db.conn.close()
    return db_path


@pytest.fixture(scope="module")
def server(archive: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "archive", "--db", str(archive), "serve", "--port", str(port), "--no-watch"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode() if proc.stdout else ""
                    pytest.fail(f"serve did not start: {out}")
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def page(browser: Any, server: str) -> Iterator[Any]:
    """A fresh page whose every request is logged; none may leave the server."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    requests: list[str] = []
    pg.on("request", lambda r: requests.append(r.url))
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert requests, "the page made no request at all"
    outside = [u for u in requests if not u.startswith(server) and not u.startswith("data:")]
    assert not outside, outside
    assert not errors, errors


def shot(pg: Any, name: str, full_page: bool = False) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    target = ARTIFACTS / name
    pg.screenshot(path=str(target), full_page=full_page)
    assert target.stat().st_size > 10_000, target
    return target


def label_of(archive: Path, thread_id: str) -> str:
    db = open_db(archive)
    try:
        return first_prompts(db.conn, [thread_id], width=140)[thread_id]
    finally:
        db.conn.close()


def session_rows(pg: Any) -> list[str]:
    return pg.locator("tr.sesh-session").evaluate_all("rows => rows.map(r => r.dataset.thread)")


def all_session_rows(pg: Any, url: str) -> dict[str, str]:
    """Every page of the session list (the fixtures hold more than one page): thread id ->
    the label shown."""
    from archive.web.sessions import PAGE_SIZE

    out: dict[str, str] = {}
    n = 1
    while True:
        pg.goto(f"{url}?page={n}")
        rows = pg.locator("tr.sesh-session").evaluate_all(
            "rows => rows.map(r => [r.dataset.thread, r.querySelector('td.sesh-label > a').innerText])")
        out.update(rows)
        if len(rows) < PAGE_SIZE:
            return out
        n += 1


# ---------------------------------------------------------------- sessions


def test_landing_lists_sessions_by_label_and_filters_change_it(page: Any, server: str, archive: Path):
    page.goto(server)
    assert page.title() == "Sessions - sesh-archive"
    assert page.locator("td.sesh-label > a").all_inner_texts()  # labelled rows on the first page
    shot(page, "sessions.png")
    every = all_session_rows(page, server)
    # on whichever page it falls: recordings made later sort before it (most recent first)
    assert "Screenshot review" in every.values()
    assert every[PARENT] == label_of(archive, PARENT)  # untitled: its first prompt, not a uuid
    assert SIDECHAIN not in every and CANON_CHILD not in every
    page.goto(server)

    page.select_option("select[name=provider]", "codex")
    page.click("input[type=submit]")
    page.wait_for_load_state()
    codex = session_rows(page)
    assert codex and set(codex) < set(every)
    assert set(page.locator("tr.sesh-session td:nth-child(2)").all_inner_texts()) == {"codex"}

    page.goto(server)
    page.fill("input[name=q]", "zanzibarquux")
    page.press("input[name=q]", "Enter")
    page.wait_for_load_state()
    assert session_rows(page) == [CANON]
    # the child thread is folded under its parent and opens in place
    page.click(f'tr[data-thread="{CANON}"] details.sesh-kids summary')
    assert page.locator(f'tr[data-thread="{CANON}"] details.sesh-kids a').inner_text() == "Subagent: inspect CSS"


# ---------------------------------------------------------------- conversation


def test_conversation_titled_by_label_folds_stay_open_and_diffs_are_coloured(page: Any, server: str, archive: Path):
    page.goto(server + f"-/sesh/thread/{PARENT}")
    label = label_of(archive, PARENT)
    assert page.title() == f"{label} - sesh-archive"
    assert page.locator("h1.sesh-title").inner_text() == label
    tools = page.locator("details.sesh-tool")
    assert tools.count() >= 4
    edit = page.locator("details.sesh-tool-edit").first
    first, second = tools.nth(0), edit
    first.locator("summary").click()
    second.locator("summary").click()
    assert first.evaluate("d => d.open") and second.evaluate("d => d.open")  # the first stayed open
    page.locator("h1.sesh-title").click()  # empty space
    assert first.evaluate("d => d.open") and second.evaluate("d => d.open")
    # Datasette's own menu still closes when the click is outside it
    page.locator("details.nav-menu summary").click()
    assert page.locator("details.nav-menu").evaluate("d => d.open")
    page.locator("h1.sesh-title").click()
    assert not page.locator("details.nav-menu").evaluate("d => d.open")
    assert first.evaluate("d => d.open")

    added = edit.locator(".sesh-diff .gi").first
    removed = edit.locator(".sesh-diff .gd").first
    assert added.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(230, 255, 236)"
    assert removed.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 235, 233)"
    # the result sits inside the call's fold
    assert edit.locator(".sesh-result").count() == 1
    edit.scroll_into_view_if_needed()
    shot(page, "conversation-diff.png")

    page.click("button[data-sesh-fold=open]")
    assert page.locator("details.sesh-fold").evaluate_all("ds => ds.every(d => d.open)")
    page.click("button[data-sesh-fold=close]")
    assert page.locator("details.sesh-fold").evaluate_all("ds => ds.every(d => !d.open)")
    page.uncheck("input[data-sesh-hide=tools]")
    assert not tools.first.is_visible()
    page.check("input[data-sesh-hide=tools]")
    page.evaluate("window.scrollTo(0, 0)")
    tools.nth(1).locator("summary").click()
    page.evaluate("window.scrollTo(0, 0)")
    shot(page, "conversation.png")

    page.goto(server + f"-/sesh/thread/{SIDECHAIN}")
    assert page.locator(f'a[href="/-/sesh/thread/{PARENT}"]').count() >= 1


def test_canonical_conversation_escapes_and_shows_images(page: Any, server: str):
    page.goto(server + f"-/sesh/thread/{CANON}")
    html = page.content()
    assert page.title() == "Screenshot review - sesh-archive"
    assert "<strong>zanzibarquux</strong>" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # shown as text, never run
    img = page.locator(".sesh-attachment img")
    assert img.count() == 1
    # loading="lazy": the load event does not wait for it (a loaded machine failed CI here)
    img.scroll_into_view_if_needed()
    page.wait_for_function("i => i.complete && i.naturalWidth > 0", arg=img.element_handle())
    assert img.evaluate("i => i.naturalWidth") == 160
    assert page.locator(f'a[href="/-/sesh/thread/{CANON_CHILD}"]').count() >= 1
    code = page.locator("pre.highlight code.language-css .nc").first
    assert code.inner_text() == "btn" and code.evaluate("e => getComputedStyle(e).color") != "rgb(0, 0, 0)"


def test_a_search_hit_unfolds_its_block(page: Any, server: str):
    """A hit inside a folded tool result opens it: the page's script ran in the browser."""
    page.goto(server + "-/sesh/search?q=4px")
    hrefs = page.locator("a.sesh-hit-link").evaluate_all("as => as.map(a => a.getAttribute('href'))")
    assert len(hrefs) == 1 and CANON in hrefs[0]
    page.click("a.sesh-hit-link")
    page.wait_for_load_state()
    anchor = hrefs[0].rsplit("#", 1)[1]
    assert page.locator(f"#{anchor}").is_visible()
    assert page.locator(f"#{anchor}").evaluate("e => e.closest('details').open")


def test_a_link_into_a_later_page_of_a_long_thread(page: Any, server: str, archive: Path):
    db = open_db(archive)
    block = db.execute("SELECT id FROM blocks WHERE message_id = ? AND type = 'text'", [f"L{2 * PAGE_SIZE + 1}"]).fetchone()[0]
    db.conn.close()
    page.goto(server + f"-/sesh/thread/{LONG}#b{block}")  # page 1 does not hold it: the script asks for its page
    page.wait_for_url(re.compile(rf"block={block}#b{block}$"))
    assert page.locator(f"#b{block}").is_visible()
    assert "page 3 of 3" in page.locator(".sesh-toolbar").inner_text()
    toc = page.locator("aside.sesh-toc li")
    assert toc.count() > 10
    toc.first.locator("a").click()
    assert page.url.endswith(f"#msg-L{2 * PAGE_SIZE + 1}")


# ---------------------------------------------------------------- usage and search


def test_usage_dashboard_renders_its_charts(page: Any, server: str):
    page.goto(server + "-/sesh/usage")
    charts = page.locator("svg.sesh-chart")
    assert charts.count() >= 6
    for i in range(charts.count()):
        box = charts.nth(i).bounding_box()
        assert box and box["width"] > 100 and box["height"] > 50, i
    assert page.locator("svg.sesh-chart rect").count() > 20
    assert page.locator(".sesh-card-n").first.inner_text().startswith("$")
    shot(page, "usage.png", full_page=True)


def test_search_page_filters(page: Any, server: str):
    page.goto(server + "-/sesh/search?q=the")
    total = int(re.search(r"([\d,]+) match", page.locator(".sesh-total").inner_text()).group(1).replace(",", ""))
    page.select_option("select[name=role]", "user")
    page.select_option("select[name=sort]", "date")
    page.click("input[type=submit]")
    page.wait_for_load_state()
    assert "role=user" in page.url and "sort=date" in page.url
    links = page.locator("a.sesh-hit-link").all_inner_texts()
    assert links and all(t.startswith("user ·") for t in links)
    narrowed = int(re.search(r"([\d,]+) match", page.locator(".sesh-total").inner_text()).group(1).replace(",", ""))
    assert 0 < narrowed < total
    heads = page.locator(".sesh-hit-head > a").all_inner_texts()
    assert not any(re.fullmatch(r"[0-9a-f-]{36}", h) for h in heads)  # labels, not uuids
    shot(page, "search.png")
    page.goto(server + "-/sesh/search?q=zanzibarquux")
    assert page.locator("mark").first.inner_text() == "zanzibarquux"
