"""Identity across files and vendors: a thread is its vendor and the vendor's id; a file
that exists beside another is its own source.

Parsers name threads by the vendor's own ids (a Claude Code ``sessionId``, a Codex session
id, a Copilot CLI folder uuid), and two vendors can hand out the same one: agentsview's
fixtures name a Codex rollout and a Copilot CLI session both ``abc-123``, and a session
copied between tools keeps its id. Before this module they were folded into one thread
(the first vendor's), holding both conversations.

Invariants:

* **Namespaced, unchanged where nothing collides.** Every (vendor, vendor thread id) a
  source names is recorded in ``thread_claims``. An id claimed by one vendor stays the
  thread id, so no existing archive's ids move. An id claimed by several vendors stays the
  id of the vendor that comes first in ``VENDORS``; every other vendor's thread becomes
  ``<vendor>-<id>`` (``namespaced``).
* **Order does not matter.** When a vendor that ranks first arrives after another already
  holds the id, the other vendor's sources that hold the thread are re-derived from their
  stored lines (``Engine`` calls ``rederive_outranked`` at the end of the run), so the
  archive is the one the other order gives. ``rebuild`` keeps the claims (they say what
  the stored lines name), so it maps as ingest did. An archive from before the claims
  claims what its rows name (m070) and, on its next open, re-derives the sources of a
  vendor whose rows sit in a thread another vendor holds (``rebuild.split_merged``).
* Only vendor thread ids are mapped: a row's ``thread_id``, ``parentThreadId`` and
  ``metadata.forkedFrom`` (a fork's parent, same vendor). ``metadata.emittedFrom`` is
  already an archive thread id (a hand-off mark) and message ids are untouched (the
  parsers namespace theirs, or take the vendor's globally unique uuids).
* **Two files at once are two sources** when their session keys (``Adapter.session_key``)
  differ, even when one's bytes begin with all of the other's (a Codex branch file that
  extends its parent's bytes, a copy beside its original): both are restored whole. One
  file at two paths (a rollout being archived, a log beside its ``.bak``) has one key, and
  a file whose other paths are gone (moved, copied from another machine) continues its
  source (``Generations._choose_generation``).
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterable

from .vendors import VENDORS
from .vendors.base import MessageRow, Row, ThreadFact, UsageRow

_RANK = {a.name: n for n, a in enumerate(VENDORS)}


def same_keys(key: str | None, keys: list[str | None]) -> bool | None:
    """Whether a file whose session key is ``key`` is the session of one of the live paths
    (other paths of the source whose bytes it continues, existing now) whose keys are
    ``keys``; None when a key is unknown. Before issue 33 a file that repeated every
    committed byte was taken for a copy of the live one, and its own lines were appended to
    the other's source: restore lost a file."""
    if key is not None and key in keys:
        return True  # one session in two places
    if key is not None and None not in keys:
        return False
    return None


def namespaced(provider: str, vendor_id: str) -> str:
    """The archive thread id of a vendor thread whose id another vendor holds."""
    return f"{provider}-{vendor_id}"


