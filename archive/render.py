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
import datetime as dt
import difflib
import functools
import hashlib
import html
import re
import textwrap
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
from .thread_view import ThreadView

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


def local_time(ts: str | None, tz: str | None = None) -> str:
    """``YYYY-MM-DD HH:MM:SS`` of a recorded (UTC) timestamp in zone ``tz`` (None: as recorded)."""
    if not ts or not tz:
        return _time(ts)
    try:
        t = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return _time(ts)
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t.astimezone(_zone(tz)).strftime("%Y-%m-%d %H:%M:%S")


@functools.lru_cache(maxsize=8)
def _zone(tz: str) -> dt.tzinfo:
    from .queries import zone

    return zone(tz)


def _wrap(text: str, width: int | None, indent: str = "") -> list[str]:
    """``text`` cut into lines no wider than ``width`` (None: as is), each line of the text
    wrapped on its own (blank lines and leading indentation kept)."""
    if width is None:
        return [indent + text.replace("\n", "\n" + indent) if indent else text]
    out: list[str] = []
    for line in text.split("\n"):
        room = max(width - len(indent), 20)
        if len(line) <= room:
            out.append(indent + line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out += [indent + w for w in textwrap.wrap(line, room, subsequent_indent=lead, break_on_hyphens=False,
                                                  drop_whitespace=True) or [""]]  # fmt: skip
    return out


_FOLDED_DIFF_LINES = 12


def _diff_style(line: str) -> str:
    if line.startswith("+") and not line.startswith("+++"):
        return click.style(line, fg="green")
    if line.startswith("-") and not line.startswith("---"):
        return click.style(line, fg="red")
    if line.startswith(("@@", "***")):
        return click.style(line, fg="cyan")
    return click.style(line, dim=True)


def _unified(old: str, new: str) -> list[str]:
    return [d for d in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2)
            if not d.startswith(("---", "+++"))]  # fmt: skip


def _patch_text(value: Any) -> str | None:
    """The patch an apply_patch-style call carries (a string, or the one string field that
    holds ``*** Begin Patch`` or a unified diff)."""
    candidates = [value] if isinstance(value, str) else []
    if isinstance(value, dict):
        candidates += [v for v in value.values() if isinstance(v, str)]
        candidates += [x for v in value.values() if isinstance(v, list) for x in v if isinstance(x, str)]
    for c in candidates:
        if "*** Begin Patch" in c or c.startswith(("--- ", "diff --git", "@@ ")):
            return c
    return None


