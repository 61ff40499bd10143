"""Take a session anywhere (issue 41): one standalone HTML or Markdown file of a thread, and
the commands that reopen it in a client.

Invariants:

* **One renderer each.** The HTML is the conversation page's: ``web.conversation.load_page``
  reads the thread, ``bubbles``/``block_html`` make its blocks (tool calls folded by kind,
  results beside their call, edits and patches as coloured diffs), the same page layout.
  The Markdown is ``emit --to markdown``'s (``render.thread_markdown`` of ``thread_view.load_view``,
  unfolded), with the child threads after it.
* **One file, nothing loaded.** The HTML holds its styles (sesh.css and Pygments' CSS
  inlined), images as ``data:`` URIs of the archive's blobs, no script, font, stylesheet
  link or frame; a Content-Security-Policy meta tag (``default-src 'none'``) makes a browser
  refuse any request that slipped in anyway. Markdown images never reach it (``markup``
  drops them). Links a person clicks stay links.
* **Secrets masked** unless ``redact=False`` is asked for (``export --no-redact``, ``serve
  --show-secrets``): every finding of the thread, its ancestors and descendants
  (``secrets.thread_scope``) is ``[REDACTED rule]``, as on the web pages and in ``show --redact``.
* **Child threads included, folded.** Subagent and sidechain threads (``emit.descendants``:
  not forks) are rendered inline, each folded under the message that started it (at the
  end when that message is not in the thread), recursively: a standalone file cannot link
  to a page that is not there. Forks and hand-offs are sessions of their own: named (id and
  label), not included; export them by their id.
* **Resume:** the command is the adapter's ``resume_hint`` for the session the thread
  belongs to (a child thread resumes through its top-level session). When the session's
  own files are gone from disk the command alone would fail: ``resume_plan`` says so and
  prefixes ``sesh-archive emit ... --install`` (a byte-exact copy written back first).
* Read-only: nothing here writes to the archive; ``install_for`` writes only into the
  target client's home, through ``emit.write_files`` (never over an existing file).
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from sqlite_utils import Database

from .emit import INSTALLABLE, emit_thread, install_base, thread_sources, write_files
from .errors import ArchiveError
from .pricing import PriceTable, load_prices, money
from .projection import fork_of, load_threads
from .queries import first_prompts, resolve_thread
from .render import thread_markdown
from .secrets import mask_page, redact_view, redactor_for_threads, thread_scope
from .thread_view import MessagePages, descendants, load_view, thread_record
from .vendors import get as get_adapter
from .vendors.base import EmitOptions, file_chunks
from .web.conversation import INLINE_MEDIA_TYPES, bubbles, load_page, message_anchor, utc
from .web.markup import pygments_css

FORMATS = ("html", "md")
MAX_DEPTH = 8  # child threads of child threads: deeper nesting is listed, not rendered


@lru_cache(maxsize=1)
def _prices() -> PriceTable:
    return load_prices()


@lru_cache(maxsize=1)
def _template() -> jinja2.Template:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    text = resources.files("archive.data").joinpath("templates", "sesh_export.html").read_text("utf-8")
    return env.from_string(text)


@lru_cache(maxsize=1)
def _css() -> str:
    return resources.files("archive.data").joinpath("static", "sesh.css").read_text("utf-8") + "\n" + pygments_css()


def _blob_uri(db: Database) -> Any:
    """``data:`` URIs of the archive's blobs: raster images with their type, anything else
    as ``application/octet-stream`` (a download when clicked, never rendered)."""
    cache: dict[str, str] = {}

    def uri(sha: str) -> str:
        if sha not in cache:
            row = db.conn.execute("SELECT media_type, data FROM blobs WHERE sha256 = ?", (sha,)).fetchone()
            media = (row[0] or "").lower() if row else ""
            media = media if media in INLINE_MEDIA_TYPES else "application/octet-stream"
            cache[sha] = f"data:{media};base64,{base64.b64encode(bytes(row[1] or b'') if row else b'').decode()}"
        return cache[sha]

    return uri


def _thread_section(db: Database, thread_id: str, redact: bool, blob_uri: Any, depth: int,
                    seen: set[str]) -> dict[str, Any]:  # fmt: skip
    """One thread as the template draws it: facts, bubbles, its child threads placed at the
    bubble of the message that started each one."""
    conn = db.conn
    seen.add(thread_id)
    rel = [r[0] for r in conn.execute(
        "SELECT id FROM threads WHERE (id = ? OR parent_thread_id = ?) AND title IS NULL", (thread_id, thread_id))]  # fmt: skip
    count = len(MessagePages(db, thread_id))  # the thread's view: a fork's history first, as on the page
    # the whole thread on one page: a file has no pages (results stay beside their call)
    data = load_page(conn, thread_id, 1, _prices(), first_prompts(conn, rel, width=140), page_size=max(1, count))
    assert data is not None
    if redact:
        data = mask_page(conn, data)
    section = {"id": thread_id, "label": data["label"], "data": data, "thread": data["thread"], "depth": depth,
               "bubbles": bubbles(data, blob_uri), "forks": [], "tail": [], "omitted": False}  # fmt: skip
    kids = [c for c in descendants(db, thread_id) if conn.execute(
        "SELECT 1 FROM threads WHERE id = ? AND parent_thread_id = ?", (c, thread_id)).fetchone()]  # fmt: skip
    at: dict[str, list[dict[str, Any]]] = {}
    for cid in kids:
        if cid in seen:
            continue
        if depth + 1 > MAX_DEPTH:
            section["tail"].append({"id": cid, "label": cid, "omitted": True})
            continue
        child = _thread_section(db, cid, redact, blob_uri, depth + 1, seen)
        origin = child["thread"]["origin_message_id"]
        at.setdefault(message_anchor(origin) if origin else "", []).append(child)
    placed: set[str] = set()
    for b in section["bubbles"]:
        b["child_sections"] = [c for a in b["anchors"] for c in at.get(a, [])]
        placed |= {c["id"] for c in b["child_sections"]}
    section["tail"] += [c for cs in at.values() for c in cs if c["id"] not in placed]
    # forks and hand-offs of this thread: sessions of their own, named only
    for r in data["relatives"]:
        if r["id"] != data["thread"]["parent_thread_id"] and r["id"] not in kids:
            section["forks"].append({"id": r["id"], "label": r["label"],
                                     "kind": "hand-off" if "emittedFrom" in (r["metadata"] or "") else "fork"})  # fmt: skip
    return section


def export_html(db: Database, ref: str, redact: bool = True) -> str:
    """The thread ``ref`` (an id or an unambiguous prefix) as one standalone HTML document."""
    thread_id = resolve_thread(db, ref)
    main = _thread_section(db, thread_id, redact, _blob_uri(db), 0, set())
    thread = main["thread"]
    parent = None
    if thread["parent_thread_id"]:
        found = load_threads(db.conn, "id = ?", (thread["parent_thread_id"],))
        if found:
            t = found[0]
            label = t.title or first_prompts(db.conn, [t.id], width=140).get(t.id) or t.id
            if redact:
                label = redactor_for_threads(db.conn, thread_scope(db.conn, thread_id)).text(label)
            fork = fork_of(thread_record(db, thread_id)) is not None
            parent = {"id": t.id, "label": label, "fork": fork, "kind": "fork of" if fork else "child of"}
    return _template().render(
        main=main, parent=parent, css=_css(), utc=utc, money=money, redacted=redact,
        csp=Markup("default-src 'none'; img-src data:; style-src 'unsafe-inline'; form-action 'none'; base-uri 'none'"),
    )  # fmt: skip


def export_markdown(db: Database, ref: str, redact: bool = True) -> Iterator[str]:
    """The thread as ``emit --to markdown`` writes it (unfolded), then each child thread
    (subagents, sidechains; not forks) in a folded section of its own; lines, streamed."""
    view = load_view(db, ref)
    yield from thread_markdown(redact_view(db.conn, view) if redact else view, full=True)
    for cid in view.descendants:
        child = load_view(db, cid)
        child = redact_view(db.conn, child) if redact else child
        label = child.summary.get("label") or cid
        yield ""
        yield f"<details><summary>Child thread {cid}: {label}</summary>"
        yield ""
        yield from thread_markdown(child, full=True)
        yield ""
        yield "</details>"


# ---------------------------------------------------------------- resume


@dataclass
class ResumePlan:
    thread_id: str
    provider: str
    session_id: str  # the top-level session the thread belongs to (a child resumes through it)
    cwd: str | None
    command: str | None  # what reopens it in its own client; None when the client has no resume
    missing: list[str] = field(default_factory=list)  # the session's own files gone from disk
    install: str | None = None  # `sesh-archive emit ... --install`, when the files are gone
    notes: list[str] = field(default_factory=list)

    def report(self) -> dict[str, Any]:
        return {"thread": self.thread_id, "provider": self.provider, "session": self.session_id, "cwd": self.cwd,
                "command": self.full_command(), "resume": self.command, "missing_files": self.missing,
                "install": self.install, "notes": self.notes}  # fmt: skip

    def full_command(self) -> str | None:
        if self.command is None:
            return None
        return f"{self.install} && {self.command}" if self.install else self.command


def resume_plan(db: Database, ref: str) -> ResumePlan:
    """How the thread ``ref`` reopens in its own client (see the module's invariants)."""
    view = load_view(db, ref, summaries=False)
    thread, thread_id = view.thread, view.thread.id
    provider, cwd = db.conn.execute("SELECT provider, cwd FROM threads WHERE id = ?", (thread_id,)).fetchone()
    provider = provider or _provider(db, thread_id)
    cwd = cwd or (thread.metadata or {}).get("cwd")
    root = view.session
    try:
        adapter = get_adapter(provider)
    except (KeyError, ValueError, ArchiveError):
        adapter = None
    hint = adapter.resume_hint(root, cwd) if adapter is not None else None
    plan = ResumePlan(thread_id, provider, root, cwd, hint)
    if hint is None:
        plan.notes.append(f"{provider} has no resume command; hand the session to a client with --to "
                          f"({', '.join(INSTALLABLE)})")  # fmt: skip
        return plan
    if root != thread_id:
        plan.notes.append(f"{thread_id} is a child thread: its client reaches it through session {root}")
    sources = thread_sources(db, [root, *descendants(db, root)])
    plan.missing = [s[4] for s in sources if s[1] == provider and not os.path.exists(s[4])]
    if plan.missing:
        if provider in INSTALLABLE:
            plan.install = shlex.join(["sesh-archive", "emit", root, "--to", provider, "--install"])
            plan.notes.append(f"the session's file is gone from disk ({plan.missing[0]}"
                              + (f" and {len(plan.missing) - 1} more" if len(plan.missing) > 1 else "")
                              + f"): `{plan.install}` writes the archived copy back first")  # fmt: skip
        else:
            plan.notes.append(f"the session's file is gone from disk ({plan.missing[0]}) and {provider} "
                              "sessions cannot be installed back")  # fmt: skip
    return plan


def _provider(db: Database, thread_id: str) -> str:
    row = db.conn.execute(
        "SELECT s.provider FROM messages m JOIN sources s ON s.id = m.source_id WHERE m.thread_id = ? LIMIT 1",
        (thread_id,),
    ).fetchone()
    return (row[0] if row else None) or "unknown"


@dataclass
class Installed:
    target: str
    command: str | None
    written: list[Path]
    already: bool  # the same files were installed before: nothing written
    outcome: Any


def install_for(db: Database, ref: str, target: str, env: Mapping[str, str], home: Path) -> Installed:
    """Emit the thread for ``target`` and install it in that client's home (``emit --to
    TARGET --install``); a second call finds the same files in place and writes nothing."""
    if target not in INSTALLABLE:
        raise ArchiveError(f"cannot install for {target!r}; one of {', '.join(INSTALLABLE)}")
    configured = get_adapter(target).configured_options(env, home)
    outcome = emit_thread(db, ref, target, exact=True, options=EmitOptions(), configured=configured)
    base = install_base(target, env, home)
    paths = {rel: base / rel for rel in outcome.files}
    if all(p.is_file() for p in paths.values()) and all(
            _sha(file_chunks(outcome.files, rel)) == _sha([p.read_bytes()]) for rel, p in paths.items()):  # fmt: skip
        return Installed(target, outcome.resume_hint, [], True, outcome)
    written = write_files(outcome, base)
    return Installed(target, outcome.resume_hint, written, False, outcome)


def _sha(chunks: Any) -> str:
    h = hashlib.sha256()
    for c in chunks:
        h.update(c)
    return h.hexdigest()
