"""The conversation page masks found secrets in a real headless Chromium (marker
``browser``): every planted value of tests/test_secrets.py is absent from what the page
shows, unfolded tool calls, results and diffs included, and ``[REDACTED rule]`` is there;
``serve --show-secrets`` shows them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from test_browser import CHROMIUM, ROOT, free_port
from test_secrets import _leaks, _values
from test_secrets import sessions as sessions  # noqa: F401  (the module fixture)

from archive.db import open_db

pytestmark = pytest.mark.browser
sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")


def _serve(db: str, *extra: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "archive", "--db", db, "serve", "--port", str(port), "--no-watch", *extra],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("serve did not start")
            time.sleep(0.1)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def _page_text(browser: Any, url: str) -> str:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.goto(url)
    pg.wait_for_load_state("networkidle")
    # unfold everything folded (tool calls, results, diffs), then read what a person sees
    pg.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    text = pg.inner_text("body")
    html = pg.content()
    context.close()
    return text + "\n" + html


@pytest.mark.parametrize("show", [False, True])
def test_conversation_page_masks_secrets(sessions: dict, browser: Any, show: bool) -> None:  # noqa: F811
    db = sessions["db"]
    values = _values(sessions)
    tids = [r[0] for r in open_db(db).execute("SELECT DISTINCT thread_id FROM secret_findings WHERE thread_id IS NOT NULL")]
    assert len(tids) == 3
    proc, url = _serve(db, *(["--show-secrets"] if show else []))
    try:
        for tid in tids:
            seen = _page_text(browser, f"{url}-/sesh/thread/{tid}")
            if show:
                assert _leaks(seen, values)
            else:
                assert not _leaks(seen, values), tid
                assert "[REDACTED aws-access-key]" in seen and "[REDACTED private-key]" in seen
        seen = _page_text(browser, f"{url}-/sesh/search?q=AWS_ACCESS_KEY_ID")
        assert bool(_leaks(seen, values)) == show
    finally:
        proc.terminate()
        proc.wait(10)
