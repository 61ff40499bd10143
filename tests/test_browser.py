"""End to end in a real headless Chromium: ``sesh-archive serve`` in a subprocess on a free
loopback port, then the search page and a conversation page as a browser renders them
(``--dump-dom`` after scripts ran) and as it paints them (screenshots kept under
tests/artifacts/, gitignored, for a person to look at)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_datasette import CANON, CANON_CHILD, PARENT, SIDECHAIN, build_archive

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = Path(__file__).parent / "artifacts"
CHROMIUM = os.environ.get("SESH_CHROMIUM", "/usr/bin/chromium")

if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is absent (install Debian's chromium: apt-get install -y chromium)", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    d = tmp_path_factory.mktemp("browser")
    db = build_archive(d / "archive.db", d / "canon.jsonl")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "archive", "--db", str(db), "serve", "--port", str(port)],
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


def chromium(*args: str) -> str:
    profile = tempfile.mkdtemp(prefix="sesh-chromium-")
    try:
        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-quic", f"--user-data-dir={profile}", "--window-size=1280,900", *args]  # fmt: skip
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(url: str, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / name
    target.unlink(missing_ok=True)
    chromium(f"--screenshot={target}", url)
    assert target.exists() and target.stat().st_size > 10_000, target
    return target


def test_search_page_in_chromium(server: str):
    url = server + "-/sesh/search?q=zanzibarquux"
    dom = chromium("--dump-dom", url)
    assert "Search sessions" in dom
    assert "<mark>zanzibarquux</mark>" in dom
    assert "Screenshot review" in dom
    assert f"/-/sesh/thread/{CANON}#b" in dom
    screenshot(url, "search.png")


def test_conversation_pages_in_chromium(server: str):
    url = server + f"-/sesh/thread/{CANON}"
    dom = chromium("--dump-dom", url)
    assert "Screenshot review" in dom
    assert "<strong>zanzibarquux</strong>" in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom  # shown as text, never run
    assert "/-/sesh/blob/" in dom and "<img" in dom
    assert f"/-/sesh/thread/{CANON_CHILD}" in dom
    screenshot(url, "conversation-canonical.png")

    dom = chromium("--dump-dom", server + f"-/sesh/thread/{PARENT}")
    assert f"/-/sesh/thread/{SIDECHAIN}" in dom
    assert "Check package configuration" in dom
    screenshot(server + f"-/sesh/thread/{PARENT}", "conversation-claude-code.png")


def test_a_search_hit_unfolds_its_block(server: str):
    """A hit inside a folded tool result opens it: the page's script ran in the browser."""
    with urllib.request.urlopen(server + "-/sesh/search?q=4px", timeout=10) as r:
        hrefs = re.findall(r'href="(/-/sesh/thread/[^"]+#b\d+)"', r.read().decode())
    assert len(hrefs) == 1 and CANON in hrefs[0]
    dom = chromium("--dump-dom", server.rstrip("/") + hrefs[0])
    opened = re.search(rf'<details[^>]*id="{hrefs[0].rsplit("#", 1)[1]}"[^>]*>', dom)
    assert opened is not None and " open" in opened.group(0), opened
