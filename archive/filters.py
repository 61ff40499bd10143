"""The filters and time handling the read commands share (``search``, ``threads``, ``stats``,
the web pages, the MCP tools), and the read errors.

Filters (``Filters``), shared by the commands that accept them:
* ``provider``: exact provider name (an adapter's name: ``archive.vendors.names()``).
* ``role``: message role (``search`` only).
* ``thread``: a thread id or a prefix of one (child threads such as ``<session>/agent-…``
  match their parent's prefix too).
* ``project``: the thread's working directory, or its parent thread's when the thread has
  none (subagents). An absolute path matches that directory and everything below it; any
  other text matches as a substring.
* ``since`` / ``until``: ISO dates or date-times, compared with the recorded timestamps
  (UTC ``…Z`` for every current vendor). A date-only ``until`` includes that whole day; a
  date-time ``until`` is exclusive. Rows without a timestamp (some vendors write none) never match a time
  filter.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


from .errors import ArchiveError
from .projection import one_line
from .sql_dialect import SQLITE, Dialect


class QueryError(ArchiveError):
    """A search query SQLite's FTS5 rejects, or another bad request."""


class ThreadNotFound(ArchiveError):
    pass


class AmbiguousThread(ArchiveError):
    def __init__(self, ref: str, candidates: list[dict[str, Any]]) -> None:
        self.candidates = candidates
        lines = [f"{c['id']}  {c['provider'] or '?'}  {c['last_ts'] or ''}  {c['label'] or ''}".rstrip() for c in candidates]
        super().__init__(f"{ref!r} matches {len(candidates)} threads; give more of the id:\n  " + "\n  ".join(lines))




UTC = "UTC"


def local_zone_name(env: Mapping[str, str] | None = None) -> str:
    """The local time zone's IANA name: ``$TZ`` if set, else the zone /etc/localtime links
    to, else ``UTC``. (A leading ``:`` in TZ, POSIX's "implementation-defined", is dropped.)"""
    env = os.environ if env is None else env
    tz = (env.get("TZ") or "").lstrip(":")
    if tz:
        return tz
    try:
        target = os.path.realpath("/etc/localtime")
        if "/zoneinfo/" in target:
            return target.split("/zoneinfo/", 1)[1]
    except OSError:
        pass
    return UTC


def zone(name: str | None) -> dt.tzinfo:
    """``ZoneInfo(name)``; None, ``UTC``, ``Z`` mean UTC. An unknown name is a ``QueryError``."""
    if not name or name.upper() in ("UTC", "Z", "ETC/UTC", "GMT", "UTC0"):
        return dt.timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise QueryError(f"unknown time zone {name!r} (an IANA name such as Europe/Paris, or UTC)") from None


def is_utc(name: str | None) -> bool:
    return zone(name) is dt.timezone.utc


_RELATIVE = re.compile(r"(\d+)\s*([dwh])")


def _relative(v: str, tz: dt.tzinfo, now: dt.datetime | None) -> dt.date | dt.datetime | None:
    """``today``, ``yesterday``, ``Nd`` (the local day N days ago), ``Nw`` (7N days ago),
    ``Nh`` (N hours before now); None if ``v`` is none of these."""
    now = (now or dt.datetime.now(dt.timezone.utc)).astimezone(tz)
    low = v.lower()
    if low == "today":
        return now.date()
    if low == "yesterday":
        return now.date() - dt.timedelta(days=1)
    m = _RELATIVE.fullmatch(low)
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2)
    if unit == "h":
        return now - dt.timedelta(hours=n)
    return now.date() - dt.timedelta(days=n * (7 if unit == "w" else 1))


def _utc_iso(t: dt.datetime) -> str:
    t = t.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return t.isoformat(timespec="milliseconds") if t.microsecond else t.isoformat()


def parse_time(value: str, *, end: bool = False, tz: str | None = None, now: dt.datetime | None = None) -> str:
    """Validate a time bound; the UTC bound to compare recorded timestamps (UTC) with.

    Accepts an ISO date, an ISO date-time, ``today``, ``yesterday``, ``7d``, ``2w``,
    ``12h``. A date (or day word) means that whole day in ``tz`` (default UTC): as a start,
    its first instant; as an end, the next day's first instant (exclusive), so ``until
    2026-11-30`` keeps all of that day. In UTC a whole-day bound stays a bare date
    (``2026-11-30``), which the daily totals can answer. A date-time without an offset is
    read in ``tz``."""
    v = value.strip()
    z = zone(tz)
    try:
        rel = _relative(v, z, now)
        if rel is None and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
            rel = dt.date.fromisoformat(v)
        if isinstance(rel, dt.datetime):
            return _utc_iso(rel)
        if isinstance(rel, dt.date):
            d = rel + dt.timedelta(days=1) if end else rel
            if z is dt.timezone.utc:
                return d.isoformat()
            return _utc_iso(dt.datetime.combine(d, dt.time(), tzinfo=z))
        t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(
            f"{value!r} is not a date (YYYY-MM-DD), a date-time, today, yesterday, or Nd/Nw/Nh"
        ) from None
    return _utc_iso(t if t.tzinfo is not None else t.replace(tzinfo=z))


@dataclass(frozen=True)
class Filters:
    provider: str | None = None
    role: str | None = None
    thread: str | None = None
    project: str | None = None
    since: str | None = None  # as typed: ISO date or date-time, today, yesterday, 7d (parse_time)
    until: str | None = None
    tz: str | None = None  # the zone whole-day bounds are days of (None: UTC)


