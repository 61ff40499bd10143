"""Crush (npm ``@charmland/crush``): the adapter. Crush keeps one SQLite database per project,
``<project>/.crush/crush.db`` (its ``data_directory``, ``-D``), not under the home folder.

**Project-local.** ``default_roots`` is empty: the archive finds these databases in project
folders (``project_patterns``, the hook of ``archive/project_roots.py``: the cwd of every
archived session, the folders named with ``ingest --root``), and ``project_sources`` gives,
for a list of folders, the databases in them. ``classify`` takes a database by its place
(``.crush/crush.db``), wherever it is found.

**A database as a source** (as OpenCode's, ``docs/adding-a-vendor.md``): ingest opens it
read-only (``archive.readonly``: a ``mode=ro`` URI, so the WAL of a running Crush is seen,
one short statement per query) and asks ``documents`` for one document per session: the
session row, its message rows (by creation, then rowid) and its file rows, one JSON line
each (``parse.py``). Crush updates these rows in place, so a changed session is a new
generation of its document; older ones are kept. Nothing is written back to Crush's
database: ``restore`` gives the documents back byte for byte.

No emit target: Crush is not installable here (its npm package downloads the binary from
GitHub at install time), so whether ``crush`` resumes a session written into its database is
not tested; the README says so.
"""

from __future__ import annotations

import base64
import glob
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import orjson

from ...model import JsonObject
from ..base import RECORDS, Adapter, Document, Query, SourceInfo, env_path
from .parse import NAME, ZSTD_MAGIC, CrushParser

FOLDER = ".crush"
DB_NAME = "crush.db"
_HEAD = b'{"crush":'


def _text(v: object) -> object:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _row(table: str, cols: list[str], row: tuple, skip: str | None = None) -> bytes:
    out = {c: _text(v) for c, v in zip(cols, row) if c != skip}
    return b'{"crush":' + orjson.dumps(table) + b',"row":' + orjson.dumps(out)


def message_line(cols: list[str], row: tuple) -> bytes:
    """A message row as a JSON line: the parts as stored when they are one line of JSON,
    else base64 of the zstd frame (``partsZstd``) or the text as a string (``partsText``)."""
    parts = row[cols.index("parts")]
    raw = parts if isinstance(parts, bytes) else str(parts or "").encode()
    head = _row("message", cols, row, skip="parts")
    if raw.startswith(ZSTD_MAGIC):
        return head + b',"partsZstd":' + orjson.dumps(base64.b64encode(raw).decode()) + b"}\n"
    if b"\n" not in raw and b"\r" not in raw:
        try:
            orjson.loads(raw)
            return head + b',"parts":' + raw + b"}\n"
        except orjson.JSONDecodeError:
            pass
    return head + b',"partsText":' + orjson.dumps(raw.decode("utf-8", "replace")) + b"}\n"


class CrushAdapter(Adapter):
    name = NAME
    revision = 1
    env_vars = ("CRUSH_GLOBAL_DATA", "XDG_DATA_HOME")  # where projects.json lists its projects
    # read-only: the documents are not files Crush reads, and no emitter writes its database
    emits = False
    tool_kinds = {"bash": "shell", "edit": "edit", "multiedit": "edit", "write": "edit", "view": "read",
                  "download": "web", "fetch": "web", "agentic_fetch": "web", "glob": "search", "grep": "search",
                  "ls": "search", "sourcegraph": "search", "agent": "agent", "todos": "plan", "diagnostics": "read"}
    #: files Crush writes inside a project folder (archive/project_roots.py matches them)
    project_patterns = (f"{FOLDER}/{DB_NAME}",)

    def project_dirs(self, env: Mapping[str, str], home: Path) -> list[Path]:
        """The projects Crush lists in ``projects.json`` beside its global data
        (``$CRUSH_GLOBAL_DATA``, else ``$XDG_DATA_HOME/crush``): each ``path``, and the
        folder holding its ``data_dir`` when that is a ``.crush`` folder elsewhere (``-D``)."""
        folder = env_path(env, "CRUSH_GLOBAL_DATA") or (env_path(env, "XDG_DATA_HOME") or home / ".local" / "share") / NAME
        try:
            listed = orjson.loads((folder / "projects.json").read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return []
        out: list[Path] = []
        for p in listed.get("projects") or [] if isinstance(listed, dict) else []:
            if not isinstance(p, dict):
                continue
            if isinstance(p.get("path"), str) and p["path"]:
                out.append(Path(p["path"]))
            data = p.get("data_dir")
            if isinstance(data, str) and Path(data).name == FOLDER and Path(data).parent not in out:
                out.append(Path(data).parent)
        return out

    def project_sources(self, folders: Iterable[Path]) -> Iterator[Path]:
        """The Crush databases in ``folders`` (project folders: known cwds, named roots),
        each once; stats only, nothing opened."""
        seen: set[str] = set()
        for folder in folders:
            for pattern in self.project_patterns:
                for found in sorted(glob.glob(os.path.join(glob.escape(str(folder)), pattern))):
                    if found not in seen and os.path.isfile(found):
                        seen.add(found)
                        yield Path(found)

    def classify(self, path: Path) -> str | None:
        return RECORDS if path.name == DB_NAME and path.parent.name == FOLDER else None

    def detect(self, head: bytes) -> bool:
        return head.split(b"\n", 1)[0].startswith(_HEAD + b'"session","row":')

    def session_key(self, path: Path) -> str | None:
        return path.name.rpartition("#")[2].rsplit(".", 1)[0] or None

    def documents(self, path: Path, query: Query | None) -> Iterator[Document]:
        """One document per session: its row, its messages, its file versions. One statement
        per table and session."""
        if query is None:
            return
        tables = {r[0] for r in query("SELECT name FROM sqlite_master WHERE type = 'table'", ())}
        if not {b"sessions", b"messages"} <= tables:
            return
        scols = [r[1].decode() for r in query("PRAGMA table_info(sessions)", ())]
        mcols = [r[1].decode() for r in query("PRAGMA table_info(messages)", ())]
        fcols = [r[1].decode() for r in query("PRAGMA table_info(files)", ())] if b"files" in tables else []
        for srow in query("SELECT * FROM sessions ORDER BY created_at, id", ()):
            sid = _text(srow[scols.index("id")])
            lines = [_row("session", scols, srow) + b"}\n"]
            for mrow in query("SELECT * FROM messages WHERE session_id = ? ORDER BY created_at, rowid", (sid,)):
                lines.append(message_line(mcols, mrow))
            if fcols:
                for frow in query("SELECT * FROM files WHERE session_id = ? ORDER BY created_at, rowid", (sid,)):
                    lines.append(_row("file", fcols, frow) + b"}\n")
            yield Document(f"{path}#{sid}.jsonl", b"".join(lines))

    def parser(self, source: SourceInfo, state: JsonObject | None = None) -> CrushParser:
        return CrushParser(source, state)

    def install_path(self, stored_path: str, cwd: str | None = None) -> str | None:
        return None  # the documents are not files Crush reads

    def resume_hint(self, session_id: str, cwd: str | None) -> str | None:
        return None  # crush resumes sessions in its TUI only (not tested here)


ADAPTER = CrushAdapter()
