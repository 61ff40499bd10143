"""One page of a thread as a conversation: what the conversation page shows.

Invariants:

* **Bounded.** A page holds at most ``PAGE_SIZE`` messages of the thread, read with the
  ``messages_thread_order`` index; block text is cut at ``MAX_BLOCK_CHARS`` in SQL
  (``substr``), so neither time nor memory grows with the thread, only with the page. The
  whole-thread figures (count, times, usage) are single indexed aggregates; the page's
  table of contents lists its own prompts, and a thread longer than a page links to the
  list of all its prompts (``prompts``), a page of its own. Measured on the 1 GB corpus's largest thread: see docs/benchmarks.md.
* **Thread order** is the ``conversation`` view's (source, generation, offset, sub); a fork
  shows the history it inherited first (``thread_view.MessagePages``, the view ``show`` and
  ``emit`` read), as its client sees it.
* **One bubble per response.** Consecutive assistant messages, and the tool results that
  answer them, form one bubble until the next typed user message; injected context is a
  folded bubble of its own; empty text blocks are not shown.
* **Results beside their call.** A tool result whose call is on the same page is shown in
  the call's fold (results on a later page are fetched by ``call_id`` for the page's calls);
  a result whose call is on an earlier page is shown on its own.
* **Every block keeps its anchor** ``b<block id>``; every message ``msg-<id>``.
* Tool calls are rendered by what their input holds (a command, an old/new string pair,
  a patch, a path, a query, a URL), never by vendor: the same shapes recur across vendors.
* Times are shown in UTC, labelled so.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from typing import Any

from markupsafe import Markup, escape
from sqlite_utils import Database

from ..pricing import PriceTable, cost
from ..projection import one_line
from ..thread_view import MessagePages
from .markup import code_html, diff_html, edit_diff, render_markdown

PAGE_SIZE = 250  # messages; measured 0.3-0.6 s a page of the 1 GB corpus's largest thread (markdown-it is most of it)
READ_EXCERPT_LINES = 20
MAX_BLOCK_CHARS = 60_000
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
INLINE_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp", "image/x-icon"}
)


class PageError(ValueError):
    """A page number outside the thread (the route answers 400)."""


def utc(ts: str | None) -> str:
    """``YYYY-MM-DD HH:MM:SS UTC`` (the recorded time converted to UTC), or the text as recorded."""
    if not ts:
        return ""
    try:
        t = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return ts
    if t.tzinfo is None:
        return t.strftime("%Y-%m-%d %H:%M:%S") + " (no zone)"
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def message_anchor(message_id: str) -> str:
    return "msg-" + re.sub(r"\s", "_", message_id)


# what the pages say where the session's files do not hold a fact (a vendor that writes no model
# name, or no time on its messages): said plainly, never left blank
NO_MODEL = "responses whose model the session does not name"
NO_TIME = "not recorded in the session's files"


def thread_cost(rows: list[dict[str, Any]], prices: PriceTable) -> tuple[dict[str, int], float | None, list[str]]:
    """Token buckets, cost (None when nothing could be priced) and unpriced models of usage rows by model."""
    tokens = {f: 0 for f in TOKEN_FIELDS}
    total: float | None = None
    unpriced: list[str] = []
    for r in rows:
        for f in TOKEN_FIELDS:
            tokens[f] += r[f] or 0
        hit = prices.lookup(r["model"])
        if hit is None:
            if any(r[f] for f in TOKEN_FIELDS):
                unpriced.append(r["model"] or NO_MODEL)
            continue
        total = (total or 0.0) + cost(hit[1], *(r[f] or 0 for f in TOKEN_FIELDS))
    tokens["total_tokens"] = sum(tokens[f] for f in TOKEN_FIELDS)
    return tokens, total, unpriced


# ---------------------------------------------------------------- reading

_BLOCK_SQL = f"""SELECT id, message_id, position, type, substr(text, 1, {MAX_BLOCK_CHARS}) AS text,
    length(text) AS text_len, call_id, tool_name, CASE WHEN length(input) <= {MAX_BLOCK_CHARS * 4} THEN input END AS input,
    length(input) AS input_len, substr(output, 1, {MAX_BLOCK_CHARS}) AS output, length(output) AS output_len,
    is_error, path, substr(patch, 1, {MAX_BLOCK_CHARS}) AS patch, length(patch) AS patch_len, media_type, uri,
    CASE WHEN blob_sha256 IS NOT NULL AND EXISTS (SELECT 1 FROM blobs bl WHERE bl.sha256 = blocks.blob_sha256)
        THEN blob_sha256 END AS blob_sha256,  -- a blob named by a line whose bytes never came: no link
    redacted, CASE WHEN length(extra) <= {MAX_BLOCK_CHARS} THEN extra END AS extra
    FROM blocks"""
ORDER = "source_id, generation, offset, sub"


def _rows(cur: sqlite3.Cursor, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    c = cur.execute(sql, params)
    names = [d[0] for d in c.description]
    return [dict(zip(names, r)) for r in c.fetchall()]


def locate(conn: sqlite3.Connection, thread_id: str, *, block: int | None = None, message: str | None = None,
           page_size: int = PAGE_SIZE) -> int | None:  # fmt: skip
    """The page of the thread that holds ``block`` or ``message``, or None when it is not in the thread."""
    if block is not None:
        row = conn.execute("SELECT message_id FROM blocks WHERE id = ?", (block,)).fetchone()
        message = row[0] if row else None
    if message is None:
        return None
    inherited = MessagePages(Database(conn), thread_id).inherited  # a fork's history comes first
    if message in inherited:
        return inherited.index(message) // page_size + 1
    row = conn.execute(
        f"SELECT n FROM (SELECT id, row_number() OVER (ORDER BY {ORDER}) AS n FROM messages WHERE thread_id = ?) "
        "WHERE id = ?",
        (thread_id, message),
    ).fetchone()
    if row is None:
        return None
    before = len(inherited) + row[0] - 1
    return before // page_size + 1


def _page_rows(cur: sqlite3.Cursor, thread_id: str, ids: list[str]) -> list[dict[str, Any]]:
    """The page's messages in thread order; those a fork inherited are marked with the thread they are archived in."""
    rows = {r["id"]: r for r in _rows(
        cur, "SELECT id, role, ts, model, injected, thread_id FROM messages "
        "WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),))}  # fmt: skip
    out = []
    for i in ids:
        if i in rows:
            r = rows[i]
            origin = r.pop("thread_id")
            if origin != thread_id:
                r["inherited_from"] = origin
            out.append(r)
    return out


def prompts(conn: sqlite3.Connection, thread_id: str, page_size: int = PAGE_SIZE) -> list[dict[str, Any]]:
    """Every typed user prompt of the thread, with the page it is on (the table of contents
    of a thread longer than a page; measured 0.5-1 s for the 116k-message thread)."""
    rows = conn.execute(
        f"""WITH o AS (SELECT id, role, injected, ts, row_number() OVER (ORDER BY {ORDER}) AS n
                       FROM messages WHERE thread_id = ?)
            SELECT o.n, o.id, o.ts, (SELECT substr(b.text, 1, 300) FROM blocks b WHERE b.message_id = o.id
                                      AND +b.type = 'text' AND trim(coalesce(b.text, '')) != '' ORDER BY b.position LIMIT 1)
            FROM o WHERE o.role = 'user' AND o.injected = 0 ORDER BY o.n""",
        (thread_id,),
    ).fetchall()
    inherited = MessagePages(Database(conn), thread_id).inherited  # a fork's history comes first
    if inherited:  # a fork: its parent's prompts up to the fork point first
        before = conn.execute(
            "SELECT m.id, m.ts, (SELECT substr(b.text, 1, 300) FROM blocks b WHERE b.message_id = m.id "
            "AND +b.type = 'text' AND trim(coalesce(b.text, '')) != '' ORDER BY b.position LIMIT 1) FROM messages m "
            "WHERE m.id IN (SELECT value FROM json_each(?)) AND m.role = 'user' AND m.injected = 0",
            (json.dumps(inherited),),
        ).fetchall()
        at = {i: n for n, i in enumerate(inherited, 1)}
        rows = sorted((at[mid], mid, ts, text) for mid, ts, text in before) + [
            (n + len(inherited), mid, ts, text) for n, mid, ts, text in rows]  # fmt: skip
    return [{"page": (n - 1) // page_size + 1, "anchor": message_anchor(mid), "ts": utc(ts), "text": one_line(text, 100)}
            for n, mid, ts, text in rows if text]  # fmt: skip


def load_page(conn: sqlite3.Connection, thread_id: str, page: int, prices: PriceTable, labels: dict[str, str],
              page_size: int = PAGE_SIZE) -> dict[str, Any] | None:  # fmt: skip
    """Everything the page shows, or None when there is no such thread. ``labels``: first
    prompts of the thread and its relatives (``queries.first_prompts``), for untitled ones."""
    cur = conn.cursor()
    threads = _rows(cur, "SELECT * FROM threads WHERE id = ?", (thread_id,))
    if not threads:
        return None
    thread = threads[0]
    first_ts, last_ts = cur.execute("SELECT min(ts), max(ts) FROM messages WHERE thread_id = ?", (thread_id,)).fetchone()
    if last_ts is None:  # messages without times (Kimi's context): the responses' times, when they have them
        first_ts, last_ts = cur.execute("SELECT min(ts), max(ts) FROM usage WHERE thread_id = ?", (thread_id,)).fetchone()
    view = MessagePages(Database(conn), thread_id, page_size)  # a fork: its parent's history first
    count = len(view)
    pages = max(1, -(-count // page_size))
    if page < 1 or page > pages:
        raise PageError(f"page {page} is outside this thread (pages 1 to {pages})")
    start = (page - 1) * page_size
    messages = _page_rows(cur, thread_id, view.ids(start, start + page_size))
    ids = json.dumps([m["id"] for m in messages])
    blocks = _rows(cur, f"{_BLOCK_SQL} WHERE message_id IN (SELECT value FROM json_each(?)) ORDER BY message_id, position", (ids,))
    superseded = {r[0] for r in cur.execute(
        "SELECT message_id FROM superseded_messages WHERE message_id IN (SELECT value FROM json_each(?))", (ids,))}  # fmt: skip
    on_page = {m["id"] for m in messages}
    call_ids = [b["call_id"] for b in blocks if b["type"] == "tool_call" and b["call_id"]]
    later: list[dict[str, Any]] = []
    if call_ids:
        later = [b for b in _rows(
            cur,
            # this join order: the page's call ids, then the (call_id, type) index, then the
            # message; any other order walks the whole thread (0.7 s at 116k messages)
            f"{_BLOCK_SQL} WHERE id IN (SELECT b.id FROM json_each(?) j CROSS JOIN blocks b "
            "ON b.call_id = j.value AND b.type = 'tool_result' CROSS JOIN messages m ON m.id = b.message_id "
            "WHERE m.thread_id = ?)",
            (json.dumps(call_ids), thread_id),
        ) if b["message_id"] not in on_page]  # fmt: skip
    usage = _rows(cur, "SELECT model, " + ", ".join(f"sum({f}) AS {f}" for f in TOKEN_FIELDS)
                  + ", sum(responses) AS responses FROM usage_totals WHERE thread_id = ? GROUP BY model", (thread_id,))  # fmt: skip
    tokens, total_cost, unpriced = thread_cost(usage, prices)
    relatives = _rows(cur, "SELECT id, title, agent_id, origin_message_id, created_at, metadata, parent_thread_id "
                      "FROM threads WHERE parent_thread_id = ? OR id = ? ORDER BY created_at, id",
                      (thread_id, thread["parent_thread_id"] or ""))  # fmt: skip
    by_msg: dict[str, list[dict[str, Any]]] = {}
    for b in blocks:
        by_msg.setdefault(b["message_id"], []).append(b)
    toc = []
    for m in messages:
        text = next((b["text"] for b in by_msg.get(m["id"], []) if b["type"] == "text" and (b["text"] or "").strip()), None)
        if m["role"] == "user" and not m["injected"] and text:
            toc.append({"page": page, "anchor": message_anchor(m["id"]), "ts": utc(m["ts"]), "text": one_line(text, 100)})
    return {
        "thread": thread,
        "label": thread["title"] or labels.get(thread_id) or f"Thread {thread_id}",
        "messages": [{**m, "blocks": by_msg.get(m["id"], []), "superseded": m["id"] in superseded} for m in messages],
        "later_results": later,
        "count": count, "page": page, "pages": pages, "page_size": page_size,
        "first_ts": first_ts, "last_ts": last_ts, "no_time": NO_TIME,
        "tokens": tokens, "cost": total_cost, "unpriced": unpriced,
        "responses": sum(u["responses"] or 0 for u in usage),
        "models": [u["model"] for u in usage if u["model"]],
        "relatives": [{**r, "label": r["title"] or labels.get(r["id"])
                       or (f"agent {r['agent_id']}" if r["agent_id"] else r["id"])} for r in relatives],
        "toc": toc,
    }  # fmt: skip


# ---------------------------------------------------------------- tool calls by kind


def _parse_input(text: str | None) -> Any:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if isinstance(value, str):  # some inputs are a JSON string holding JSON
        try:
            value = json.loads(value)
        except ValueError:
            pass
    return value


def _command(v: Any) -> str | None:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        # ["bash", "-lc", "script"]: the script is what was run
        if len(v) == 3 and v[1] in ("-c", "-lc") and v[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh"):
            return v[2]
        return " ".join(v)
    return v if isinstance(v, str) else None


def _str(d: dict[str, Any], *keys: str) -> str | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, str) and v.strip():
            return v
    return None


def fields_html(value: dict[str, Any]) -> Markup:
    """A tool input as its fields: text with its real line breaks (never JSON's escaped
    ``\\n``), anything else as indented JSON."""
    rows = []
    for k, v in value.items():
        if isinstance(v, str):
            body = code_html(v) if "\n" in v or len(v) > 100 else Markup(f"<code>{escape(v)}</code>")
        else:
            body = code_html(json.dumps(v, indent=2, ensure_ascii=False), "json")
        rows.append(Markup(f"<dt>{escape(k)}</dt><dd>") + body + Markup("</dd>"))
    return Markup('<dl class="sesh-fields">') + Markup("").join(rows) + Markup("</dl>")


def call_view(name: str, input_text: str | None, input_len: int | None) -> dict[str, Any]:
    """``kind`` (shell, edit, patch, write, read, search, fetch, task, other), a one-line
    ``summary`` and the ``body`` HTML of a tool call."""
    value = _parse_input(input_text)
    if input_text is None and input_len:
        return {"kind": "other", "summary": f"(input of {input_len:,} characters; see the blocks table)", "body": Markup("")}
    if isinstance(value, str):
        if "*** Begin Patch" in value:
            paths = re.findall(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", value, re.M)
            return {"kind": "patch", "summary": ", ".join(paths) or "patch", "body": diff_html(value)}
        return {"kind": "other", "summary": one_line(value, 140), "body": code_html(value)}
    if not isinstance(value, dict):
        text = json.dumps(value, indent=2, ensure_ascii=False)
        return {"kind": "other", "summary": one_line(text, 140), "body": code_html(text, "json")}
    path = _str(value, "file_path", "path", "notebook_path", "filename")
    cmd = _command(value.get("command", value.get("cmd")))
    if cmd:
        where = _str(value, "workdir", "cwd")
        body = code_html(cmd, "bash")
        if where:
            body = Markup(f'<p class="sesh-where">in <code>{escape(where)}</code></p>') + body
        return {"kind": "shell", "summary": one_line(cmd, 140), "body": body}
    if isinstance(value.get("old_string"), str) and isinstance(value.get("new_string"), str):
        return {"kind": "edit", "summary": path or "edit",
                "body": diff_html(edit_diff(value["old_string"], value["new_string"], path or ""))}  # fmt: skip
    edits = value.get("edits")
    if isinstance(edits, list) and edits and all(isinstance(e, dict) for e in edits):
        diff = "\n".join(edit_diff(str(e.get("old_string", "")), str(e.get("new_string", "")), path or "") for e in edits)
        return {"kind": "edit", "summary": f"{path or 'edit'} ({len(edits)} edits)", "body": diff_html(diff)}
    if isinstance(value.get("content"), str) and path:
        return {"kind": "write", "summary": path, "body": diff_html(edit_diff("", value["content"], path))}
    for key, kind in (("query", "search"), ("url", "fetch"), ("pattern", "search")):
        if isinstance(value.get(key), str):
            rest = {k: v for k, v in value.items() if k != key}
            body = fields_html(rest) if rest else Markup("")
            return {"kind": kind, "summary": value[key] + (f"  in {path}" if path else ""), "body": body}
    if path:
        rest = {k: v for k, v in value.items() if k not in ("file_path", "path", "notebook_path")}
        extra = " ".join(f"{k}={v}" for k, v in rest.items() if isinstance(v, (int, str)))
        return {"kind": "read", "summary": path + (f"  ({extra})" if extra else ""), "body": Markup("")}
    summary = _str(value, "description", "prompt", "subagent_type") or one_line(json.dumps(value, ensure_ascii=False), 140)
    kind = "task" if "prompt" in value or "subagent_type" in value else "other"
    return {"kind": kind, "summary": one_line(summary, 140), "body": fields_html(value)}


def result_text(b: dict[str, Any]) -> str:
    out = b["output"]
    if out is None:
        return b["text"] or ""
    value = _parse_input(out)
    if isinstance(value, list) and all(isinstance(p, dict) for p in value):
        parts = [p["text"] if isinstance(p.get("text"), str) else f"[{p.get('type', 'part')}]" for p in value]
        return "\n".join(parts)
    if isinstance(value, dict) and isinstance(value.get("output"), str):
        return value["output"]
    return value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)


def _cut_note(b: dict[str, Any], *lens: str) -> Markup:
    if any((b.get(k) or 0) > MAX_BLOCK_CHARS for k in lens):
        return Markup('<p class="sesh-cut">(cut here; the whole block is in the blocks table)</p>')
    return Markup("")


def _result_html(b: dict[str, Any], kind: str) -> Markup:
    text = result_text(b)
    err = b["is_error"] == 1
    lines = text.count("\n") + 1 if text else 0
    badge = '<span class="sesh-badge sesh-badge-error">error</span> ' if err else ""
    count = f" · {lines:,} lines" if lines > 1 else ""
    head = f'<div class="sesh-result-head">{badge}result{count}</div>'
    if kind == "patch" and text.lstrip().startswith(("---", "diff ", "@@")):
        body = diff_html(text)
    elif kind == "read" and lines > READ_EXCERPT_LINES:  # a read shows an excerpt; the rest one click away
        head_text, rest = text.split("\n", READ_EXCERPT_LINES)[:READ_EXCERPT_LINES], text.split("\n", READ_EXCERPT_LINES)[-1]
        body = code_html("\n".join(head_text)) + Markup(
            f'<details class="sesh-fold sesh-more"><summary>{lines - READ_EXCERPT_LINES:,} more lines</summary>'
        ) + code_html(rest) + Markup("</details>")  # fmt: skip
    else:
        body = code_html(text)
    return Markup(f'<div class="sesh-result{" sesh-error" if err else ""}" id="b{b["id"]}">{head}') + body + _cut_note(
        b, "text_len", "output_len") + Markup("</div>")  # fmt: skip


def _fold(cls: str, anchor: str, summary: Markup, body: Markup) -> Markup:
    return Markup(f'<details class="sesh-block {cls} sesh-fold" id="{anchor}"><summary>') + summary + Markup(
        "</summary>") + body + Markup("</details>")  # fmt: skip


def call_html(b: dict[str, Any], result: dict[str, Any] | None) -> Markup:
    v = call_view(b["tool_name"] or "?", b["input"], b["input_len"])
    status = ""
    if result is None:
        status = '<span class="sesh-badge">no result on this page</span>'
    elif result["is_error"] == 1:
        status = '<span class="sesh-badge sesh-badge-error">error</span>'
    summary = Markup(f'<span class="sesh-kind sesh-kind-{v["kind"]}">{escape(v["kind"])}</span> '
                     f'<span class="sesh-tool-name">{escape(b["tool_name"] or "?")}</span> '
                     f'<span class="sesh-summary">{escape(one_line(v["summary"], 140))}</span> {status}')  # fmt: skip
    body = Markup('<div class="sesh-call">') + v["body"] + Markup("</div>")
    if result is not None:
        body += _result_html(result, v["kind"])
    return _fold(f"sesh-tool sesh-tool-{v['kind']}", f"b{b['id']}", summary, body)


def block_html(b: dict[str, Any], results: dict[str, dict[str, Any]], blob_url: Any) -> Markup | None:
    """One block as HTML; ``results`` maps call ids to the result shown with the call
    (those results return None here, having been shown already)."""
    t = b["type"]
    anchor = f"b{b['id']}"
    if t == "text":
        if not (b["text"] or "").strip():
            return None
        return Markup(f'<div class="sesh-block sesh-text" id="{anchor}">') + render_markdown(b["text"]) + _cut_note(
            b, "text_len") + Markup("</div>")  # fmt: skip
    if t == "reasoning":
        body = render_markdown(b["text"] or "") if (b["text"] or "").strip() else Markup("<p>(redacted)</p>")
        return _fold("sesh-reasoning", anchor, Markup("Thinking" + (" (redacted)" if b["redacted"] else "")), body)
    if t == "tool_call":
        return call_html(b, results.get(b["call_id"] or ""))
    if t == "tool_result":
        if b.get("_shown"):
            return None
        v = _result_html(b, "other")
        return _fold("sesh-tool sesh-orphan", f"r{b['id']}", Markup('<span class="sesh-kind">result</span> '
                     f'<span class="sesh-summary">{escape(one_line(result_text(b), 140))}</span>'), v)  # fmt: skip
    if t == "file_change":
        extra = _parse_input(b["extra"]) or {}
        kind = (extra.get("kind") or extra.get("op") or "changed") if isinstance(extra, dict) else "changed"
        return _fold("sesh-change", anchor, Markup(f'<span class="sesh-kind sesh-kind-edit">{escape(kind)}</span> '
                     f"<code>{escape(b['path'] or '')}</code>"), diff_html(b["patch"] or "") + _cut_note(b, "patch_len"))  # fmt: skip
    if t == "web_search":
        return Markup(f'<div class="sesh-block sesh-websearch" id="{anchor}"><span class="sesh-kind sesh-kind-search">'
                      f"web search</span> <q>{escape(b['text'] or '')}</q></div>")  # fmt: skip
    if t == "attachment":
        sha, media = b["blob_sha256"], (b["media_type"] or "")
        if sha and media.lower() in INLINE_MEDIA_TYPES:
            src = escape(blob_url(sha))
            inner = f'<a href="{src}"><img src="{src}" alt="attachment {escape(media)}" loading="lazy"></a>'
        elif sha:
            inner = f'<a href="{escape(blob_url(sha))}">attachment ({escape(media or "bytes")})</a>'
        else:
            inner = f"attachment {escape(media)} " + (f"<code>{escape(b['uri'])}</code>" if b["uri"] else "(no bytes stored)")
        return Markup(f'<div class="sesh-block sesh-attachment" id="{anchor}">{inner}</div>')
    extra = _parse_input(b["extra"]) or {}
    raw = extra.get("raw", extra) if isinstance(extra, dict) else extra
    return _fold("sesh-unknown", anchor, Markup(f"{escape(t)}: {escape(b['text'] or t)}"),
                 code_html(json.dumps(raw, indent=2, ensure_ascii=False), "json"))  # fmt: skip


# ---------------------------------------------------------------- bubbles


def _only_results(m: dict[str, Any]) -> bool:
    # a user line that carries only what tools gave back (results, the file changes they made)
    return bool(m["blocks"]) and all(b["type"] in ("tool_result", "file_change") for b in m["blocks"])


def bubbles(page: dict[str, Any], blob_url: Any) -> list[dict[str, Any]]:
    """The page's messages grouped into bubbles, each with its blocks' HTML."""
    results: dict[str, dict[str, Any]] = {}
    calls = {b["call_id"] for m in page["messages"] for b in m["blocks"] if b["type"] == "tool_call" and b["call_id"]}
    for b in [*page["later_results"], *(b for m in page["messages"] for b in m["blocks"])]:
        if b["type"] == "tool_result" and b["call_id"] in calls and b["call_id"] not in results:
            results[b["call_id"]] = b
            b["_shown"] = True
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for m in page["messages"]:
        role = m["role"]
        answer = role == "tool" or (role == "user" and _only_results(m))
        if m["injected"]:
            kind = "injected"
        elif role == "assistant" or (answer and current is not None and current["kind"] == "assistant"):
            kind = "assistant"
        elif answer:
            kind = "tool"
        else:
            kind = role
        if (current is None or kind != current["kind"] or kind not in ("assistant", "tool")
                or current["inherited_from"] != m.get("inherited_from")):  # fmt: skip
            current = {"kind": kind, "role": role, "anchors": [], "items": [], "models": [], "first_ts": m["ts"],
                       "last_ts": m["ts"], "superseded": False, "inherited_from": m.get("inherited_from")}  # fmt: skip
            out.append(current)
        current["anchors"].append(message_anchor(m["id"]))
        current["last_ts"] = m["ts"] or current["last_ts"]
        current["superseded"] = current["superseded"] or m["superseded"]
        if m["model"] and m["model"] not in current["models"]:
            current["models"].append(m["model"])
        for b in m["blocks"]:
            html = block_html(b, results, blob_url)
            if html is not None:
                current["items"].append(html)
    for bub in out:
        bub["anchor"] = bub["anchors"][0]
        bub["extra_anchors"] = bub["anchors"][1:]
        bub["first"], bub["last"] = utc(bub["first_ts"]), utc(bub["last_ts"])
    return [b for b in out if b["items"] or b["kind"] == "user"]
