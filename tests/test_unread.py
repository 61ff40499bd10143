"""Nothing passed over in silence (issue 33 part 4, DESIGN.md "Nothing passed over"):
folders of sessions the archive does not read are named by ``ingest`` and ``status``
(vendor, path, how many files) and carried by ``--json``; a run that finds only those exits 0.

The files below stand where each vendor keeps sessions (formats/next-vendors.md); their
contents are never read (only folder listings are), so each holds one JSON line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from archive.cli import cli
from archive.unread import NO_READER, UNKNOWN_LAYOUT
from archive.vendors import VENDORS
from archive.vendors.layouts import LAYOUTS, unread_layouts
from tests.vendor_home import build_home

LINE = b'{"type":"message"}\n'
# a session file of each known layout without an adapter, relative to HOME
UNREAD = {
    "amp": (".local/share/amp/threads", ["T-0e7c9d7a-0000-4000-8000-000000000003.json"]),
}  # fmt: skip
# a supported vendor's files in a layout its adapter does not take, as a newer release might
# write (the example was Copilot CLI 0.0.3xx's flat ``session-state/<uuid>.jsonl``, read now)
OLD_LAYOUT = ".copilot/session-state/archived/7d3f1c2e-0000-4000-8000-000000000004.jsonl"


def _plant(home: Path) -> dict[str, tuple[Path, int]]:
    want = {}
    for vendor, (root, files) in UNREAD.items():
        for rel in files:
            p = home / root / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(LINE)
        want[vendor] = (home / root, len(files))
    old = home / OLD_LAYOUT
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_bytes(LINE)
    (old.parent / "settings.yaml").write_text("not a session\n")  # not session-like: not named
    return want


def _invoke(*args: str) -> tuple[str, str]:
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.stderr
    return r.stdout, r.stderr


def test_every_next_vendor_is_a_known_layout():
    assert set(UNREAD) == {layout.name for layout in LAYOUTS}
    assert not {layout.name for layout in LAYOUTS} & {a.name for a in VENDORS}
    # an adapter taking a layout's name takes it over: it is no longer listed as unread
    assert [la.name for la in unread_layouts({"amp"})] == [n for n in UNREAD if n != "amp"]


def test_ingest_and_status_name_folders_they_do_not_read(tmp_path, isolated_home):
    home = isolated_home
    want = _plant(home)
    db = str(tmp_path / "a.db")
    out, err = _invoke("--db", db, "ingest", "--json")
    summary = json.loads(out)
    assert summary["files_seen"] == 0
    got = {(u["vendor"], u["path"]): u for u in summary["unread"]}
    for vendor, (root, n) in want.items():
        entry = got.pop((vendor, str(root)))
        assert entry["files"] == n and entry["reason"] == NO_READER
        assert f"not read: {vendor}: {root} ({n} file" in err
    old = got.pop(("copilot", str((home / OLD_LAYOUT).parent)))
    assert old == {"vendor": "copilot", "path": str((home / OLD_LAYOUT).parent), "files": 1, "reason": UNKNOWN_LAYOUT}
    assert got == {}
    summary_line = next(line for line in err.splitlines() if line.startswith("ingest: "))
    assert f"{len(want) + 1} folders of sessions not read" in summary_line

    status, _ = _invoke("--db", db, "status", "--json")
    assert json.loads(status)["unread"] == summary["unread"]
    text, _ = _invoke("--db", db, "status")
    assert f"not read: copilot: {(home / OLD_LAYOUT).parent} (1 file)" in text
    assert f"not read: amp: {home / '.local/share/amp/threads'} (1 file)" in text

    # a run over given paths does not walk the default locations: status keeps the last list
    _invoke("--db", db, "ingest", str(tmp_path / "a.db"))
    assert json.loads(_invoke("--db", db, "status", "--json")[0])["unread"] == summary["unread"]
    # once the files are gone, the next run says nothing more
    for vendor, (root, _n) in want.items():
        shutil.rmtree(root)
    (home / OLD_LAYOUT).unlink()
    out, err = _invoke("--db", db, "ingest", "--json")
    assert json.loads(out)["unread"] == [] and "not read" not in err
    assert json.loads(_invoke("--db", db, "status", "--json")[0])["unread"] == []


@pytest.mark.parametrize("var, vendor, rel, under", [
    ("XDG_DATA_HOME", "amp", "amp/threads/T-0e7c9d7a-0000-4000-8000-000000000003.json", "amp/threads"),
])  # fmt: skip
def test_unread_roots_honour_the_vendors_variables(tmp_path, monkeypatch, var, vendor, rel, under):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / rel).parent.mkdir(parents=True)
    (elsewhere / rel).write_bytes(LINE)
    monkeypatch.setenv(var, str(elsewhere))
    out, _ = _invoke("--db", str(tmp_path / "a.db"), "ingest", "--json")
    root = elsewhere / under if under else elsewhere
    assert json.loads(out)["unread"] == [{"vendor": vendor, "path": str(root), "files": 1, "reason": NO_READER}]


def test_supported_layouts_are_not_named(tmp_path, isolated_home):
    """Every fixture laid out as its vendor keeps it: all read, nothing named unread."""
    build_home(isolated_home)
    out, err = _invoke("--db", str(tmp_path / "a.db"), "ingest", "--json")
    summary = json.loads(out)
    assert summary["files_seen"] > 0 and summary["unread"] == [] and "not read" not in err
