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
  the last tool result is an error and no assistant text follows it; ``log`` when every
  message is one the adapter marks as a log's entry (``log``: a prompt log, the prompts of a
  session kept apart from its answers), which is not a conversation and has no outcome;
  ``open`` otherwise.
  The **outcome** reads ``open`` against the clock (``OUTCOME_SQL``): ``running`` while the
  last message is under ``RUNNING_MINUTES`` old, ``abandoned`` after; a ``log`` has none.
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
from collections.abc import Iterable, Mapping
from typing import Any

from .sql_dialect import SQLITE, Dialect

IDLE_SECONDS = 300
RUNNING_MINUTES = 30
OUTCOMES = ("completed", "errored", "abandoned", "running")
SIGNAL_FIELDS = ("tool_calls", "tool_errors", "retries", "same_file_edits", "compactions", "interrupted_turns",
                 "duration_seconds", "active_seconds")  # fmt: skip


def outcome_sql(alias: str = "s", d: Dialect = SQLITE) -> str:
    """SQL for a thread's outcome from its ``thread_signals`` row ``alias`` (in the local
    archive or the team database: ``d``); NULL for a ``log``."""
    return (f"CASE {alias}.ending WHEN 'completed' THEN 'completed' WHEN 'errored' THEN 'errored' "
            f"WHEN 'open' THEN CASE WHEN {d.since_minutes_ago(f'{alias}.last_ts', RUNNING_MINUTES)} "
            f"THEN 'running' ELSE 'abandoned' END END")  # fmt: skip


OUTCOME_SQL = outcome_sql()


def utc_time(ts: str | None) -> dt.datetime | None:
    """A recorded time as an aware datetime (a time without a zone read as UTC), or None."""
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
    tally = Tally(signal_of)
    with_text: set[Any] = set()
    for mid, btype, name, inp, call_id, is_error, has_text in blocks:
        tally.block(btype, name, inp, call_id, is_error, has_text)
        if btype == "text" and has_text:
            with_text.add(mid)
    for mid, role, ts, injected, extra, text in messages:
        tally.message(role, ts, injected, extra, text, mid in with_text)
    return tally.result(changed_paths(touches))


def changed_paths(touches: Iterable[tuple[Any, ...]], into: Counter[str] | None = None) -> Counter[str]:
    """How many times each path was changed, from ``file_touches`` rows without the thread id
    (``file_index.touches``), added to ``into`` when given."""
    changed: Counter[str] = Counter() if into is None else into
    changed.update(t[4] for t in touches if t[6] == "changed")
    return changed