class ThreadNames:
    """Maps the thread ids parsers yield to archive thread ids, recording claims in the
    caller's transaction. One per engine; ``outranked`` lists (vendor id, vendor) pairs
    whose thread moved to its namespaced id during this run (their rows need re-deriving)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._claims: dict[str, set[str]] = {}
        self.outranked: set[tuple[str, str]] = set()
        # an archive that held no claim when the command began (a first ingest): every claim
        # since is made here and cached, so an id not in the cache has none, and no statement
        # need ask (one a thread); until the cache is dropped (``discard``)
        self._none_before = conn.execute("SELECT 1 FROM thread_claims LIMIT 1").fetchone() is None

    def _claimants(self, vendor_id: str) -> set[str]:
        held = self._claims.get(vendor_id)
        if held is None:
            held = set() if self._none_before else {
                r[0] for r in self.conn.execute("SELECT provider FROM thread_claims WHERE thread_id = ?", (vendor_id,))}
            self._claims[vendor_id] = held
        return held

    def resolve(self, provider: str, vendor_id: str) -> str:
        held = self._claimants(vendor_id)
        if provider not in held:
            before = _winner(held)
            self.conn.execute("INSERT OR IGNORE INTO thread_claims (thread_id, provider) VALUES (?, ?)", (vendor_id, provider))
            held.add(provider)
            if before is not None and _winner(held) != before:
                self.outranked.add((vendor_id, before))
        return vendor_id if _winner(held) == provider else namespaced(provider, vendor_id)

    def discard(self) -> None:
        """Forget cached claims (the caller rolled its transaction back, or changed claims
        itself): from now on each id's claims are read from the archive."""
        self._claims.clear()
        self._none_before = False

    def map_rows(self, provider: str, rows: list[Row]) -> list[Row]:
        if not rows:
            return rows
        out: list[Row] = []
        for row in rows:
            if isinstance(row, MessageRow):
                tid = self.resolve(provider, row.message.thread_id)
                if tid != row.message.thread_id:
                    row = dataclasses.replace(row, message=dataclasses.replace(row.message, thread_id=tid))
            elif isinstance(row, ThreadFact):
                fields = row.fields
                parent = fields.get("parentThreadId")
                meta = fields.get("metadata")
                forked = meta.get("forkedFrom") if isinstance(meta, dict) else None
                if isinstance(parent, str) and (p := self.resolve(provider, parent)) != parent:
                    fields = {**fields, "parentThreadId": p}
                if isinstance(forked, str) and (f := self.resolve(provider, forked)) != forked:
                    fields = {**fields, "metadata": {**meta, "forkedFrom": f}}  # type: ignore[dict-item]
                tid = self.resolve(provider, row.thread_id)
                if tid != row.thread_id or fields is not row.fields:
                    row = ThreadFact(tid, fields)
            elif isinstance(row, UsageRow):
                tid = self.resolve(provider, row.thread_id)
                if tid != row.thread_id:
                    row = dataclasses.replace(row, thread_id=tid)
            out.append(row)
        return out


def _winner(providers: Iterable[str]) -> str | None:
    return min(providers, key=lambda p: (_RANK.get(p, len(_RANK)), p), default=None)


def merged_claims(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """(vendor id, vendor) for every vendor that shares an id with one ranked first: its rows
    belong under its namespaced id. In an archive from before the claims (m070), where two
    vendors' sessions were folded into one thread, ``outranked_sources`` finds them there."""
    out: set[tuple[str, str]] = set()
    for vendor_id, providers in conn.execute(
        "SELECT thread_id, group_concat(provider, char(31)) FROM thread_claims GROUP BY thread_id HAVING count(*) > 1"
    ):
        names = providers.split("\x1f")
        winner = _winner(names)
        out |= {(vendor_id, p) for p in names if p != winner}
    return out


def outranked_sources(conn: sqlite3.Connection, outranked: set[tuple[str, str]]) -> list[str]:
    """Uids of the sources of ``provider`` holding rows of thread ``vendor_id`` (which now
    belongs to a vendor ranked before it): their rows are re-derived under the new id. A
    usage row reporting a message of another vendor's source (a response a session the
    archive emitted, read back, shares with its original by the response key) belongs in
    that message's thread: not a row left by a merge, and re-deriving its source would put
    it back (every command's open rebuilt that source again)."""
    uids: set[str] = set()
    for vendor_id, provider in sorted(outranked):
        for (uid,) in conn.execute(
            "SELECT s.uid FROM sources s WHERE s.provider = ? AND s.id IN ("
            "SELECT source_id FROM thread_facts WHERE thread_id = ? UNION "
            "SELECT source_id FROM messages WHERE thread_id = ? UNION "
            "SELECT source_id FROM message_occurrences WHERE thread_id = ? UNION "
            "SELECT u.source_id FROM usage u LEFT JOIN messages m ON m.id = u.message_id "
            "LEFT JOIN sources ms ON ms.id = m.source_id WHERE u.thread_id = ? "
            "AND (ms.provider IS NULL OR ms.provider = ?))",
            (provider, vendor_id, vendor_id, vendor_id, vendor_id, provider),
        ):
            uids.add(uid)
    return sorted(uids)
