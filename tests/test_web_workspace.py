"""The web workspace (issue 41) in-process through ``ds.client``: the session list beside the
conversation (filters kept in its links, day runs, the pane alone for the script), search
hits grouped by session and the palette's answer, what pages poll (``/-/sesh/live``), the
being-written mark, the export/resume slot, and the colour schemes' contrast (WCAG AA,
computed from the CSS variables of archive/data/static/sesh.css)."""

from __future__ import annotations

import datetime as dt
import re
import time
from importlib import resources
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_datasette import CANON
from test_web import LONG, archive_path, ds, get, ok  # noqa: F401 - fixtures

from archive.db import open_db
from archive.web import workspace


# ---------------------------------------------------------------- layout


def test_the_conversation_has_the_session_list_beside_it(ds: Any):
    html = ok(ds, f"/-/sesh/thread/{CANON}")
    side = html[html.index('<section class="sesh-side"'):html.index('<div class="sesh-pane"')]
    items = re.findall(r'<li class="sesh-side-item( sesh-current)?" data-thread="([^"]+)">', side)
    assert len(items) > 5
    assert [t for cur, t in items if cur] == [CANON]  # the open one is marked
    assert re.findall(r'<h3 class="sesh-day-head">(\d{4}-\d\d-\d\d)</h3>', side) == sorted(
        set(re.findall(r'<h3 class="sesh-day-head">(\d{4}-\d\d-\d\d)</h3>', side)), reverse=True)  # one run a day, newest first
    assert 'class="sesh-vendor">canonical<' in side and 'class="sesh-count"' in side and 'class="sesh-proj"' in side
    pane = html[html.index('<div class="sesh-pane"'):]
    assert '<div class="sesh-take"><details class="sesh-take"' in pane  # the export/resume panel in its slot
    assert "data-sesh-live=" in pane


def test_the_list_filters_travel_with_its_links_and_the_pane_comes_alone(ds: Any):
    html = ok(ds, f"/-/sesh/thread/{CANON}?provider=canonical&q=pelicans")
    side = html[html.index('<section class="sesh-side"'):html.index('<div class="sesh-pane"')]
    hrefs = re.findall(r'<a href="([^"]+)" data-sesh-open', side)
    assert hrefs and all("provider=canonical" in h and "q=pelicans" in h for h in hrefs)
    assert 'class="sesh-vendor">claude-code<' not in side
    assert '<option selected>canonical</option>' in side
    pane = get(ds, f"/-/sesh/thread/{CANON}", headers={"X-Sesh-Pane": "1"})
    assert pane.status_code == 200 and "<html" not in pane.text and 'class="sesh-side"' not in pane.text
    assert f'data-sesh-thread="{CANON}"' in pane.text and 'class="sesh-chat"' in pane.text
    alone = ok(ds, f"/-/sesh/side?current={CANON}&sort=messages")
    assert "<html" not in alone and "sesh-day-head" not in alone  # a sort other than time: one run
    assert get(ds, f"/-/sesh/thread/{CANON}?sort=loudest").status_code == 400


def test_sessions_page_links_open_the_workspace_with_its_filters(ds: Any):
    html = ok(ds, "/-/sesh/sessions?provider=canonical")
    assert re.search(r'href="/-/sesh/thread/[^"?]+\?provider=canonical"', html)


def test_a_long_threads_pages_keep_the_list_filters(ds: Any):
    html = ok(ds, f"/-/sesh/thread/{LONG}?provider=canonical")
    assert f"/-/sesh/thread/{LONG}?provider=canonical&amp;page=2" in html


# ---------------------------------------------------------------- search


def test_search_hits_are_grouped_by_session(ds: Any):
    html = ok(ds, "/-/sesh/search?q=the")
    total = int(re.search(r"([\d,]+) matches\s+in ([\d,]+) sessions", html).group(1).replace(",", ""))
    sessions = int(re.search(r"([\d,]+) matches\s+in ([\d,]+) sessions", html).group(2).replace(",", ""))
    groups = re.findall(r'<li class="sesh-group sesh-hit" data-thread="([^"]+)">(.*?)</ol>\s*</li>', html, re.S)
    assert 1 < len(groups) <= 20 and sessions > len(groups) - 1 and total > sessions
    assert len({t for t, _ in groups}) == len(groups)  # one entry per session
    counts = [int(re.search(r'class="sesh-group-n"[^>]*>([\d,]+) hit', body).group(1).replace(",", "")) for _, body in groups]
    shown = [body.count('class="sesh-hit-link"') for _, body in groups]
    assert all(1 <= s <= 3 and s <= n for s, n in zip(shown, counts))
    assert any(n > 3 for n in counts)
    # the counts are the session's hits: the flat timeline (date sort) of one session agrees
    thread, body = groups[0]
    dated = ok(ds, "/-/sesh/search?q=the&sort=date")
    assert "sesh-group" not in dated
    # next page of sessions
    if sessions > 20:
        assert "offset=20" in html
    # the grouped hit links jump to the block
    assert re.search(rf'href="/-/sesh/thread/{re.escape(thread)}#b\d+"', body)


