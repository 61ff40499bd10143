"""Recorded sessions (tests/fixtures/recorded/<vendor>-<version>/<scenario>/) and how to put
one into a fresh vendor home so the real client can resume it.

Invariants:

* A recording's files are relative to the vendor home (``projects/...`` for Claude Code,
  ``sessions/...`` for Codex and pi, ``session-state/...`` for Copilot CLI) and are copied
  byte for byte.
* Claude Code and pi find a session by the project folder of the working directory, so the
  recorded project folder is renamed to the one of the new working directory; the file
  contents (including their ``cwd`` fields) are not touched.
* pi 0.73.1 refuses to resume a session whose recorded cwd no longer exists, so installing
  a pi recording creates that (empty) folder under /tmp/sesh-record/ again.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import runner
from .conversation import Conversation, from_json

RECORDED = runner.REPO / "tests" / "fixtures" / "recorded"


@dataclass(frozen=True)
class Recording:
    folder: Path
    meta: dict[str, Any]

    @property
    def vendor(self) -> str:
        return self.meta["vendor"]

    @property
    def version(self) -> str:
        return self.meta["version"]

    @property
    def name(self) -> str:
        return f"{self.vendor}-{self.version}/{self.meta['scenario']}"

    @property
    def session_id(self) -> str:
        return self.meta["session_id"]

    @property
    def conversation(self) -> Conversation:
        return from_json(self.meta["conversation"])

    def files(self) -> list[Path]:
        return [self.folder / f for f in self.meta["files"]]


def recordings(vendor: str | None = None) -> list[Recording]:
    out = []
    for meta_path in sorted(RECORDED.glob("*/*/scenario.json")):
        meta = json.loads(meta_path.read_text())
        if vendor is None or meta["vendor"] == vendor:
            out.append(Recording(meta_path.parent, meta))
    return out


def install(rec: Recording, home: Path, cwd: Path) -> list[Path]:
    """Copy a recording's session files into ``home`` for a client started in ``cwd``."""
    vendor_home = home / runner.HOMES[rec.vendor][0]
    project = {"claude-code": runner.claude_project_dir, "pi": runner.pi_project_dir}.get(rec.vendor)
    top = runner.HOMES[rec.vendor][1]
    if rec.vendor == "pi":
        Path(rec.meta["cwd"]).mkdir(parents=True, exist_ok=True)
    written = []
    for rel in rec.meta["files"]:
        parts = Path(rel).parts
        if project is not None and parts[0] == top:
            dest = project(home, cwd).joinpath(*parts[2:])  # <top>/<recorded folder>/... -> the new one
        else:
            dest = vendor_home / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rec.folder / rel, dest)
        written.append(dest)
    return written
