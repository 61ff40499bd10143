"""The sesh-archive Datasette plugin: a conversation page, a search page, blob bytes, links.

Routes (under Datasette's ``base_url``):

* ``/-/sesh/thread/<thread id>``: one thread as a chat. Every block has the anchor
  ``#b<block id>`` (what search hits link to), every message ``#msg-<message id>``; tool
  calls, results, reasoning and injected context are folded in ``<details>``; images come
  from ``/-/sesh/blob/<sha256>``; the parent thread and child threads are linked.
* ``/-/sesh/search?q=``: full-text search over blocks with highlighted snippets.
* ``/-/sesh/blob/<sha256>``: the bytes of one blob.
* ``/-/sesh/static/<file>``: the plugin's CSS.

Invariants:

* Read-only: the plugin only runs SELECTs (through ``Database.execute``/``execute_fn``,
  whose connections Datasette opens with ``mode=ro``); it never asks for a write connection.
* Nothing from the archive reaches a page unescaped. Markdown is rendered by a small
  renderer here that escapes all text first and only ever adds its own tags; links are
  kept only for http(s) and mailto URLs. Blobs are served with ``nosniff`` and a sandboxing
  CSP; only raster image types are served inline, everything else as a download.
* The plugin acts only on the archive database: the one named in the ``sesh-archive``
  plugin configuration (``serve.make_datasette`` writes it), else a database called
  ``archive``. Other databases in the same Datasette are left alone.
* Registered explicitly by ``serve.make_datasette`` and also through the ``datasette``
  entry point, so ``datasette archive.db`` on an installed package works too.
"""

from __future__ import annotations

import json
import re
import sqlite3
from importlib import resources
from typing import Any
from urllib.parse import quote, unquote, urlencode

from datasette import Response, hookimpl
from datasette.utils import escape_fts
from markupsafe import Markup, escape

from .projection import one_line

PLUGIN_NAME = "sesh-archive"
PREFIX = "/-/sesh"
# Markers of a match in snippets: visible in the canned query's JSON/CSV, turned into
# <mark> in HTML. Chosen because they almost never occur in session text.
MARK_OPEN, MARK_CLOSE = "\u27e6", "\u27e7"
# Raster types a browser cannot be tricked into running script from.
INLINE_MEDIA_TYPES = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "image/avif", "image/bmp", "image/x-icon"}
)
MAX_BLOCK_CHARS = 100_000  # beyond this a block is cut on the page; the full text stays in the table
SEARCH_PAGE_SIZE = 50


def archive_database(datasette: Any) -> str | None:
    """Name of the archive database in this Datasette, or None when there is none."""
    config = datasette.plugin_config(PLUGIN_NAME) or {}
    name = config.get("database") or "archive"
    return name if name in datasette.databases else None


def thread_path(datasette: Any, thread_id: str, block_id: int | None = None) -> str:
    path = datasette.urls.path(f"{PREFIX}/thread/{quote(thread_id, safe='/')}")
    return f"{path}#b{block_id}" if block_id is not None else path


def message_anchor(message_id: str) -> str:
    # HTML ids may hold anything but whitespace; message ids almost never do.
    return "msg-" + re.sub(r"\s", "_", message_id)


def highlight(snippet: str) -> Markup:
    return Markup(str(escape(snippet)).replace(MARK_OPEN, "<mark>").replace(MARK_CLOSE, "</mark>"))


# ---------------------------------------------------------------- Markdown, safely

_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d{1,9}[.)])\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*)$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
# Works on already escaped text: a quote in a URL is &#34; by now, so it cannot end the attribute.
_LINK = re.compile(r"\[([^\]\n]+)\]\(((?:https?://|mailto:)[^\s)]+)\)|(https?://[^\s<]*[^\s<.,;:!?)\]&])")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")


def _link(m: re.Match[str]) -> str:
    if m.group(3):
        url = m.group(3)
        return f'<a href="{url}" rel="noopener noreferrer nofollow">{url}</a>'
    return f'<a href="{m.group(2)}" rel="noopener noreferrer nofollow">{m.group(1)}</a>'


