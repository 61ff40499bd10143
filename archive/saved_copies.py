"""Saved copies linked to the session they were saved from (issue 33): a Gemini CLI or Qwen
Code ``/chat save`` checkpoint and the session document beside it name neither one another,
so the link is found by content.

Invariants:

* **Who takes part.** A copy is a thread whose metadata names a ``savedCopyScope`` (the
  adapter's parser sets it: for a checkpoint, its project folder). Its candidates are the
  threads of the same provider for which ``Adapter.session_scope`` (from their metadata)
  gives the same scope and which are not copies themselves.
* **Turns.** A thread's turns are its user prompts and answers in the order its latest
  file version holds them (``message_occurrences`` of each source's last generation): text
  blocks only (thoughts, tool calls and results, notices and the client's injected context
  left out), every run of whitespace removed (a checkpoint keeps a prompt as several parts
  and ``@file`` expansions, the session document as one string), empty ones skipped.
* **The match.** A session holds a copy when the copy's first turn is the session's first
  and the copy's turns are, in order, among the session's: a prefix (the session went on
  after the save), or with turns of the session skipped (``/chat resume`` inside the session
  dropped them from the history the copy saved). The copy is linked (``saved_copies``) to the
  session message its last turn matched first: "a saved copy of that session at that
  message". Several sessions hold it: the one skipping the fewest turns, then the earliest
  (``created_at``), then the smallest id. None holds it: no row (a copy whose history spans
  sessions joined by ``/chat resume`` in a later one has none: nothing in the files says
  which).
* **Order-free.** Computed from the stored rows alone, for every scope holding a thread the
  run wrote (``derived.refresh``, at the end of every ingest, rebuild and forget): whichever
  file arrives first, the rows end the same. A link to or from a thread that no longer exists
  goes, and that copy's scope is looked at again.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable

import orjson

from .vendors import get as get_adapter

_SPACE = re.compile(r"\s+")

Turn = tuple[str, str, str]  # (role, text without whitespace, message id)


def relink(conn: sqlite3.Connection, threads: Iterable[str]) -> None:
    """Recompute the links of every scope holding one of ``threads`` (caller's transaction)."""
    ids = sorted(set(threads))
    if not ids:
        return
    if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'saved_copies'").fetchone() is None:
        return  # an earlier migration re-deriving before m135 made the table; m135's run links them
    # a thread re-derived away (a sources' rows derived again under another id): its links go,
    # and its copies look again
    listed = orjson.dumps(ids).decode()
    gone = conn.execute(
        "SELECT thread_id FROM saved_copies WHERE (thread_id IN (SELECT value FROM json_each(?1)) "
        "OR session_thread_id IN (SELECT value FROM json_each(?1))) "
        "AND (NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = saved_copies.thread_id) "
        "OR NOT EXISTS (SELECT 1 FROM threads t WHERE t.id = saved_copies.session_thread_id))", (listed,)).fetchall()
    if gone:
        conn.execute("DELETE FROM saved_copies WHERE thread_id IN (SELECT value FROM json_each(?))",
                     (orjson.dumps([r[0] for r in gone]).decode(),))
        ids = sorted(set(ids) | {r[0] for r in gone})
    scopes: set[tuple[str, str]] = set()
    for tid, provider, meta in _rows(conn, "id IN (SELECT value FROM json_each(?))", (orjson.dumps(ids).decode(),)):
        scope = _scope(provider, meta)
        if scope is not None:
            scopes.add((provider, scope[1]))
    if not scopes:
        return
    # only folders holding a copy have links to compute (one pass over the threads, not one
    # per folder: most project folders of most archives hold no checkpoint)
    held = set(conn.execute(
        "SELECT DISTINCT provider, json_extract(metadata, '$.savedCopyScope') FROM threads "
        "WHERE metadata LIKE '%\"savedCopyScope\"%'").fetchall())
    for provider, scope in sorted(scopes & held):
        _relink_scope(conn, provider, scope)


def _rows(conn: sqlite3.Connection, where: str, params: tuple[object, ...]) -> list[tuple[str, str, dict]]:
    out = []
    for tid, provider, meta in conn.execute(f"SELECT id, provider, metadata FROM threads WHERE {where}", params):
        d = orjson.loads(meta) if meta else {}
        out.append((tid, provider or "", d if isinstance(d, dict) else {}))
    return out


def _scope(provider: str, meta: dict) -> tuple[bool, str] | None:
    """(is a copy, scope) of a thread, or None when it takes no part."""
    copy = meta.get("savedCopyScope")
    if isinstance(copy, str) and copy:
        return True, copy
    try:
        adapter = get_adapter(provider)
    except KeyError:
        return None
    scope = adapter.session_scope(meta)
    return (False, scope) if scope else None


def _relink_scope(conn: sqlite3.Connection, provider: str, scope: str) -> None:
    copies: list[str] = []
    sessions: list[str] = []
    for tid, _, meta in _rows(conn, "provider = ? AND (json_extract(metadata, '$.savedCopyScope') = ? "
                                    "OR metadata LIKE ?)", (provider, scope, f"%{scope}%")):
        found = _scope(provider, meta)
        if found is not None and found[1] == scope:
            (copies if found[0] else sessions).append(tid)
    conn.execute("DELETE FROM saved_copies WHERE thread_id IN (SELECT value FROM json_each(?))",
                 (orjson.dumps(sorted(copies)).decode(),))
    if not copies or not sessions:
        return
    created = {tid: c or "" for tid, c in conn.execute(
        "SELECT id, created_at FROM threads WHERE id IN (SELECT value FROM json_each(?))",
        (orjson.dumps(sessions).decode(),))}
    session_turns = {tid: turns(conn, tid) for tid in sessions}
    for copy in sorted(copies):
        mine = turns(conn, copy)
        best: tuple[int, str, str, str] | None = None
        for tid in sessions:
            found = match(mine, session_turns[tid])
            if found is not None:
                key = (found[0], created[tid], tid, found[1])
                best = key if best is None or key < best else best
        if best is not None:
            conn.execute("INSERT INTO saved_copies (thread_id, session_thread_id, message_id) VALUES (?, ?, ?)",
                         (copy, best[2], best[3]))


def turns(conn: sqlite3.Connection, thread_id: str) -> list[Turn]:
    """The thread's prompts and answers as the latest version of each of its files holds them."""
    out: list[Turn] = []
    for mid, role, text in conn.execute(
        "SELECT m.id, m.role, (SELECT group_concat(t, '') FROM (SELECT b.text AS t FROM blocks b "
        "WHERE b.message_id = m.id AND b.type = 'text' ORDER BY b.position)) "
        "FROM message_occurrences o JOIN messages m ON m.id = o.message_id JOIN sources s ON s.id = o.source_id "
        "WHERE o.thread_id = ? AND m.injected = 0 AND m.role IN ('user', 'assistant') "
        "AND o.generation = (SELECT max(g.generation) FROM message_occurrences g WHERE g.source_id = o.source_id) "
        "ORDER BY s.uid, o.generation, o.offset, o.sub",
        (thread_id,),
    ):
        squeezed = _SPACE.sub("", text or "")
        if squeezed:
            out.append((role, squeezed, mid))
    return out


def match(copy: list[Turn], session: list[Turn]) -> tuple[int, str] | None:
    """(session turns skipped, the session message the copy's last turn matched) when the
    session holds the copy (see the module docstring), else None."""
    if not copy or not session or copy[0][:2] != session[0][:2]:
        return None
    i = 0
    for j, (role, text, mid) in enumerate(session):
        if (role, text) == copy[i][:2]:
            i += 1
            if i == len(copy):
                return j + 1 - len(copy), mid
    return None


def links_of(conn: sqlite3.Connection, thread_id: str) -> tuple[tuple[str, str] | None, list[tuple[str, str]]]:
    """(session, message) this thread is a saved copy of (or None), and the saved copies of
    this thread as (copy, message), in copy id order: what ``show`` and the web page print."""
    try:
        of = conn.execute("SELECT session_thread_id, message_id FROM saved_copies WHERE thread_id = ?", (thread_id,)).fetchone()
        copies = conn.execute("SELECT thread_id, message_id FROM saved_copies WHERE session_thread_id = ? ORDER BY thread_id",
                              (thread_id,)).fetchall()
    except sqlite3.OperationalError:  # a read-only archive from before m135
        return None, []
    return (tuple(of) if of else None), [tuple(r) for r in copies]  # type: ignore[return-value]
