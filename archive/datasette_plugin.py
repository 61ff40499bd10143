"""The sesh-archive Datasette plugin: sessions, conversations, search, usage, blobs, links.

Routes (under Datasette's ``base_url``):

* ``/`` and ``/-/sesh/sessions``: the sessions (top-level threads) with filters and sorts,
  child threads folded under their parent (``archive.web.sessions``).
* ``/-/sesh/thread/<thread id>?page=N``: one thread as a conversation, a page at a time
  (``archive.web.conversation``). Every block has the anchor ``#b<block id>`` (what search
  hits link to), every message ``#msg-<message id>``; ``?block=ID`` / ``?message=ID`` open
  the page holding it. The raw tables stay one click away (``/<database>``).
* ``/-/sesh/prompts?thread=<id>``: every typed prompt of a thread, linked to its page.
* ``/-/sesh/search``: full-text search with filters, sorts and a total (``archive.web.search``).
* ``/-/sesh/usage``: the usage dashboard, charts as server-side SVG (``archive.web.usage``).
* ``/-/sesh/export?thread=<id>&format=html|md``: the thread as one standalone file, a
  download (``archive.export``; the page's "Export" links, ``archive.web.take``).
* ``/-/sesh/blob/<sha256>``: the bytes of one blob; ``/-/sesh/static/<file>``: CSS and JS.

Invariants:

* Read-only: the plugin only runs SELECTs (through ``Database.execute``/``execute_fn``,
  whose connections Datasette opens with ``mode=ro``); it never asks for a write connection.
* Nothing from the archive reaches a page unescaped: Markdown goes through markdown-it-py
  and nh3 (``archive.web.markup``); everything else is escaped by Jinja or ``markupsafe``.
  Blobs are served with ``nosniff`` and a sandboxing CSP; only raster image types are
  served inline, everything else as a download. No page loads anything from outside the
  server (no CDN, no remote image: Markdown images are dropped).
* Every request passes the Host check first (``asgi_wrapper``, ``archive.web.hosts``): the
  allowed names come from the plugin configuration ``allowed_hosts`` that ``serve``
  writes, else loopback names only.
* Bad input (a page or offset out of range, a malformed date) answers 400 with a message,
  a query that runs past the time limit 400 too; never 500.
* The plugin acts only on the archive database: the one named in the ``sesh-archive``
  plugin configuration (``serve.make_datasette`` writes it), else a database called
  ``archive``. Other databases in the same Datasette are left alone.
* Registered explicitly by ``serve.make_datasette`` and also through the ``datasette``
  entry point, so ``datasette archive.db`` on an installed package works too.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from dataclasses import replace
from functools import lru_cache
from importlib import resources
from typing import Any
from urllib.parse import quote, unquote, urlencode

from markupsafe import Markup, escape
from sqlite_utils import Database as SqliteDatabase

from .web.datasette_import import standard_sqlite

with standard_sqlite():  # imported before Datasette (the tests, a script): it takes sqlite3, as serve's
    from datasette import Response, hookimpl
    from datasette.database import QueryInterrupted

from .db import ArchiveError
from .pricing import PriceTable, load_prices, money
from .queries import first_prompts
from . import export, saved_copies, secrets
from .web import conversation, files, lost, search, sessions, take, usage, workspace
from .signals import OUTCOMES
from .web.conversation import INLINE_MEDIA_TYPES, message_anchor, utc
from .web.hosts import LOOPBACK_NAMES, host_check
from .web.markup import pygments_css, render_markdown

__all__ = ["render_markdown", "message_anchor"]

PLUGIN_NAME = "sesh-archive"
PREFIX = "/-/sesh"
# Markers of a match in snippets: visible in the canned query's JSON/CSV, turned into
# <mark> in HTML. Chosen because they almost never occur in session text.
MARK_OPEN, MARK_CLOSE = search.MARK_OPEN, search.MARK_CLOSE
SEARCH_PAGE_SIZE = search.PAGE_SIZE
STATIC = {"sesh.css": "text/css", "sesh.js": "text/javascript"}


def archive_database(datasette: Any) -> str | None:
    """Name of the archive database in this Datasette, or None when there is none."""
    config = datasette.plugin_config(PLUGIN_NAME) or {}
    name = config.get("database") or "archive"
    return name if name in datasette.databases else None


def thread_path(datasette: Any, thread_id: str, block_id: int | None = None) -> str:
    path = datasette.urls.path(f"{PREFIX}/thread/{quote(thread_id, safe='/')}")
    return f"{path}#b{block_id}" if block_id is not None else path


def highlight(snippet: str) -> Markup:
    return Markup(str(escape(snippet)).replace(MARK_OPEN, "<mark>").replace(MARK_CLOSE, "</mark>"))


@lru_cache(maxsize=1)
def prices() -> PriceTable:
    """The price table (bundled, with ``$SESH_ARCHIVE_PRICES`` laid over it), read once."""
    return load_prices()


# ---------------------------------------------------------------- page plumbing


_TEMPLATES: dict[tuple[int, str], Any] = {}


def _template(datasette: Any, name: str) -> Any:
    # Loaded from the package through Datasette's own Jinja environment, so the pages extend
    # Datasette's base.html and work whether or not Datasette was given a template_dir;
    # compiled once per environment (a compile is 10-40 ms of a page).
    key = (id(datasette.jinja_env), name)
    if key not in _TEMPLATES:
        text = resources.files("archive.data").joinpath("templates", name).read_text("utf-8")
        _TEMPLATES[key] = datasette.jinja_env.from_string(text)
    return _TEMPLATES[key]


def _urls(datasette: Any, db_name: str) -> dict[str, str]:
    p = datasette.urls.path
    return {"sessions": p(f"{PREFIX}/sessions"), "search": p(f"{PREFIX}/search"), "usage": p(f"{PREFIX}/usage"),
            "lost": p(f"{PREFIX}/lost"),
            "tables": datasette.urls.database(db_name), "css": p(f"{PREFIX}/static/sesh.css"),
            "pygments_css": p(f"{PREFIX}/static/pygments.css"), "js": p(f"{PREFIX}/static/sesh.js")}  # fmt: skip


async def _render(datasette: Any, request: Any, name: str, db_name: str, context: dict[str, Any], status: int = 200) -> Response:
    context = {**context, "urls_": _urls(datasette, db_name), "money": money, "utc": utc}
    html = await datasette.render_template(_template(datasette, name), context, request=request)
    return Response.html(html, status=status)


async def _check(datasette: Any, request: Any, db_name: str) -> None:
    await datasette.ensure_permissions(request.actor, [("view-database", db_name), "view-instance"])


def _no_archive() -> Response:
    return Response.text("no sesh-archive database in this Datasette", status=404)


def _bad(message: str) -> Response:
    return Response.text(f"400: {message}\n", status=400)


def _int_arg(request: Any, name: str, default: int) -> int:
    value = request.args.get(name)
    if value in (None, ""):
        return default
    if not re.fullmatch(r"\d{1,9}", value.strip()):
        raise ValueError(f"{name} must be a whole number from 1, not {value!r}")
    return int(value)


async def _archive(datasette: Any, request: Any) -> tuple[str | None, Any]:
    db_name = archive_database(datasette)
    if db_name is None:
        return None, None
    await _check(datasette, request, db_name)
    return db_name, datasette.get_database(db_name)


# ---------------------------------------------------------------- sessions (home)


async def sessions_page(datasette: Any, request: Any) -> Response:
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    try:
        f = _session_filters(request, _int_arg(request, "page", 1))
        data, opts = await db.execute_fn(lambda conn: (sessions.sessions(conn, f, prices()),
                                                       {**sessions.options(conn), "tags": files.tags_in_use(conn)}))
    except (ValueError, sessions.FilterError) as e:
        return _bad(str(e))
    except sqlite3.OperationalError as e:
        return _bad(f"the filter could not run: {e}")
    if not _show_secrets(datasette):
        await db.execute_fn(lambda conn: _mask_labels(conn, data["rows"]))
    for r in data["rows"]:
        r["href"] = thread_path(datasette, r["id"])
        for c in r["children"]:
            c["href"] = thread_path(datasette, c["id"])
    base = _filter_args(f)
    for r in data["rows"]:  # the conversation opens with the same list beside it
        r["href"] += _query(base)
    here = datasette.urls.path(f"{PREFIX}/sessions")
    page_url = lambda n: here + "?" + urlencode({**base, "page": n})  # noqa: E731
    context = {"f": f, "data": data, "opts": opts, "sorts": sessions.SORTS, "outcomes": OUTCOMES,
               "prev_url": page_url(f.page - 1) if f.page > 1 else None,
               "next_url": page_url(f.page + 1) if f.page < data["pages"] else None}  # fmt: skip
    return await _render(datasette, request, "sesh_sessions.html", db_name, context)


def _session_filters(request: Any, page: int = 1) -> sessions.SessionFilters:
    a = request.args
    return sessions.SessionFilters(provider=a.get("provider") or "", project=a.get("project") or "",
                                   model=a.get("model") or "", since=a.get("since") or "", until=a.get("until") or "",
                                   q=(a.get("q") or "").strip(), sort=a.get("sort") or "recent", page=page,
                                   outcome=a.get("outcome") or "", tag=a.get("tag") or "",
                                   starred=bool(a.get("starred")))  # fmt: skip


def _mask_labels(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
    """Session labels (titles, first prompts) with the secrets found in their threads masked."""
    red = secrets.redactor_for_threads(conn, {t for r in rows for t in [r["id"], *(c["id"] for c in r["children"])]})
    for r in rows:
        r["label"] = red.text(r["label"])
        for c in r["children"]:
            c["label"] = red.text(c["label"])


def _filter_args(f: sessions.SessionFilters) -> dict[str, str]:
    """The list's filters as query arguments (those set only)."""
    return {k: v for k, v in (("provider", f.provider), ("project", f.project), ("model", f.model), ("since", f.since),
                              ("until", f.until), ("q", f.q), ("sort", "" if f.sort == "recent" else f.sort),
                              ("outcome", f.outcome), ("tag", f.tag), ("starred", "1" if f.starred else "")) if v}  # fmt: skip