def _inline(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _CODE_SPAN.finditer(text):
        out.append(_inline_plain(text[pos : m.start()]))
        out.append(f"<code>{escape(m.group(2))}</code>")
        pos = m.end()
    out.append(_inline_plain(text[pos:]))
    return "".join(out)


def _inline_plain(text: str) -> str:
    s = str(escape(text))
    s = _LINK.sub(_link, s)
    s = _BOLD.sub(r"<strong>\1</strong>", s)
    return _ITALIC.sub(r"<em>\1</em>", s)


def _table(lines: list[str]) -> str:
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    head = "".join(f"<th>{_inline(c)}</th>" for c in cells(lines[0]))
    body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells(line)) + "</tr>" for line in lines[2:])
    return f"<table class='sesh-md-table'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _chunk(chunk: str) -> str:
    lines = chunk.split("\n")
    first = lines[0]
    h = _HEADING.match(first)
    if h:
        level = min(len(h.group(1)) + 2, 6)  # the page's own headings come first
        rest = "\n".join(lines[1:]).strip()
        return f"<h{level}>{_inline(h.group(2))}</h{level}>" + (_chunk(rest) if rest else "")
    if len(lines) >= 2 and "|" in first and _TABLE_SEP.match(lines[1]):
        return _table(lines)
    if all(line.lstrip().startswith(">") for line in lines):
        inner = "\n".join(line.lstrip()[1:].removeprefix(" ") for line in lines)
        return f"<blockquote>{_blocks(inner)}</blockquote>"
    item = _LIST_ITEM.match(first)
    if item:
        tag = "ol" if item.group(1)[0].isdigit() else "ul"
        items: list[list[str]] = []
        for line in lines:
            m = _LIST_ITEM.match(line)
            if m:
                items.append([m.group(2)])
            else:
                items[-1].append(line.strip())
        body = "".join("<li>" + "<br>".join(_inline(x) for x in it) + "</li>" for it in items)
        return f"<{tag}>{body}</{tag}>"
    return "<p>" + "<br>".join(_inline(line) for line in lines) + "</p>"


def _blocks(text: str) -> str:
    return "".join(_chunk(c.strip("\n")) for c in re.split(r"\n[ \t]*\n", text) if c.strip())


def render_markdown(text: str) -> Markup:
    """A safe subset of Markdown: fences, code spans, headings, lists, quotes, tables, links, emphasis."""
    out: list[str] = []
    pos = 0
    for m in _FENCE.finditer(text):
        out.append(_blocks(text[pos : m.start()]))
        out.append(f"<pre><code>{escape(m.group(2))}</code></pre>")
        pos = m.end()
    out.append(_blocks(text[pos:]))
    return Markup("".join(out))


# ---------------------------------------------------------------- thread page data


def _cut(text: str | None) -> tuple[str, bool]:
    if text is None:
        return "", False
    return (text[:MAX_BLOCK_CHARS], True) if len(text) > MAX_BLOCK_CHARS else (text, False)


def _pretty_json(text: str | None) -> str:
    if text is None:
        return ""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


_SUMMARY_KEYS = ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description", "prompt")


def _call_summary(input_json: str | None) -> str:
    """One line saying what a tool call did: its command, path or query when it has one."""
    try:
        value = json.loads(input_json) if input_json else None
    except ValueError:
        value = input_json
    if isinstance(value, str):  # Codex keeps some inputs as a JSON string of JSON
        try:
            value = json.loads(value)
        except ValueError:
            pass
    if isinstance(value, dict):
        for key in _SUMMARY_KEYS:
            v = value.get(key)
            if isinstance(v, list):
                v = " ".join(str(x) for x in v)
            if isinstance(v, str) and v.strip():
                return one_line(v, 140)
    return one_line(input_json, 140)


