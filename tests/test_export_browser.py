"""The exported HTML (issue 41) opened in a real headless Chromium (marker ``browser``) from
a file, the browser context offline and every request it would make recorded and refused:
none is made, the messages, the diff, the inlined image and the folded child threads show.
A screenshot goes to ``$SESH_SCREENSHOTS`` (default tests/artifacts/)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_browser import ARTIFACTS, CHROMIUM
from test_datasette import CANON
from test_export import EDITS, NESTED, NESTED2, PARENT, SIDECHAIN, run
from test_export import arch as arch  # noqa: F401  (the module fixture)

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _open(browser: Any, path: Path, shot: str | None = None) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))

    def refuse(route: Any) -> None:
        if route.request.url == path.as_uri():
            route.continue_()  # the file itself, the one navigation
            return
        requests.append("routed " + route.request.url)
        route.abort()

    context.route("**/*", refuse)
    pg = context.new_page()
    pg.goto(path.as_uri())
    pg.wait_for_load_state("load")
    if shot:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / shot), full_page=False)
    return context, pg, requests


def _made(requests: list[str], path: Path) -> list[str]:
    # the file itself is the one navigation; data: URIs are decoded in place, never fetched
    return [u for u in requests if u != path.as_uri() and not u.startswith("data:")]


def test_the_export_loads_nothing_and_shows_the_conversation(arch: dict, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "canon.html"
    run("--db", arch["db"], "export", CANON, "-o", str(out))
    context, pg, requests = _open(browser, out, "export.png")
    try:
        assert _made(requests, out) == []
        assert pg.evaluate("document.querySelectorAll('article.sesh-msg').length") >= 3
        text = pg.inner_text("body")
        assert "zanzibarquux" in text and "Screenshot review" in text
        # the inlined image decoded and drawn
        assert pg.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
        assert pg.evaluate("document.images.length") == 1
        # the child thread is folded: hidden until opened
        assert not pg.is_visible("text=Inspect the CSS of the button.")
        pg.click("details.sesh-child-thread > summary")
        assert pg.is_visible("text=Inspect the CSS of the button.")
        # styles applied from the inlined CSS (a user bubble is tinted)
        assert pg.evaluate("getComputedStyle(document.querySelector('.sesh-role-user')).backgroundColor") == "rgb(238, 245, 255)"
        assert _made(requests, out) == []
    finally:
        context.close()


def test_diffs_tool_folds_and_nested_children_in_the_browser(arch: dict, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "edits.html"
    run("--db", arch["db"], "export", EDITS, "-o", str(out))
    context, pg, requests = _open(browser, out)
    try:
        assert not pg.is_visible("text=hello pelicans")  # the edit is folded
        pg.click("details.sesh-tool > summary")
        assert pg.is_visible(".sesh-diff .gi")  # the added line, coloured
        assert pg.evaluate("getComputedStyle(document.querySelector('.sesh-diff .gi')).backgroundColor") == "rgb(230, 255, 236)"
        pg.click(f"details#thread-{NESTED} > summary")
        pg.click(f"details#thread-{NESTED2} > summary")
        assert pg.is_visible("text=Lint the albatross module.")
        assert _made(requests, out) == []
    finally:
        context.close()
    out = tmp_path / "parent.html"
    run("--db", arch["db"], "export", PARENT, "-o", str(out))
    context, pg, requests = _open(browser, out, "export-sidechains.png")
    try:
        assert pg.evaluate(f"!!document.getElementById({SIDECHAIN!r}.replace(/^/, 'thread-'))")
        pg.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert pg.evaluate("document.querySelectorAll('details.sesh-child-thread').length") == 2
        assert _made(requests, out) == []
    finally:
        context.close()


def test_the_check_sees_a_request(browser: Any, tmp_path: Path) -> None:
    """The recording can fail: a page that asks for an image and a stylesheet is caught."""
    out = tmp_path / "leaky.html"
    out.write_text('<!DOCTYPE html><link rel="stylesheet" href="https://cdn.example.com/x.css">'
                   '<img src="http://127.0.0.1:9/pixel.png"><p>hi</p>')  # fmt: skip
    context, _pg, requests = _open(browser, out)
    context.close()
    assert len(_made(requests, out)) >= 2


def test_the_pages_panel_downloads_the_export(arch: dict, browser: Any, tmp_path: Path) -> None:  # noqa: F811
    """The conversation page served by ``serve``: the Export · Resume panel opens, shows the
    resume command, and its HTML link downloads what ``export`` writes."""
    from test_secrets_browser import _serve

    proc, url = _serve(arch["db"])
    try:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        pg = context.new_page()
        pg.goto(f"{url}-/sesh/thread/{PARENT}")
        pg.click("details.sesh-take > summary")
        assert pg.is_visible(f"text=claude --resume {PARENT}")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.locator("details.sesh-take").screenshot(path=str(ARTIFACTS / "take-panel.png"))
        with pg.expect_download() as info:
            pg.click("a[data-sesh-export=html]")
        saved = tmp_path / "downloaded.html"
        info.value.save_as(saved)
        assert info.value.suggested_filename == f"{PARENT}.html"
        context.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    cli_out, _ = run("--db", arch["db"], "export", PARENT)
    assert saved.read_text() == cli_out
