"""Recorded sessions (tests/fixtures/recorded/<vendor>-<version>/<scenario>/) and how to put
one into a fresh vendor home so the real client can resume it.

Invariants:

* A recording's files are relative to the vendor home (``projects/...`` for Claude Code and
  Qwen Code, ``sessions/...`` for Codex and pi, ``tmp/...`` for Gemini CLI,
  ``session-state/...`` for Copilot CLI) and are copied byte for byte.
* Claude Code, Gemini CLI, Qwen Code and pi find a session by the project folder of the
  working directory, so the recorded project folder is renamed to the one of the new
  working directory; the file contents (including their ``cwd`` fields) are not touched.
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


def resume_cwd(rec: Recording, cwd: Path) -> Path:
    """Where the client must run to resume ``rec``: ``cwd``, except for Qwen Code, which
    resumes a session only in the folder its first record names (0.24.4,
    ``sessionBelongsToCurrentProject``), so the recorded one is created and used."""
    if rec.vendor != "qwen":
        return cwd
    recorded = Path(rec.meta["cwd"])
    recorded.mkdir(parents=True, exist_ok=True)
    return recorded


def install(rec: Recording, home: Path, cwd: Path) -> list[Path]:
    """Copy a recording's session files into ``home`` for a client started in ``cwd``."""
    vendor_home = home / runner.HOMES[rec.vendor][0]
    top = runner.HOMES[rec.vendor][1]
    project = None  # the project folder for the new cwd, where the vendor files by cwd
    if rec.vendor == "claude-code":
        project = runner.claude_project_dir(home, cwd)
    elif rec.vendor == "pi":
        project = runner.pi_project_dir(home, cwd)
        Path(rec.meta["cwd"]).mkdir(parents=True, exist_ok=True)
    elif rec.vendor == "gemini":
        from archive.vendors.gemini.emit import slugify

        project = vendor_home / top / slugify(cwd.name)
    elif rec.vendor == "qwen":
        from archive.vendors.qwen.emit import project_slug

        project = vendor_home / top / project_slug(str(resume_cwd(rec, cwd)))
    written = []
    if rec.vendor == "opencode":
        # the recorded documents are the archive's form of the database; the client gets
        # the sessions back through its own import of the recorded exports
        exe = runner.find_client(runner.EXES["opencode"])
        assert exe is not None, "opencode not installed"
        cwd.mkdir(parents=True, exist_ok=True)
        for rel in rec.meta["files"]:
            if rel.startswith("export/"):
                runner.opencode_import(exe, home, cwd, rec.folder / rel)
        db = runner.opencode_db(home)
        return [db] if db.exists() else []
    for rel in rec.meta["files"]:
        parts = Path(rel).parts
        if project is not None and parts[0] == top:
            dest = project.joinpath(*parts[2:])  # <top>/<recorded folder>/... -> the new one
        else:
            dest = vendor_home / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(rec.folder / rel, dest)
        written.append(dest)
    return written