def _block_view(datasette: Any, b: sqlite3.Row, tools: dict[str, str]) -> dict[str, Any]:
    t = b["type"]
    view: dict[str, Any] = {"id": b["id"], "type": t, "anchor": f"b{b['id']}"}
    if t in ("text", "reasoning"):
        text, cut = _cut(b["text"])
        view.update(html=render_markdown(text), cut=cut, redacted=bool(b["redacted"]))
    elif t == "tool_call":
        if b["call_id"]:
            tools[b["call_id"]] = b["tool_name"] or ""
        view.update(name=b["tool_name"] or "?", summary=_call_summary(b["input"]), body=_pretty_json(b["input"]))
    elif t == "tool_result":
        raw = b["text"] if b["output"] is None else _pretty_json(b["output"])
        body, cut = _cut(raw)
        view.update(name=tools.get(b["call_id"] or "", ""), error=b["is_error"] == 1,
                    summary=one_line(body, 140), body=body, cut=cut)  # fmt: skip
    elif t == "file_change":
        extra = json.loads(b["extra"]) if b["extra"] else {}
        body, cut = _cut(b["patch"])
        view.update(path=b["path"] or "", kind=extra.get("kind") or extra.get("op") or "", body=body, cut=cut)
    elif t == "web_search":
        view.update(query=b["text"] or "")
    elif t == "attachment":
        sha = b["blob_sha256"]
        media = b["media_type"] or ""
        view.update(media_type=media, uri=b["uri"] or "",
                    src=datasette.urls.path(f"{PREFIX}/blob/{sha}") if sha else None,
                    image=media.lower() in INLINE_MEDIA_TYPES)  # fmt: skip
    else:
        extra = json.loads(b["extra"]) if b["extra"] else {}
        view.update(source_type=b["text"] or t, body=json.dumps(extra.get("raw", extra), indent=2, ensure_ascii=False))
    return view


def load_thread(conn: sqlite3.Connection, thread_id: str) -> dict[str, Any] | None:
    """Everything the conversation page shows, in thread order (the ``conversation`` view's order)."""
    cur = conn.cursor()
    cur.row_factory = sqlite3.Row
    thread = cur.execute("SELECT * FROM threads WHERE id = ?", (thread_id,)).fetchone()
    if thread is None:
        return None
    rows = cur.execute(
        """SELECT m.id AS m_id, m.role, m.ts, m.model AS m_model, m.injected, b.*
           FROM messages m LEFT JOIN blocks b ON b.message_id = m.id
           WHERE m.thread_id = ?
           ORDER BY m.source_id, m.generation, m.offset, m.sub, b.position""",
        (thread_id,),
    ).fetchall()
    superseded = {r[0] for r in cur.execute("SELECT message_id FROM superseded_messages WHERE thread_id = ?", (thread_id,))}
    children = cur.execute(
        "SELECT id, title, agent_id, origin_message_id, created_at FROM threads WHERE parent_thread_id = ? ORDER BY created_at, id",
        (thread_id,),
    ).fetchall()
    parent = None
    if thread["parent_thread_id"]:
        parent = cur.execute("SELECT id, title FROM threads WHERE id = ?", (thread["parent_thread_id"],)).fetchone()
    usage = cur.execute("SELECT * FROM thread_usage WHERE thread_id = ?", (thread_id,)).fetchone()
    return {"thread": thread, "rows": rows, "superseded": superseded, "children": children,
            "parent": parent, "usage": usage}  # fmt: skip


def build_messages(datasette: Any, data: dict[str, Any]) -> list[dict[str, Any]]:
    children_at: dict[str, list[sqlite3.Row]] = {}
    for c in data["children"]:
        children_at.setdefault(c["origin_message_id"] or "", []).append(c)
    tools: dict[str, str] = {}
    messages: list[dict[str, Any]] = []
    for r in data["rows"]:
        if not messages or messages[-1]["id"] != r["m_id"]:
            messages.append({"id": r["m_id"], "anchor": message_anchor(r["m_id"]), "role": r["role"], "ts": r["ts"],
                             "model": r["m_model"], "injected": bool(r["injected"]),
                             "superseded": r["m_id"] in data["superseded"], "blocks": [],
                             "children": [_child(datasette, c) for c in children_at.pop(r["m_id"], [])]})  # fmt: skip
        if r["id"] is not None:
            messages[-1]["blocks"].append(_block_view(datasette, r, tools))
    return messages


def _child(datasette: Any, c: sqlite3.Row) -> dict[str, Any]:
    label = c["title"] or (f"agent {c['agent_id']}" if c["agent_id"] else c["id"])
    return {"id": c["id"], "label": label, "href": thread_path(datasette, c["id"]), "created_at": c["created_at"]}


# ---------------------------------------------------------------- routes


def _template(datasette: Any, name: str) -> Any:
    # Loaded from the package through Datasette's own Jinja environment, so the pages extend
    # Datasette's base.html and work whether or not Datasette was given a template_dir.
    text = resources.files("archive.data").joinpath("templates", name).read_text("utf-8")
    return datasette.jinja_env.from_string(text)