def _query(args: dict[str, Any]) -> str:
    return "?" + urlencode(args) if args else ""


async def side_html(datasette: Any, db: Any, request: Any, current: str = "") -> Markup:
    """The workspace's session list (``sesh_side.html``) for the request's filters."""
    f = _session_filters(request)
    side, opts, version = await db.execute_fn(lambda conn: (workspace.side_list(conn, f, prices(), current), sessions.options(conn),
                                                            workspace.state(conn)["version"]))  # fmt: skip
    if not _show_secrets(datasette):
        await db.execute_fn(lambda conn: _mask_labels(conn, side["rows"]))
    args = _filter_args(f)
    for r in side["rows"]:
        r["href"] = thread_path(datasette, r["id"]) + _query(args)
    here = datasette.urls.path(f"{PREFIX}/sessions")
    context = {"side": side, "f": f, "opts": opts, "sorts": sessions.SORTS, "current": current, "utc": utc,
               "version": version, "side_action": thread_path(datasette, current) if current else here,
               "hidden": {k: v for k, v in args.items() if k not in ("q", "provider", "project", "sort")},
               "more_url": here + _query(args)}  # fmt: skip
    return Markup(await _template(datasette, "sesh_side.html").render_async(**context))


async def side_page(datasette: Any, request: Any) -> Response:
    """The side list alone (``?current=<thread>`` marks the open one): what the script refreshes."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    try:
        html = await side_html(datasette, db, request, request.args.get("current") or "")
    except (ValueError, sessions.FilterError) as e:
        return _bad(str(e))
    return Response.html(html)


async def live_state(datasette: Any, request: Any) -> Response:
    """``{version, messages?, writing?}`` (``workspace.state``): what open pages poll."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    thread = request.args.get("thread") or ""
    data = await db.execute_fn(lambda conn: workspace.state(conn, thread))
    return Response.json(data, headers={"Cache-Control": "no-store"})


