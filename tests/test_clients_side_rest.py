"""The prompt histories of Kimi CLI, Hermes Agent and Mistral Vibe, recorded afresh with the
real clients in their terminal UI (marker ``clients``; tests/clients/side_tui.py): one TUI
run per client (two prompts, then ``/exit``), each read by ingest as the fixtures are
(tests/test_side_files_rest.py): the prompts typed are the prompt history, the slash
command is not, the file restores byte-exact. Skips a client that is not installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from archive.db import open_db
from archive.ingest import IngestOptions, ingest_paths, restore
from clients import side_tui

pytestmark = pytest.mark.clients

HISTORY = {"kimi": "user-history/*.jsonl", "hermes": ".hermes_history", "vibe": "vibehistory"}
ENV = {"kimi": "KIMI_SHARE_DIR", "hermes": "HERMES_HOME", "vibe": "VIBE_HOME"}


@pytest.mark.parametrize("vendor", ["kimi", "hermes", "vibe"])
def test_the_tui_writes_the_prompt_history_the_archive_reads(vendor: str, tmp_path: Path) -> None:
    try:
        _version, vendor_home, screens = side_tui.record(vendor, tmp_path / "work")
    except FileNotFoundError as e:
        pytest.skip(str(e))
    (history,) = vendor_home.glob(HISTORY[vendor])
    db = open_db(tmp_path / "a.db")
    env = {"HOME": str(tmp_path / "work" / "home"), ENV[vendor]: str(vendor_home)}
    summary = ingest_paths(db, None, IngestOptions(providers=(vendor,), env=env, idle_seconds=0))
    assert summary.failed == 0 and not summary.reports.get("invalid"), screens[-3:]
    assert [p for (p,) in db.execute("SELECT prompt FROM prompt_history ORDER BY offset")] == side_tui.PROMPTS, screens[-3:]
    (restored,) = restore(db, tmp_path / "out", source=str(history))
    assert Path(restored.path).read_bytes() == history.read_bytes()
