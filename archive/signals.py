"""Signals per thread: how a session went, in figures (``thread_signals``, kept current by
``archive/derived.py``; documented in docs/signals.md).

Definitions (over the thread's own messages in conversation order; a subagent is its own
thread):

* ``tool_calls``: tool-call blocks. ``tool_errors``: tool results marked as errors.
* ``retries``: tool calls with the same tool name and the same input as the tool call just
  before them in the thread.
* ``same_file_edits``: changes (``file_touches`` action ``changed``) of a file after its
  first change in the thread: a file edited three times counts 2.
* ``compactions`` and ``interrupted_turns``: messages the adapter marks as such
  (``Adapter.message_signal``).
* ``ending``: ``completed`` when the last conversation message (not injected context) is
  the assistant's, with text, and every tool call before it has its result; ``errored`` when
  the last tool result is an error and no assistant text follows it; ``open`` otherwise.
  The **outcome** reads ``open`` against the clock (``OUTCOME_SQL``): ``running`` while the
  last message is under ``RUNNING_MINUTES`` old, ``abandoned`` after.
* ``duration_seconds``: last message time minus first. ``active_seconds``: the sum of the
  gaps between consecutive message times that are at most ``IDLE_SECONDS``; longer gaps are
  the user away.

Invariants: pure over the rows given (no clock: the outcome's clock is applied when read),
so a rebuild gives the same figures.
"""

from __future__ import annotations

import datetime as dt
import orjson
from collections import Counter
from collections.abc import Mapping
from typing import Any

from .sql_dialect import SQLITE, Dialect

IDLE_SECONDS = 300
RUNNING_MINUTES = 30
OUTCOMES = ("completed", "errored", "abandoned", "running")
SIGNAL_FIELDS = ("tool_calls", "tool_errors", "retries", "same_file_edits", "compactions", "interrupted_turns",
                 "duration_seconds", "active_seconds")  # fmt: skip


def outcome_sql(alias: str = "s", d: Dialect = SQLITE) -> str:
    """SQL for a thread's outcome from its ``thread_signals`` row ``alias`` (in the local
    archive or the team database: ``d``)."""
    return (f"CASE {alias}.ending WHEN 'completed' THEN 'completed' WHEN 'errored' THEN 'errored' "
            f"WHEN 'open' THEN CASE WHEN {d.since_minutes_ago(f'{alias}.last_ts', RUNNING_MINUTES)} "
            f"THEN 'running' ELSE 'abandoned' END END")  # fmt: skip


OUTCOME_SQL = outcome_sql()


def _time(ts: str | None) -> dt.datetime | None:
    if not ts:
        return None
    try:
        t = dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc)


def compute(messages: list[tuple[Any, ...]], blocks: list[tuple[Any, ...]], touches: list[tuple[Any, ...]],
            signal_of: Any) -> dict[str, Any]:  # fmt: skip
    """The signals of one thread.

    ``messages``: ``(id, role, ts, injected, extra JSON, first text)`` in order; ``blocks``:
    ``(message_id, type, tool_name, input digest, call_id, is_error, has_text)`` in order;
    ``touches``: ``file_touches`` rows as ``file_index.touches`` gives them; ``signal_of``:
    the adapter's ``message_signal``."""
    calls = errors = retries = 0
    prev_call: tuple[Any, Any] | None = None
    open_calls: set[str] = set()
    last_error_pos = last_text_pos = -1
    for i, (_mid, btype, name, inp, call_id, is_error, has_text) in enumerate(blocks):
        if btype == "tool_call":
            calls += 1
            if prev_call == (name, inp):
                retries += 1
            prev_call = (name, inp)
            if call_id:
                open_calls.add(call_id)
        elif btype == "tool_result":
            if call_id:
                open_calls.discard(call_id)
            if is_error:
                errors += 1
                last_error_pos = i
        elif btype == "text" and has_text:
            last_text_pos = i
    changed = Counter(t[4] for t in touches if t[6] == "changed")
    counts: Counter[str] = Counter()
    times = []
    last_conv: tuple[Any, ...] | None = None
    for mid, role, ts, injected, extra, text in messages:
        x: Mapping[str, Any] = {}
        if signal_of and extra and extra != "{}":  # only the adapter reads it
            try:
                loaded = orjson.loads(extra)
                x = loaded if isinstance(loaded, dict) else {}
            except ValueError:
                x = {}
        kind = signal_of(role, text, x) if signal_of else None
        if kind:
            counts[kind] += 1
        t = _time(ts)
        if t is not None:
            times.append(t)
        if not injected and role in ("user", "assistant") and kind is None:
            last_conv = (mid, role, text)
    last_block_msg = {b[0] for b in blocks if b[1] == "text" and b[6]}
    if last_error_pos > last_text_pos:
        ending = "errored"
    elif (last_conv is not None and last_conv[1] == "assistant" and last_conv[0] in last_block_msg
          and not open_calls):  # fmt: skip
        ending = "completed"
    else:
        ending = "open"
    times.sort()
    active = 0.0
    for a, b in zip(times, times[1:]):
        gap = (b - a).total_seconds()
        if 0 < gap <= IDLE_SECONDS:
            active += gap
    return {
        "tool_calls": calls,
        "tool_errors": errors,
        "retries": retries,
        "same_file_edits": sum(n - 1 for n in changed.values() if n > 1),
        "compactions": counts["compaction"],
        "interrupted_turns": counts["interrupted"],
        "ending": ending,
        "first_ts": min((m[2] for m in messages if m[2]), default=None),
        "last_ts": max((m[2] for m in messages if m[2]), default=None),
        "duration_seconds": round((times[-1] - times[0]).total_seconds(), 3) if times else None,
        "active_seconds": round(active, 3) if times else None,
    }
