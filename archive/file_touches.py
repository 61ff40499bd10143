"""Which sessions read or changed a file, answered from the file index (``file_touches``,
``archive/file_index.py``): ``file_history`` (the calls, newest first, with their change)
for ``files`` and the web's file page, ``sessions_touching`` (per session) for the MCP tool.

Invariants:

* Answered from what the archive holds, never from the disk.
* A query is a path, a suffix or a glob. An absolute path matches that file exactly; a
  relative one matches every file whose normalised path ends with it, component by component
  (``a.py`` matches ``/repo/src/a.py``, never ``/repo/src/data.py``); a query with ``*``,
  ``?`` or ``[`` is a glob over the whole path (``*.py``, ``src/*/x.py``, ``/repo/**``; a
  relative glob may start anywhere after a ``/``).
* Lookups go through the index's ``name`` or ``path`` column, a glob whose last component
  is itself a pattern scans the index (not the blocks). Each of those indexes ends with the
  history's order (migration m126), so a page is read in order and the query stops at its
  end: no sort of every touch of a common name. Read-only.
* A call's change (``diff``) is read from its block when it carries one: an edit's old and
  new text (as a unified diff), the file's section of a patch, a file-change block's patch.
"""

from __future__ import annotations

import difflib
import json
import os
import posixpath
import re
from typing import Any

from sqlite_utils import Database

from .queries import Filters, _where, first_prompts
from .vendors.tool_paths import patch_paths

GLOB_CHARS = re.compile(r"[*?\[]")
DIFF_CHARS = 4000
_SECTION = re.compile(r"^(?:\*\*\* (?:Add|Update|Delete) File: |diff --git |--- )", re.MULTILINE)


def _match_sql(query: str) -> tuple[str, list[Any]]:
    """The condition on ``ft`` (a ``file_touches`` row) for a path, suffix or glob."""
    q = query.strip()
    if q.startswith("~"):
        q = os.path.expanduser(q)
    if GLOB_CHARS.search(q):
        base = q.rstrip("/").rsplit("/", 1)[-1]
        # ``+``: not a range of the path index (an absolute glob's fixed prefix), which holds
        # every touch under a folder out of order (645 ms for ``/repo/**`` at 1 GB): the page is
        # read in order from the name index or the order index, testing each path (m126)
        cond, params = ("+ft.path GLOB ?", [q]) if q.startswith("/") else ("(+ft.path GLOB ? OR +ft.path GLOB ?)", [q, "*/" + q])
        if not GLOB_CHARS.search(base):
            cond, params = f"ft.name = ? AND {cond}", [base, *params]
        return cond, params
    q = posixpath.normpath(q)
    if q.startswith("/"):
        return "ft.path = ?", [q]
    base = posixpath.basename(q) or q
    return "ft.name = ? AND (ft.path = ? OR substr(ft.path, -length(?) - 1) = '/' || ?)", [base, q, q, q]


def touch_sql(query: str, f: Filters, limit: int | None = None, offset: int = 0) -> tuple[str, list[Any]]:
    """The query of ``files``' page and its parameters (tests read its plan: no sort)."""
    cond, params = _match_sql(query)
    where, wparams = _where(f, ts="ft.ts", project="coalesce(t.cwd, p.cwd)", thread="ft.thread_id")
    sql = f"""
        SELECT ft.thread_id, ft.message_id, ft.position, ft.ts, ft.path, ft.action, ft.tool_name,
               t.provider, t.title, coalesce(t.cwd, p.cwd) AS project
        FROM file_touches ft
        LEFT JOIN threads t ON t.id = ft.thread_id
        LEFT JOIN threads p ON p.id = t.parent_thread_id
        WHERE {cond}{''.join(' AND ' + w for w in where)}
        ORDER BY coalesce(ft.ts, '') DESC, ft.thread_id, ft.message_id, ft.position
        LIMIT ? OFFSET ?"""
    return sql, [*params, *wparams, -1 if limit is None else max(limit, 0), max(offset, 0)]


def _touch_rows(db: Database, query: str, f: Filters, limit: int | None = None, offset: int = 0) -> list[dict[str, Any]]:
    if not query.strip():
        return []
    c = db.conn.execute(*touch_sql(query, f, limit, offset))
    names = [d[0] for d in c.description]
    return [dict(zip(names, r)) for r in c.fetchall()]


def _section(patch: str, path: str, cwd: str | None) -> str | None:
    """The part of a multi-file patch about ``path``."""
    from .file_index import normalise

    starts = [m.start() for m in _SECTION.finditer(patch)]
    for i, s in enumerate(starts):
        chunk = patch[s : starts[i + 1] if i + 1 < len(starts) else len(patch)]
        if chunk.startswith("--- ") and i + 1 < len(starts) and patch[starts[i + 1] :].startswith("+++"):
            continue
        if any(normalise(p, cwd) == path for p, _a in patch_paths(chunk)):
            return chunk.rstrip("\n").removesuffix("*** End Patch").rstrip("\n")
    return None