async def _check(datasette: Any, request: Any, db_name: str) -> None:
    await datasette.ensure_permissions(request.actor, [("view-database", db_name), "view-instance"])


def _no_archive() -> Response:
    return Response.text("no sesh-archive database in this Datasette", status=404)


async def thread_page(datasette: Any, request: Any) -> Response:
    db_name = archive_database(datasette)
    if db_name is None:
        return _no_archive()
    await _check(datasette, request, db_name)
    thread_id = unquote(request.url_vars["thread_id"])
    db = datasette.get_database(db_name)
    data = await db.execute_fn(lambda conn: load_thread(conn, thread_id))
    if data is None:
        return Response.html(f"<h1>No thread {escape(thread_id)}</h1>", status=404)
    thread = data["thread"]
    context = {
        "thread": dict(thread),
        "title": thread["title"] or f"Thread {thread['id']}",
        "messages": build_messages(datasette, data),
        "all_children": [_child(datasette, c) for c in data["children"]],
        "parent": ({"href": thread_path(datasette, data["parent"]["id"]), "label": data["parent"]["title"] or data["parent"]["id"]}
                   if data["parent"] else None),  # fmt: skip
        "parent_origin": (thread_path(datasette, thread["parent_thread_id"]) + "#" + message_anchor(thread["origin_message_id"])
                          if thread["parent_thread_id"] and thread["origin_message_id"] else None),  # fmt: skip
        "usage": dict(data["usage"]) if data["usage"] else None,
        "row_url": datasette.urls.row(db_name, "threads", quote(thread["id"], safe="")),
        "transcript_url": datasette.urls.database(db_name) + "/thread_transcript?" + urlencode({"thread_id": thread["id"]}),
        "css_url": datasette.urls.path(f"{PREFIX}/static/sesh.css"),
        "search_url": datasette.urls.path(f"{PREFIX}/search"),
    }
    return Response.html(await datasette.render_template(_template(datasette, "sesh_thread.html"), context, request=request))


SEARCH_SQL = """
SELECT b.id AS block_id, b.type, b.tool_name, m.thread_id, m.role, m.ts, t.title, t.provider, t.cwd,
       snippet(blocks_fts, 0, :open, :close, '\u2026', 24) AS snippet
FROM blocks_fts
JOIN blocks b ON b.id = blocks_fts.rowid
JOIN messages m ON m.id = b.message_id
LEFT JOIN threads t ON t.id = m.thread_id
WHERE blocks_fts MATCH :match
ORDER BY rank
LIMIT :limit OFFSET :offset
"""


async def search_blocks(db: Any, q: str, offset: int = 0, limit: int = SEARCH_PAGE_SIZE) -> tuple[list[Any], str | None]:
    """Search hits for ``q``: FTS5 syntax when it parses (phrases, prefix*, OR), else the words as written."""
    params = {"open": MARK_OPEN, "close": MARK_CLOSE, "limit": limit, "offset": offset}
    error = None
    for match in dict.fromkeys((q, escape_fts(q))):
        try:
            return list((await db.execute(SEARCH_SQL, {**params, "match": match})).rows), None
        except sqlite3.OperationalError as e:  # FTS5 syntax error: retry with the words quoted
            error = str(e)
    return [], error


async def search_page(datasette: Any, request: Any) -> Response:
    db_name = archive_database(datasette)
    if db_name is None:
        return _no_archive()
    await _check(datasette, request, db_name)
    q = (request.args.get("q") or "").strip()
    try:
        offset = max(0, int(request.args.get("offset") or 0))
    except ValueError:
        offset = 0
    hits: list[dict[str, Any]] = []
    error = None
    if q:
        rows, error = await search_blocks(datasette.get_database(db_name), q, offset, SEARCH_PAGE_SIZE + 1)
        for r in rows:
            hits.append({**dict(r), "href": thread_path(datasette, r["thread_id"], r["block_id"]),
                         "thread_href": thread_path(datasette, r["thread_id"]),
                         "snippet_html": highlight(r["snippet"] or "")})  # fmt: skip
    more = len(hits) > SEARCH_PAGE_SIZE
    context = {
        "q": q,
        "hits": hits[:SEARCH_PAGE_SIZE],
        "error": error,
        "offset": offset,
        "next_url": (datasette.urls.path(f"{PREFIX}/search") + "?" + urlencode({"q": q, "offset": offset + SEARCH_PAGE_SIZE}))
                    if more else None,  # fmt: skip
        "css_url": datasette.urls.path(f"{PREFIX}/static/sesh.css"),
        "canned_url": datasette.urls.database(db_name) + "/search?" + urlencode({"q": q}),
    }
    return Response.html(await datasette.render_template(_template(datasette, "sesh_search.html"), context, request=request))