async def home(datasette: Any, request: Any) -> Response:
    if archive_database(datasette) is None:
        links = "".join(f'<li><a href="{escape(datasette.urls.database(n))}">{escape(n)}</a></li>' for n in datasette.databases)
        return Response.html(f"<h1>Databases</h1><ul>{links}</ul>")
    return await sessions_page(datasette, request)


# ---------------------------------------------------------------- conversation


def _show_secrets(datasette: Any) -> bool:
    """``serve --show-secrets``: found secrets are masked on these pages unless it was given."""
    return bool((datasette.plugin_config(PLUGIN_NAME) or {}).get("show_secrets"))


async def thread_page(datasette: Any, request: Any) -> Response:
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    thread_id = unquote(request.url_vars["thread_id"])
    try:
        page = _int_arg(request, "page", -1)  # -1: not asked for
        block = _int_arg(request, "block", 0) or None
    except ValueError as e:
        return _bad(str(e))
    message = request.args.get("message") or None

    def load(conn: sqlite3.Connection) -> Any:
        n = page
        if n == -1:
            n = (conversation.locate(conn, thread_id, block=block, message=message) if block or message else None) or 1
        rel = [r[0] for r in conn.execute(
            "SELECT id FROM threads WHERE (id = ? OR id = (SELECT parent_thread_id FROM threads WHERE id = ?) "
            "OR parent_thread_id = ?) AND title IS NULL", (thread_id, thread_id, thread_id))]  # fmt: skip
        data = conversation.load_page(conn, thread_id, n, prices(), first_prompts(conn, rel, width=140))
        if data is not None:  # beside its own figures, the session's as the sessions list gives them
            data["session"] = sessions.with_children(conn, thread_id, prices())
        return data

    try:
        data = await db.execute_fn(load)
    except conversation.PageError as e:
        return _bad(str(e))
    if data is None and await db.execute_fn(lambda conn: lost.is_lost(conn, thread_id)):  # only its prompts are left
        return Response.redirect(datasette.urls.path(f"{PREFIX}/lost") + "?" + urlencode({"thread": thread_id}))
    if data is None:
        return Response.html(f"<h1>No thread {escape(thread_id)}</h1>", status=404)
    if not _show_secrets(datasette):
        data = await db.execute_fn(lambda conn: secrets.mask_page(conn, data))
    thread = data["thread"]
    here = thread_path(datasette, thread_id)
    bubbles = conversation.bubbles(data, lambda sha: datasette.urls.path(f"{PREFIX}/blob/{sha}"))
    parent = None
    children = []
    for r in data["relatives"]:
        item = {"id": r["id"], "label": r["label"], "href": thread_path(datasette, r["id"]), "created_at": utc(r["created_at"]),
                "fork": "forkedFrom" in (r["metadata"] or ""), "handoff": "emittedFrom" in (r["metadata"] or ""),
                "origin": r["origin_message_id"]}  # fmt: skip
        if r["id"] == thread["parent_thread_id"]:
            parent = item
        else:
            children.append(item)
    at: dict[str, list[dict[str, Any]]] = {}
    for c in children:
        if c["origin"]:
            at.setdefault(message_anchor(c["origin"]), []).append(c)
    # file checkpoints (issue 38): the file as it was before the message's edit
    before: dict[str, list[dict[str, Any]]] = {}
    for mid, cps in (await db.execute_fn(lambda conn: lost.thread_checkpoints(conn, thread_id))).items():
        for c in cps:
            before.setdefault(message_anchor(mid), []).append(
                {**c, "href": datasette.urls.path(f"{PREFIX}/source/{c['source_id']}")})
    for b in bubbles:
        b["children"] = [c for a in b["anchors"] for c in at.get(a, [])]
        b["checkpoints"] = [c for a in b["anchors"] for c in before.get(a, [])]
    try:
        list_args = _filter_args(_session_filters(request))
    except (ValueError, sessions.FilterError) as e:
        return _bad(str(e))
    page_url = lambda n: here + "?" + urlencode({**list_args, "page": n})  # noqa: E731
    export_url = lambda f: datasette.urls.path(f"{PREFIX}/export") + "?" + urlencode({"thread": thread_id, "format": f})  # noqa: E731
    file_url = lambda p: datasette.urls.path(f"{PREFIX}/file") + "?" + urlencode({"path": p})  # noqa: E731
    context = {
        "signals_panel": await db.execute_fn(lambda conn: files.panel(conn, thread_id, file_url)),
        "take": await db.execute_fn(lambda conn: take.panel(conn, thread_id, export_url)),
        "take_template": _template(datasette, "sesh_take.html"),  # issue 41: export and resume
        "thread": thread, "title": data["label"], "data": data, "bubbles": bubbles, "parent": parent,
        "children": children,
        "parent_origin": (thread_path(datasette, thread["parent_thread_id"]) + "?" + urlencode({"message": thread["origin_message_id"]})
                          + "#" + message_anchor(thread["origin_message_id"]))
                         if thread["parent_thread_id"] and thread["origin_message_id"] else None,
        "page_url": page_url, "here": here,
        "prompts_url": datasette.urls.path(f"{PREFIX}/prompts") + "?" + urlencode({"thread": thread_id}),
        "prev_url": page_url(data["page"] - 1) if data["page"] > 1 else None,
        "next_url": page_url(data["page"] + 1) if data["page"] < data["pages"] else None,
        "row_url": datasette.urls.row(db_name, "threads", quote(thread["id"], safe="")),
        "transcript_url": datasette.urls.database(db_name) + "/thread_transcript?" + urlencode({"thread_id": thread["id"]}),
    }  # fmt: skip
    # a /chat save checkpoint and the session it was saved from (issue 33): at that message
    copy_of, copies = await db.execute_fn(lambda conn: saved_copies.links_of(conn, thread_id))
    at_message = lambda t, m: thread_path(datasette, t) + "?" + urlencode({"message": m}) + "#" + message_anchor(m)  # noqa: E731
    context["saved_copy_of"] = {"id": copy_of[0], "href": thread_path(datasette, copy_of[0]),
                                "at": at_message(*copy_of)} if copy_of else None  # fmt: skip
    context["saved_copies"] = [{"id": c, "href": thread_path(datasette, c), "at": at_message(thread_id, m)} for c, m in copies]
    context["writing"] = await db.execute_fn(lambda conn: bool(workspace.writing(conn, [thread_id])))
    context["live_url"] = datasette.urls.path(f"{PREFIX}/live") + "?" + urlencode({"thread": thread_id})
    pane = await _template(datasette, "sesh_thread_pane.html").render_async(
        **context, urls_=_urls(datasette, db_name), money=money, utc=utc)  # fmt: skip
    if request.headers.get("x-sesh-pane"):  # the workspace's script swaps the conversation pane only
        return Response.html(pane, headers={"Vary": "X-Sesh-Pane", "Cache-Control": "no-store"})
    try:
        side = await side_html(datasette, db, request, thread_id)
    except (ValueError, sessions.FilterError) as e:
        return _bad(str(e))
    return await _render(datasette, request, "sesh_thread.html", db_name, {**context, "pane": Markup(pane), "side": side})