def change_of(input_json: str | None, block_patch: str | None, path: str, cwd: str | None) -> str | None:
    """The change a call made to ``path``, as text, when its block carries one."""
    if block_patch:
        return block_patch[:DIFF_CHARS]
    try:
        value = json.loads(input_json) if input_json else None
    except ValueError:
        value = input_json
    if isinstance(value, str):
        return (_section(value, path, cwd) or "")[:DIFF_CHARS] or None
    if not isinstance(value, dict):
        return None
    old, new = value.get("old_string", value.get("oldString")), value.get("new_string", value.get("newString"))
    if isinstance(old, str) and isinstance(new, str):
        lines = difflib.unified_diff(old.splitlines(), new.splitlines(), path, path, lineterm="", n=2)
        return "\n".join(lines)[:DIFF_CHARS] or None
    edits = value.get("edits")
    if isinstance(edits, list):
        parts = [change_of(json.dumps(e), None, path, cwd) for e in edits if isinstance(e, dict)]
        return "\n".join(p for p in parts if p)[:DIFF_CHARS] or None
    for k in ("patch", "input", "diff", "patchText"):
        v = value.get(k)
        if isinstance(v, str) and "\n" in v:
            return (_section(v, path, cwd) or "")[:DIFF_CHARS] or None
    return None


def file_history(db: Database, query: str, f: Filters = Filters(), *, limit: int | None = 100,
                 offset: int = 0, diffs: bool = True) -> list[dict[str, Any]]:  # fmt: skip
    """The calls that touched files matching ``query``, newest first: ``thread_id, label,
    provider, project, message_id, ts, tool_name, action, path`` and ``diff`` (None when the
    call carries no change)."""
    rows = _touch_rows(db, query, f, limit, offset)  # the page in SQL: a common name has thousands
    labels = first_prompts(db.conn, {r["thread_id"] for r in rows if not r["title"]})
    for r in rows:
        r["label"] = r.pop("title") or labels.get(r["thread_id"])
        r["diff"] = None
        if diffs and r["action"] in ("changed", "created", "deleted"):
            b = db.conn.execute("SELECT input, patch FROM blocks WHERE message_id = ? AND position = ?",
                                (r["message_id"], r["position"])).fetchone()  # fmt: skip
            if b:
                r["diff"] = change_of(b[0], b[1], r["path"], r["project"])
        r.pop("position")
    return rows


def sessions_touching(db: Database, path: str, f: Filters = Filters(), *, limit: int | None = 20,
                      offset: int = 0) -> list[dict[str, Any]]:  # fmt: skip
    """Threads whose tool calls read or changed ``path``, most recent touch first.

    Each: ``thread_id, label, provider, project, first_ts, last_ts, actions`` (counts per
    action: ``read``, ``created``, ``changed``, ``deleted``, ``named``), ``paths`` (the
    normalised paths that matched) and ``calls`` (up to 5: ``message_id, ts, tool_name,
    action, path``). Filters as for ``threads`` (provider, project, thread, since/until on
    the call's time)."""
    found: dict[str, dict[str, Any]] = {}
    for r in _touch_rows(db, path, f):
        tid, ts = r["thread_id"], r["ts"]
        s = found.setdefault(tid, {"thread_id": tid, "label": r["title"], "provider": r["provider"],
                                   "project": r["project"], "first_ts": ts, "last_ts": ts, "actions": {},
                                   "paths": [], "calls": []})  # fmt: skip
        s["actions"][r["action"]] = s["actions"].get(r["action"], 0) + 1
        if r["path"] not in s["paths"]:
            s["paths"].append(r["path"])
        if ts and (s["first_ts"] is None or ts < s["first_ts"]):
            s["first_ts"] = ts
        if ts and (s["last_ts"] is None or ts > s["last_ts"]):
            s["last_ts"] = ts
        if len(s["calls"]) < 5:
            s["calls"].append({"message_id": r["message_id"], "ts": ts, "tool_name": r["tool_name"],
                               "action": r["action"], "path": r["path"]})  # fmt: skip
    rows = sorted(found.values(), key=lambda s: (s["last_ts"] or "", s["thread_id"]), reverse=True)
    rows = rows[max(offset, 0):][: None if limit is None else max(limit, 0)]
    labels = first_prompts(db.conn, [r["thread_id"] for r in rows if not r["label"]])
    for r in rows:
        r["label"] = r["label"] or labels.get(r["thread_id"])
        r["calls"].sort(key=lambda c: c["ts"] or "")
    return rows