def test_grouped_counts_match_the_hits_of_each_session(ds: Any, archive_path: Path):
    html = ok(ds, "/-/sesh/search?q=pelicans")
    groups = dict(re.findall(r'data-thread="([^"]+)">.*?class="sesh-group-n"[^>]*>([\d,]+) hit', html, re.S))
    db = open_db(archive_path)
    try:
        for thread, n in groups.items():
            real = db.execute("SELECT count(*) FROM blocks_fts JOIN blocks b ON b.id = blocks_fts.rowid JOIN messages m "
                              "ON m.id = b.message_id WHERE blocks_fts MATCH 'pelicans' AND m.thread_id = ?", [thread]).fetchone()[0]  # fmt: skip
            assert int(n.replace(",", "")) == real, thread
    finally:
        db.conn.close()
    assert LONG in groups


def test_the_palette_gets_results_alone_and_its_filters(ds: Any):
    r = get(ds, "/-/sesh/search?q=pelicans&provider=canonical", headers={"X-Sesh-Pane": "1"})
    assert r.status_code == 200 and "<html" not in r.text and "sesh-group" in r.text and "all results" in r.text
    filters = ok(ds, "/-/sesh/palette")
    for name in ("provider", "project", "role", "since", "until", "mode"):
        assert f'name="{name}"' in filters
    assert '<option value="semantic">meaning</option>' in filters


# ---------------------------------------------------------------- live


def test_live_state_changes_when_an_ingest_adds_messages(tmp_path: Path):
    from test_datasette import NEVER_IDLE

    from archive.ingest import ingest_paths

    path = tmp_path / "canon.jsonl"
    at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=3)  # a session being written now
    rec = [{"v": 1, "id": "T", "createdAt": _iso(at)},
           {"v": 1, "id": "m1", "threadId": "T", "role": "user", "ts": _iso(at), "content": [{"type": "text", "text": "one"}]}]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rec))
    db = open_db(tmp_path / "a.db")
    ingest_paths(db, [path], NEVER_IDLE)
    before = workspace.state(db.conn, "T")
    assert before["messages"] == 1 and before["writing"] is True  # written a moment ago
    with path.open("ab") as f:
        f.write(orjson.dumps({"v": 1, "id": "m2", "threadId": "T", "role": "assistant", "ts": _iso(at + dt.timedelta(seconds=1)),
                              "content": [{"type": "text", "text": "two"}]}) + b"\n")  # fmt: skip
    ingest_paths(db, [path], NEVER_IDLE)
    after = workspace.state(db.conn, "T")
    assert after["messages"] == 2 and after["version"] != before["version"]
    assert workspace.state(db.conn, "T") == after  # nothing new: the same version
    later = time.time() + workspace.WRITING_SECONDS + 5
    assert workspace.writing(db.conn, ["T"], now=later) == set()
    assert workspace.writing(db.conn, ["T"]) == {"T"}


def _iso(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@pytest.mark.parametrize(("age", "zone", "written"), [
    (dt.timedelta(days=3), "Z", False),  # a home copied today: its sessions of last week are not being written
    (dt.timedelta(hours=20), "Z", True),  # within a day of the file's change: an agent may still be at it
    (dt.timedelta(hours=20), "", True),  # a time without a zone, read as UTC
    (dt.timedelta(days=3), "", False),
])  # fmt: skip
def test_a_file_changed_long_after_its_last_message_is_not_being_written(tmp_path: Path, age: dt.timedelta, zone: str,
                                                                          written: bool) -> None:  # fmt: skip
    """A file copied or restored now (mtime now) that holds a session whose last message is
    days old is not a session being written; its mtime alone said it was."""
    from test_datasette import NEVER_IDLE

    from archive.ingest import ingest_paths

    at = dt.datetime.now(dt.timezone.utc) - age
    path = tmp_path / "canon.jsonl"
    rec = [{"v": 1, "id": "T", "createdAt": _iso(at)[:-1] + zone},
           {"v": 1, "id": "m1", "threadId": "T", "role": "user", "ts": _iso(at)[:-1] + zone,
            "content": [{"type": "text", "text": "one"}]}]  # fmt: skip
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rec))  # its mtime: now
    db = open_db(tmp_path / "a.db")
    try:
        ingest_paths(db, [path], NEVER_IDLE)
        assert workspace.state(db.conn, "T")["writing"] is written
        assert (workspace.writing(db.conn, ["T"]) == {"T"}) is written
    finally:
        db.conn.close()


