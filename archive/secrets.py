"""Secrets: find them while ingesting, mask them on the way out, forget them on request.

Invariants:

* **A maintained rule set.** Detection is Yelp's ``detect-secrets`` (its plugins: AWS,
  GitHub, GitLab, Slack, Stripe, OpenAI, JWT, private keys, basic-auth URLs, keywords,
  high-entropy strings ...; its heuristic filters), plus the few AI-vendor key formats it
  lacks (``VENDOR_RULES``: one table). ``RULES_VERSION`` changes with either, and
  ``rescan`` derives every finding again.
* **Never the value.** ``secret_findings`` holds the rule, where (thread, message, block,
  the scanned field, a character span inside it) and the sha256 of the value. The value is
  read back from the archive through the span when something must be masked.
* **Scanned once, incrementally.** ``scan_new`` scans the blocks (and text blobs: companion
  files, and the prompts of prompt histories: ``field`` 'prompt', issue 38) above a watermark, like the full-text index; ingest, rebuild and the store call it
  before they commit, so findings commit with the rows they describe.
* **The archive is untouched by masking.** ``Redactor`` replaces known values (and their
  JSON-escaped form) in text or bytes on the way out (emit, show, search, restore, serve,
  push) with ``[REDACTED <rule>]``; only ``forget`` (archive/forget.py) changes stored bytes.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from .vendors.base import file_chunks

# Bump when VENDOR_RULES, the plugin list, their settings or the span rules change
# (secret_rules.py): ``sesh-archive secrets --rescan`` then derives every finding again.
RULES_VERSION = 1

# The rule set and matcher live in secret_rules.py, imported on first use rather than with
# this module: detect-secrets (with requests) and the gates' automaton and regexes cost every
# command 0.07-0.15 s at start, and most commands (search, show, serve, a nightly ingest that
# wrote no text) never scan.
def __getattr__(name: str) -> Any:
    """``secrets.<name>`` of the rule set's names (``find``, ``find_many``, ``Hit`` ...)."""
    if not name.startswith("__"):
        from . import secret_rules

        if hasattr(secret_rules, name):
            return getattr(secret_rules, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def sha(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- the scan, in the writer's transaction

SCAN_BATCH = 2000  # blocks read per query


def scan_new(conn: sqlite3.Connection) -> int:
    """Scan the blocks and text blobs written since the last call; returns the findings
    added. Called by every writer of ``blocks`` before it commits (beside ``index_text``)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'secret_scan_progress'").fetchone():
        return 0  # an archive opened without its migrations (an old schema being upgraded)
    mark_version_if_empty(conn)
    upto, blobs_upto = conn.execute("SELECT blocks_upto, blobs_upto FROM secret_scan_progress").fetchone()
    now = _now()
    added = 0
    top = conn.execute("SELECT coalesce(max(id), 0) FROM blocks").fetchone()[0]
    if top > upto:
        from .secret_rules import find_many

        conn.execute("DELETE FROM secret_findings WHERE block_id > ?", (upto,))  # never twice
        last = upto
        while last < top:
            rows = conn.execute(
                "SELECT b.id, b.message_id, b.position, b.text, b.patch, m.thread_id FROM blocks b "
                "LEFT JOIN messages m ON m.id = b.message_id WHERE b.id > ? AND b.id <= ? ORDER BY b.id LIMIT ?",
                (last, top, SCAN_BATCH),
            ).fetchall()
            if not rows:
                break
            found = []
            items = [(row, field, value) for row in rows
                     for field, value in (("text", row[3]), ("patch", row[4])) if isinstance(value, str) and value]  # fmt: skip
            for ((bid, mid, position, _t, _p, tid), field, value), hits in zip(items, find_many([v for _r, _f, v in items])):
                for h in hits:
                    found.append((h.rule, tid, mid, bid, position, field, None, h.start, h.end, sha(value[h.start:h.end])))
            added += _insert(conn, found, now)
            last = rows[-1][0]
        conn.execute("UPDATE secret_scan_progress SET blocks_upto = ?", (top,))
    btop = conn.execute("SELECT coalesce(max(rowid), 0) FROM blobs").fetchone()[0]
    if btop > blobs_upto:
        from .secret_rules import find

        conn.execute(
            "DELETE FROM secret_findings WHERE blob_sha256 IN (SELECT sha256 FROM blobs WHERE rowid > ?)", (blobs_upto,)
        )
        found = []
        for bsha, data in conn.execute(
            "SELECT sha256, data FROM blobs WHERE rowid > ? AND rowid <= ? AND media_type LIKE 'text/%'", (blobs_upto, btop)
        ):
            text = bytes(data).decode("utf-8", "replace")
            for h in find(text):
                found.append((h.rule, None, None, None, None, "blob", bsha, h.start, h.end, sha(text[h.start:h.end])))
        added += _insert(conn, found, now)
        conn.execute("UPDATE secret_scan_progress SET blobs_upto = ?", (btop,))
    return added + _scan_prompts(conn, now)


def _scan_prompts(conn: sqlite3.Connection, now: str) -> int:
    """The prompts of prompt histories (``reports`` of reason 'prompt history', issue 38)
    written since the last call; a report written again (a rebuild) replaces its findings."""
    (upto,) = conn.execute("SELECT prompts_upto FROM secret_scan_progress").fetchone()
    top = conn.execute("SELECT coalesce(max(rowid), 0) FROM reports").fetchone()[0]
    if top <= upto:
        return 0
    from .secret_rules import find_many

    rows = conn.execute(
        "SELECT source_id, generation, offset, seq, json_extract(detail, '$.thread'), json_extract(detail, '$.prompt') "
        "FROM reports WHERE rowid > ? AND rowid <= ? AND kind = 'metadata' AND reason = 'prompt history'", (upto, top)
    ).fetchall()
    conn.executemany(
        "DELETE FROM secret_findings WHERE field = 'prompt' AND source_id = ? AND generation = ? AND offset = ? "
        "AND position = ?", [r[:4] for r in rows])  # fmt: skip
    items = [r for r in rows if isinstance(r[5], str) and r[5]]
    found = []
    for (src, gen, off, seq, tid, text), hits in zip(items, find_many([r[5] for r in items])):
        for h in hits:
            found.append((h.rule, tid, None, None, seq, "prompt", None, h.start, h.end, sha(text[h.start:h.end]),
                          src, gen, off))
    added = _insert(conn, found, now)
    conn.execute("UPDATE secret_scan_progress SET prompts_upto = ?", (top,))
    return added


def _insert(conn: sqlite3.Connection, found: list[tuple[Any, ...]], now: str) -> int:
    if not found:
        return 0
    conn.executemany(
        "INSERT OR IGNORE INTO secret_values (sha256, rule, first_seen) VALUES (?, ?, ?)",
        [(f[9], f[0], now) for f in found],
    )
    conn.executemany(
        "INSERT INTO secret_findings (rule, thread_id, message_id, block_id, position, field, blob_sha256, start, end, "
        "value_sha256, source_id, generation, offset, first_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
        "(SELECT first_seen FROM secret_values WHERE sha256 = ?))",
        [(*f[:10], *(f[10:] or (None, None, None)), f[9]) for f in found],
    )
    return len(found)


def rescan(conn: sqlite3.Connection) -> int:
    """Derive every finding again with the current rules (in one transaction)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM secret_findings")
        conn.execute("UPDATE secret_scan_progress SET blocks_upto = 0, blobs_upto = 0, prompts_upto = 0, rules_version = ?",
                     (RULES_VERSION,))
        n = scan_new(conn)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return n


def stored_rules_version(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT rules_version FROM secret_scan_progress").fetchone()[0]


def mark_version_if_empty(conn: sqlite3.Connection) -> None:
    """A fresh archive's findings come from the current rules."""
    conn.execute(
        "UPDATE secret_scan_progress SET rules_version = ? WHERE blocks_upto = 0 AND blobs_upto = 0 AND prompts_upto = 0",
        (RULES_VERSION,),
    )


# ---------------------------------------------------------------- masking on the way out


def _masked(rule: str) -> str:
    return f"[REDACTED {rule}]"


class Redactor:
    """Replaces known secret values in text, bytes and JSON-like values."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values  # value -> rule
        forms: dict[str, str] = {}
        for v, rule in values.items():
            forms[v] = _masked(rule)
            escaped = orjson.dumps(v).decode()[1:-1]  # the value inside a JSON string (a key's newlines)
            forms.setdefault(escaped, _masked(rule))
        self._forms = forms
        keys = sorted(forms, key=len, reverse=True)
        self._rx = re.compile("|".join(re.escape(k) for k in keys)) if keys else None
        self._brx = re.compile(b"|".join(re.escape(k.encode("utf-8", "surrogatepass")) for k in keys)) if keys else None

    def __bool__(self) -> bool:
        return bool(self.values)

    def text(self, s: str) -> str:
        if self._rx is None or not s:
            return s
        return self._rx.sub(lambda m: self._forms[m.group(0)], s)

    def bytes(self, b: bytes) -> bytes:
        if self._brx is None or not b:
            return b
        return self._brx.sub(lambda m: self._forms[m.group(0).decode("utf-8", "surrogatepass")].encode(), b)

    def value(self, v: Any) -> Any:
        """A JSON-like value (dicts, lists, strings) with every string masked."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(self.value(x) for x in v)
        return v

    def message(self, msg: Any) -> Any:
        """A model ``Message`` with its blocks' strings (and its extra) masked."""
        from .model import Message

        if self._rx is None:
            return msg
        return Message.from_dict(self.value(msg.to_dict()))


def _values_of(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> dict[str, str]:
    """The values of the findings matching ``where``, read back through their spans (a
    span whose characters no longer hash to the finding's value is skipped)."""
    out: dict[str, str] = {}
    rows = conn.execute(
        "SELECT f.rule, f.field, f.start, f.end, f.value_sha256, b.text, b.patch, bl.data, "
        "json_extract(r.detail, '$.prompt') FROM secret_findings f "
        "LEFT JOIN blocks b ON b.id = f.block_id LEFT JOIN blobs bl ON bl.sha256 = f.blob_sha256 "
        "LEFT JOIN reports r ON f.field = 'prompt' AND r.source_id = f.source_id AND r.generation = f.generation "
        "AND r.offset = f.offset AND r.seq = f.position "
        f"WHERE {where}",
        params,
    ).fetchall()
    for rule, field, start, end, vsha, text, patch, data, prompt in rows:
        src = {"text": text, "patch": patch, "prompt": prompt}.get(field) if field != "blob" else (
            bytes(data).decode("utf-8", "replace") if data is not None else None)  # fmt: skip
        if not isinstance(src, str):
            continue
        value = src[start:end]
        if value and sha(value) == vsha:
            out.setdefault(value, rule)
    return out


def redactor_for_threads(conn: sqlite3.Connection, thread_ids: Iterable[str]) -> Redactor:
    """Masks the findings of these threads and of every text companion (few, and a thread's
    companion is not linked to it by id)."""
    ids = orjson.dumps(sorted(set(thread_ids))).decode()
    return Redactor(_values_of(conn, "f.thread_id IN (SELECT value FROM json_each(?)) OR f.field = 'blob'", (ids,)))


def redactor_for_blocks(conn: sqlite3.Connection, block_ids: Iterable[int]) -> Redactor:
    ids = orjson.dumps(sorted(set(block_ids))).decode()
    return Redactor(_values_of(conn, "f.block_id IN (SELECT value FROM json_each(?))", (ids,)))


def redactor_for_prompts(conn: sqlite3.Connection) -> Redactor:
    """The findings in prompt histories (``lost``, the lost-sessions page)."""
    return Redactor(_values_of(conn, "f.field = 'prompt'", ()))


def redactor_all(conn: sqlite3.Connection) -> Redactor:
    """Every finding of the archive (``restore --redact``, ``push --redact``)."""
    return Redactor(_values_of(conn, "1", ()))


def redactor_for_sources(conn: sqlite3.Connection, source_ids: Iterable[int]) -> Redactor:
    """Findings in the messages owned by these sources, and every text companion."""
    ids = orjson.dumps(sorted(set(source_ids))).decode()
    return Redactor(_values_of(
        conn,
        "f.message_id IN (SELECT m.id FROM messages m WHERE m.source_id IN (SELECT value FROM json_each(?))) "
        "OR f.message_id IN (SELECT o.message_id FROM message_occurrences o WHERE o.source_id IN (SELECT value FROM json_each(?))) "
        "OR f.field = 'blob'",
        (ids, ids),
    ))  # fmt: skip


# ---------------------------------------------------------------- listing


def summary(conn: sqlite3.Connection, thread: str | None = None, since: str | None = None) -> dict[str, Any]:
    where, params = _filter(thread, since)
    counts = dict(conn.execute(f"SELECT rule, count(*) FROM secret_findings f WHERE {where} GROUP BY rule ORDER BY count(*) DESC, rule", params).fetchall())
    distinct = conn.execute(f"SELECT count(DISTINCT value_sha256) FROM secret_findings f WHERE {where}", params).fetchone()[0]
    return {"findings": sum(counts.values()), "distinct_values": distinct, "by_rule": counts,
            "rules_version": RULES_VERSION, "findings_rules_version": stored_rules_version(conn)}  # fmt: skip


def list_findings(conn: sqlite3.Connection, thread: str | None = None, since: str | None = None) -> list[dict[str, Any]]:
    where, params = _filter(thread, since)
    cur = conn.execute(
        "SELECT f.id, f.rule, f.thread_id, t.title AS thread_title, f.message_id, f.block_id, f.position, f.field, "
        "f.blob_sha256, f.source_id, f.start, f.end, f.value_sha256, f.first_seen, m.ts AS message_ts FROM secret_findings f "
        f"LEFT JOIN threads t ON t.id = f.thread_id LEFT JOIN messages m ON m.id = f.message_id WHERE {where} ORDER BY f.id",
        params,
    )
    cols = [c[0] for c in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def _filter(thread: str | None, since: str | None) -> tuple[str, tuple[Any, ...]]:
    where, params = ["1"], []
    if thread:
        where.append("(f.thread_id = ? OR f.thread_id LIKE ?)")
        params += [thread, thread + "%"]
    if since:
        where.append("f.first_seen >= ?")
        params.append(since)
    return " AND ".join(where), tuple(params)


# ---------------------------------------------------------------- the ways out

_PARTIAL = re.compile(r"[^\s\"'`…\\,;:()\[\]{}<>]{8,}")


def redact_spans(red: Redactor, text: str, marks: list[list[int]]) -> tuple[str, list[list[int]]]:
    """``text`` masked, with the ``[start, end)`` ``marks`` (search highlights) moved to
    match; a mark inside a masked value goes. Snippets cut values anywhere, so a run of 8 or
    more characters that is part of a known value is masked too."""
    if not red or not text:
        return text, marks
    spans: list[tuple[int, int, str]] = []
    if red._rx is not None:
        spans += [(m.start(), m.end(), red._forms[m.group(0)]) for m in red._rx.finditer(text)]
    for m in _PARTIAL.finditer(text):
        if any(m.start() < e and s < m.end() for s, e, _r in spans):
            continue
        rule = next((r for v, r in red.values.items() if m.group(0) in v), None)
        if rule is not None:
            spans.append((m.start(), m.end(), _masked(rule)))
    if not spans:
        return text, marks
    spans.sort()
    out, pos, shifts = [], 0, []  # shifts: (old end, delta after it)
    delta = 0
    for s, e, r in spans:
        out += [text[pos:s], r]
        delta += len(r) - (e - s)
        shifts.append((s, e, delta))
        pos = e
    out.append(text[pos:])
    moved = []
    for a, b in marks:
        if any(a < e and s < b for s, e, _d in shifts):
            continue
        d = next((d for s, e, d in reversed(shifts) if e <= a), 0)
        moved.append([a + d, b + d])
    return "".join(out), moved


def redact_marked(red: Redactor, marked: str, open_mark: str, close_mark: str) -> str:
    """A snippet with highlight markers (FTS5 ``snippet()``), masked, markers kept."""
    if not red or not marked:
        return marked
    text, marks, start, n = [], [], None, 0
    for ch in marked:
        if ch == open_mark:
            start = n
        elif ch == close_mark:
            if start is not None:
                marks.append([start, n])
            start = None
        else:
            text.append(ch)
            n += 1
    masked, marks = redact_spans(red, "".join(text), marks)
    out, pos = [], 0
    for a, b in marks:
        out += [masked[pos:a], open_mark, masked[a:b], close_mark]
        pos = b
    out.append(masked[pos:])
    return "".join(out)


def thread_scope(conn: sqlite3.Connection, thread_id: str) -> list[str]:
    """A thread, its ancestors (a fork's emit carries its parent's history) and its
    descendants (child threads travel with it)."""
    ids = [thread_id]
    parent = conn.execute("SELECT parent_thread_id FROM threads WHERE id = ?", (thread_id,)).fetchone()
    while parent and parent[0] and parent[0] not in ids:
        ids.append(parent[0])
        parent = conn.execute("SELECT parent_thread_id FROM threads WHERE id = ?", (parent[0],)).fetchone()
    frontier = [thread_id]
    while frontier:
        children = [r[0] for r in conn.execute(
            "SELECT id FROM threads WHERE parent_thread_id IN (SELECT value FROM json_each(?))", (orjson.dumps(frontier).decode(),)
        ) if r[0] not in ids]  # fmt: skip
        ids += children
        frontier = children
    return ids


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        yield from lines
    if rest:
        yield rest


def redact_outcome(conn: sqlite3.Connection, outcome: Any) -> int:
    """Mask every file of an ``emit`` outcome in place (any target: a byte-exact copy's
    JSON lines hold values JSON-escaped, which the redactor knows); returns the files changed."""
    red = redactor_for_threads(conn, thread_scope(conn, outcome.thread_id))
    changed = 0
    if not red:
        return 0
    files = outcome.files
    # a value without a raw newline (every value, as JSON lines escape newlines) is masked
    # line by line as the file is copied out, never read whole (a session can be 600 MB);
    # a multi-line one (a private key in Markdown) needs the whole file
    multiline = any("\n" in v for v in red.values)
    for rel in list(files):
        if multiline:
            data = files[rel]
            masked = red.bytes(data)
            if masked != data:
                files[rel] = masked
                changed += 1
        elif any(red.bytes(line) != line for line in _lines(file_chunks(files, rel))):
            files.map_lines(rel, red.bytes)
            changed += 1
    if changed:
        outcome.exact = False
        outcome.notes.append(f"secrets masked in {changed} file(s) (--redact): not byte-exact")
    return changed


def redact_view(conn: sqlite3.Connection, view: Any) -> Any:
    """A ``thread_view.ThreadView`` whose messages (read lazily, page by page) and summary are masked."""
    red = redactor_for_threads(conn, thread_scope(conn, view.thread.id))
    if not red:
        return view

    class Masked:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def __iter__(self) -> Iterator[Any]:
            return (red.message(m) for m in self.inner)

        def __len__(self) -> int:
            return len(self.inner)

    from dataclasses import replace

    from .model import Thread

    return replace(view, thread=Thread.from_dict(red.value(view.thread.to_dict())), summary=red.value(view.summary),
                   messages=Masked(view.messages), children=red.value(view.children))  # fmt: skip


def redact_hits(conn: sqlite3.Connection, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``queries.search`` hits with their snippets (and labels) masked."""
    threads = {h["thread_id"] for h in hits if h.get("thread_id")}
    red = redactor_for_threads(conn, threads)
    for h in hits:
        h["snippet"], h["matches"] = redact_spans(red, h.get("snippet") or "", h.get("matches") or [])
        if isinstance(h.get("thread_title"), str):
            h["thread_title"] = red.text(h["thread_title"])
    return hits


def mask_page(conn: sqlite3.Connection, data: dict[str, Any]) -> dict[str, Any]:
    """The conversation page's data (``web.conversation.load_page``) with every string masked:
    blocks, the table of contents, labels of the thread and its relatives."""
    ids = [data["thread"]["id"], *(r["id"] for r in data.get("relatives", []))]
    red = redactor_for_threads(conn, ids)
    return red.value(data) if red else data


def mask_search_rows(conn: sqlite3.Connection, rows: list[Any], labels: dict[str, str],
                     open_mark: str, close_mark: str) -> list[dict[str, Any]]:  # fmt: skip
    """The search page's rows with snippets (highlights kept) and labels masked."""
    out = [dict(r) for r in rows]
    red = redactor_for_threads(conn, {r["thread_id"] for r in out if r.get("thread_id")})
    if not red:
        return out
    for r in out:
        r["snippet"] = redact_marked(red, r.get("snippet") or "", open_mark, close_mark)
        if isinstance(r.get("title"), str):
            r["title"] = red.text(r["title"])
    for k, v in labels.items():
        labels[k] = red.text(v)
    return out


def forgotten_note(conn: sqlite3.Connection, files: Iterable[Any]) -> str | None:
    """What ``restore`` says when ``forget`` rewrote lines of the files it gave back (restore's
    ``RestoredFile``s): which files, which generation replaced which. A source something was
    forgotten from also has the values masked in the lines ingest read from it later."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'forget_generations'").fetchone():
        return None
    said = []
    for f in files:
        sid = conn.execute("SELECT id FROM sources WHERE uid = ?", (f.source_uid,)).fetchone()
        if sid is None or not conn.execute("SELECT 1 FROM forgotten_values WHERE source_id = ?", sid).fetchone():
            continue
        gens = conn.execute(
            "SELECT replaced_generation, lines_rewritten FROM forget_generations WHERE source_id = ? AND generation = ?",
            (sid[0], f.generation),
        ).fetchall()
        how = "; ".join(f"generation {f.generation} replaced generation {old} ({_plural_lines(n)} rewritten)" for old, n in gens)
        said.append(f"  {f.path}: source {f.source_uid[:12]}, " + (how or f"generation {f.generation}, lines masked as read"))
    if not said:
        return None
    return (f"note: {len(said)} restored file(s) hold lines rewritten by `forget` (secrets replaced by "
            "[REDACTED ...]): these are not the original bytes\n" + "\n".join(said))  # fmt: skip


def _plural_lines(n: int) -> str:
    return f"{n} line" + ("" if n == 1 else "s")


def sql_masker(conn: sqlite3.Connection, show: bool = False) -> Any:
    """``mask_secrets(text)`` for SQL (serve's canned search query): ``text`` with every
    finding of the archive masked (snippet highlights kept), unless ``show``. The values are
    read again when another connection has committed (``PRAGMA data_version``)."""
    cache: dict[str, Any] = {"version": None, "red": None}

    def mask(text: Any) -> Any:
        if show or not isinstance(text, str) or not text:
            return text
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        if cache["version"] != version:
            has = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'secret_findings'").fetchone()
            cache["red"], cache["version"] = (redactor_all(conn) if has else Redactor({})), version
        red = cache["red"]
        return redact_marked(red, text, "\u27e6", "\u27e7") if red else text

    return mask
