"""Human-readable output of the read commands: threads as terminal text or Markdown, search
hits, and plain tables.

Invariants: pure functions from values to lines of text; nothing here reads the database
or writes anywhere. Terminal text carries ``click.style`` ANSI codes, which ``click.echo``
strips when stdout is not a terminal, so piped output is plain. Markdown never carries
ANSI codes. Folded output (the default) puts every tool call, tool result, reasoning block
and vendor-injected message on one line; ``full`` unfolds them.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import click
import orjson

from .model import (
    Attachment,
    Block,
    FileChange,
    Message,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    WebSearch,
)
from .projection import one_line, render_text
from .queries import ThreadView

ROLE_COLOURS = {"user": "cyan", "assistant": "green", "system": "magenta", "tool": "yellow"}
WIDTH = 110


def _json(value: Any, indent: bool = True) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0).decode()


def _time(ts: str | None) -> str:
    return (ts or "").replace("T", " ")[:19]


def _result_text(b: ToolResult) -> str:
    out = b.output
    # vendors send results as lists of content parts: show the parts' text, not their type tags
    if isinstance(out, list) and out and all(isinstance(p, dict) and "type" in p for p in out):
        parts = []
        for p in out:
            if isinstance(p.get("text"), str):
                parts.append(p["text"])
            elif p.get("type") in ("image", "input_image"):
                parts.append("[image]")
            else:
                parts.append(render_text(p) or "")
        return "\n".join(parts)
    return render_text(out) or ""


def _lines_note(text: str) -> str:
    n = text.count("\n") + 1 if text else 0
    return f" ({n} lines)" if n > 1 else ""


def _plain(m: Message) -> str:
    return "\n".join(render_text({k: v for k, v in b.to_dict().items() if k != "type"}) or "" for b in m.content)


def _is_injected(m: Message) -> bool:
    return bool((m.extra or {}).get("injected"))


# ---------------------------------------------------------------- terminal text


def _text_block(b: Block, full: bool) -> Iterator[str]:
    if isinstance(b, Text):
        yield b.text
    elif isinstance(b, Reasoning):
        body = b.text or ("[redacted]" if b.redacted else "")
        if full:
            yield click.style("thinking:", dim=True, italic=True)
            yield click.style(body, dim=True, italic=True)
        else:
            yield click.style(f"∴ {one_line(body, WIDTH) or '(reasoning)'}", dim=True, italic=True)
    elif isinstance(b, ToolCall):
        if full:
            yield click.style(f"▸ {b.name}", fg="yellow", bold=True) + click.style(f"  [{b.call_id}]", dim=True)
            yield click.style(_json(b.input), fg="yellow")
        else:
            yield click.style(f"▸ {b.name} ", fg="yellow", bold=True) + click.style(
                one_line(_json(b.input, indent=False), WIDTH - len(b.name) - 3), fg="yellow"
            )
    elif isinstance(b, ToolResult):
        text = _result_text(b)
        colour = "red" if b.is_error else None
        mark = "◂ error" if b.is_error else "◂"
        if full:
            yield click.style(mark, fg=colour or "yellow", bold=True) + click.style(f"  [{b.call_id}]", dim=True)
            yield click.style(text, fg=colour)
        else:
            note = _lines_note(text)
            yield click.style(f"{mark} {one_line(text, WIDTH - len(note) - 3)}{note}", fg=colour, dim=not b.is_error)
    elif isinstance(b, FileChange):
        yield click.style(f"± {b.path or '(file change)'}", fg="blue")
        if full and b.patch:
            yield b.patch
    elif isinstance(b, WebSearch):
        yield click.style(f"⌕ web search: {b.query}", fg="blue")
    elif isinstance(b, Attachment):
        size = f", {len(b.data) * 3 // 4:,} bytes" if b.data else ""
        yield click.style(f"[attachment {b.media_type or '?'}{size}{', ' + b.uri if b.uri else ''}]", fg="blue")
    elif isinstance(b, Unknown):
        yield click.style(f"[unknown block {b.source_type}]", dim=True)
        if full:
            yield click.style(_json(b.raw), dim=True)


def _header_lines(view: ThreadView) -> list[str]:
    s = view.summary
    out = [click.style(s["label"] or "(untitled)", bold=True)]
    facts = [("id", s["id"]), ("provider", s["provider"]), ("project", s["project"]), ("model", s["model"]),
             ("parent", s["parent_thread_id"]), ("origin", view.thread.origin_message_id),
             ("started", _time(s["first_ts"] or s["created_at"])), ("last", _time(s["last_ts"])),
             ("messages", s["messages"]), ("tokens", f"{s['total_tokens']:,}")]  # fmt: skip
    out += [click.style(f"{k}: ", dim=True) + str(v) for k, v in facts if v not in (None, "")]
    return out


def _children_lines(view: ThreadView, md: bool = False) -> list[str]:
    if not view.children:
        return []
    out = ["", (f"## Child threads ({len(view.children)})" if md else click.style(f"child threads ({len(view.children)}):", bold=True))]
    for c in view.children:
        line = f"{c['id']}  {c['messages']} messages  {one_line(c['label'], 70)}"
        out.append(f"- `{c['id']}` {c['messages']} messages {one_line(c['label'], 70)}" if md else "  " + line)
    return out


def thread_text(view: ThreadView, full: bool = False) -> Iterator[str]:
    yield from _header_lines(view)
    for m in view.messages:
        injected = _is_injected(m)
        only_results = m.content and all(isinstance(b, ToolResult) for b in m.content)
        if m.role == "tool" and only_results:
            for b in m.content:
                for line in _text_block(b, full):
                    yield "  " + line.replace("\n", "\n  ") if not full else line
            continue
        head = f"── {m.role}" + (" (injected)" if injected else "") + f"  {_time(m.ts)} "
        yield ""
        yield click.style(head + "─" * max(3, 40 - len(head)), fg=ROLE_COLOURS.get(m.role), bold=True)
        if injected and not full:
            text = _plain(m)
            yield click.style(f"[injected context, {len(text):,} chars] {one_line(text, 70)}", dim=True)
            continue
        for b in m.content:
            yield from _text_block(b, full)
    yield from _children_lines(view)


# ---------------------------------------------------------------- markdown


def _fence(body: str, lang: str = "") -> str:
    ticks = max([3] + [len(r) + 1 for r in re.findall(r"`{3,}", body)])
    return f"{'`' * ticks}{lang}\n{body}\n{'`' * ticks}"


def _code(s: str) -> str:
    """An inline code span that survives backticks in ``s``."""
    ticks = "`" * (max([0] + [len(r) for r in re.findall(r"`+", s)]) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{ticks}{pad}{s}{pad}{ticks}"


def _md_block(b: Block, full: bool) -> str | None:
    if isinstance(b, Text):
        return b.text
    if isinstance(b, Reasoning):
        body = b.text or ("[redacted]" if b.redacted else "")
        return "> *thinking:* " + (body.replace("\n", "\n> ") if full else one_line(body, WIDTH))
    if isinstance(b, ToolCall):
        if full:
            return _details(f"Tool call <code>{html.escape(b.name)}</code>", _fence(_json(b.input), "json"))
        return f"**Tool call** {_code(b.name)} {_code(one_line(_json(b.input, indent=False), 100))}"
    if isinstance(b, ToolResult):
        text = _result_text(b)
        label = "**Tool error**" if b.is_error else "**Tool result**"
        if full:
            kind = "Tool error" if b.is_error else "Tool result"
            return _details(f"{kind} ({len(text.splitlines()) or 1} lines)", _fence(text))
        return f"{label}: {_code(one_line(text, 100))}{_lines_note(text)}"
    if isinstance(b, FileChange):
        head = f"**File change** `{b.path or '?'}`"
        return head + ("\n\n" + _fence(b.patch, "diff") if full and b.patch else "")
    if isinstance(b, WebSearch):
        return f"**Web search**: {b.query}"
    if isinstance(b, Attachment):
        where = b.uri or ""
        if b.data:
            raw = base64.b64decode(b.data, validate=False)
            where = f"sha256 {hashlib.sha256(raw).hexdigest()[:16]}, {len(raw):,} bytes in the archive"
        return f"*[{b.media_type or 'attachment'}{': ' + where if where else ''}]*"
    if isinstance(b, Unknown):
        return f"*[unknown block {b.source_type}]*" + ("\n\n" + _fence(_json(b.raw), "json") if full else "")
    return None


def _details(summary: str, body: str) -> str:
    """Folded in renderers that know <details> (GitHub, most Markdown viewers)."""
    return f"<details><summary>{summary}</summary>\n\n{body}\n\n</details>"


def thread_markdown(view: ThreadView, full: bool = False) -> Iterator[str]:
    s = view.summary
    yield f"# {s['label'] or '(untitled)'}"
    yield ""
    for k in ("id", "provider", "project", "model", "parent_thread_id", "first_ts", "last_ts", "messages", "total_tokens"):
        if s.get(k) not in (None, ""):
            yield f"- **{k}**: {s[k]}"
    for m in view.messages:
        yield ""
        yield f"## {m.role}{' (injected)' if _is_injected(m) else ''}" + (f" — {m.ts}" if m.ts else "")
        yield ""
        if _is_injected(m) and not full:
            text = _plain(m)
            yield f"*[injected context, {len(text):,} chars]*"
            continue
        parts = [p for p in (_md_block(b, full) for b in m.content) if p]
        yield "\n\n".join(parts)
    yield from _children_lines(view, md=True)


# ---------------------------------------------------------------- search hits and tables


def highlight(snippet: str, matches: Sequence[Sequence[int]]) -> str:
    out, pos = [], 0
    for start, end in matches:
        out.append(snippet[pos:start])
        out.append(click.style(snippet[start:end], fg="red", bold=True))
        pos = end
    out.append(snippet[pos:])
    return " ".join("".join(out).split())


def search_hits(hits: Iterable[dict[str, Any]]) -> Iterator[str]:
    for h in hits:
        where = f"{h['block_type']}{' ' + h['tool_name'] if h['tool_name'] else ''}"
        yield (
            click.style(h["thread_id"], fg="blue")
            + f"  {click.style(h['role'], fg=ROLE_COLOURS.get(h['role']))}  {_time(h['ts'])}  "
            + click.style(f"[{where}]  {one_line(h['thread_title'], 60)}", dim=True)
        )
        yield "    " + highlight(h["snippet"], h["matches"])


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[str]:
    """Columns padded to their widest cell; numbers right-aligned, the last column unpadded."""
    raw = [[_cell(v) for v in r] for r in rows]
    widths = [max([len(headers[i])] + [len(r[i]) for r in raw]) for i in range(len(headers))]
    right = [bool(raw) and all(re.fullmatch(r"-?[\d,.$]*[%*]?", r[i]) for r in raw) for i in range(len(headers))]

    def fmt(r: Sequence[str]) -> str:
        parts = []
        for i, v in enumerate(r):
            last = i == len(r) - 1
            parts.append(v if last and not right[i] else (v.rjust(widths[i]) if right[i] else v.ljust(widths[i])))
        return "  ".join(parts).rstrip()

    yield click.style(fmt(list(headers)), bold=True)
    for r in raw:
        yield fmt(r)


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.4f}"
    return str(v)