async def blob(datasette: Any, request: Any) -> Response:
    db_name = archive_database(datasette)
    if db_name is None:
        return _no_archive()
    await _check(datasette, request, db_name)
    sha = request.url_vars["sha256"]
    rows = (await datasette.get_database(db_name).execute("SELECT media_type, data FROM blobs WHERE sha256 = ?", [sha])).rows
    if not rows:
        return Response.text("no such blob", status=404)
    media, data = rows[0]["media_type"] or "", rows[0]["data"]
    headers = {
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'; sandbox",
        "Cache-Control": "private, max-age=31536000, immutable",  # content-addressed
    }
    if media.lower() not in INLINE_MEDIA_TYPES:
        headers["Content-Disposition"] = f'attachment; filename="{sha[:16]}"'
        media = "application/octet-stream"
    return Response(data, content_type=media, headers=headers)


async def static(request: Any) -> Response:
    name = request.url_vars["name"]
    try:
        body = resources.files("archive.data").joinpath("static", name).read_text("utf-8")
    except (FileNotFoundError, IsADirectoryError):
        return Response.text("not found", status=404)
    return Response(body, content_type="text/css; charset=utf-8", headers={"Cache-Control": "max-age=3600"})


@hookimpl
def register_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [
        (rf"^{PREFIX}/thread/(?P<thread_id>.+)$", thread_page),
        (rf"^{PREFIX}/search$", search_page),
        (rf"^{PREFIX}/blob/(?P<sha256>[0-9a-f]{{64}})$", blob),
        (rf"^{PREFIX}/static/(?P<name>[a-z0-9_-]+\.css)$", static),
    ]


# ---------------------------------------------------------------- links in tables and queries

_THREAD_COLUMNS = frozenset({"thread_id", "parent_thread_id"})
_THREAD_TABLES = frozenset({"threads", "thread_summary"})
_BLOCK_COLUMNS = frozenset({"block_id", "result_block_id"})


def _row_get(row: Any, key: str) -> Any:
    try:
        return row[key]
    except (IndexError, KeyError):
        return None


@hookimpl
def render_cell(row: Any, value: Any, column: str, table: str | None, database: str, datasette: Any) -> Markup | None:
    if not isinstance(value, (str, int)) or isinstance(value, bool) or database != archive_database(datasette):
        return None
    if column == "snippet" and isinstance(value, str) and MARK_OPEN in value:
        return highlight(value)
    if isinstance(value, str) and (column in _THREAD_COLUMNS or (column == "id" and table in _THREAD_TABLES)):
        return Markup(f'<a href="{escape(thread_path(datasette, value))}" title="conversation">{escape(value)}</a>')
    if column == "title" and table in _THREAD_TABLES and isinstance(value, str):
        thread_id = _row_get(row, "id")
        if isinstance(thread_id, str):
            return Markup(f'<a href="{escape(thread_path(datasette, thread_id))}">{escape(value)}</a>')
    if column in _BLOCK_COLUMNS and isinstance(value, int):
        thread_id = _row_get(row, "thread_id")
        if isinstance(thread_id, str):
            return Markup(f'<a href="{escape(thread_path(datasette, thread_id, value))}">{value}</a>')
    if column == "blob_sha256" and isinstance(value, str) and re.fullmatch(r"[0-9a-f]{64}", value):
        return Markup(f'<a href="{escape(datasette.urls.path(f"{PREFIX}/blob/{value}"))}">{value}</a>')
    return None


@hookimpl
def menu_links(datasette: Any) -> list[dict[str, str]] | None:
    if archive_database(datasette) is None:
        return None
    return [{"href": datasette.urls.path(f"{PREFIX}/search"), "label": "Search sessions"}]
