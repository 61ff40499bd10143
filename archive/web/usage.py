"""The usage dashboard: activity, tokens and cost per day, model and project, top sessions.

Invariants:

* Figures come from ``usage_totals`` (one row per thread, day and model; the four
  disjoint token buckets), so each model response is counted once; cost is priced per
  model with ``archive.pricing`` and is None (shown as "no price") for unpriced models.
* Charts are SVG drawn here on the server: no script, no external request, every label
  escaped. Days are UTC days (the vendors record UTC).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from typing import Any

from markupsafe import Markup, escape

from ..pricing import PriceTable, cost
from ..queries import first_prompts
from .conversation import NO_MODEL

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
BUCKET_COLOURS = {"input_tokens": "#4e79a7", "cache_read_tokens": "#a0cbe8", "cache_write_tokens": "#f28e2b",
                  "output_tokens": "#59a14f"}  # fmt: skip


def _day(value: str) -> str:
    return dt.date.fromisoformat(value).isoformat()


def dashboard(conn: sqlite3.Connection, prices: PriceTable, since: str = "", until: str = "") -> dict[str, Any]:
    """Per-day, per-model, per-project and per-session figures between ``since`` and ``until`` (days, inclusive)."""
    where, params = ["u.day != ''"], []
    if since:
        where.append("u.day >= ?")
        params.append(_day(since))
    if until:
        where.append("u.day <= ?")
        params.append(_day(until))
    sums = ", ".join(f"sum(u.{f}) AS {f}" for f in TOKEN_FIELDS)
    rows = conn.execute(
        f"""SELECT u.day, u.model, coalesce(t.cwd, p.cwd) AS project, coalesce(t.parent_thread_id, t.id) AS root,
                   sum(u.responses) AS responses, {sums}
            FROM usage_totals u LEFT JOIN threads t ON t.id = u.thread_id LEFT JOIN threads p ON p.id = t.parent_thread_id
            WHERE {' AND '.join(where)} GROUP BY 1, 2, 3, 4""",
        params,
    ).fetchall()
    days: dict[str, dict[str, Any]] = {}
    models: dict[str, dict[str, Any]] = {}
    projects: dict[str, dict[str, Any]] = {}
    sessions: dict[str, dict[str, Any]] = {}
    total = _group()
    unpriced: set[str] = set()
    for day, model, project, root, responses, *toks in rows:
        hit = prices.lookup(model or None)
        c = cost(hit[1], *toks) if hit else None
        if hit is None and any(toks):
            unpriced.add(model or NO_MODEL)
        for g in (days.setdefault(day, _group()), models.setdefault(model or "(unknown)", _group()),
                  projects.setdefault(project or "(no project)", _group()), sessions.setdefault(root, _group()), total):  # fmt: skip
            g["responses"] += responses
            for f, v in zip(TOKEN_FIELDS, toks):
                g[f] += v or 0
            if c is not None:
                g["cost"] = (g["cost"] or 0.0) + c
    for g in (*days.values(), *models.values(), *projects.values(), *sessions.values(), total):
        g["tokens"] = sum(g[f] for f in TOKEN_FIELDS)
    top = sorted(sessions.items(), key=lambda kv: (-(kv[1]["cost"] or 0.0), -kv[1]["tokens"], kv[0] or ""))[:15]
    ids = [k for k, _ in top if k]
    titles = dict(conn.execute("SELECT id, title FROM threads WHERE id IN (SELECT value FROM json_each(?))",
                               (json.dumps(ids),)).fetchall())  # fmt: skip
    labels = first_prompts(conn, [i for i in ids if not titles.get(i)], width=90)
    return {
        "days": sorted(days.items()),
        "models": sorted(models.items(), key=lambda kv: (-(kv[1]["cost"] or 0.0), -kv[1]["tokens"], kv[0])),
        "projects": sorted(projects.items(), key=lambda kv: (-(kv[1]["cost"] or 0.0), -kv[1]["tokens"], kv[0]))[:15],
        "top": [{"id": k, "label": titles.get(k) or labels.get(k) or k, **g} for k, g in top],
        "total": total,
        "unpriced": sorted(unpriced),
    }


def _group() -> dict[str, Any]:
    return {"responses": 0, "cost": None, **{f: 0 for f in TOKEN_FIELDS}}  # cost: None until a priced model adds to it


def human(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}" if float(n).is_integer() else f"{n:.2f}"


# ---------------------------------------------------------------- SVG


def day_bars(days: list[tuple[str, dict[str, Any]]], value: str, title: str, unit: str = "") -> Markup:
    """Bars over the whole span (empty days included; a bar a week beyond 120 days), stacked
    token buckets when ``value`` is "tokens"."""
    if not days:
        return Markup('<p class="sesh-meta">No usage in this range.</p>')
    # the chart's title (what a screen reader and a hover say) names the bar width too
    by_day = dict(days)
    first, last = dt.date.fromisoformat(days[0][0]), dt.date.fromisoformat(days[-1][0])
    step_days = 1 if (last - first).days <= 120 else 7  # beyond four months, a bar a week (from Monday)
    if step_days == 7:
        first -= dt.timedelta(days=first.weekday())
        weeks: dict[str, dict[str, Any]] = {}
        for d, g in days:
            day = dt.date.fromisoformat(d)
            w = weeks.setdefault((day - dt.timedelta(days=day.weekday())).isoformat(), _group())
            for k in ("responses", *TOKEN_FIELDS):
                w[k] += g[k]
            if g["cost"] is not None:
                w["cost"] = (w["cost"] or 0.0) + g["cost"]
            w["tokens"] = w.get("tokens", 0) + g["tokens"]
        by_day = weeks
    span = [(first + dt.timedelta(d)).isoformat() for d in range(0, (last - first).days + 1, step_days)]
    title += " (a bar a week, from Monday)" if step_days == 7 else " (a bar a day)"
    w, h, left, bottom = 900, 220, 56, 24
    bw = (w - left - 4) / len(span)
    peak = max(((by_day[d][value] or 0) if d in by_day else 0) for d in span) or 1
    parts = [f'<svg class="sesh-chart" role="img" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(title)}</title>"]  # fmt: skip
    for frac in (0, 0.5, 1):
        y = h - bottom - frac * (h - bottom - 10)
        parts.append(f'<line x1="{left}" x2="{w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" font-size="11" fill="#555">'
                     f"{escape(unit)}{escape(human(peak * frac))}</text>")  # fmt: skip
    for i, d in enumerate(span):
        g = by_day.get(d)
        x = left + i * bw
        if g:
            stacks = [(f, g[f]) for f in ("input_tokens", "cache_write_tokens", "cache_read_tokens", "output_tokens")] \
                if value == "tokens" else [("cost", g[value] or 0.0)]  # fmt: skip
            y = h - bottom
            for f, v in stacks:
                bh = v / peak * (h - bottom - 10)
                y -= bh
                colour = BUCKET_COLOURS.get(f, "#e15759")
                when = f"week of {d}" if step_days == 7 else d
                tip = f"{when}: {unit}{v:,.2f}" if value == "cost" else f"{when} {f.replace('_', ' ')}: {v:,}"
                parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(bw - 1, 1):.1f}" height="{bh:.1f}" '
                             f'fill="{colour}"><title>{escape(tip)}</title></rect>')  # fmt: skip
    step = max(1, len(span) // 8)
    for i in range(0, len(span), step):
        x = left + i * bw
        label = str(span[i])
        # a label that would run past the right edge ends at the edge instead ("2026-" was all
        # that showed of the last date); 11px digits are about 6.6px wide
        if x + len(label) * 6.6 > w - 2:
            parts.append(f'<text x="{w - 2}" y="{h - 6}" text-anchor="end" font-size="11" fill="#555">{label}</text>')
        else:
            parts.append(f'<text x="{x:.1f}" y="{h - 6}" font-size="11" fill="#555">{label}</text>')
    parts.append(f'<text x="{w - 4}" y="12" text-anchor="end" font-size="11" fill="#777">{escape(title)}</text></svg>')
    return Markup("".join(parts))


def hbars(items: list[tuple[str, float]], title: str, fmt: Any = human) -> Markup:
    """Horizontal bars with labels (models, projects, sessions)."""
    if not items:
        return Markup('<p class="sesh-meta">Nothing to show.</p>')
    w, row, left = 900, 22, 330
    h = row * len(items) + 8
    peak = max(v or 0 for _, v in items) or 1
    parts = [f'<svg class="sesh-chart" role="img" viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">',
             f"<title>{escape(title)}</title>"]  # fmt: skip
    for i, (label, shown) in enumerate(items):
        v = shown or 0  # None: no price; drawn as nothing, labelled by fmt
        y = 4 + i * row
        short = label if len(label) <= 48 else "…" + label[-47:]
        bw = v / peak * (w - left - 90)
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end" font-size="12" fill="#333">{escape(short)}'
                     f"<title>{escape(label)}</title></text>"
                     f'<rect x="{left}" y="{y + 3}" width="{max(bw, 1):.1f}" height="{row - 6}" fill="#4e79a7"/>'
                     f'<text x="{left + bw + 6:.1f}" y="{y + 15}" font-size="12" fill="#333">{escape(fmt(shown))}</text>')  # fmt: skip
    parts.append("</svg>")
    return Markup("".join(parts))


def heatmap(days: list[tuple[str, dict[str, Any]]], title: str) -> Markup:
    """A calendar of model responses per day: one column a week, Monday on top (UTC days)."""
    if not days:
        return Markup("")
    by_day = {d: g["responses"] for d, g in days}
    last = dt.date.fromisoformat(days[-1][0])
    first = max(dt.date.fromisoformat(days[0][0]), last - dt.timedelta(days=370))
    start = first - dt.timedelta(days=first.weekday())
    weeks = (last - start).days // 7 + 1
    cell, left, top = 13, 30, 18
    w, h = left + weeks * cell + 4, top + 7 * cell + 4
    peak = max(by_day.values()) or 1
    shades = ("#ebedf0", "#c6e48b", "#7bc96f", "#239a3b", "#196127")
    parts = [f'<svg class="sesh-chart sesh-heatmap" role="img" viewBox="0 0 {w} {h}" width="{w}" height="{h}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>']  # fmt: skip
    for i, name in ((0, "Mon"), (2, "Wed"), (4, "Fri")):
        parts.append(f'<text x="0" y="{top + i * cell + 10}" font-size="10" fill="#555">{name}</text>')
    d = start
    while d <= last:
        n = by_day.get(d.isoformat(), 0)
        col, rowi = (d - start).days // 7, d.weekday()
        if d.day == 1:
            parts.append(f'<text x="{left + col * cell}" y="12" font-size="10" fill="#555">{d.strftime("%b")}</text>')
        level = 0 if n == 0 else 1 + min(3, int(4 * n / (peak + 1)))
        if d >= first:
            parts.append(f'<rect x="{left + col * cell}" y="{top + rowi * cell}" width="{cell - 2}" height="{cell - 2}" '
                         f'fill="{shades[level]}"><title>{d.isoformat()}: {n:,} responses</title></rect>')  # fmt: skip
        d += dt.timedelta(days=1)
    parts.append("</svg>")
    return Markup("".join(parts))
