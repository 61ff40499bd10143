"""Markdown, code and diffs as safe HTML.

Invariants:

* Markdown is parsed by markdown-it-py (CommonMark, plus tables, strikethrough and bare
  links) with raw HTML turned off, so tags typed in a session show as text. The HTML it
  makes then goes through nh3 (ammonia) with an allow-list: no ``img`` (a page never loads
  anything from outside the server), no ``style``, no event attributes, links only to
  http(s), mailto or relative URLs, each with ``rel="noopener noreferrer nofollow"``.
* Code is coloured by Pygments with CSS classes only (``pygments_css`` is served as a
  stylesheet); input beyond ``MAX_HIGHLIGHT`` characters is shown escaped, uncoloured,
  so a huge block cannot stall the page.
* Headings move down two levels (``#`` becomes ``<h3>``): the page's own headings come first.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, get_lexer_by_name
from pygments.util import ClassNotFound

MAX_HIGHLIGHT = 60_000
LINK_REL = "noopener noreferrer nofollow"
TAGS = {
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "code",
    "span", "em", "strong", "s", "del", "a", "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "span": {"class"}, "code": {"class"}, "pre": {"class"}, "ol": {"start"}}
_FORMATTER = HtmlFormatter(nowrap=True)


def _code_html(code: str, lexer: Any | None, lang: str = "") -> str:
    cls = f' class="language-{escape(lang)}"' if lang else ""
    if lexer is None or len(code) > MAX_HIGHLIGHT:
        body = str(escape(code))
    else:
        body = highlight(code, lexer, _FORMATTER)
    return f'<pre class="highlight"><code{cls}>{body}</code></pre>'


def _lexer(lang: str) -> Any | None:
    if not lang:
        return None
    try:
        return get_lexer_by_name(lang.lower())
    except ClassNotFound:
        return None


def _fence(code: str, lang: str, _attrs: str) -> str:
    # markdown-it keeps output starting with "<pre" as is
    name = lang.split()[0] if lang else ""
    return _code_html(code, _lexer(name), name)


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": True, "highlight": _fence})
    return md.enable(["table", "strikethrough", "linkify"])


def clean(html: str) -> Markup:
    return Markup(nh3.clean(html, tags=TAGS, attributes=ATTRIBUTES, link_rel=LINK_REL,
                            url_schemes={"http", "https", "mailto"}))  # fmt: skip


def render_markdown(text: str) -> Markup:
    """Markdown as sanitised HTML (see the module's invariants)."""
    md = _parser()
    env: dict[str, Any] = {}
    tokens = md.parse(text or "", env)
    for t in tokens:
        if t.type in ("heading_open", "heading_close"):
            t.tag = f"h{min(int(t.tag[1]) + 2, 6)}"
    return clean(md.renderer.render(tokens, md.options, env))


def code_html(code: str, lang: str = "") -> Markup:
    """A block of code, coloured when ``lang`` names a Pygments lexer."""
    return Markup(_code_html(code, _lexer(lang), lang))


def diff_html(patch: str) -> Markup:
    """A unified diff (or an ``apply_patch`` envelope), additions and deletions coloured."""
    return Markup(_code_html(patch, DiffLexer(), "diff").replace('class="highlight"', 'class="highlight sesh-diff"', 1))


def edit_diff(old: str, new: str, path: str = "") -> str:
    """The unified diff of replacing ``old`` by ``new`` (an editor tool's call)."""
    name = (path or "file").lstrip("/")
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{name}", f"b/{name}", lineterm="", n=3)
    return "\n".join(lines)


def pygments_css() -> str:
    """Code colours: the light style, and a dark one where the dark scheme applies (the
    system's choice unless the switch chose light, or the switch's; see sesh.css)."""
    dark = HtmlFormatter(style="github-dark")
    return "\n".join([
        HtmlFormatter(style="default").get_style_defs(".highlight"),
        "@media (prefers-color-scheme: dark) {", dark.get_style_defs(":root:not([data-theme=light]) .highlight"), "}",
        dark.get_style_defs(":root[data-theme=dark] .highlight"),
    ])  # fmt: skip
