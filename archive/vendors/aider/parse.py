"""Aider chat histories (``<repo>/.aider.chat.history.md``), read as the Markdown lines
Aider appends (``aider/io.py``, checked with aider-chat 0.86.2):

* ``# aider chat started at <YYYY-MM-DD HH:MM:SS>`` (local time, no zone) opens a run. Each
  run is a thread, ``stable_id(source, heading offset)``; its ``createdAt`` is the heading's
  time as written (``YYYY-MM-DDTHH:MM:SS``, no zone: Aider writes none and none is invented).
  Messages carry no time (``ts`` None) and no id of their own: ids are
  ``stable_id(source, offset of the message's first line)``.
* ``#### <line>  `` lines are the user's input (a multi-line input is consecutive ``####``
  lines; ``<blank>`` is an empty one); ``> <line>  `` lines are Aider's status and tool
  output (role ``tool``: the banner, confirmations, command output, ``Applied edit to X``
  as a ``FileChange``); any other line is the model's reply (ends at the next ``####``,
  ``>`` or heading line; blank lines inside are its own). Reasoning is between
  ``<thinking-content-...>`` tags (``aider/reasoning_tags.py``) and becomes ``Reasoning``.
* The banner names the version (``Aider v0.86.2``) and model (``Model: <m> with <f> edit
  format``, ``Main model: ...``, ``Weak model: ...``): thread metadata. ``Tokens: N sent[, C
  cache write][, H cache hit], M received.`` after a reply is that reply's usage (Aider's
  figures are cumulative over one user message's requests and rounded to ``1.2k``/``12k``
  past 1,000: the buckets hold them as written, ``extra.approximate`` says when rounded,
  ``extra.vendor`` keeps the line). ``sent`` counts cached input too: ``input_tokens`` is
  sent minus cache writes minus cache hits.
* ``Restored previous conversation history.`` (``--restore-chat-history``): the run read the
  file's earlier runs as its context; ``metadata.restoredFrom`` names the run before it.
* A message spans lines, so each further line of it yields it again (``revises``) with its
  text so far; the parser holds at most ``TEXT_CAP`` characters of it: a longer message
  goes on as a new message of the same role (``extra.continues`` names the one before), so
  the state stays bounded.
* Emitted histories (``emit.py``) put a ``# seshArchive {json}`` line before each message
  (Aider's ``--restore-chat-history`` passes over ``# `` lines): ``m`` the archived message,
  ``t`` the thread (first mark), ``n`` and ``h`` the length and digest of the text written.
  The message is held (reported ``metadata``) until its text is complete, then yielded under
  ``m`` when the digest holds, else as the thread's own with a ``warning``.
* ``cwd`` is the folder of a file named exactly ``.aider.chat.history.md`` (Aider writes it
  at the git root); a file under any other name names no project.

Never raises on input; every non-blank line yields at least one row; resumable after any line.
"""

from __future__ import annotations

import os
import re
from typing import Any

import orjson

from ...model import FileChange, JsonObject, Message, Provenance, Reasoning, Text, Usage
from ..base import (
    METADATA,
    SKIPPED,
    WARNING,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    message_response_key,
    nonempty_str,
    prompt_report,
    stable_id,
)

NAME = "aider"
HISTORY_NAME = ".aider.chat.history.md"
INPUT_NAME = ".aider.input.history"
HEADING = "# aider chat started at "
MARK = "# seshArchive "
RESTORED = "Restored previous conversation history."  # aider/coders/base_coder.py, on --restore-chat-history
THINK_TAG = "thinking-content-7bbeb8e1441453ad999a0bbba8a46d4b"  # aider/reasoning_tags.py REASONING_TAG
TEXT_CAP = 6000  # characters of the current message held in the parser state

_HEADING_TS = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})\s*$")
_VERSION = re.compile(r"^Aider v(\S+)")
_MODEL = re.compile(r"^(?:Main model|Model): (\S+) with (.+?) edit format")
_WEAK = re.compile(r"^Weak model: (\S+)")
_EDITOR = re.compile(r"^Editor model: (\S+)")
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_NUM = r"([\d.,]+k?)"
_TOKENS = re.compile(
    rf"^Tokens: {_NUM} sent(?:, {_NUM} cache write)?(?:, {_NUM} cache hit)?, {_NUM} received\."
)
_ROLE = {"user": "user", "assistant": "assistant", "tool": "tool"}