async def export_file(datasette: Any, request: Any) -> Response:
    """The thread as one standalone HTML or Markdown file, a download (issue 41)."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    thread_id, fmt = request.args.get("thread") or "", request.args.get("format") or "html"
    if fmt not in export.FORMATS:
        return _bad(f"format must be one of {', '.join(export.FORMATS)}")
    redact = not _show_secrets(datasette)

    def build(conn: sqlite3.Connection) -> str:
        db_ = SqliteDatabase(conn)
        if fmt == "html":
            return export.export_html(db_, thread_id, redact=redact)
        return "".join(line + "\n" for line in export.export_markdown(db_, thread_id, redact=redact))

    try:
        body = await db.execute_fn(build)
    except ArchiveError as e:
        return Response.text(f"404: {e}\n", status=404)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", thread_id)[:120] + "." + fmt
    media = "text/html" if fmt == "html" else "text/markdown"
    return Response(body, content_type=f"{media}; charset=utf-8", headers={
        "X-Content-Type-Options": "nosniff", "Content-Disposition": f'attachment; filename="{name}"'})


async def prompts_page(datasette: Any, request: Any) -> Response:
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    thread_id = request.args.get("thread") or ""

    def load(conn: sqlite3.Connection) -> Any:
        row = conn.execute("SELECT title FROM threads WHERE id = ?", (thread_id,)).fetchone()
        if row is None:
            return None
        label = row[0] or first_prompts(conn, [thread_id], width=140).get(thread_id) or thread_id
        return label, conversation.prompts(conn, thread_id)

    data = await db.execute_fn(load)
    if data is None:
        return Response.html(f"<h1>No thread {escape(thread_id)}</h1>", status=404)
    here = thread_path(datasette, thread_id)
    context = {"title": data[0], "prompts": data[1], "here": here, "thread_id": thread_id}
    return await _render(datasette, request, "sesh_prompts.html", db_name, context)


# ---------------------------------------------------------------- search


def _search_request(request: Any) -> search.SearchRequest:
    a = request.args
    return search.SearchRequest(q=(a.get("q") or "").strip(), provider=a.get("provider") or "",
                                project=a.get("project") or "", role=a.get("role") or "", kind=a.get("kind") or "",
                                since=a.get("since") or "", until=a.get("until") or "",
                                sort=a.get("sort") or "relevance", offset=search.parse_offset(a.get("offset")),
                                mode=a.get("mode") or "lexical")  # fmt: skip


async def _lexical(db: Any, req: search.SearchRequest, grouped: bool) -> tuple[list[Any], Any, Any, Any, str | None]:
    """(hit rows, groups or None, total hits, total sessions, error): FTS5 syntax first, then
    the words quoted when FTS5 rejects it (a stray operator). The first try's refusal is
    expected and not logged (Datasette writes every failed query to the terminal)."""
    error = None
    for literal in (False, True):
        try:
            groups = None
            if grouped:
                sql, params = search.groups_sql(req, literal)
                groups = [dict(g) for g in (await db.execute(sql, params, log_sql_errors=literal)).rows]
                rows = []
                for g in groups[:search.GROUP_PAGE]:
                    sql, params = search.hits_sql(replace(req, thread=g["thread_id"], offset=0), literal, search.SNIPPETS)
                    rows += (await db.execute(sql, params, log_sql_errors=literal)).rows
            else:
                sql, params = search.hits_sql(req, literal)
                rows = (await db.execute(sql, params, log_sql_errors=literal)).rows
            totals = []
            for count in (search.count_sql, search.sessions_count_sql):
                csql, cparams = count(req, literal)
                try:
                    totals.append((await db.execute(csql, cparams, log_sql_errors=literal)).rows[0][0])
                except QueryInterrupted:
                    totals.append(None)  # the hits are there; only the count ran out of time
            return rows, groups, totals[0], totals[1], None
        except sqlite3.OperationalError as e:  # FTS5 syntax: retry with the words quoted
            error = str(e)
    return [], None, None, None, error


async def search_page(datasette: Any, request: Any) -> Response:
    """Hits grouped by session (the relevance sort) or a timeline (the date sort); with
    ``X-Sesh-Pane`` the results alone (the search palette's answer as you type)."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    try:
        req = _search_request(request)
        grouped = req.sort == "relevance"
        hits: list[dict[str, Any]] = []
        groups: list[dict[str, Any]] | None = None
        error = total = sessions_total = None
        if req.q:
            if req.mode != "lexical":  # by meaning (issue 40)
                try:
                    limit = (search.GROUP_PAGE * 10 if grouped else SEARCH_PAGE_SIZE) + 1
                    rows = await db.execute_fn(lambda conn: search.meaning_rows(conn, req, limit))
                    total = req.offset + min(len(rows), limit - 1)  # meaning has no count: the hits found
                except ArchiveError as e:  # the model's extra not installed: say how to get it
                    error, rows = str(e), []
                if grouped:
                    groups = search.group_rows(rows)
                    sessions_total = len(groups)
            else:
                rows, groups, total, sessions_total, error = await _lexical(db, req, grouped)
            labels = await db.execute_fn(lambda conn: first_prompts(conn, {r["thread_id"] for r in rows if not r["title"]}, 100))
            if not _show_secrets(datasette):
                rows = await db.execute_fn(lambda conn: secrets.mask_search_rows(conn, rows, labels, MARK_OPEN, MARK_CLOSE))
            for r in rows:
                hits.append({**dict(r), "label": r["title"] or labels.get(r["thread_id"]) or r["thread_id"],
                             "href": thread_path(datasette, r["thread_id"], r["block_id"]),
                             "thread_href": thread_path(datasette, r["thread_id"]), "when": utc(r["ts"]),
                             "snippet_html": highlight(r["snippet"] or "")})  # fmt: skip
            if groups is not None:
                by_thread = search.group_rows(hits, {g["thread_id"]: g["n"] for g in groups})
                groups = [g for g in by_thread][: search.GROUP_PAGE]
                for g in groups:
                    g.update(label=g["hits"][0]["label"], href=g["hits"][0]["thread_href"], provider=g["hits"][0]["provider"],
                             project=g["hits"][0]["project"])  # fmt: skip
        opts = await db.execute_fn(sessions.options)
    except search.SearchError as e:
        return _bad(str(e))
    except QueryInterrupted:
        return _bad("the search ran past the time limit; narrow it with more words or a filter")
    page_size = search.GROUP_PAGE if grouped else SEARCH_PAGE_SIZE
    shown = len(groups) if groups is not None else len(hits)
    more = (sessions_total or 0) > req.offset + page_size if grouped and req.mode == "lexical" else shown > page_size
    base = {k: getattr(req, k) for k in ("q", "provider", "project", "role", "kind", "since", "until", "sort", "mode")
            if getattr(req, k) and (k, getattr(req, k)) not in (("mode", "lexical"), ("sort", "relevance"))}  # fmt: skip
    here = datasette.urls.path(f"{PREFIX}/search")
    context = {
        "q": req.q, "req": req, "hits": hits[:SEARCH_PAGE_SIZE], "groups": groups, "error": error, "offset": req.offset,
        "total": total, "sessions_total": sessions_total,
        "opts": opts, "kinds": search.KINDS, "roles": search.ROLES, "sorts": search.SORTS, "modes": search.MODES,
        "next_url": here + "?" + urlencode({**base, "offset": req.offset + page_size}) if more else None,
        "prev_url": here + "?" + urlencode({**base, "offset": max(0, req.offset - page_size)}) if req.offset else None,
        "canned_url": datasette.urls.database(db_name) + "/search?" + urlencode({"q": req.q}),
        "full_url": here + "?" + urlencode(base),
    }  # fmt: skip
    if request.headers.get("x-sesh-pane"):
        html = await _template(datasette, "sesh_search_results.html").render_async(**context, palette=True)
        return Response.html(html, headers={"Cache-Control": "no-store"})
    results = await _template(datasette, "sesh_search_results.html").render_async(**context, palette=False)
    return await _render(datasette, request, "sesh_search.html", db_name, {**context, "results": Markup(results)})


async def palette_filters(datasette: Any, request: Any) -> Response:
    """The search palette's filters (agent, project, role, since, until, words or meaning)."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    opts = await db.execute_fn(sessions.options)
    html = await _template(datasette, "sesh_palette.html").render_async(opts=opts, roles=search.ROLES, modes=search.MODES)
    return Response.html(html)


# ---------------------------------------------------------------- usage


async def usage_page(datasette: Any, request: Any) -> Response:
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    since, until = request.args.get("since") or "", request.args.get("until") or ""
    try:
        d = await db.execute_fn(lambda conn: usage.dashboard(conn, prices(), since, until))
    except ValueError as e:
        return _bad(f"since and until must be dates YYYY-MM-DD ({e})")
    for t in d["top"]:
        t["href"] = thread_path(datasette, t["id"])
    charts = {
        "heatmap": usage.heatmap(d["days"], "Model responses per day (UTC)"),
        "cost_days": usage.day_bars(d["days"], "cost", "Cost (USD)", "$"),
        "token_days": usage.day_bars(d["days"], "tokens", "Tokens"),
        "models": usage.hbars([(k, g["cost"]) for k, g in d["models"][:12]], "Cost per model", money),
        "model_tokens": usage.hbars([(k, g["tokens"]) for k, g in d["models"][:12]], "Tokens per model"),
        "projects": usage.hbars([(k, g["cost"]) for k, g in d["projects"]], "Cost per project", money),
        "top": usage.hbars([(t["label"], t["cost"]) for t in d["top"]], "Top sessions by cost", money),
    }
    context = {"d": d, "charts": charts, "since": since, "until": until, "colours": usage.BUCKET_COLOURS,
               "human": usage.human, "prices_info": prices().describe()}  # fmt: skip
    return await _render(datasette, request, "sesh_usage.html", db_name, context)


# ---------------------------------------------------------------- blobs and static files


async def blob(datasette: Any, request: Any) -> Response:
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    sha = request.url_vars["sha256"]
    rows = (await db.execute("SELECT media_type, data FROM blobs WHERE sha256 = ?", [sha])).rows
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


async def lost_page(datasette: Any, request: Any) -> Response:
    """Sessions whose transcript is gone, each with only the prompts a history kept."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    provider, thread = request.args.get("provider") or "", request.args.get("thread") or ""
    mask = not _show_secrets(datasette)
    rows = await db.execute_fn(lambda conn: lost.lost_page(conn, provider, thread, mask))
    return await _render(datasette, request, "sesh_lost.html", db_name, {"rows": rows, "thread": thread})


async def file_page(datasette: Any, request: Any) -> Response:
    """A file's history (issue 42): every session's calls that read or changed it, newest first."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    path = (request.args.get("path") or "").strip()
    data = await db.execute_fn(lambda conn: files.timeline(conn, path))
    if not _show_secrets(datasette):
        red = await db.execute_fn(lambda conn: secrets.redactor_for_threads(conn, {c["thread_id"] for c in data["calls"]}))
        data["calls"] = [red.value(c) for c in data["calls"]]
    for c in data["calls"]:
        c["href"] = thread_path(datasette, c["thread_id"]) + "?" + urlencode({"message": c["message_id"]})
    return await _render(datasette, request, "sesh_file.html", db_name, {"d": data})


async def source_file(datasette: Any, request: Any) -> Response:
    """A file backup a checkpoint names, as archived (a download, never rendered)."""
    db_name, db = await _archive(datasette, request)
    if db_name is None:
        return _no_archive()
    found = await db.execute_fn(lambda conn: lost.source_bytes(conn, int(request.url_vars["source_id"])))
    if found is None:
        return Response.text("no such file backup", status=404)
    name = found[0].rsplit("/", 1)[-1].replace('"', "")
    return Response(found[1], content_type="application/octet-stream", headers={
        "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'; sandbox",
        "Content-Disposition": f'attachment; filename="{name}"'})


async def static(request: Any) -> Response:
    name = request.url_vars["name"]
    if name == "pygments.css":
        return Response(pygments_css(), content_type="text/css; charset=utf-8", headers={"Cache-Control": "max-age=3600"})
    if name not in STATIC:
        return Response.text("not found", status=404)
    body = resources.files("archive.data").joinpath("static", name).read_text("utf-8")
    return Response(body, content_type=f"{STATIC[name]}; charset=utf-8", headers={"Cache-Control": "max-age=3600"})


@hookimpl
def register_routes(datasette: Any) -> list[tuple[str, Any]]:
    return [
        (r"^/$", home),
        (rf"^{PREFIX}/sessions$", sessions_page),
        (rf"^{PREFIX}/thread/(?P<thread_id>.+)$", thread_page),
        (rf"^{PREFIX}/prompts$", prompts_page),
        (rf"^{PREFIX}/export$", export_file),
        (rf"^{PREFIX}/side$", side_page),
        (rf"^{PREFIX}/live$", live_state),
        (rf"^{PREFIX}/search$", search_page),
        (rf"^{PREFIX}/palette$", palette_filters),
        (rf"^{PREFIX}/usage$", usage_page),
        (rf"^{PREFIX}/lost$", lost_page),
        (rf"^{PREFIX}/file$", file_page),
        (rf"^{PREFIX}/source/(?P<source_id>[0-9]+)$", source_file),
        (rf"^{PREFIX}/blob/(?P<sha256>[0-9a-f]{{64}})$", blob),
        (rf"^{PREFIX}/static/(?P<name>[a-z0-9_-]+\.(?:css|js))$", static),
    ]


@hookimpl
def prepare_connection(conn: sqlite3.Connection, database: str, datasette: Any) -> None:
    # the canned search query masks found secrets in its snippets, as the search page does
    conn.create_function("mask_secrets", 1, secrets.sql_masker(conn, _show_secrets(datasette)))


@hookimpl
def startup(datasette: Any) -> None:
    from datasette.utils.sqlite import using_pysqlite3

    if using_pysqlite3:  # Datasette started by its own command, in an environment with pysqlite3
        print("sesh-archive: this Datasette reads databases with pysqlite3; the sesh-archive pages need Python's "
              "own sqlite3 module and will fail: serve the archive with `sesh-archive serve`", file=sys.stderr)  # fmt: skip
    # Build the Markdown parser and load the common lexers before the first page asks:
    # measured 0.3-0.5 s of the first conversation page otherwise.
    render_markdown("*warm* `up`\n\n```bash\nls\n```\n\n```json\n{}\n```\n\n```diff\n+a\n```")
    prices()


@hookimpl
def asgi_wrapper(datasette: Any) -> Any:
    config = datasette.plugin_config(PLUGIN_NAME) or {}
    allowed = config.get("allowed_hosts") or list(LOOPBACK_NAMES)
    return lambda app: host_check(app, allowed)


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
    p = datasette.urls.path
    return [{"href": p(f"{PREFIX}/sessions"), "label": "Sessions"}, {"href": p(f"{PREFIX}/search"), "label": "Search sessions"},
            {"href": p(f"{PREFIX}/usage"), "label": "Usage"}]  # fmt: skip
