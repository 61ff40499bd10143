"""Coverage per vendor version: how the lines read were explained, by the client version
that wrote them (the ``line_coverage`` and ``coverage`` views, migration m030), and the
drift warnings ``ingest`` prints after a run.

Invariants:

* Nothing here names a vendor: providers and versions come from the rows (a version is
  what the adapter put in a thread's ``metadata.version``).
* ``line_coverage`` costs about 3-5 µs of CPU per line read (measured: 20,419 lines of a
  30 MB generated corpus in 0.06-0.09 s), so ``status`` stays a few seconds on a million
  lines; no index was added for it (ingest pays for every index).
* The warnings of a run look only at what that run wrote: report rows and source lines
  past the marks taken before it (rowids and ids only grow), so a run over an archive of
  millions of lines reads a handful of rows.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from .vendors.base import PROMPT_HISTORY, SIDE_FILE

# problem kinds: a line the adapter could not explain
PROBLEMS = ("unknown", "parse_error", "invalid", "refused", "unexplained", "adapter_error")
# the kinds a status shows, in order (messages first)
KINDS = ("message", "metadata", "skipped", "duplicate", "warning", *PROBLEMS)

_VERSION_AT = """
coalesce(
  (SELECT json_extract(f.fields, '$.metadata.version') FROM thread_facts f
    WHERE f.source_id = :s AND f.generation = :g AND f.offset <= :o
      AND json_extract(f.fields, '$.metadata.version') IS NOT NULL ORDER BY f.offset DESC LIMIT 1),
  (SELECT json_extract(f.fields, '$.metadata.version') FROM thread_facts f
    WHERE f.source_id = :s AND f.generation = :g
      AND json_extract(f.fields, '$.metadata.version') IS NOT NULL ORDER BY f.offset LIMIT 1),
  '?')"""


def coverage_rows(db: Any) -> list[dict[str, Any]]:
    """Per provider and client version: lines read and, per kind, lines and share (%)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for provider, version, kind, lines, share in db.execute(
        "SELECT provider, client_version, kind, lines, share FROM coverage ORDER BY provider, client_version"
    ).fetchall():
        row = out.setdefault((provider, version), {"provider": provider, "client_version": version, "lines": 0, "kinds": {}})
        row["lines"] += lines
        row["kinds"][kind] = {"lines": lines, "share": share}
    for row in out.values():
        row["kinds"] = dict(sorted(row["kinds"].items(), key=lambda kv: KINDS.index(kv[0]) if kv[0] in KINDS else len(KINDS)))
    return sorted(out.values(), key=lambda r: (r["provider"], _version_key(r["client_version"])))


def _version_key(v: str) -> tuple[Any, ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in v.replace("-", ".").split("."))


def mark(db: Any) -> tuple[int, int]:
    """Where this run starts: the last report rowid and the last source line id."""
    r = db.execute("SELECT coalesce(max(rowid), 0) FROM reports").fetchone()[0]
    line = db.execute("SELECT coalesce(max(id), 0) FROM source_lines").fetchone()[0]
    return int(r), int(line)


def add_drift_warnings(summary: Any, db: Any, since: tuple[int, int]) -> None:
    """Append a run's drift warnings to its summary. Ingest's own "<path>: no messages in
    this source" says less than the warning here (version, record types) about the same
    source: that one gives way."""
    drift = drift_warnings(db, since)
    named = {w.split(": ", 1)[1].split(" yields no messages", 1)[0] for w in drift if " yields no messages " in w}
    summary.warnings[:] = [w for w in summary.warnings if not (w.endswith(": no messages in this source")
                                                               and w[: -len(": no messages in this source")] in named)]
    summary.warnings.extend(drift)


def drift_warnings(db: Any, since: tuple[int, int]) -> list[str]:
    """Warnings about what a run met since ``since`` (``mark``): unknown record types, named
    with the provider and client version that wrote them; and sources of a known provider
    that hold lines and still no message (a format the adapter reads as nothing)."""
    report_mark, line_mark = since
    unknown: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for provider, version, reason, n in db.execute(
        f"SELECT s.provider, {_VERSION_AT.replace(':s', 'r.source_id').replace(':g', 'r.generation').replace(':o', 'r.offset')}"
        " AS v, r.reason, count(*) FROM reports r JOIN sources s ON s.id = r.source_id"
        " WHERE r.rowid > ? AND r.kind = 'unknown' GROUP BY 1, 2, 3",
        (report_mark,),
    ).fetchall():
        unknown[(provider, version)][reason] += n
    out = []
    for (provider, version), reasons in sorted(unknown.items()):
        types = ", ".join(f"{r} ({n})" for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
        out.append(f"{provider} {version}: unknown record types: {types}; the adapter may need an update "
                   "(the lines are kept; `rebuild` applies a newer adapter to them)")
    for source_id, generation, provider, version, path, lines in db.execute(
        f"SELECT s.id, s.current_generation, s.provider, "
        f"{_VERSION_AT.replace(':s', 's.id').replace(':g', 's.current_generation').replace(':o', '1e18')},"
        " s.last_path, (SELECT count(*) FROM source_lines l WHERE l.source_id = s.id AND l.generation = s.current_generation)"
        " FROM sources s WHERE s.kind = 'lines'"
        # NOT INDEXED: by the rowid range, the run's own lines; SQLite preferred to scan the
        # whole (source_id, generation, offset) index, 17 ms a run per 359,000 lines archived
        " AND s.id IN (SELECT DISTINCT source_id FROM source_lines NOT INDEXED WHERE id > ?)"
        " AND NOT EXISTS (SELECT 1 FROM message_occurrences o WHERE o.source_id = s.id AND o.generation = s.current_generation)"
        # a side file (issue 38) holds prompts or side data, never messages
        " AND NOT EXISTS (SELECT 1 FROM reports r WHERE r.source_id = s.id AND r.kind = 'metadata' AND r.reason IN (?, ?))",
        (line_mark, PROMPT_HISTORY, SIDE_FILE),
    ).fetchall():
        # by the source's key (indexed), not its last path: that scanned every report once a
        # source warned about (3.6 ms each in an archive of 52,504 reports)
        reasons = ", ".join(r for (r,) in db.execute(
            "SELECT DISTINCT reason FROM reports WHERE source_id = ? AND generation = ? ORDER BY reason LIMIT 8",
            (source_id, generation)).fetchall())
        out.append(f"{provider} {version}: {path} yields no messages from {lines} line(s)"
                   + (f" (record types: {reasons})" if reasons else ""))
    return out