def _tokens(text: str | None) -> tuple[int | None, bool]:
    """Aider's ``format_tokens``: ``999``, ``1.2k``, ``12k`` -> (int, rounded?)."""
    if not text:
        return None, False
    t = text.replace(",", "")
    try:
        return (round(float(t[:-1]) * 1000), True) if t.endswith("k") else (int(float(t)), False)
    except ValueError:
        return None, False


def usage_of(body: str) -> Usage | None:
    m = _TOKENS.match(body)
    if not m:
        return None
    (sent, r1), (write, r2), (hit, r3), (received, r4) = (_tokens(g) for g in m.groups())
    if sent is None or received is None:
        return None
    extra: JsonObject = {"vendor": body}
    if r1 or r2 or r3 or r4:
        extra["approximate"] = True
    return Usage(
        input_tokens=max(sent - (write or 0) - (hit or 0), 0), output_tokens=received,
        cache_read_tokens=hit or 0, cache_write_tokens=write or 0, extra=extra,
    )  # fmt: skip


def blocks_of(role: str, text: str, thinking: bool) -> tuple[list[Any], bool]:
    """The blocks of a message's text, and whether it ends inside a reasoning tag (a
    continuation of a long reply starts there)."""
    if role == "user":
        return [Text(text)], False
    if role == "tool":
        out: list[Any] = [Text(text)]
        for line in text.split("\n"):
            m = _APPLIED.match(line)
            if m:
                out.append(FileChange(path=m.group(1)))
        return out, False
    out = []
    open_tag, close_tag = f"<{THINK_TAG}>", f"</{THINK_TAG}>"
    rest = text
    while rest:
        if thinking:
            end = rest.find(close_tag)
            part = rest if end < 0 else rest[:end]
            if part.strip():
                out.append(Reasoning(part.strip("\n")))
            if end < 0:
                return out, True
            rest, thinking = rest[end + len(close_tag):], False
        else:
            start = rest.find(open_tag)
            part = rest if start < 0 else rest[:start]
            if part.strip():
                out.append(Text(part.strip("\n")))
            if start < 0:
                break
            rest, thinking = rest[start + len(open_tag):], True
    return out, thinking


def _line_kind(text: str) -> tuple[str, str]:
    """(kind, body): Aider ends user and tool lines with a Markdown line break (two spaces),
    then prefixes ``#### `` or ``> `` (``io.append_chat_history``)."""
    t = text[:-2] if text.endswith("  ") else text
    if t.startswith("####") and (len(t) == 4 or t[4] == " "):
        return "user", t[5:]
    if t.startswith(">") and (len(t) == 1 or t[1] == " "):
        return "tool", t[2:]
    return "assistant", text


def _breaks(text: str) -> bool:
    """Ends with Aider's line break: exactly two spaces (a raw line inside a tool text may
    end with the padding of a console line)."""
    return text.endswith("  ") and not text.endswith("   ")


