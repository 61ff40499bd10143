"""OpenClaw transcripts: pi's session format, read by pi's parser under this provider's name.

OpenClaw (2026.7.1 JSONL files; 2026.9.1 and 2026.9.6 SQLite rows; the same lines) writes pi's session
format (``archive/vendors/pi/parse.py`` states its invariants, which hold here): a
``session`` header (``version`` 3 in 2026.7.1 and 2026.9.1, 4 in 2026.9.6: the same entries), then
entries in a tree by ``id``/``parentId`` (uuids, not pi's 8 hex digits). What OpenClaw adds,
checked with both releases:

* ``custom`` entries (``model-snapshot``, ``openclaw:bootstrap-context:full``,
  ``openclaw.cache-ttl``, ...): the
  runtime's own state, never sent to the model: ``SKIPPED``, as pi's extension state.
* ``__openclaw`` (sender, run id) and ``idempotencyKey`` on messages: kept in
  ``Message.extra`` as every other field pi's parser does not map.
* An assistant entry with ``stopReason: "error"`` (the provider failed: ``errorMessage``,
  ``errorCode``, ``diagnostics``) and no content is a message without blocks, its fields
  in ``extra``; its zero usage is a response the model never gave, so it is kept as such.
* Each request also carries an internal-context user message (active exec sessions,
  subagents) that the transcript never holds: nothing of it is stored.
* ``parentSession`` of a fork names ``<sessionId>.jsonl`` (no time prefix as pi's).
* A line the database held with a line break inside (``openclaw_row``, see the adapter)
  is reported ``INVALID`` with its text.

Message ids are ``stable_id("openclaw", session, entry id)``: a session read from its JSONL
file, a rotated copy of it (``.reset``/``.bak``/``.checkpoint``) and the database rows
``openclaw doctor`` imported from it give the same messages.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from ...model import JsonObject
from ..base import INVALID, METADATA, PARSE_ERROR, SKIPPED, Report, Row, SourceInfo, ThreadFact
from ..pi.parse import HANDLERS, PiParser, parent_session_id

NAME = "openclaw"
_ENTRY_ID = re.compile(rb'^\{"type":"[a-z_]+","id":"([0-9a-fA-F-]+)"')
_FILE_ID = re.compile(r"([0-9a-fA-F-]{36})(?:\.checkpoint\.[0-9a-fA-F-]+)?\.jsonl")


def is_openclaw_header(d: JsonObject, head: bytes) -> bool:
    """A trajectory's first event, or a session header that only OpenClaw writes (session
    format 4, 2026.9; pi 0.73.1 writes 3) or that is followed (in the first 64 KiB) by what
    only OpenClaw writes."""
    if d.get("traceSchema") == "openclaw-trajectory":
        return True
    if not (d.get("type") == "session" and isinstance(d.get("id"), str) and "cwd" in d):
        return False
    version = d.get("version")
    if (isinstance(version, int) and version >= 4) or b'"__openclaw"' in head \
            or b'"customType":"openclaw:' in head or b'"customType":"model-snapshot"' in head:
        return True
    # the first entries of a session (just started, or torn), given by hand, before any of
    # the above: OpenClaw 2026.9 names entries by uuid (pi 0.73.1: 8 hex digits) and its
    # sessions by random uuids (v4; pi 0.73.1: v7); a header pi's format-3 writer wrote has
    # ``version`` before ``id``, as OpenClaw's (pi's v1 migration appends it after)
    keys = list(d)
    sid = d["id"]
    if version != 3 or keys.index("version") > keys.index("id") or len(sid) != 36 or sid[14:15] != "4":
        return False
    for line in head.split(b"\n")[1:-1]:  # whole lines after the header (the last may be torn)
        m = _ENTRY_ID.search(line)
        if m is not None:
            return len(m.group(1)) == 36
    return True


class OpenClawParser(PiParser):
    vendor = NAME

    def parent_session(self, path: Any) -> str | None:
        found = parent_session_id(path)  # a session pi wrote and OpenClaw forked
        if found is None and isinstance(path, str):
            m = _FILE_ID.search(path.rsplit("/", 1)[-1])
            found = m.group(1) if m else None
        return found

    def _dispatch(self, d: JsonObject) -> Iterator[Row]:
        if d.get("type") == "openclaw_row":
            yield Report(INVALID, "a database row holding a line break", str(d.get("eventText"))[:2000])
            return
        yield from super()._dispatch(d)


assert "custom" in HANDLERS  # OpenClaw's custom entries are pi's extension state (SKIPPED)


class TrajectoryParser:
    """``<id>.trajectory.jsonl`` (2026.7.1) and the ``trajectory_runtime_events`` rows
    (2026.9.1, 2026.9.6): the runtime's trace of each run (``traceSchema: openclaw-trajectory``;
    ``session.started``, ``trace.metadata``, ``context.compiled``, ``prompt.submitted``,
    ``tool.call``, ``tool.result``, ``model.completed``, ``trace.artifacts``,
    ``session.ended``). The conversation is the transcript's; these are the client's
    bookkeeping (request snapshots, timings), kept byte-exact in the source layer:
    ``SKIPPED``, except ``trace.metadata``, whose ``harness.version`` is the client release
    that ran (``metadata.version`` of the session's thread: drift is reported per release)
    and ``METADATA``. Stateless, never raises on input."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        if not line.strip():
            return iter(())
        try:
            d = orjson.loads(line)
        except orjson.JSONDecodeError as e:
            return iter([Report(PARSE_ERROR, "invalid JSON", str(e))])
        if not isinstance(d, dict) or d.get("traceSchema") != "openclaw-trajectory":
            return iter([Report(INVALID, "not an openclaw-trajectory event", line[:300].decode("utf-8", "replace"))])
        kind = d.get("type")
        if kind != "trace.metadata":
            return iter([Report(SKIPPED, f"trajectory {kind}")])
        harness = (d.get("data") or {}).get("harness") if isinstance(d.get("data"), dict) else None
        version = harness.get("version") if isinstance(harness, dict) else None
        sid = d.get("sessionId")
        rows: list[Row] = [Report(METADATA, "trajectory trace.metadata", str(version))]
        if isinstance(sid, str) and sid and isinstance(version, str) and version:
            rows.insert(0, ThreadFact(sid, {"metadata": {"version": version}}))
        return iter(rows)