class Tally:
    """The signals of one thread read in one pass (``archive/derived.py``): its blocks in
    order (``block``) and its messages in order (``message``), in any interleaving of the
    two; ``result`` gives what ``compute`` gives for the same rows. ``inp`` is anything that
    is equal for equal inputs (the input's text, or its digest)."""

    __slots__ = ("signal_of", "calls", "errors", "retries", "prev_call", "open_calls", "pos", "last_error_pos",
                 "last_text_pos", "counts", "times", "last_conv", "first_ts", "last_ts")  # fmt: skip

    def __init__(self, signal_of: Any) -> None:
        self.signal_of = signal_of
        self.calls = self.errors = self.retries = 0
        self.prev_call: tuple[Any, Any] | None = None
        self.open_calls: set[str] = set()
        self.pos = 0
        self.last_error_pos = self.last_text_pos = -1
        self.counts: Counter[str] = Counter()
        self.times: list[dt.datetime] = []
        self.last_conv: tuple[str, bool] | None = None  # the last conversation message: role, has text
        self.first_ts: str | None = None
        self.last_ts: str | None = None

    def block(self, btype: str, name: Any, inp: Any, call_id: Any, is_error: Any, has_text: bool) -> None:
        i = self.pos
        self.pos = i + 1
        if btype == "tool_call":
            self.calls += 1
            if self.prev_call == (name, inp):
                self.retries += 1
            self.prev_call = (name, inp)
            if call_id:
                self.open_calls.add(call_id)
        elif btype == "tool_result":
            if call_id:
                self.open_calls.discard(call_id)
            if is_error:
                self.errors += 1
                self.last_error_pos = i
        elif btype == "text" and has_text:
            self.last_text_pos = i

    def message(self, role: str, ts: str | None, injected: Any, extra: str | None, text: str | None,
                has_text: bool) -> None:  # fmt: skip
        """One message: ``text`` its first text (what the adapter reads), ``has_text`` whether
        one of its text blocks holds more than whitespace."""
        signal_of = self.signal_of
        kind = None
        if signal_of:
            x: Mapping[str, Any] = {}
            if extra and extra != "{}":  # only the adapter reads it
                try:
                    loaded = orjson.loads(extra)
                    x = loaded if isinstance(loaded, dict) else {}
                except ValueError:
                    x = {}
            kind = signal_of(role, text, x)
            if kind:
                self.counts[kind] += 1
        if ts:
            if self.first_ts is None or ts < self.first_ts:
                self.first_ts = ts
            if self.last_ts is None or ts > self.last_ts:
                self.last_ts = ts
            t = utc_time(ts)
            if t is not None:
                self._at(t)
        if not injected and role in ("user", "assistant") and kind is None:
            self.last_conv = (role, has_text)

    def _at(self, t: dt.datetime) -> None:
        self.times.append(t)

    def _span(self) -> tuple[float, float] | None:
        """Duration and active seconds (unrounded), None without a message time."""
        times = self.times
        if not times:
            return None
        times.sort()
        active = 0.0
        for a, b in zip(times, times[1:]):
            gap = (b - a).total_seconds()
            if 0 < gap <= IDLE_SECONDS:
                active += gap
        return (times[-1] - times[0]).total_seconds(), active

    def result(self, changed: Counter[str]) -> dict[str, Any]:
        """The thread's signals; ``changed``: how many times each path was changed
        (``changed_paths`` of its ``file_touches`` rows)."""
        last_conv = self.last_conv
        if last_conv is None and self.counts["log"] and self.calls == 0:
            ending = "log"
        elif self.last_error_pos > self.last_text_pos:
            ending = "errored"
        elif last_conv is not None and last_conv[0] == "assistant" and last_conv[1] and not self.open_calls:
            ending = "completed"
        else:
            ending = "open"
        span = self._span()
        return {
            "tool_calls": self.calls,
            "tool_errors": self.errors,
            "retries": self.retries,
            "same_file_edits": sum(n - 1 for n in changed.values() if n > 1),
            "compactions": self.counts["compaction"],
            "interrupted_turns": self.counts["interrupted"],
            "ending": ending,
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "duration_seconds": round(span[0], 3) if span else None,
            "active_seconds": round(span[1], 3) if span else None,
        }


class StreamTally(Tally):
    """A ``Tally`` whose message times come in order (``archive/derived.py``'s ``Live``):
    no list of them is kept, the gaps are summed as they come, in the order ``Tally`` sums
    them after its sort. A time before the one before it sets ``unordered`` (the figures
    are then not this thread's: its caller computes them again from the archive)."""

    __slots__ = ("t0", "t1", "active", "unordered")

    def __init__(self, signal_of: Any) -> None:
        super().__init__(signal_of)
        self.t0: dt.datetime | None = None
        self.t1: dt.datetime | None = None
        self.active = 0.0
        self.unordered = False

    def _at(self, t: dt.datetime) -> None:
        last = self.t1
        if last is None:
            self.t0 = self.t1 = t
            return
        gap = (t - last).total_seconds()
        if gap < 0:
            self.unordered = True
            return
        if 0 < gap <= IDLE_SECONDS:
            self.active += gap
        self.t1 = t

    def _span(self) -> tuple[float, float] | None:
        if self.t0 is None or self.t1 is None:
            return None
        return (self.t1 - self.t0).total_seconds(), self.active