class AiderParser:
    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        s = state or {}
        self.source = source
        self.run: JsonObject | None = s.get("run")  # {"thread", "offset"}
        self.cur: JsonObject | None = s.get("cur")  # the message being read
        self.meta: JsonObject = s.get("meta") or {}
        self.last: str | None = s.get("last")  # the previous message (parent of the next)
        self.reply: str | None = s.get("reply")  # the last model reply (whose usage a Tokens line is)
        self.mark: JsonObject | None = s.get("mark")  # an emit mark waiting for its message
        self.prev: str | None = s.get("prev")  # the run before this one (the history a restore reads)
        self.reply_key: str | None = s.get("key")  # the archived response key an emit mark gave the reply
        self.end: int | None = s.get("end")  # where the last line fed ended (blank lines are not fed)
        base = os.path.basename(source.path or "")
        self.cwd = os.path.dirname(source.path) if base == HISTORY_NAME and os.path.isabs(source.path) else None

    def state(self) -> JsonObject:
        return {"run": self.run, "cur": self.cur, "meta": self.meta, "last": self.last, "reply": self.reply,
                "mark": self.mark, "prev": self.prev, "end": self.end,
                "key": self.reply_key}  # fmt: skip

    # -- lines
    def feed(self, offset: int, line: bytes) -> list[Row]:
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            return []  # ingest never feeds a blank line: the gap before the next one says it
        end, self.end = self.end, offset + len(line.rstrip(b"\n")) + 1
        if self.cur is not None and end is not None and offset > end:
            # the blank lines in between, each an empty line (CRLF: two bytes); a line of
            # spaces counts a blank line per byte, as its bytes are not seen here
            self.cur["blank"] += (offset - end) // (2 if line.endswith(b"\r") else 1)
        if text.startswith(HEADING):
            return self._close() + self._start(offset, text[len(HEADING):])
        rows: list[Row] = [] if self.run is not None else self._start(offset, None)
        if text.startswith(MARK):
            return rows + self._mark(text[len(MARK):])
        kind, body = _line_kind(text)
        cur = self.cur
        if kind == "assistant" and cur is not None and cur["role"] == "tool" and cur["blank"] == 0 and cur["open"]:
            # a tool line holding newlines is prefixed once, its break only after the last
            # line (aider 0.83.1: a suggested shell command of several lines)
            kind, body = "tool", text[:-2] if _breaks(text) else text
        same = cur is not None and cur["role"] == kind and (kind == "assistant" or cur["blank"] == 0)
        if same and not cur["full"]:
            cur["lines"].extend([""] * cur["blank"])
            cur["lines"].append(body)
            cur["blank"] = 0
        else:
            cont = cur["id"] if same and cur["full"] and not cur["claimed"] else None
            think = bool(cont) and cur["think"]
            rows += self._close()
            self._open(kind, offset, body, cont, think)
        assert self.cur is not None
        self.cur["open"] = kind == "tool" and not _breaks(text)
        rows += self._message_rows()
        if kind == "tool":
            rows += self._status(offset, body)
        return rows

    def _start(self, offset: int, when: str | None) -> list[Row]:
        thread = stable_id(NAME, self.source.source_id, "run", offset)
        self.prev = self.run["thread"] if self.run is not None else None
        self.run, self.last, self.reply, self.mark, self.meta = {"thread": thread, "offset": offset}, None, None, None, {}
        self.reply_key = None
        fields: JsonObject = {}
        m = _HEADING_TS.match(when or "")
        if m:
            fields["createdAt"] = f"{m.group(1)}T{m.group(2)}"
        metadata: JsonObject = {"timeZone": "local (not recorded)"} if m else {}
        if self.cwd:
            metadata["cwd"] = self.cwd
        if metadata:
            fields["metadata"] = metadata
        if fields:
            return [ThreadFact(thread, fields)]
        return [Report(METADATA, "run", "a run whose heading is not in the file")]

    def _mark(self, raw: str) -> list[Row]:
        try:
            mark = orjson.loads(raw)
        except orjson.JSONDecodeError:
            mark = None
        if not isinstance(mark, dict) or not (mark.get("m") is None or nonempty_str(mark.get("m"))) \
                or not isinstance(mark.get("n"), int):
            return [Report(WARNING, "emit mark", "a # seshArchive line that is not a mark: passed over")]
        rows = self._close()
        self.mark = {k: mark[k] for k in ("m", "t", "u", "n", "h") if k in mark}
        return rows + [Report(METADATA, "emit mark", "the archived message the next one was written from")]

    def _open(self, kind: str, offset: int, body: str, continues: str | None = None, thinking: bool = False) -> None:
        assert self.run is not None
        mid = stable_id(NAME, self.source.source_id, offset)
        self.cur = {"id": mid, "role": kind, "offset": offset, "lines": [body], "blank": 0, "full": False,
                    "continues": continues, "think": thinking, "parent": self.last, "mark": self.mark,
                    "open": False, "claimed": False}  # fmt: skip
        self.mark = None
        self.last = mid

    def _message(self, mid: str) -> tuple[Message, bool]:
        cur, run = self.cur, self.run
        assert cur is not None and run is not None
        text = "\n".join(cur["lines"])
        blocks, thinking = blocks_of(cur["role"], text, cur["think"])
        extra: JsonObject = {}
        if cur["continues"]:
            extra["continues"] = cur["continues"]
        if cur["role"] == "tool":
            extra["status"] = True  # Aider's own output: restore leaves it out of the model's context
        msg = Message(
            id=mid, thread_id=run["thread"], role=_ROLE[cur["role"]], ts=None, content=tuple(blocks),
            parent_id=cur["parent"], provenance=Provenance(NAME, source_id=None), extra=extra or None,
        )  # fmt: skip
        return msg, thinking

    def _message_rows(self) -> list[Row]:
        cur = self.cur
        assert cur is not None
        text_len = sum(len(x) + 1 for x in cur["lines"]) - 1
        rows: list[Row] = []
        mark = cur["mark"]
        if mark is not None:
            if text_len < mark["n"]:
                return [Report(METADATA, "emitted message part", "held until the message is complete")]
            rows += self._claim()
        else:
            first = len(cur["lines"]) == 1
            msg, thinking = self._message(cur["id"])
            rows.append(MessageRow(msg, revises=not first))
            if cur["role"] == "assistant":
                self.reply, self.reply_key = cur["id"], None
            if text_len >= TEXT_CAP:  # hold no more: a further line starts a continuation
                cur.update(full=True, lines=[], think=thinking)
        return rows

    def _claim(self) -> list[Row]:
        """The held message of an emit mark, once complete: under the archived id if the
        text is what emit wrote, else as this thread's own."""
        cur, run = self.cur, self.run
        assert cur is not None and run is not None
        mark, cur["mark"] = cur["mark"], None
        text = "\n".join(cur["lines"])
        if len(text) == mark["n"] and mark.get("h") == stable_id(cur["role"], text, length=16) and mark.get("m") is None:
            # a line emit added (the Tokens line of an archived reply): not a message
            self.last = cur["parent"]
            cur["full"] = cur["claimed"] = True
            cur["lines"] = []
            return [Report(SKIPPED, "emitted filler", "a line emit added for the client (not in the archived thread)")]
        if len(text) == mark["n"] and mark.get("h") == stable_id(cur["role"], text, length=16):
            cur["id"] = mark["m"]
            self.last = mark["m"]
            self.reply_key = nonempty_str(mark.get("u"))
            rows: list[Row] = []
            if nonempty_str(mark.get("t")) and mark["t"] != run["thread"]:
                rows.append(ThreadFact(run["thread"], {"metadata": {"emittedFrom": mark["t"]}}))
            msg, _ = self._message(mark["m"])
        else:
            rows = [Report(WARNING, "emitted line changed", "the message differs from what emit wrote: archived as this thread's own")]
            msg, _ = self._message(cur["id"])
        if cur["role"] == "assistant":
            self.reply = msg.id
        cur["full"] = cur["claimed"] = True  # its text is whole; anything after it is a message of its own
        cur["lines"] = []
        return rows + [MessageRow(msg)]

    def _close(self) -> list[Row]:
        """End the current message (a held marked one is yielded as it is)."""
        rows: list[Row] = []
        if self.cur is not None and self.cur["mark"] is not None:
            rows = self._claim()
        self.cur = None
        return rows

    def _status(self, offset: int, body: str) -> list[Row]:
        """Facts in Aider's status lines: version, models, a reply's tokens."""
        assert self.run is not None and self.cur is not None
        rows: list[Row] = []
        meta: JsonObject = {}
        if m := _VERSION.match(body):
            meta["version"] = m.group(1)
        elif m := _MODEL.match(body):
            meta["model"], meta["editFormat"] = m.group(1), m.group(2)
        elif m := _WEAK.match(body):
            meta["weakModel"] = m.group(1)
        elif m := _EDITOR.match(body):
            meta["editorModel"] = m.group(1)
        elif body == RESTORED and self.prev:
            meta["restoredFrom"] = self.prev  # --restore-chat-history: the runs before are its context
        elif (usage := usage_of(body)) is not None:
            reply = self.reply
            key = self.reply_key or (message_response_key(reply) if reply else stable_id(NAME, self.source.source_id, "usage", offset))
            rows.append(UsageRow(key, self.run["thread"], usage, reply, self.meta.get("model"), None))
        meta = {k: v for k, v in meta.items() if self.meta.get(k) != v}
        if meta:
            self.meta.update(meta)
            rows.append(ThreadFact(self.run["thread"], {"metadata": meta}))
        return rows


class InputHistoryParser:
    """``.aider.input.history`` (prompt_toolkit's FileHistory): ``# <time>`` then each line of
    the input prefixed ``+``. Each ``+`` line is a prompt of the ``prompt_history`` view (a
    multi-line input is several, as the file gives no end); the project is the file's folder."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        self.ts: str | None = (state or {}).get("ts")
        base = os.path.basename(source.path or "")
        self.project = os.path.dirname(source.path) if base == INPUT_NAME and os.path.isabs(source.path) else None

    def state(self) -> JsonObject:
        return {"ts": self.ts}

    def feed(self, offset: int, line: bytes) -> list[Row]:
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            return []
        if text.startswith("# "):
            self.ts = text[2:].strip().replace(" ", "T")
            return [Report(METADATA, "input time", "the time of the input that follows")]
        if text == "+":
            return [Report(METADATA, "input line", "an empty line of a multi-line input")]
        if text.startswith("+"):
            return [prompt_report(None, None, self.project, self.ts, text[1:])]
        return [Report(WARNING, "input history", "a line that is neither a time nor an input line")]