def edit_diff(b: ToolCall, kind: str | None) -> tuple[str, list[str]] | None:
    """(path, diff lines) when the call edits a file: old/new string pairs (one or a list of
    them), a whole file written (kind ``edit`` with ``content``), or a patch. Else None."""
    inp = b.input
    if isinstance(inp, dict):
        path = str(inp.get("file_path") or inp.get("path") or inp.get("filePath") or inp.get("notebook_path") or "")
        # Claude Code, Gemini and Qwen: old_string/new_string; Copilot CLI: old_str/new_str; pi: oldText/newText
        for old, new in (("old_string", "new_string"), ("old_str", "new_str"), ("oldText", "newText")):
            if isinstance(inp.get(old), str) and isinstance(inp.get(new), str):
                return path, _unified(inp[old], inp[new])
        if isinstance(inp.get("edits"), list):
            lines: list[str] = []
            for e in inp["edits"]:
                if isinstance(e, dict) and isinstance(e.get("old_string"), str) and isinstance(e.get("new_string"), str):
                    lines += _unified(e["old_string"], e["new_string"])
            return path, lines
        if kind == "edit" and isinstance(inp.get("content"), str):
            return path, ["+" + line for line in inp["content"].splitlines()]
    patch = _patch_text(inp)
    if patch is not None:
        files = re.findall(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", patch, re.MULTILINE)
        return ", ".join(files), patch.splitlines()
    return None


def _diff_lines(path: str, lines: list[str], name: str, full: bool) -> Iterator[str]:
    yield click.style(f"▸ {name} ", fg="yellow", bold=True) + click.style(path or "(file)", fg="blue")
    shown = lines if full else lines[:_FOLDED_DIFF_LINES]
    for line in shown:
        yield "  " + _diff_style(line)
    if len(lines) > len(shown):
        yield click.style(f"  … {len(lines) - len(shown)} more diff lines (--full)", dim=True)


def _text_block(b: Block, full: bool, width: int | None = None, kind: str | None = None,
                call_name: str | None = None) -> Iterator[str]:  # fmt: skip
    w = width or WIDTH
    if isinstance(b, Text):
        yield from _wrap(b.text, width)
    elif isinstance(b, Reasoning):
        body = b.text or ("[redacted]" if b.redacted else "")
        if full:
            yield click.style("thinking:", dim=True, italic=True)
            for line in _wrap(body, width):
                yield click.style(line, dim=True, italic=True)
        else:
            yield click.style(f"∴ {one_line(body, w - 2) or '(reasoning)'}", dim=True, italic=True)
    elif isinstance(b, ToolCall):
        diff = edit_diff(b, kind)
        if diff is not None:
            yield from _diff_lines(diff[0], diff[1], b.name, full)
        elif full:
            yield click.style(f"▸ {b.name}", fg="yellow", bold=True) + click.style(f"  [{b.call_id}]", dim=True)
            for line in _wrap(_json(b.input), width):
                yield click.style(line, fg="yellow")
        else:
            yield click.style(f"▸ {b.name} ", fg="yellow", bold=True) + click.style(
                one_line(_json(b.input, indent=False), max(w - len(b.name) - 3, 20)), fg="yellow"
            )
    elif isinstance(b, ToolResult):
        # printed right under its call, indented, named after it (results of parallel calls
        # arrive together, after all the calls)
        text = _result_text(b)
        colour = "red" if b.is_error else None
        mark = ("◂ error" if b.is_error else "◂") + (f" {call_name}" if call_name else "")
        if full:
            yield "  " + click.style(mark, fg=colour or "yellow", bold=True) + click.style(f"  [{b.call_id}]", dim=True)
            for line in _wrap(text, width, indent="    "):
                yield click.style(line, fg=colour)
        else:
            note = _lines_note(text)
            body = one_line(text, max(w - len(note) - len(mark) - 4, 20))
            yield "  " + click.style(f"{mark}: {body}{note}" if call_name else f"{mark} {body}{note}",
                                     fg=colour, dim=not b.is_error)  # fmt: skip
    elif isinstance(b, FileChange):
        lines = (b.patch or "").splitlines()
        yield click.style(f"± {b.path or '(file change)'}", fg="blue")
        for line in lines if full else lines[:_FOLDED_DIFF_LINES]:
            yield "  " + _diff_style(line)
        if not full and len(lines) > _FOLDED_DIFF_LINES:
            yield click.style(f"  … {len(lines) - _FOLDED_DIFF_LINES} more diff lines (--full)", dim=True)
    elif isinstance(b, WebSearch):
        yield click.style(f"⌕ web search: {b.query}", fg="blue")
    elif isinstance(b, Attachment):
        size = f", {len(b.data) * 3 // 4:,} bytes" if b.data else ""
        yield click.style(f"[attachment {b.media_type or '?'}{size}{', ' + b.uri if b.uri else ''}]", fg="blue")
    elif isinstance(b, Unknown):
        yield click.style(f"[unknown block {b.source_type}]", dim=True)
        if full:
            yield click.style(_json(b.raw), dim=True)


def _header_lines(view: ThreadView, tz: str | None = None) -> list[str]:
    s = view.summary
    out = [click.style(s["label"] or "(untitled)", bold=True)]
    zone = f" ({tz})" if tz else ""
    fork = s.get("forked_from")
    inherited = (f"{s['inherited_messages']:,} messages, {s['inherited_tokens']:,} tokens (counted in {fork})"
                 if fork else None)  # fmt: skip
    facts = [("id", s["id"]), ("provider", s["provider"]), ("project", s["project"]), ("model", s["model"]),
             ("handed off from" if s.get("lineage") == "handoff" else "forked from",
              f"{fork} at {view.thread.origin_message_id}" if fork else None), ("inherited", inherited),
             ("parent", None if fork else s["parent_thread_id"]), ("origin", None if fork else view.thread.origin_message_id),
             ("saved copy of", "{} at {}".format(*s["saved_copy_of"]) if s.get("saved_copy_of") else None),
             ("saved copies", ", ".join(f"{c} (at {m})" for c, m in s.get("saved_copies") or ()) or None),
             ("started", local_time(s["first_ts"] or s["created_at"], tz) + zone),
             ("last", local_time(s["last_ts"], tz) + zone if s["last_ts"] else None),
             ("messages", f"{s['messages']:,}" + (" own" if fork else "")),
             ("tokens", f"{s['total_tokens']:,}" + (" own" if fork else ""))]  # fmt: skip
    out += [click.style(f"{k}: ", dim=True) + str(v) for k, v in facts if v not in (None, "", zone)]
    return out


def _lineage_word(row: dict[str, Any]) -> str:
    return "hand-off" if row.get("lineage") == "handoff" else "fork"


def _children_lines(view: ThreadView, md: bool = False) -> list[str]:
    if not view.children:
        return []
    out = ["", (f"## Child threads ({len(view.children)})" if md else click.style(f"child threads ({len(view.children)}):", bold=True))]
    for c in view.children:
        # named as `threads` names it; a fork's or hand-off's count is its own, its history inherited
        kind = _lineage_word(c) if c.get("forked_from") == view.thread.id else ""
        count = f"{kind}, {c['messages']} own messages" if kind else f"{c['messages']} messages"
        line = f"{c['id']}  {count}  {one_line(c['label'], 70)}"
        out.append(f"- `{c['id']}` {count} {one_line(c['label'], 70)}" if md else "  " + line)
    return out


def thread_text(view: ThreadView, full: bool = False, tz: str | None = None, width: int | None = None) -> Iterator[str]:
    """The thread as terminal lines, produced while its messages are read (streams).

    Tool results come right under their call (named after it); edits are coloured diffs;
    text is wrapped to ``width`` (None: not wrapped); times are in ``tz``."""
    from .queries import tool_kind

    provider = view.summary.get("provider")
    pending: dict[str, str] = {}  # call id -> tool name, until its result is shown
    diffed: set[str] = set()  # files whose edit was just shown as a diff with its call
    yield from _header_lines(view, tz)
    for m in view.messages:
        injected = _is_injected(m)
        if m.content and all(isinstance(b, (ToolResult, FileChange)) for b in m.content) and any(
                isinstance(b, ToolResult) for b in m.content):  # fmt: skip
            # a result message: no header of its own, it belongs under the call
            for b in m.content:
                if isinstance(b, ToolResult):
                    yield from _text_block(b, full, width, call_name=pending.pop(b.call_id, None))
                elif full or not _seen(b.path, diffed):  # type: ignore[union-attr]
                    yield from _text_block(b, full, width)
            diffed.clear()
            continue
        head = f"── {m.role}" + (" (injected)" if injected else "") + f"  {local_time(m.ts, tz)} "
        yield ""
        yield click.style(head + "─" * max(3, 40 - len(head)), fg=ROLE_COLOURS.get(m.role), bold=True)
        if injected and not full:
            text = _plain(m)
            yield click.style(f"[injected context, {len(text):,} chars] {one_line(text, 70)}", dim=True)
            continue
        for b in m.content:
            if isinstance(b, ToolCall):
                if len(pending) > 10_000:  # calls that never got a result must not pile up
                    pending.clear()
                pending[b.call_id] = b.name
                kind = tool_kind(provider, b.name)
                diff = edit_diff(b, kind)
                if diff is not None:
                    diffed.update(p.strip() for p in diff[0].split(",") if p.strip())
                yield from _text_block(b, full, width, kind=kind)
            elif isinstance(b, ToolResult):
                yield from _text_block(b, full, width, call_name=pending.pop(b.call_id, None))
            elif isinstance(b, FileChange) and not full and _seen(b.path, diffed):
                continue  # the same edit, already shown as its call's diff
            else:
                yield from _text_block(b, full, width)
    yield from _children_lines(view)


def _seen(path: str | None, diffed: set[str]) -> bool:
    """Was this file's edit just shown with its call? (Paths may be relative on one side.)"""
    if not path:
        return False
    return any(path == d or path.endswith("/" + d) or d.endswith("/" + path) for d in diffed)


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
    for k in ("id", "provider", "project", "model", "parent_thread_id", "forked_from", "lineage", "first_ts", "last_ts", "messages",
              "total_tokens", "inherited_messages", "inherited_tokens"):
        if s.get(k) not in (None, "") and not (k.startswith("inherited") and not s.get("forked_from")):
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


def search_hits(hits: Iterable[dict[str, Any]], tz: str | None = None) -> Iterator[str]:
    for h in hits:
        where = f"{h['block_type']}{' ' + h['tool_name'] if h['tool_name'] else ''}"
        yield (
            click.style(h["thread_id"], fg="blue")
            + f"  {click.style(h['role'], fg=ROLE_COLOURS.get(h['role']))}  {local_time(h['ts'], tz)}  "
            + click.style(f"[{where}]  {one_line(h['thread_title'], 60)}", dim=True)
        )
        yield "    " + highlight(h["snippet"], h["matches"])
        if h.get("also_in"):
            yield click.style("    also in (forks, hand-offs) " + ", ".join(h["also_in"]), dim=True)


def human_count(n: int | None) -> str:
    """12, 4.5k, 31k, 1.2M: a token count that fits six columns."""
    if n is None:
        return ""
    for size, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= size:
            v = n / size
            return f"{v:.1f}{unit}" if v < 10 else f"{v:.0f}{unit}"
    return str(n)


def threads_table(rows: Sequence[dict[str, Any]], shorts: dict[str, str], tz: str | None,
                  width: int = 100) -> Iterator[str]:  # fmt: skip
    """The ``threads`` listing fitted to ``width`` columns: short ids, local times, token
    counts like 31k, cost, and the label column cut to what is left (at least 12); the
    project (its last folder) only from 110 columns on. ``+N`` before a label: child
    threads (subagents) folded into this one."""
    from .projection import one_line as _one

    abbr = ""
    if tz:
        now = dt.datetime.now(dt.timezone.utc).astimezone(_zone(tz))
        abbr = now.tzname() or tz
    wide = width >= 110
    head = ["ID", f"LAST ({abbr})" if abbr else "LAST", "PROVIDER", "MSGS", "TOKENS", "COST"]
    body = []
    for r in rows:
        when = local_time(r["last_ts"] or r["created_at"], tz)[:16]
        cost = r.get("cost_usd")
        cost_s = "" if cost is None else (f"${cost:,.2f}" if cost >= 0.01 or cost == 0 else "<$0.01")
        if cost is not None and r.get("unpriced_models"):
            cost_s += "*"
        cells = [shorts.get(r["id"], r["id"]), when, r["provider"] or "", f"{r['messages']:,}",
                 human_count(r["total_tokens"]), cost_s]  # fmt: skip
        if wide:
            cells.append(_short_path(r.get("project")))
        kids = f"+{r['children']} " if r.get("children") else ""
        kind = _lineage_word(r)
        fork = f"({kind} of {shorts.get(r['forked_from'], r['forked_from'])}) " if r.get("forked_from") else ""
        cells.append(kids + fork + (r.get("label") or ""))
        body.append(cells)
    if wide:
        head.append("PROJECT")
    head.append("LABEL")
    widths = [max([len(head[i])] + [len(c[i]) for c in body]) for i in range(len(head) - 1)]
    room = max(width - sum(widths) - 2 * (len(widths)), 12)
    right = {3, 4, 5}
    yield click.style("  ".join([h.rjust(widths[i]) if i in right else h.ljust(widths[i])
                                 for i, h in enumerate(head[:-1])] + [head[-1]]).rstrip(), bold=True)  # fmt: skip
    for c in body:
        label = _one(c[-1], room)
        yield "  ".join([v.rjust(widths[i]) if i in right else v.ljust(widths[i])
                         for i, v in enumerate(c[:-1])] + [label]).rstrip()  # fmt: skip


def _short_path(p: str | None, width: int = 20) -> str:
    if not p:
        return ""
    last = p.rstrip("/").rsplit("/", 1)[-1] or p
    return last if len(last) <= width else "…" + last[-(width - 1):]


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
