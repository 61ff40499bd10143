"""The archive as an agent's memory: the read functions the MCP server (``archive.mcp_server``)
offers as tools, each returning one JSON-ready dict sized for a model's context.

Invariants:

* Read-only, and no query of its own where the library has one: search is
  ``queries.search``, listing ``queries.threads``, a session's overview and pages the thread
  view ``show`` and ``emit`` read (``thread_view.load_view``), usage ``queries.stats``, files ``file_touches.sessions_touching``.
* Every result passes through the secret masking of ``show --redact`` and ``serve``
  (``archive.secrets``): a found secret leaves as ``[REDACTED rule]``, on every tool.
* Sized: each result stays within about ``max_tokens`` (4 characters a token, measured on
  its JSON), at least one item always; what did not fit is reached with the ``next_cursor``
  the result carries. A cursor names its tool and arguments: given to another query it is
  refused, never silently misapplied.
* A session is named as the CLI names it: an id, an unambiguous prefix, a vendor's session
  id (``queries.resolve_thread``); an unknown or ambiguous one is an ``ArchiveError``
  saying so.
* ``mode`` of search: ``lexical`` (FTS5), ``semantic`` or ``hybrid`` (``semantic.search``,
  issue 40; the model comes with the ``[semantic]`` extra, and without it the error says so).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable
from typing import Any

import orjson
from sqlite_utils import Database

from .file_touches import sessions_touching
from .model import Attachment, FileChange, Message, Reasoning, Text, ToolCall, ToolResult, Unknown, WebSearch
from .pricing import PriceTable, load_prices
from .projection import one_line
from .queries import Filters, QueryError, ThreadNotFound, stats, threads
from .queries import resolve_thread as _resolve_thread
from .secrets import Redactor, redact_hits, redactor_all, redactor_for_threads, thread_scope
from .semantic_search import search as by_mode
from .thread_view import load_view

CHARS_PER_TOKEN = 4
SEARCH_MODES = ("lexical", "semantic", "hybrid")
BLOCK_KINDS = ("text", "reasoning", "tool_call", "tool_result", "file_change", "web_search", "attachment", "unknown")
ROLES = ("user", "assistant", "system", "tool")
SORTS = ("recent", "oldest", "tokens", "cost", "messages")
USAGE_BY = ("day", "week", "month", "model", "project", "vendor")
# hits a search groups into sessions (bm25 order; the result says when more exist): on the
# 1 GB corpus a common word's 400 best hits took 1.4 s, 20 took 0.6 s (loaded machine)
SCAN_HITS = 200
FOLD_WIDTH = 160  # a folded tool call or result: one line of this many characters


def tokens(value: Any) -> int:
    return len(orjson.dumps(value)) // CHARS_PER_TOKEN + 1


# ---------------------------------------------------------------- cursors


def _fingerprint(tool: str, args: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps([tool, args], option=orjson.OPT_SORT_KEYS)).hexdigest()[:12]


def make_cursor(tool: str, args: dict[str, Any], offset: int) -> str:
    raw = orjson.dumps({"t": tool, "h": _fingerprint(tool, args), "o": offset})
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: str | None, tool: str, args: dict[str, Any]) -> int:
    """The offset a cursor of ``tool`` holds; 0 without one; ``QueryError`` for a cursor of
    another tool or other arguments, or not a cursor at all."""
    if not cursor:
        return 0
    try:
        d = orjson.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        ok = isinstance(d, dict) and isinstance(d.get("o"), int) and d["o"] >= 0
    except (ValueError, binascii.Error, orjson.JSONDecodeError):
        ok = False
    if not ok:
        raise QueryError(f"{cursor!r} is not a cursor this server gave")
    if d.get("t") != tool or d.get("h") != _fingerprint(tool, args):
        raise QueryError(f"this cursor belongs to another {d.get('t')} call: repeat the same arguments with it, or leave it out")
    return int(d["o"])


def _page(items: Iterable[dict[str, Any]], max_tokens: int, head: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """Items while the result (``head`` plus them) stays within ``max_tokens``; at least one.
    Returns them and whether one was left out."""
    used = tokens(head)
    out: list[dict[str, Any]] = []
    for item in items:
        cost = tokens(item)
        if out and used + cost > max_tokens:
            return out, True
        out.append(item)
        used += cost
    return out, False


_PRICES: list[PriceTable] = []


def _prices() -> PriceTable:
    if not _PRICES:  # the price tables load once a process
        _PRICES.append(load_prices())
    return _PRICES[0]


def warm() -> None:
    """Load the price tables and genai-prices' model database (its first lookup imports it:
    2 s on the loaded test machine), so no tool call pays for it."""
    _prices().lookup("sesh-archive-warm-up")  # a name no table has: the database is consulted


def resolve_thread(db: Database, ref: str) -> str:
    """``queries.resolve_thread``, its not-found message pointing at this server's tools."""
    try:
        return _resolve_thread(db, ref)
    except ThreadNotFound:
        raise ThreadNotFound(f"unknown session {ref.strip()!r}: no session id starts with it "
                             "(list_sessions or search give ids)") from None  # fmt: skip


