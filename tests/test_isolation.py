"""The suite's isolation from the real home (issue 32, defect 2) is itself tested: a test
that undoes its monkeypatches stays in a throwaway home, and touching the real home fails."""

from __future__ import annotations

import os
import pwd
import sqlite3

import pytest

from archive.vendors import VENDORS

REAL_HOME = pwd.getpwuid(os.getuid()).pw_dir


def test_undo_cannot_reach_the_real_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()  # what test_failures.py did: it undid the per-test home as well
    assert os.environ["HOME"] != REAL_HOME
    for var in ("XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        assert not os.environ[var].startswith(REAL_HOME + os.sep), var
    for var in {v for a in VENDORS for v in a.env_vars}:
        value = os.environ.get(var)
        assert value is None or not value.startswith(REAL_HOME + os.sep), var


@pytest.mark.parametrize("touch", ["open", "listdir", "sqlite"])
def test_touching_the_real_home_fails(touch: str) -> None:
    target = os.path.join(REAL_HOME, ".local", "share", "opencode", "opencode.db")
    with pytest.raises(RuntimeError, match="touched the real home"):
        if touch == "open":
            open(target, "rb")
        elif touch == "listdir":
            os.listdir(REAL_HOME)
        else:
            sqlite3.connect(f"file:{target}?mode=ro", uri=True)
