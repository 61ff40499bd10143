"""The documents Gemini CLI keeps beside its chats in ``~/.gemini/tmp/<sha256(cwd)>/``:
``/chat save`` checkpoints and the prompt log. Qwen Code 0.1.x (a fork) writes the same ones
under ``~/.qwen/tmp/<sha256(cwd)>/``; its adapter reads them with these functions.

Formats (Gemini CLI 0.1.22, ``Logger``; Qwen Code 0.1.4 has the same class):

* ``checkpoint-<TAG>.json`` (TAG percent-encoded): written by ``/chat save TAG``, read by
  ``/chat resume TAG``. The history the client sends the model: a JSON array of Gemini
  ``Content`` objects ``{role: user|model, parts: [...]}``, pretty-printed, rewritten whole
  when the tag is saved again (each version a generation of the source). 0.1.22 writes a
  model turn as several contents (its text, then each ``functionCall``), a ``functionCall``
  without ``id`` and its ``functionResponse`` with one; it keeps no thoughts, no timestamps,
  no usage and no session id. The first two contents are the context the client writes
  itself ("This is the Gemini CLI. We are setting up the context for our chat. ..." and the
  canned "Got it. Thanks for the context!"). A later release's ``{"history": [...], ...}``
  object is read the same way (its other fields go to the thread metadata).
* ``logs.json``: the prompt log, a JSON array of ``{sessionId, messageId, type: "user",
  message, timestamp}``, every line typed in the TUI (slash commands too; a prompt typed
  before the log was ready is missing, 0.1.22), rewritten on every prompt. 0.1.x writes no
  session file: this is all that says which session a prompt belonged to.

Invariants:

* **A checkpoint's messages are content, not copies.** The format has no ids: message k's
  id is chained over the contents up to it (``stable_id(provider, "content", id of k-1,
  digest(role, parts))``), independent of the file. The same conversation saved under two
  tags, saved again after more turns, or resumed and saved under a new tag shares its
  messages up to where the two differ: the archive stores them once and makes the later
  thread a fork of the earlier one (``thread_lineage``), as for forks that copy history.
  Two conversations that begin byte for byte alike (same day, same folder listing, same
  first exchange) share that beginning too: nothing in the files tells them apart.
* **Thread.** One per checkpoint file (id from the source), titled ``checkpoint TAG``, cwd
  from the context message, ``savedCopyScope`` its project folder's name (``tmp/<hash>/``).
  Neither the checkpoint nor the session it was saved from names the other: the link is
  found by content, beside the session of the same folder (``archive/saved_copies.py``).
* **Calls and results pair.** A ``functionCall`` without ``id`` takes the id of the
  ``functionResponse`` that answers it (the next unanswered call of the same name, in
  order); ``extra["callIdFrom"] = "functionResponse"`` says so.
* **The prompt log** gives one thread per ``sessionId`` (id ``<provider>-prompts-`` +
  ``stable_id(provider, "prompt-log", sessionId)``, ``metadata.promptLogOf`` = the session id, ``promptLog``),
  each entry a user message at its timestamp (a slash command: ``extra["command"]``). It is
  kept apart from the session's own thread: where a session file exists (0.4 and later) that
  thread already holds the prompts with the answers.
* A document is one "line" at offset 0 (a ``SNAPSHOT`` source); never raises on input;
  every entry becomes a message or a report.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import unquote

import orjson

from ...model import Block, JsonObject, Message, Provenance, Text, ToolCall, ToolResult, Unknown
from ..base import INVALID, SKIPPED, UNKNOWN, MessageRow, Report, Row, SourceInfo, ThreadFact, command, stable_id
from ..base import nonempty_str as _str
from .parts import part_blocks

_CONTEXT = re.compile(r"^This is the [^\n]*\. We are setting up the context for our chat\.")
_CWD = re.compile(r"I'm currently working in the directory: ([^\n]+)")
_LOG_FIELDS = {"sessionId": str, "messageId": int, "timestamp": str, "type": str, "message": str}


def _digest(*parts: object) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def is_prompt_log(d: Any) -> bool:
    return isinstance(d, list) and bool(d) and all(isinstance(e, dict) and "sessionId" in e and "message" in e for e in d)


def checkpoint_history(d: Any) -> list[Any] | None:
    """The contents of a checkpoint document, or None when ``d`` is not one."""
    if isinstance(d, dict) and isinstance(d.get("history"), list) and "sessionId" not in d:
        return d["history"]
    if isinstance(d, list) and all(isinstance(c, dict) and "role" in c and "parts" in c for c in d):
        return d
    return None


def saved_document_rows(provider: str, source: SourceInfo, d: Any) -> list[Row] | None:
    """Rows of a checkpoint or prompt log document, or None when ``d`` is neither (a chat)."""
    if isinstance(d, list) and not d:
        return [Report(SKIPPED, "empty document", "a prompt log or checkpoint with nothing in it yet")]
    if is_prompt_log(d):
        return list(_prompt_log(provider, d))
    history = checkpoint_history(d)
    if history is not None:
        extra = {k: v for k, v in d.items() if k != "history"} if isinstance(d, dict) else {}
        return list(_checkpoint(provider, source, history, extra))
    if isinstance(d, list):
        return [Report(INVALID, "JSON array that is neither a checkpoint nor a prompt log")]
    return None


def saved_resume_hint(provider: str, exe: str, thread_id: str, cwd: str | None,
                      fallback: Callable[[str, str | None], str | None]) -> str | None:
    """How a restored checkpoint is resumed (``/chat resume TAG`` in the client started in
    its folder); a prompt log is nothing to resume (None); another thread: ``fallback``."""
    if thread_id.startswith(f"{provider}-prompts-"):
        return None
    if not thread_id.startswith(f"{provider}-checkpoint-"):
        return fallback(thread_id, cwd)
    hint = command(exe) + "  # then: /chat resume <the checkpoint's tag>"
    return f"cd {command(cwd)} && {hint}" if cwd else hint


def _tag(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    if name.startswith("checkpoint-") and name.endswith(".json"):
        return unquote(name[len("checkpoint-"):-len(".json")])
    return None


def _call_ids(history: list[Any]) -> dict[tuple[int, int], str]:
    """(content index, part index) of each functionCall without id -> the id of the
    functionResponse answering it: the earliest unanswered call of the same name."""
    open_calls: dict[str, list[tuple[int, int]]] = {}
    found: dict[tuple[int, int], str] = {}
    for i, c in enumerate(history):
        parts = c.get("parts") if isinstance(c, dict) else None
        for j, p in enumerate(parts if isinstance(parts, list) else []):
            if not isinstance(p, dict):
                continue
            fc, fr = p.get("functionCall"), p.get("functionResponse")
            if isinstance(fc, dict) and not _str(fc.get("id")):
                open_calls.setdefault(str(fc.get("name")), []).append((i, j))
            elif isinstance(fr, dict) and _str(fr.get("id")):
                waiting = open_calls.get(str(fr.get("name")))
                if waiting:
                    found[waiting.pop(0)] = fr["id"]
    return found


def _checkpoint(provider: str, source: SourceInfo, history: list[Any], doc_extra: JsonObject) -> Iterator[Row]:
    thread = f"{provider}-checkpoint-" + stable_id(source.source_id, "checkpoint")
    tag = _tag(source.path)
    meta: JsonObject = {"checkpoint": True}
    folder = source.path.replace("\\", "/").rsplit("/", 2)
    if len(folder) == 3 and folder[1]:
        meta["savedCopyScope"] = folder[1]  # tmp/<sha256(cwd)>/checkpoint-TAG.json
    if tag is not None:
        meta["checkpointTag"] = tag
    if doc_extra:
        meta["checkpointFields"] = doc_extra
    fields: JsonObject = {"metadata": meta}
    if tag is not None:
        fields["title"] = f"checkpoint {tag}"
    yield ThreadFact(thread, fields)
    ids = _call_ids(history)
    prev, turn, context = "", None, False
    for i, c in enumerate(history):
        if not isinstance(c, dict) or not isinstance(c.get("parts"), list):
            yield Report(INVALID, "checkpoint content without parts", orjson.dumps(c)[:200].decode("utf-8", "replace"))
            continue
        role_in, parts = c.get("role"), c["parts"]
        mid = stable_id(provider, "content", prev, _digest(role_in, parts))
        prev = mid
        blocks: list[Block] = []
        for j, p in enumerate(parts):
            for b in part_blocks(p)[0]:
                if isinstance(b, ToolCall) and not b.call_id and (i, j) in ids:
                    b = ToolCall(call_id=ids[(i, j)], name=b.name, input=b.input, extra={"callIdFrom": "functionResponse"})
                blocks.append(b)
        extra: JsonObject = {}
        texts = [b.text for b in blocks if isinstance(b, Text)]
        if role_in == "user":
            role = "tool" if blocks and all(isinstance(b, ToolResult) for b in blocks) else "user"
            if i == 0 and texts and _CONTEXT.match(texts[0]):
                extra["injected"], context = True, True
                cwd = _CWD.search(texts[0])
                if cwd:
                    yield ThreadFact(thread, {"metadata": {"cwd": cwd.group(1).strip()}})
            elif role == "user":
                turn = mid
        elif role_in == "model":
            role = "assistant"
            if i == 1 and context:
                extra["injected"] = True  # the client's canned reply to its own context
        else:
            role = "system"
            blocks = [Unknown(source_type=f"content role {role_in}", raw=c)]
            yield Report(UNKNOWN, f"checkpoint content role {role_in}")
        yield MessageRow(Message(
            id=mid, thread_id=thread, role=role, ts=None, content=tuple(blocks),
            turn_id=None if extra.get("injected") else turn,
            provenance=Provenance(provider=provider, session_id=thread, source_id=f"content:{i}"),
            extra=extra or None,
        ))  # fmt: skip


def prompt_log_signal(extra: Mapping[str, Any]) -> str | None:
    """``log`` for an entry of the prompt log (``Adapter.message_signal``): its thread holds
    the prompts typed in a session, not the conversation, and has no outcome."""
    return "log" if extra.get("promptLog") is True else None


def _prompt_log(provider: str, entries: list[Any]) -> Iterator[Row]:
    started: set[str] = set()
    for e in entries:
        bad = [k for k, t in _LOG_FIELDS.items() if not isinstance(e.get(k), t) or isinstance(e.get(k), bool)]
        if bad:
            yield Report(INVALID, "prompt log entry", f"missing or mistyped: {', '.join(bad)}")
            continue
        sid = e["sessionId"]
        thread = f"{provider}-prompts-" + stable_id(provider, "prompt-log", sid)
        if sid not in started:
            started.add(sid)
            title = " ".join(e["message"].split())[:80]
            yield ThreadFact(thread, {"createdAt": e["timestamp"], "title": f"prompts: {title}",
                                      "metadata": {"promptLog": True, "promptLogOf": sid}})
        extra: JsonObject = {"promptLog": True, "messageId": e["messageId"]}
        if e["message"].lstrip().startswith("/"):
            extra["command"] = True
        if e["type"] != "user":
            extra["logType"] = e["type"]
        others = {k: v for k, v in e.items() if k not in _LOG_FIELDS}
        if others:
            extra["logFields"] = others
        yield MessageRow(Message(
            id=stable_id(provider, "prompt-log", sid, e["messageId"], e["timestamp"], e["message"]),
            thread_id=thread, role="user", ts=e["timestamp"], content=(Text(text=e["message"]),),
            turn_id=stable_id(provider, "prompt-log", sid, e["messageId"], e["timestamp"], e["message"]),
            provenance=Provenance(provider=provider, session_id=sid, source_id=f"prompt:{e['messageId']}"),
            extra=extra,
        ))  # fmt: skip
