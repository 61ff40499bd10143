"""Which sessions read or changed a file: ``sessions_touching``, one function that a file
index (a later issue) can replace without its callers changing.

Invariants:

* Answered from what the archive already holds, never from the disk: the path arguments of
  tool calls (``file_path``, ``path``, ``filePath``, ``notebook_path``, ``paths``, and the
  file headers of a patch, as in ``*** Update File: x`` or ``+++ b/x``) and the ``path`` of
  file-change blocks, each normalised against the thread's working directory (its parent's
  for a subagent), so ``src/a.py`` in a session run in ``/repo`` is ``/repo/src/a.py``.
* A query path that is absolute matches that file exactly; a relative one matches every
  file whose normalised path ends with it, component by component (``a.py`` matches
  ``/repo/src/a.py``, never ``/repo/src/data.py``).
* What a call did comes from the adapter's neutral tool kind (``queries.tool_kind``):
  ``edit`` changed the file, ``read`` read it, a file-change block changed it; anything
  else that names the file (a search, a shell command's argument) is ``other``. Nothing
  here names a vendor.
* Read-only; the candidate rows are the tool-call and file-change blocks whose text names
  the file's base name (an ``instr`` scan: linear in the tool calls of the archive until an
  index exists).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterator
from typing import Any

from sqlite_utils import Database

from .queries import Filters, _where, first_prompts, tool_kind

PATH_KEYS = ("file_path", "path", "filePath", "filepath", "notebook_path", "absolute_path", "filename", "file",
             "target_file", "source", "destination")  # fmt: skip
LIST_KEYS = ("paths", "files", "file_paths")
# file headers in the patch formats agents send (apply_patch envelopes, unified diffs)
_PATCH_HEADER = re.compile(r"^(?:\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: |\+\+\+ (?:b/)?|--- (?:a/)?)(\S.*?)\s*$",
                           re.MULTILINE)  # fmt: skip
ACTIONS = {"edit": "changed", "read": "read"}


def _kind(provider: str | None, name: str | None) -> str | None:
    """The tool's neutral kind; for a provider that maps none (canonical imports, a vendor
    without ``tool_kinds``), the kind any adapter gives that name."""
    from .vendors import VENDORS

    kind = tool_kind(provider, name)
    if kind == name and name:
        kind = next((a.tool_kinds[name] for a in VENDORS if name in (getattr(a, "tool_kinds", None) or {})), name)
    return kind


def paths_in(value: Any) -> Iterator[str]:
    """The file paths named by a tool call's input (a JSON value)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            yield from (m.group(1) for m in _PATCH_HEADER.finditer(value) if m.group(1) != "/dev/null")
            return
    if not isinstance(value, dict):
        return
    for k in PATH_KEYS:
        v = value.get(k)
        if isinstance(v, str) and v.strip() and "\n" not in v:
            yield v.strip()
    for k in LIST_KEYS:
        v = value.get(k)
        if isinstance(v, list):
            yield from (p.strip() for p in v if isinstance(p, str) and p.strip())
    for k in ("patch", "input", "diff"):
        v = value.get(k)
        if isinstance(v, str) and "\n" in v:
            yield from (m.group(1) for m in _PATCH_HEADER.finditer(v) if m.group(1) != "/dev/null")
    edits = value.get("edits")
    if isinstance(edits, list):  # several files in one call
        for e in edits:
            if isinstance(e, dict):
                yield from paths_in(e)


def normalise(path: str, cwd: str | None) -> str:
    """``path`` absolute (joined to ``cwd`` when relative and known), ``..`` and ``.`` folded."""
    p = os.path.expanduser(path) if path.startswith("~") else path
    if not p.startswith("/") and cwd:
        p = posixpath.join(cwd, p)
    return posixpath.normpath(p)


def matches(candidate: str, query: str) -> bool:
    if query.startswith("/"):
        return candidate == query
    return candidate == query or candidate.endswith("/" + query)


def sessions_touching(db: Database, path: str, f: Filters = Filters(), *, limit: int | None = 20,
                      offset: int = 0) -> list[dict[str, Any]]:  # fmt: skip
    """Threads whose tool calls read or changed ``path``, most recent touch first.

    Each: ``thread_id, label, provider, project, first_ts, last_ts, actions`` (counts per
    ``changed``/``read``/``other``), ``paths`` (the normalised paths that matched) and
    ``calls`` (up to 5: ``message_id, ts, tool_name, action, path``). Filters as for
    ``threads`` (provider, project, thread, since/until on the call's time)."""
    query = path.strip()
    if not query:
        return []
    q = posixpath.normpath(os.path.expanduser(query)) if query.startswith(("/", "~")) else posixpath.normpath(query)
    base = posixpath.basename(q) or q
    where, params = _where(f, ts="m.ts", project="coalesce(t.cwd, p.cwd)", thread="m.thread_id")
    sql = f"""
        SELECT m.thread_id, m.id, m.ts, b.type, b.tool_name, b.input, b.path, coalesce(t.cwd, p.cwd) AS cwd,
               t.provider, t.title
        FROM blocks b
        JOIN messages m ON m.id = b.message_id
        LEFT JOIN threads t ON t.id = m.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        WHERE b.type IN ('tool_call', 'file_change') AND (instr(b.input, ?) > 0 OR instr(b.path, ?) > 0)
        {''.join(' AND ' + w for w in where)}"""
    found: dict[str, dict[str, Any]] = {}
    for tid, mid, ts, btype, name, inp, bpath, cwd, provider, title in db.conn.execute(sql, (base, base, *params)):
        named = [bpath] if btype == "file_change" and bpath else list(paths_in(inp))
        hits = [n for n in (normalise(x, cwd) for x in named) if matches(n, q)]
        if not hits:
            continue
        action = "changed" if btype == "file_change" else ACTIONS.get(_kind(provider, name) or "", "other")
        s = found.setdefault(tid, {"thread_id": tid, "label": title, "provider": provider, "project": cwd,
                                   "first_ts": ts, "last_ts": ts, "actions": {}, "paths": [], "calls": []})  # fmt: skip
        s["actions"][action] = s["actions"].get(action, 0) + 1
        for h in hits:
            if h not in s["paths"]:
                s["paths"].append(h)
        if ts and (s["first_ts"] is None or ts < s["first_ts"]):
            s["first_ts"] = ts
        if ts and (s["last_ts"] is None or ts > s["last_ts"]):
            s["last_ts"] = ts
        if len(s["calls"]) < 5:
            s["calls"].append({"message_id": mid, "ts": ts, "tool_name": name, "action": action, "path": hits[0]})
    rows = sorted(found.values(), key=lambda s: (s["last_ts"] or "", s["thread_id"]), reverse=True)
    rows = rows[max(offset, 0):][: None if limit is None else max(limit, 0)]
    labels = first_prompts(db.conn, [r["thread_id"] for r in rows if not r["label"]])
    for r in rows:
        r["label"] = r["label"] or labels.get(r["thread_id"])
        r["calls"].sort(key=lambda c: c["ts"] or "")
    return rows