# ---------------------------------------------------------------- search


def search_sessions(db: Database, query: str, *, vendor: str | None = None, project: str | None = None,
                    role: str | None = None, kinds: Iterable[str] = (), since: str | None = None,
                    until: str | None = None, session: str | None = None, mode: str = "lexical",
                    literal: bool = True, per_session: int = 3, max_tokens: int = 2000,
                    cursor: str | None = None, tz: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Hits of ``query`` grouped by session, best session first (its best hit's rank in ``mode``)."""
    if mode not in SEARCH_MODES:
        raise QueryError(f"search mode {mode!r} is not one of {', '.join(SEARCH_MODES)}")
    kinds = list(kinds)
    args = {"query": query, "vendor": vendor, "project": project, "role": role, "kinds": kinds, "since": since,
            "until": until, "session": session, "literal": literal, "per_session": per_session, "tz": tz}  # fmt: skip
    if mode != "lexical":  # a lexical cursor made before modes existed stays valid
        args["mode"] = mode
    offset = read_cursor(cursor, "search", args)
    thread = resolve_thread(db, session) if session else None
    f = Filters(provider=vendor, role=role, thread=thread, project=project, since=since, until=until, tz=tz)
    hits = redact_hits(db.conn, by_mode(db, query, f, mode=mode, limit=SCAN_HITS + 1, literal=literal, kinds=kinds))
    more_hits = len(hits) > SCAN_HITS
    groups: dict[str, dict[str, Any]] = {}
    for h in hits[:SCAN_HITS]:
        g = groups.setdefault(h["thread_id"], {"session": h["thread_id"], "title": one_line(h["thread_title"], 100) or None,
                                               "vendor": h["provider"], "project": h["project"], "hits": 0,
                                               "snippets": []})  # fmt: skip
        g["hits"] += 1
        if len(g["snippets"]) < max(per_session, 1):
            g["snippets"].append({"message_id": h["message_id"], "role": h["role"], "ts": h["ts"],
                                  "kind": h["block_type"], "tool": h["tool_name"], "text": h["snippet"]})  # fmt: skip
    ordered = list(groups.values())
    # the query is not echoed: the caller has it, and it may quote a secret
    head = {"mode": mode, "sessions_found": len(ordered), "hits_scanned": min(len(hits), SCAN_HITS),
            "more_hits_than_scanned": more_hits, "next_cursor": make_cursor("search", args, 0)}  # fmt: skip
    page, cut = _page(ordered[offset:], max_tokens, head)
    head["next_cursor"] = make_cursor("search", args, offset + len(page)) if cut else None
    if more_hits:
        head["note"] = f"only the best {SCAN_HITS} hits are grouped: narrow the query or the filters for more"
    return {**head, "results": page}


# ---------------------------------------------------------------- list sessions


def _session_row(r: dict[str, Any]) -> dict[str, Any]:
    return {"session": r["id"], "title": one_line(r["label"], 100) or None, "vendor": r["provider"],
            "project": r["project"], "model": r["model"], "started": r["first_ts"] or r["created_at"],
            "last": r["last_ts"], "messages": r["messages"], "subagents": r["children"],
            "total_tokens": r["total_tokens"], "cost_usd": r.get("cost_usd"),
            **({"forked_from": r["forked_from"], "lineage": r["lineage"]} if r.get("forked_from") else {}),
            **({"parent": r["parent_thread_id"]} if r["parent_thread_id"] and not r.get("forked_from") else {})}  # fmt: skip


def list_sessions(db: Database, *, vendor: str | None = None, project: str | None = None, since: str | None = None,
                  until: str | None = None, sort: str = "recent", subagents: bool = False, limit: int = 20,
                  max_tokens: int = 2000, cursor: str | None = None, tz: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Sessions with messages, ``sort``ed, ``limit`` a page (and ``max_tokens``)."""
    if sort not in SORTS:
        raise QueryError(f"cannot sort by {sort!r}; one of {', '.join(SORTS)}")
    args = {"vendor": vendor, "project": project, "since": since, "until": until, "sort": sort,
            "subagents": subagents, "limit": limit, "tz": tz}  # fmt: skip
    offset = read_cursor(cursor, "list_sessions", args)
    limit = max(1, min(limit, 200))
    f = Filters(provider=vendor, project=project, since=since, until=until, tz=tz)
    common = {"top_level": not subagents, "include_empty": False, "prices": _prices()}
    if sort == "recent":  # the listing's own order: paged in SQL
        rows = threads(db, f, limit=limit + 1, offset=offset, **common)
        total = None
    else:
        everything = threads(db, f, limit=None, **common)
        key = {"oldest": lambda r: (r["first_ts"] or r["created_at"] or "", r["id"]),
               "tokens": lambda r: (-r["total_tokens"], r["id"]),
               "cost": lambda r: (-(r["cost_usd"] or 0.0), r["id"]),
               "messages": lambda r: (-r["messages"], r["id"])}[sort]  # fmt: skip
        everything.sort(key=key)
        total = len(everything)
        rows = everything[offset : offset + limit + 1]
    red = redactor_for_threads(db.conn, [r["id"] for r in rows[:limit]])
    items = [red.value(_session_row(r)) for r in rows[:limit]]
    head: dict[str, Any] = {"sort": sort, "total": total, "next_cursor": make_cursor("list_sessions", args, 0)}
    page, cut = _page(items, max_tokens, head)
    more = cut or len(rows) > limit
    head["next_cursor"] = make_cursor("list_sessions", args, offset + len(page)) if more else None
    return {**head, "sessions": page}


# ---------------------------------------------------------------- one session


def session_overview(db: Database, session: str, *, max_tokens: int = 2000) -> dict[str, Any]:
    """What a session was: title, vendor, project, dates, models, usage, cost, lineage, children.

    The children shown are summed, not every child (2,459 for the 1 GB corpus's largest session:
    1.9 s to sum them all)."""
    tid = resolve_thread(db, session)
    view = load_view(db, tid, children=max(max_tokens // 40, 5), prices=_prices())  # ~40 tokens a child at least
    thread, s = view.thread, view.summary
    models = [{"model": m, "responses": n} for m, n in db.conn.execute(
        "SELECT model, count(*) FROM usage_responses WHERE thread_id = ? GROUP BY 1 ORDER BY 2 DESC, 1", (tid,))]  # fmt: skip
    out: dict[str, Any] = {
        "session": tid, "title": s["label"], "vendor": s["provider"], "project": s["project"],
        "started": s["first_ts"] or s["created_at"], "last": s["last_ts"], "messages": s["messages"] + s["inherited_messages"],
        "models": models or ([{"model": s["model"], "responses": 0}] if s["model"] else []),
        "usage": {k: s[k] for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
                                    "total_tokens")},  # fmt: skip
        "cost_usd": s.get("cost_usd"), "unpriced_models": s.get("unpriced_models") or [],
        "lineage": {"parent": s["parent_thread_id"], "origin_message_id": thread.origin_message_id,
                    "forked_from": s["forked_from"], "kind": s["lineage"] or ("subagent" if s["parent_thread_id"] else None),
                    "inherited_messages": s["inherited_messages"], "inherited_tokens": s["inherited_tokens"]},
    }  # fmt: skip
    out["children_total"] = view.children_total
    red = redactor_for_threads(db.conn, thread_scope(db.conn, tid))
    out = red.value(out)
    kids = [red.value({"session": c["id"], "title": one_line(c["label"], 80) or None, "messages": c["messages"],
                       "kind": "fork" if c.get("forked_from") == tid else "subagent", "started": c["first_ts"]})
            for c in view.children]  # fmt: skip
    out["children"], cut = _page(kids, max_tokens, out)
    if cut or len(view.children) < view.children_total:
        out["children_note"] = (f"{len(out['children'])} of {view.children_total} children shown; "
                                "list_sessions with subagents=true lists them all")  # fmt: skip
    return out


def _block_lines(b: Any, full: bool, call_names: dict[str, str]) -> list[str]:
    from .render import _json, _result_text

    if isinstance(b, Text):
        return [b.text]
    if isinstance(b, Reasoning):
        body = b.text or ("[redacted]" if b.redacted else "")
        return [f"[thinking] {body}" if full else f"[thinking] {one_line(body, FOLD_WIDTH)}"]
    if isinstance(b, ToolCall):
        call_names[b.call_id] = b.name
        if full:
            return [f"[tool call {b.name} {b.call_id}]", _json(b.input)]
        return [f"[tool call {b.name}] {one_line(_json(b.input, indent=False), FOLD_WIDTH)}"]
    if isinstance(b, ToolResult):
        text = _result_text(b)
        name = call_names.get(b.call_id, "")
        mark = f"[tool result{' ' + name if name else ''}{' ERROR' if b.is_error else ''}]"
        if full:
            return [mark, text]
        n = text.count("\n") + 1 if text else 0
        return [f"{mark} {one_line(text, FOLD_WIDTH)}" + (f" ({n} lines)" if n > 1 else "")]
    if isinstance(b, FileChange):
        lines = (b.patch or "").splitlines()
        return [f"[file change {b.path or ''}]"] + (lines if full else [f"({len(lines)} diff lines)"] if lines else [])
    if isinstance(b, WebSearch):
        return [f"[web search] {b.query}"]
    if isinstance(b, Attachment):
        return [f"[attachment {b.media_type or '?'}{' ' + b.uri if b.uri else ''}]"]
    if isinstance(b, Unknown):
        return [f"[unknown block {b.source_type}]"]
    return []


def _message_item(i: int, m: Message, full: bool, call_names: dict[str, str]) -> dict[str, Any]:
    lines = [ln for b in m.content for ln in _block_lines(b, full, call_names)]
    item: dict[str, Any] = {"index": i, "id": m.id, "role": m.role, "ts": m.ts, "text": "\n".join(lines)}
    if (m.extra or {}).get("injected"):
        item["injected"] = True
        if not full:
            item["text"] = f"[injected context, {len(item['text']):,} chars] {one_line(item['text'], FOLD_WIDTH)}"
    return item


def session_messages(db: Database, session: str, *, start: int | None = None, full_tools: bool = False,
                     max_tokens: int = 4000, cursor: str | None = None) -> dict[str, Any]:  # fmt: skip
    """A page of a session's conversation (thread order, a fork's inherited history first):
    messages from ``start`` (or the cursor) while they fit ``max_tokens``; tool calls,
    results, reasoning and injected context folded to a line unless ``full_tools``."""
    tid = resolve_thread(db, session)
    args = {"session": tid, "full_tools": full_tools}
    offset = read_cursor(cursor, "read_session", args) if cursor else max(start or 0, 0)
    pages = load_view(db, tid, summaries=False, page=50).messages  # read while it fits; 50 messages a query
    red = redactor_for_threads(db.conn, thread_scope(db.conn, tid))
    head: dict[str, Any] = {"session": tid, "messages_total": len(pages), "from_index": offset,
                            "next_cursor": make_cursor("read_session", args, offset)}  # fmt: skip
    budget = max_tokens - tokens(head)
    items: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    for i, m in enumerate(pages.between(offset, len(pages)), start=offset):
        item = _message_item(i, red.message(m) if red else m, full_tools, call_names)
        cost = tokens(item)
        if items and cost > budget:
            break
        if cost > budget:  # one message larger than the page: its head, and how to see the rest
            keep = max(budget * CHARS_PER_TOKEN - 200, 200)
            item["text"] = item["text"][:keep] + f"\n[… {len(item['text']) - keep:,} more characters not shown]"
            item["truncated"] = True
            cost = tokens(item)
        items.append(item)
        budget -= cost
    nxt = offset + len(items)
    head["next_cursor"] = make_cursor("read_session", args, nxt) if nxt < len(pages) else None
    return {**head, "messages": items}


# ---------------------------------------------------------------- files and usage


def file_sessions(db: Database, path: str, *, vendor: str | None = None, project: str | None = None,
                  since: str | None = None, until: str | None = None, limit: int = 20, max_tokens: int = 2000,
                  cursor: str | None = None, tz: str | None = None) -> dict[str, Any]:  # fmt: skip
    """The sessions whose tool calls read or changed ``path``, most recent first."""
    args = {"path": path, "vendor": vendor, "project": project, "since": since, "until": until, "limit": limit, "tz": tz}
    offset = read_cursor(cursor, "file_sessions", args)
    limit = max(1, min(limit, 200))
    f = Filters(provider=vendor, project=project, since=since, until=until, tz=tz)
    rows = sessions_touching(db, path, f, limit=limit + 1, offset=offset)
    red = redactor_for_threads(db.conn, [r["thread_id"] for r in rows[:limit]])
    items = [red.value({"session": r["thread_id"], **{k: v for k, v in r.items() if k != "thread_id"}})
             for r in rows[:limit]]  # fmt: skip
    head: dict[str, Any] = {"path": path, "next_cursor": make_cursor("file_sessions", args, 0),
                            "note": "from the file index: paths in tool calls, patches and plain shell commands, relative ones joined to the session's folder; actions read, created, changed, deleted, named"}  # fmt: skip
    page, cut = _page(items, max_tokens, head)
    head["next_cursor"] = make_cursor("file_sessions", args, offset + len(page)) if cut or len(rows) > limit else None
    return {**head, "sessions": page}


def usage_summary(db: Database, *, by: str = "day", since: str | None = None, until: str | None = None,
                  vendor: str | None = None, session: str | None = None, max_tokens: int = 2000,
                  cursor: str | None = None, tz: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Tokens and estimated cost grouped ``by`` day|week|month|model|project|vendor."""
    if by not in USAGE_BY:
        raise QueryError(f"cannot group usage by {by!r}; one of {', '.join(USAGE_BY)}")
    args = {"by": by, "since": since, "until": until, "vendor": vendor, "session": session, "tz": tz}
    offset = read_cursor(cursor, "usage", args)
    report = stats(db, "provider" if by == "vendor" else by, _prices(), since=since, until=until, provider=vendor,
                   tz=tz, thread=resolve_thread(db, session) if session else None)  # fmt: skip
    keep = ("responses", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "total_tokens",
            "cost_usd")  # fmt: skip
    rows = [{by: r["key"], **({"vendor": r["provider"]} if by == "model" else {}), **{k: r[k] for k in keep},
             **({"partial_cost": True} if r["unpriced_models"] else {})} for r in report["rows"]]  # fmt: skip
    if by in ("day", "week", "month"):
        rows.reverse()  # the most recent first: what a page cut keeps
    red: Redactor = redactor_all(db.conn) if by == "project" else Redactor({})
    head: dict[str, Any] = {
        "by": by, "tz": report["tz"], "since": since, "until": until, "session": report["thread"],
        "total": {k: report["total"][k] for k in keep},
        "unpriced_models": report["unpriced_models"],
        "prices": "genai-prices with the bundled table laid over it; input = input not read from or written to the cache",
        "rows_total": len(rows), "next_cursor": make_cursor("usage", args, 0),
    }  # fmt: skip
    page, cut = _page([red.value(r) for r in rows[offset:]], max_tokens, head)
    head["next_cursor"] = make_cursor("usage", args, offset + len(page)) if cut else None
    return {**head, "rows": page}