def _like_prefix(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _where(f: Filters, *, ts: str | None, project: str, provider: str = "t.provider", thread: str = "t.id",
           role: str | None = None, d: Dialect = SQLITE) -> tuple[list[str], list[Any]]:  # fmt: skip
    """The conditions ``f`` asks for, over the columns named, and their parameters."""
    sql: list[str] = []
    params: list[Any] = []
    if f.provider:
        sql.append(f"{provider} = ?")
        params.append(f.provider)
    if f.role and role:
        sql.append(f"{role} = ?")
        params.append(f.role)
    if f.thread:
        sql.append(f"{thread} LIKE ? ESCAPE '\\'")
        params.append(_like_prefix(f.thread))
    if f.project:
        if f.project.startswith("/"):
            root = f.project.rstrip("/") or "/"
            sql.append(f"({project} = ? OR {project} LIKE ? ESCAPE '\\')")
            params += [root, _like_prefix(root.rstrip("/") + "/")]
        else:
            sql.append(f"{d.contains(project)} > 0")
            params.append(f.project)
    if ts and f.since:
        sql.append(f"{ts} >= {d.c('?')}")
        params.append(_bound(f.since, tz=f.tz))
    if ts and f.until:
        sql.append(f"{ts} < {d.c('?')}")
        params.append(_bound(f.until, end=True, tz=f.tz))
    return sql, params


def _bound(value: str, end: bool = False, tz: str | None = None) -> str:
    try:
        return parse_time(value, end=end, tz=tz)
    except ValueError as e:
        raise QueryError(str(e)) from None


def _rows(conn: sqlite3.Connection, sql: str, params: Iterable[Any]) -> list[dict[str, Any]]:
    return SQLITE.rows(conn, sql, tuple(params))


# Harness markup the clients wrap around what the user typed (slash commands, local
# command output, reminders). A label shows ``/name args`` for a slash command and never
# the raw tags; text that is nothing but harness output is no label at all.
_COMMAND = re.compile(r"<command-name>\s*(.*?)\s*</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>\s*(.*?)\s*</command-args>", re.DOTALL)
_HARNESS_BLOCK = re.compile(
    r"<(command-message|command-name|command-args|command-contents|local-command-stdout|local-command-stderr|"
    r"local-command-caveat|system-reminder|user-prompt-submit-hook|environment_context|user_instructions|"
    r"bash-input|bash-stdout|bash-stderr|task-notification)>.*?(</\1>|$)", re.DOTALL)  # fmt: skip
_CAVEAT = "Caveat: The messages below were generated by the user while running local commands"


def prompt_label(text: str | None) -> str | None:
    """What a person typed, from one user text block: ``/name args`` for a slash command,
    the text without harness tags otherwise, None when nothing typed is left."""
    if not text:
        return None
    cmd = _COMMAND.search(text)
    if cmd and cmd.group(1):
        args = _COMMAND_ARGS.search(text)
        name = cmd.group(1) if cmd.group(1).startswith("/") else "/" + cmd.group(1)
        return (name + (" " + args.group(1) if args and args.group(1) else "")).strip()
    rest = _HARNESS_BLOCK.sub(" ", text).strip()
    if not rest or rest.startswith(_CAVEAT):
        return None
    return rest


def first_prompts(conn: Any, thread_ids: Iterable[str], width: int = 120, candidates: int = 12,
                  d: Dialect = SQLITE) -> dict[str, str]:  # fmt: skip
    """Each thread's first typed user text (not vendor-injected context, not harness
    markup: see ``prompt_label``), one line. Looks at the first ``candidates`` user text
    blocks of each thread; a thread with none gets no entry."""
    ids = sorted(set(thread_ids))
    typed = "m.role = 'user' AND m.injected = 0 AND {type} = 'text' AND trim(coalesce(b.text, '')) != ''"
    found: dict[str, list[str]] = {}
    if d.postgres:
        # every thread in one query (a round trip per thread costs more than the window there)
        for r in d.rows(conn, f"""
                SELECT thread_id, text FROM (
                    SELECT m.thread_id, b.text,
                           row_number() OVER (PARTITION BY m.thread_id ORDER BY {d.message_order}, b.position) AS n
                    FROM messages m JOIN blocks b ON b.message_id = m.id
                    WHERE m.thread_id = ANY(?) AND {typed.format(type="b.type")}) c
                WHERE n <= ? ORDER BY thread_id, n""", (ids, candidates)):  # fmt: skip
            found.setdefault(r["thread_id"], []).append(r["text"])
    out: dict[str, str] = {}
    for tid in ids:
        if d.postgres:
            texts: Iterable[str] = found.get(tid, [])
        else:
            # one thread at a time, read only up to its first label: CROSS JOIN keeps messages
            # first (thread order index); otherwise SQLite picks blocks_type and walks every
            # text block of the archive (measured: 50 ms a thread)
            texts = (r["text"] for r in d.each(
                conn, f"SELECT b.text FROM messages m CROSS JOIN blocks b ON b.message_id = m.id "
                f"WHERE m.thread_id = ? AND {typed.format(type='+b.type')} ORDER BY {d.message_order}, b.position LIMIT ?",
                (tid, candidates)))  # fmt: skip
        for text in texts:
            label = prompt_label(text)
            if label:
                out[tid] = one_line(label, width)
                break
    return out