@pytest.mark.parametrize("timed_message", [True, False])
def test_a_file_of_messages_without_times_is_judged_by_its_thread_s_last_activity(tmp_path: Path, timed_message: bool) -> None:
    """A session whose newest file holds messages without times (Kimi CLI's context), copied
    today: the thread's last activity, days old (its last timed message, else its start),
    says it is not being written; its file alone could not say."""
    from test_datasette import NEVER_IDLE

    from archive.ingest import ingest_paths

    at = _iso(dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=3))
    first, untimed = tmp_path / "first.jsonl", tmp_path / "untimed.jsonl"
    first.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in [
        {"v": 1, "id": "T", "createdAt": at},
        {"v": 1, "id": "m1", "threadId": "T", "role": "user", "content": [{"type": "text", "text": "one"}],
         **({"ts": at} if timed_message else {})}]))  # fmt: skip
    untimed.write_bytes(orjson.dumps({"v": 1, "id": "m2", "threadId": "T", "role": "assistant",
                                      "content": [{"type": "text", "text": "two"}]}) + b"\n")  # fmt: skip
    db = open_db(tmp_path / "a.db")
    try:
        ingest_paths(db, [first, untimed], NEVER_IDLE)
        assert db.execute("SELECT count(*), count(ts) FROM messages WHERE thread_id = 'T'").fetchone() == (2, int(timed_message))
        assert workspace.writing(db.conn, ["T"]) == set()
    finally:
        db.conn.close()


def test_live_route_answers_json(ds: Any):
    r = get(ds, f"/-/sesh/live?thread={CANON}")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    data = r.json()
    assert re.fullmatch(r"\d+\.\d+\.\d+", data["version"]) and data["messages"] > 0 and data["writing"] in (True, False)


# ---------------------------------------------------------------- colour schemes and contrast


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    out = []
    for i in (0, 2, 4):
        c = int(h[i:i + 2], 16) / 255
        out.append(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4)
    return 0.2126 * out[0] + 0.7152 * out[1] + 0.0722 * out[2]


def contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _variables(block: str) -> dict[str, str]:
    return dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-fA-F]{3,6})\b", block))


def schemes() -> dict[str, dict[str, str]]:
    css = resources.files("archive.data").joinpath("static", "sesh.css").read_text("utf-8")
    light = re.search(r":root \{(.*?)\}", css, re.S).group(1)
    dark_media = re.search(r"@media \(prefers-color-scheme: dark\) \{\s*:root:not\(\[data-theme=light\]\) \{(.*?)\}", css, re.S).group(1)
    dark_switch = re.search(r":root\[data-theme=dark\] \{(.*?)\}", css, re.S).group(1)
    return {"light": _variables(light), "dark (system)": _variables(dark_media), "dark (switch)": _variables(dark_switch)}


# text on background: every pair the pages draw (sesh.css)
TEXT_PAIRS = [("fg", "bg"), ("fg", "surface"), ("muted", "bg"), ("muted", "surface"), ("link", "bg"), ("link", "surface"),
              ("visited", "bg"), ("visited", "surface"), ("fg", "user-bg"), ("muted", "user-bg"), ("link", "user-bg"),
              ("fg", "asst-bg"), ("muted", "asst-bg"), ("fg", "sys-bg"), ("muted", "sys-bg"), ("fg", "code-bg"),
              ("fg", "badge-bg"), ("mark-fg", "mark-bg"), ("kind-fg", "kind-bg"), ("add-fg", "add-bg"),
              ("del-fg", "del-bg"), ("search-fg", "search-bg"), ("writing-fg", "writing-bg"), ("error-fg", "error-bg"),
              ("fg", "current-bg"), ("link", "current-bg"), ("muted", "current-bg"), ("fg", "overlay-bg"),
              ("header-fg", "header-bg"), ("fg", "del-bg")]  # fmt: skip


@pytest.mark.parametrize("scheme", ["light", "dark (system)", "dark (switch)"])
def test_every_text_colour_passes_wcag_aa_on_its_background(scheme: str):
    v = schemes()[scheme]
    low = {f"{a} on {b}": round(contrast(v[a], v[b]), 2) for a, b in TEXT_PAIRS if contrast(v[a], v[b]) < 4.5}
    assert not low, low


def test_the_two_dark_blocks_are_the_same_and_cover_every_variable():
    s = schemes()
    assert s["dark (system)"] == s["dark (switch)"]
    assert set(s["light"]) == set(s["dark (switch)"])
    assert contrast("#777777", "#ffffff") < 4.5 < contrast("#555a66", "#ffffff")  # the check itself tells them apart


def test_the_side_list_holds_the_page_of_the_open_session(archive_path: Path, monkeypatch: pytest.MonkeyPatch):
    from archive.pricing import load_prices
    from archive.web import sessions

    monkeypatch.setattr(sessions, "PAGE_SIZE", 2)
    db = open_db(archive_path)
    try:
        first = workspace.side_list(db.conn, sessions.SessionFilters(), load_prices())
        assert first["page"] == 1 and first["pages"] >= 3
        every = [r["id"] for n in range(1, first["pages"] + 1)
                 for r in sessions.sessions(db.conn, sessions.SessionFilters(page=n), load_prices())["rows"]]  # fmt: skip
        target = every[4]
        held = workspace.side_list(db.conn, sessions.SessionFilters(), load_prices(), current=target)
        assert held["page"] == 3 and target in [r["id"] for r in held["rows"]]
        assert workspace.side_list(db.conn, sessions.SessionFilters(), load_prices(), current="no-such")["page"] == 1
    finally:
        db.conn.close()
