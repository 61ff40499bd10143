"""What dies with the sessions (issue 38): lost sessions, file checkpoints, and the warning
before a vendor's cleanup outruns the nightly ingest.

Invariants:

* Read-only: every function here reads the archive (the views of migration
  ``m080_38_side_files``) and the vendors' settings through the adapters' ``retention``
  hooks; nothing names a vendor.
* A lost session is a session a prompt history names whose transcript has no message in
  the archive (view ``lost_prompts``: also prompts of a project with no thread, and prompts
  naming neither, whose text no archived user message of the vendor has); it is listed with its prompts, oldest first, never counted twice when a
  history file was rewritten (a new generation repeats its lines).
* The retention warning compares a vendor's period with the ingest runs the archive
  recorded: no run for a whole period (transcripts older than the period may already be
  gone), or runs spaced further apart than the period (the vendor will delete what was
  written just after one run before the next one reads it). It names the setting and how
  to change it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from .vendors import VENDORS

RECENT_RUNS = 10  # the gaps between this many latest ingest runs say how often ingest runs


def lost_sessions(db: Database, provider: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """Lost sessions, most recent first, each with its prompts (oldest first)."""
    sql = "SELECT provider, thread_id, session_id, project, prompts, first_ts, last_ts FROM lost_sessions"
    params: list[Any] = []
    if provider:
        sql += " WHERE provider = ?"
        params.append(provider)
    sql += " ORDER BY last_ts DESC, provider, project, thread_id"
    if limit:
        sql += f" LIMIT {int(limit)}"
    out = []
    for prov, thread, session, project, count, first, last in db.execute(sql, params).fetchall():
        if thread is not None:
            where, args = "provider = ? AND thread_id = ?", (prov, thread)
        else:  # by project; a NULL project: the prompts that name neither session nor project
            where, args = "provider = ? AND thread_id IS NULL AND project IS ?", (prov, project)
        prompts = [{"ts": ts, "prompt": text} for ts, text in db.execute(
            f"SELECT DISTINCT ts, prompt FROM lost_prompts WHERE {where} ORDER BY ts, source_id, generation, offset",
            args)]  # fmt: skip
        out.append({"provider": prov, "thread_id": thread, "session_id": session, "project": project,
                    "prompts": count, "first_ts": first, "last_ts": last, "history": prompts})
    return out


def mask_prompts(db: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (of ``lost_sessions``) with every secret the ingest scan found in prompt
    histories (``secret_findings`` of field 'prompt') replaced by ``[REDACTED rule]``."""
    from .secrets import redactor_for_prompts

    red = redactor_for_prompts(getattr(db, "conn", db))
    for r in rows:
        for p in r["history"]:
            p["prompt"] = red.text(p["prompt"] or "")
    return rows


def lost_counts(db: Database) -> list[dict[str, Any]]:
    """Lost sessions and their prompts per provider and project (``status``)."""
    rows = db.execute(
        "SELECT provider, project, count(*), sum(prompts), sum(thread_id IS NULL) FROM lost_sessions "
        "GROUP BY provider, project ORDER BY provider, count(*) DESC, project"
    ).fetchall()
    return [{"provider": p, "project": proj, "sessions": n - unattributed, "prompts": prompts,
             "prompts_without_session": bool(unattributed)} for p, proj, n, prompts, unattributed in rows]


def checkpoints(db: Database, thread_id: str) -> dict[str, list[dict[str, Any]]]:
    """Message id -> the files as they were before that message changed them (file
    checkpoints whose backup is archived: ``backup_source_id``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for message, path, at, version, source in db.execute(
        "SELECT message_id, path, at, version, backup_source_id FROM file_checkpoints "
        "WHERE thread_id = ? AND backup_source_id IS NOT NULL ORDER BY source_id, generation, offset",
        (thread_id,),
    ):
        out.setdefault(message, []).append({"path": path, "at": at, "version": version, "source_id": source})
    return out


def _parse_ts(text: str) -> datetime | None:
    try:
        ts = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts if ts.tzinfo else ts.replace(tzinfo=timezone.utc)


def ingest_times(db: Database) -> list[datetime]:
    """When the latest ingest runs started, newest first."""
    rows = db.execute(
        "SELECT started_at FROM ingest_runs WHERE command = 'ingest' ORDER BY id DESC LIMIT ?", (RECENT_RUNS,)
    ).fetchall()
    return [t for (s,) in rows if s and (t := _parse_ts(s)) is not None]


def retention_warnings(db: Database, env: Mapping[str, str] | None = None, now: datetime | None = None,
                       during_ingest: bool = False) -> list[dict[str, Any]]:
    """One warning per vendor whose cleanup will delete transcripts before the archive next
    sees them. ``during_ingest``: the newest run is the one running (its start is now)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    now = now or datetime.now(timezone.utc)
    times = ingest_times(db)
    previous = times[1] if during_ingest and len(times) > 1 else (None if during_ingest else (times[0] if times else None))
    gaps = [(a - b).total_seconds() / 86400 for a, b in zip(times, times[1:])]
    out = []
    for adapter in VENDORS:
        policy = adapter.retention(env, home)
        if policy is None:
            continue
        if not any(root.exists() for root in [*adapter.default_roots(env, home), *adapter.side_roots(env, home)]):
            continue  # the vendor is not used here (its transcripts' folder may be gone, its history not)
        since = (now - previous).total_seconds() / 86400 if previous is not None else None
        reason = None
        if policy.days <= 0:
            reason = f"{adapter.name} keeps no transcripts ({policy.setting})"
        elif since is not None and since >= policy.days:
            reason = (f"{adapter.name} deletes transcripts after {policy.days:g} days ({policy.setting}), and the "
                      f"{'previous' if during_ingest else 'last'} ingest was {since:.1f} days ago: "
                      "transcripts may have been deleted before the archive saw them")
        elif gaps and max(gaps) >= policy.days:
            reason = (f"{adapter.name} deletes transcripts after {policy.days:g} days ({policy.setting}), but "
                      f"ingest runs have been up to {max(gaps):.1f} days apart: a transcript can be deleted "
                      "before the next run reads it")
        if reason:
            out.append({"provider": adapter.name, "days": policy.days, "setting": policy.setting,
                        "warning": f"{reason}; {policy.change}"})
    return out
