"""Project-local sources (issue 36): files a vendor writes inside project folders (Aider's
``.aider.chat.history.md``, Crush's ``.crush/crush.db``), found without walking the disk.

Where a plain ``ingest`` looks, after every vendor's default roots (so the cwds archived
earlier in the same run count):

- every project folder the archive knows: the ``cwd`` of every archived thread of any vendor,
  and its parent folders up to, not including, the home folder and ``/`` (a session started
  in a subfolder of the repository whose root holds the file);
- the roots the user named (``ingest --root DIR``), kept in the table ``roots`` so that every
  later run searches them; each is walked to ``ROOT_DEPTH`` folders deep, passing over dot
  folders (a pattern names the one it needs), dependency and virtualenv folders;
- the project folders each vendor lists itself (``Adapter.project_dirs``).

Each folder is matched against each adapter's ``project_patterns`` (globs relative to the
folder); a match that the adapter's ``classify`` takes is a source like any other: identity
by content, incremental, restored byte-exact, marked missing when it is gone. Invariants:
only stats (``glob``) here, no file is opened; the same path is yielded once per run; a path
the vendor roots already yielded is not yielded again.
"""

from __future__ import annotations

import glob
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .vendors.base import Adapter

#: how deep a named root is walked for project folders (a root such as ``~/src`` holds
#: projects one or two levels down; a monorepo's packages a few more)
ROOT_DEPTH = 6
#: folders of a named root never descended into: they hold dependencies, not projects
PRUNED = frozenset({"node_modules", "__pycache__", "venv", "env", "target", "dist", "build", "site-packages"})


def _conn(db: Any) -> sqlite3.Connection:
    return db.conn if hasattr(db, "conn") else db


def _norm(path: str | os.PathLike[str]) -> str:
    return os.path.abspath(os.path.expanduser(os.fspath(path)))


def add_root(db: Any, path: str | os.PathLike[str]) -> str:
    """Keep ``path`` (made absolute) as a root every later ingest searches; returns it."""
    conn = _conn(db)
    p = _norm(path)
    at = datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
    with conn:
        conn.execute("INSERT OR IGNORE INTO roots (path, added_at) VALUES (?, ?)", (p, at))
    return p


def remove_root(db: Any, path: str | os.PathLike[str]) -> bool:
    """Forget a named root (what was archived from it stays); False if it was not named."""
    conn = _conn(db)
    with conn:
        n = conn.execute("DELETE FROM roots WHERE path = ?", (_norm(path),)).rowcount
    return n > 0


def list_roots(db: Any) -> list[dict[str, Any]]:
    rows = _conn(db).execute("SELECT path, added_at FROM roots ORDER BY path").fetchall()
    return [{"path": p, "added_at": at, "exists": os.path.isdir(p)} for p, at in rows]


def known_folders(db: Any, home: Path) -> list[str]:
    """The archive's project folders: each thread's cwd and its parents below the home
    folder (or below ``/`` for a cwd outside it), sorted."""
    stop = {_norm(home), "/"}
    out: set[str] = set()
    for (cwd,) in _conn(db).execute("SELECT DISTINCT cwd FROM threads WHERE cwd IS NOT NULL AND cwd != ''"):
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            continue  # a Windows path from another machine, or a relative one: not here
        d = os.path.normpath(cwd)
        while d not in stop and d not in out:
            out.add(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return sorted(out)


def _walk_root(root: str, depth: int = ROOT_DEPTH) -> Iterator[str]:
    """The folders of a named root, itself first, passing over dot and dependency folders."""
    base = root.rstrip(os.sep).count(os.sep)
    for d, subdirs, _files in os.walk(root, followlinks=False):
        yield d
        if d.count(os.sep) - base >= depth:
            subdirs[:] = []
            continue
        subdirs[:] = sorted(s for s in subdirs if not s.startswith(".") and s not in PRUNED)


def folders(db: Any, adapters: Iterable[Adapter], env: Mapping[str, str], home: Path) -> Iterator[tuple[str, str]]:
    """(folder, why) for every folder to match: ``cwd``, ``root`` or a vendor's name."""
    seen: set[str] = set()

    def once(d: str, why: str) -> Iterator[tuple[str, str]]:
        if d not in seen:
            seen.add(d)
            yield d, why

    for d in known_folders(db, home):
        yield from once(d, "cwd")
    for r in list_roots(db):
        if r["exists"]:
            for d in _walk_root(r["path"]):
                yield from once(d, "root")
    for a in adapters:
        if a.project_patterns:
            for d in a.project_dirs(env, home):
                yield from once(_norm(d), a.name)


def candidates(
    db: Any,
    adapters: list[Adapter],
    env: Mapping[str, str],
    skip: Callable[[str], bool],
    make: Callable[[Path, Adapter, str], Any],
) -> Iterator[Any]:
    """``make(path, adapter, kind)`` for each project-local file the adapters take, in
    folder order; ``skip(path)`` passes over a path already yielded or unchanged."""
    wanted = [a for a in adapters if a.project_patterns]
    if not wanted:
        return
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    yielded: set[str] = set()
    for d, _why in folders(db, wanted, env, home):
        if not os.path.isdir(d):
            continue
        esc = glob.escape(d)
        for a in wanted:
            for pattern in a.project_patterns:
                for s in sorted(glob.glob(os.path.join(esc, pattern), include_hidden=True)):
                    if s in yielded or not os.path.isfile(s):
                        continue
                    yielded.add(s)
                    if skip(s):
                        continue
                    p = Path(s)
                    kind = a.classify(p)
                    if kind:
                        yield make(p, a, kind)


def status(db: Any, env: Mapping[str, str]) -> dict[str, Any]:
    """For ``status``: the named roots and how many project folders the archive knows."""
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return {"roots": list_roots(db), "project_folders": len(known_folders(db, home))}
