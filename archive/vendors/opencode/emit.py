"""Canonical thread -> the JSON document ``opencode import FILE`` reads (OpenCode 1.18.33).

The document is what ``opencode export <session>`` writes: ``{"info": <session>,
"messages": [{"info": <message>, "parts": [<part>, ...]}, ...]}``. OpenCode orders a
session's messages and parts by id, so ids here sort in conversation order: a thread that
came from OpenCode keeps its own ids (session, ``turn_id`` = message id, part ids); any
other gets ``ses_``/``msg_``/``prt_`` ids made of a counter and a hash of the thread id.
No id is written twice (``_Ids``): the parts of one OpenCode message that the archive holds
as several canonical messages (parallel tool calls with their results between them, the
steps of one message) go back into that one message.

Mapping: a user message -> a user message with ``text`` parts; assistant messages up to
the next user message -> assistant messages, a new one (an OpenCode *step*) after each
round of tool results; ``Text`` -> ``text``, ``Reasoning`` -> ``reasoning`` (its text; a
signature of another vendor is dropped, counted), ``ToolCall`` with its ``ToolResult`` ->
one ``tool`` part (``completed``, or ``error`` with the output as the error; an OpenCode call
left unfinished, ``running`` as it was), a response's
usage -> the assistant message's ``tokens`` and a ``step-finish`` part (OpenCode's
``input`` without cache reads, ``output`` without reasoning). Other blocks become text
(counted). The file goes to ``opencode-import/<session id>.json``; the resume hint imports
it, then resumes the session; ``emit --install`` puts it under OpenCode's data folder
(``opencode-import/``), where ingest reads it back as a snapshot of the same session.

Each text, reasoning and tool part carries the emit mark in its ``metadata`` (``_Writer._mark``),
the only place ``opencode import`` keeps a field of ours: read back, from this file or from
OpenCode's rows after the import, the history is the archived messages and usage, stored once.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import orjson

from ...model import (
    Attachment,
    Message,
    Reasoning,
    Text,
    Thread,
    ToolCall,
    ToolResult,
    Usage,
)
from ..base import CHILD_THREADS_NOT_WRITTEN, EMIT_MARK, RESPONSE_KEY, EmitOptions, EmitResult, command, emitted_response, image_url, mark_record
from .parse import NAME, digest_form

CLIENT_VERSION = "1.18.33"
FOLDER = f"{NAME}-import"
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _ms(ts: str | None, default: int) -> int:
    if not ts:
        return default
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return default


def _tail(*parts: object) -> str:
    h = int.from_bytes(hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()[:12], "big")
    out = ""
    for _ in range(14):
        h, r = divmod(h, 62)
        out += _B62[r]
    return out


class _Ids:
    """Ids that sort in the order they are made (OpenCode sorts messages and parts by id)."""

    def __init__(self, thread_id: str, start_ms: int) -> None:
        self.thread_id = thread_id
        self.n = (start_ms << 12) & 0xFFFFFFFFFFFF
        self.given: set[str] = set()  # every id handed out: OpenCode keys its rows by id

    def make(self, prefix: str, own: str | None = None, ms: int | None = None) -> str:
        """``own`` when it is an id of this kind not handed out yet, else the next id, not
        before ``ms`` (OpenCode's own ids are ``(ms << 12) + counter`` in 12 hex digits: they
        interleave). Never the same id twice: ``opencode import`` would merge the two."""
        if own and own.startswith(prefix + "_") and own not in self.given:
            self.given.add(own)
            return own
        self.n = max(self.n + 1, (ms << 12) & 0xFFFFFFFFFFFF) if ms is not None else self.n + 1
        made = f"{prefix}_{self.n & 0xFFFFFFFFFFFF:012x}{_tail(self.thread_id, prefix, self.n)}"
        self.given.add(made)
        return made


def folder(name: str = NAME) -> str:
    """The folder under the data folder where ``emit --install`` puts import files."""
    return f"{name}-import"


def resume_hint(session_id: str, cwd: str | None, name: str = NAME) -> str:
    """Import the file ``emit --install`` wrote under the client's data folder (``name``: its
    command and folder, OpenCode's or a fork's such as Kilo), then resume."""
    file = f'"${{XDG_DATA_HOME:-$HOME/.local/share}}"/{name}/' + command(f"{folder(name)}/{session_id}.json")
    run = command(name, "--session", session_id)
    return f"{name} import {file} && {'cd ' + command(cwd) + ' && ' if cwd else ''}{run}"


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[tuple[Thread, Iterable[Message]]],
                 options: EmitOptions, name: str = NAME, client_version: str = CLIENT_VERSION) -> EmitResult:
    """``name``: the client whose import document this is (OpenCode, or a fork that keeps
    its format under its own name: Kilo), ``client_version`` the release written when none
    is given."""
    result = EmitResult()
    meta = thread.metadata or {}
    own = meta.get("provider") == name or thread.id.startswith("ses_")
    created = _ms(thread.created_at, 1767225600000)
    ids = _Ids(thread.id, created)
    session_id = options.session_id or (thread.id if thread.id.startswith("ses_") else ids.make("ses"))
    cwd = options.cwd or meta.get("cwd") or "/"
    model = (meta.get("model") if own else None) or options.model or meta.get("model") or "m"
    provider = (meta.get("modelProvider") if own else None) or options.model_provider or "mock"
    if not own and not options.model_provider:
        result.count(f"model provider: none given, 'mock' written (emit --model-provider, or your {name}.json)")
    path = f"{folder(name)}/{session_id}.json"
    out = _Writer(result, path, thread.id)  # the messages, written once nothing can change them
    calls: dict[str, dict[str, Any]] = {}  # call id -> its tool part, until written
    current: dict[str, Any] | None = None  # the open assistant message
    last_user: str | None = None
    first_prompt: str | None = None  # the title of a thread without one, as OpenCode lists it
    need_new = False
    last_ms = created
    for msg in messages:
        ms = _ms(msg.ts, last_ms)
        last_ms = max(last_ms, ms)
        if msg.role == "system":
            result.count("message: system message dropped (OpenCode writes its own system prompt)")
            continue
        if msg.role == "user":
            parts = []
            result_ids = {b.call_id for b in msg.content if isinstance(b, ToolResult)}
            for b in msg.content:
                if isinstance(b, Text):
                    parts.append({"type": "text", "text": b.text})
                elif isinstance(b, ToolResult):  # Claude Code's results come in user messages
                    _attach_result(b, calls, result, out.written_calls, _result_files(msg, b), ids, msg.id)
                    need_new = True
                elif isinstance(b, Attachment) and (b.extra or {}).get("callId") in result_ids:
                    continue  # an image of a tool result: written with it
                else:  # a file change beside a result, an image: nothing OpenCode sends as the user's
                    result.count(f"user: {type(b).__name__} block not representable, dropped")
            if not parts:
                continue
            if first_prompt is None and not (msg.extra or {}).get("injected"):
                first_prompt = " ".join(" ".join(p["text"] for p in parts).split()) or None
            if own and out.last is not None and msg.turn_id and out.last["info"]["id"] == msg.turn_id:
                target = out.last  # another part of the same OpenCode message
            else:
                mid = ids.make("msg", msg.turn_id if own else None, ms)
                target = {"info": {"id": mid, "sessionID": session_id, "role": "user", "time": {"created": ms},
                                   "agent": "build", "model": {"providerID": provider, "modelID": model}}, "parts": []}
                out.append(target, calls)
            mid = target["info"]["id"]
            target["parts"] += [dict(p, id=ids.make("prt", msg.id if own and msg.id.startswith("prt_") else None, ms),
                                     sessionID=session_id, messageID=mid, _m=msg.id) for p in parts]
            last_user, current, need_new = mid, None, False
            continue
        if msg.role == "tool":
            result_ids = {b.call_id for b in msg.content if isinstance(b, ToolResult)}
            for b in msg.content:
                if isinstance(b, ToolResult):
                    _attach_result(b, calls, result, out.written_calls, _result_files(msg, b), ids, msg.id)
                elif isinstance(b, Attachment) and (b.extra or {}).get("callId") in result_ids:
                    continue  # an image of a tool result: written with it
                else:
                    result.count(f"{type(b).__name__} in a tool message: dropped")
            need_new = True
            continue
        # assistant
        if own and need_new and current is not None and msg.turn_id == current["info"]["id"]:
            # the same OpenCode message after its tool results (parallel calls, or its next
            # step): its parts continue it, as OpenCode wrote them, under its one id
            if current["parts"][-1]["type"] == "step-finish":
                current["parts"].append({"type": "step-start", "id": ids.make("prt", None, ms), "sessionID": session_id,
                                         "messageID": current["info"]["id"]})
            need_new = False
        if current is None or need_new or (own and msg.turn_id and current["info"]["id"] != msg.turn_id):
            _close(current, ids)
            mid = ids.make("msg", msg.turn_id if own else None, ms)
            current = {"info": {"id": mid, "sessionID": session_id, "role": "assistant", "parentID": last_user or mid,
                                "modelID": model, "providerID": provider, "mode": "build", "agent": "build",
                                "path": {"cwd": cwd, "root": "/"}, "cost": 0,
                                "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                                "time": {"created": ms, "completed": ms}, "finish": "stop"},
                       "parts": [{"type": "step-start", "id": ids.make("prt", None, ms), "sessionID": session_id, "messageID": mid}]}
            out.append(current, calls)
            need_new = False
        mid = current["info"]["id"]
        current["info"]["time"]["completed"] = ms
        pid_own = msg.id if own and msg.id.startswith("prt_") else None
        for b in msg.content:
            base = {"id": ids.make("prt", pid_own, ms), "sessionID": session_id, "messageID": mid, "_m": msg.id}
            pid_own = None
            if isinstance(b, Text):
                current["parts"].append({"type": "text", "text": b.text, "time": {"start": ms, "end": ms}, **base})
            elif isinstance(b, Reasoning):
                if b.extra and b.extra.get("signature") and not own:
                    result.count("reasoning: signature of another vendor dropped")
                current["parts"].append({"type": "reasoning", "text": b.text or "", "time": {"start": ms, "end": ms}, **base})
            elif isinstance(b, ToolCall):
                part = {"type": "tool", "callID": b.call_id, "tool": b.name or "unknown",
                        "state": {"status": "completed", "input": b.input if isinstance(b.input, dict) else {"input": b.input},
                                  "output": "", "title": (b.extra or {}).get("title") or b.name or "", "metadata": {},
                                  "time": {"start": ms, "end": ms}}, **base}
                if own and (b.extra or {}).get("unfinished"):  # a call its session never finished
                    part["state"] = {"status": "running", "input": part["state"]["input"], "time": {"start": ms}}
                    result.count("tool call unfinished when its session ended: written as running")
                    part["_answered"] = True
                if not isinstance(b.input, dict):
                    result.count("tool input: not an object, wrapped as {input: ...}")
                calls[b.call_id] = part
                current["parts"].append(part)
                current["info"]["finish"] = "tool-calls"
            else:
                current["parts"].append({"type": "text", "text": _as_text(b, result), "time": {"start": ms, "end": ms}, **base})
        if msg.usage is not None:
            _usage(current, msg.usage, ids, session_id, own, ms, emitted_response(msg), msg.id, name)
    _close(current, ids)
    out.flush(calls, everything=True)
    short = first_prompt if first_prompt is None or len(first_prompt) <= 80 else first_prompt[:79].rstrip() + "…"
    title = thread.title or short or "Imported session"
    info = {"id": session_id, "slug": "imported", "projectID": "global", "directory": cwd, "title": title,
            "version": options.client_version or client_version,
            "time": {"created": created, "updated": last_ms}}
    if children:
        result.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    out.close(info)
    result.thread_id = session_id
    result.resume_hint = resume_hint(session_id, cwd, name)
    return result


class _Writer:
    """The import document written as it is built: ``{"messages": [...], "info": {...}}``
    (the session's info names its last time, so it goes last). A message is written once
    it is no longer the last one and its tool calls have their results, or when more than
    ``HOLD`` are waiting (a result arriving later is then counted and dropped)."""

    HOLD = 64

    def __init__(self, result: EmitResult, path: str, thread_id: str) -> None:
        self.result = result
        self.thread_id: str | None = thread_id  # named by the first mark, then None
        self.f = result.files.open(path)
        self.f.write(b'{\n  "messages": [')
        self.pending: deque[dict[str, Any]] = deque()
        self.written_calls: set[str] = set()
        self.first = True

    @property
    def last(self) -> dict[str, Any] | None:
        return self.pending[-1] if self.pending else None

    def append(self, message: dict[str, Any], calls: dict[str, dict[str, Any]]) -> None:
        self.pending.append(message)
        self.flush(calls)

    @staticmethod
    def _answered(m: dict[str, Any]) -> bool:
        return all(p.get("_answered") for p in m["parts"] if p["type"] == "tool")

    def flush(self, calls: dict[str, dict[str, Any]], everything: bool = False) -> None:
        while self.pending and (everything or len(self.pending) > self.HOLD
                                or (len(self.pending) > 1 and self._answered(self.pending[0]))):
            m = self.pending.popleft()
            for p in m["parts"]:
                if p["type"] != "tool":
                    continue
                if not p.pop("_answered", None) and p["state"]["status"] == "completed" and p["state"].get("output") == "":
                    self.result.count("tool call without a result: written with an empty output")
                calls.pop(p["callID"], None)
                self.written_calls.add(p["callID"])
            self._mark(m)
            data = orjson.dumps(m, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n    ")
            self.f.write((b"\n    " if self.first else b",\n    ") + data)
            self.first = False

    def _mark(self, m: dict[str, Any]) -> None:
        """The emit mark (``base.mark_record``) of each text, reasoning and tool part, in its
        ``metadata``: the canonical message it was written from, the thread (first mark), the
        messages its tool result came from (``r``), and on the last marked part before a
        step-finish that step's part id (``s``) with the archived response whose usage it
        repeats (``u``; none: usage the emitter made up). The digest is of the part's sorted
        keys, as read back from OpenCode's rows (``parse.digest_form``)."""
        last: dict[str, Any] | None = None
        for p in m["parts"]:
            origin, results = p.pop("_m", None), p.pop("_r", None)
            if p["type"] == "step-finish":
                response, carrier = p.pop("_u", None), p.pop("_carrier", None)
                if last is None and response is not None:
                    self.result.count("usage: no part before its step-finish to name the response "
                                      "(read back, it counts a second time)")
                if last is not None:
                    last["s"] = p["id"]
                    if response is not None:
                        last["u"] = response
                        if carrier is not None and carrier != last["m"]:
                            last["c"] = carrier
                continue
            if origin is None:
                continue
            last = mark_record(digest_form(p), origin, self.thread_id, None, results)[EMIT_MARK]
            self.thread_id = None
            p["metadata"] = {**(p.get("metadata") or {}), EMIT_MARK: last}

    def close(self, info: dict[str, Any]) -> None:
        data = orjson.dumps(info, option=orjson.OPT_INDENT_2).replace(b"\n", b"\n  ")
        self.f.write(b'\n  ],\n  "info": ' + data + b"\n}\n")


def _result_files(msg: Message, b: ToolResult) -> list[Attachment]:
    """The Attachment blocks a parser moved out of this tool result (``extra.callId``), in
    order: an output item ``{"attachment": k}`` names the k-th."""
    return [a for a in msg.content if isinstance(a, Attachment) and (a.extra or {}).get("callId") == b.call_id]


def _image_output(output: Any, atts: list[Attachment], result: EmitResult) -> tuple[str, list[dict[str, Any]]] | None:
    """A tool output list that holds images, as OpenCode keeps one: the text items joined as
    ``state.output``, each image a ``file`` part (a data: URL) in ``state.attachments``,
    which OpenCode sends to the model with the result. None when there is no image."""
    if not isinstance(output, list):
        return None
    texts: list[str] = []
    files: list[dict[str, Any]] = []
    for item in output:
        if not isinstance(item, dict):
            texts.append(orjson.dumps(item).decode())
            continue
        t = item.get("type")
        url: str | None = None
        mime: str | None = None
        if isinstance(item.get("attachment"), int):  # a Claude image moved to an Attachment block
            k = item["attachment"]
            att = atts[k] if 0 <= k < len(atts) else None
            if att is None:
                result.count("tool result: image placeholder without its attachment dropped")
                continue
            mime, url = att.media_type or "image/png", image_url(att.media_type, att.data, att.uri)
        elif t == "input_image" and isinstance(item.get("image_url"), str):  # Codex
            url = item["image_url"]
            mime = url[5:].split(";", 1)[0] if url.startswith("data:") else "image/png"
        elif t == "image" and isinstance(item.get("source"), dict):  # a Claude image block kept inline
            src = item["source"]
            mime = src.get("media_type") or "image/png"
            url = image_url(mime, src.get("data"), src.get("url"))
        elif isinstance(item.get("text"), str):
            texts.append(item["text"])
            continue
        else:
            texts.append(orjson.dumps(item).decode())
            continue
        if url is None:
            result.count("tool result: image without data or URL dropped")
            continue
        files.append({"type": "file", "mime": mime, "url": url, "filename": "image"})
    if not files:
        return None
    result.count("tool output: images written as the result's attachments", len(files))
    return "\n".join(texts), files


def _attach_result(b: ToolResult, calls: dict[str, dict[str, Any]], result: EmitResult, written: set[str],
                   atts: Sequence[Attachment] = (), ids: _Ids | None = None, origin: str | None = None) -> None:
    part = calls.get(b.call_id)
    if part is not None and origin is not None:
        part.setdefault("_r", {})[b.call_id] = origin  # the message the result came from (emit mark)
    if part is None:
        result.count("tool result: its call was written long before it, dropped" if b.call_id in written
                     else "tool result without its call: dropped")
        if atts:
            result.count("attachment: its tool result was dropped", len(atts))
        return
    imaged = None if b.is_error else _image_output(b.output, list(atts), result)
    if imaged is not None:
        state = part["state"]
        state["output"], files = imaged
        state["attachments"] = [dict(f, id=ids.make("prt") if ids else f"prt_{i}", sessionID=part["sessionID"],
                                     messageID=part["messageID"]) for i, f in enumerate(files)]
        meta = (b.extra or {}).get("metadata")
        if isinstance(meta, dict):
            state["metadata"] = meta
        part["_answered"] = True
        return
    if isinstance(b.output, str) or b.output is None:
        out = b.output or ""
    elif isinstance(b.output, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in b.output):
        out = "\n".join(p["text"] for p in b.output)
        result.count("tool output: text blocks joined into one string")
    else:
        out = orjson.dumps(b.output).decode()
        result.count("tool output: not a string, written as JSON text")
    state = part["state"]
    if b.is_error:
        part["state"] = {"status": "error", "input": state["input"], "error": out, "time": state["time"]}
    else:
        state["output"] = out
        meta = (b.extra or {}).get("metadata")
        if isinstance(meta, dict):
            state["metadata"] = meta
    part["_answered"] = True


def _as_text(b: Any, result: EmitResult) -> str:
    result.count(f"{type(b).__name__}: written as text")
    if isinstance(b, Attachment):
        return f"[attachment {b.media_type or ''} {b.uri or ''}]".strip()
    return orjson.dumps(b.to_dict() if hasattr(b, "to_dict") else str(b)).decode()


def _usage(current: dict[str, Any], u: Usage, ids: _Ids, session_id: str, own: bool, ms: int,
           response: str | None = None, carrier: str | None = None, name: str = NAME) -> None:
    vendor = ((u.extra or {}).get("vendor") or {}) if own else {}
    reasoning = u.reasoning_tokens or 0
    tokens = {"total": (u.input_tokens or 0) + (u.output_tokens or 0) + (u.cache_read_tokens or 0) + (u.cache_write_tokens or 0),
              "input": u.input_tokens or 0, "output": max((u.output_tokens or 0) - reasoning, 0), "reasoning": reasoning,
              "cache": {"read": u.cache_read_tokens or 0, "write": u.cache_write_tokens or 0}}
    cost = vendor.get("cost") if isinstance(vendor.get("cost"), (int, float)) else 0
    info = current["info"]
    info["tokens"], info["cost"] = tokens, cost
    # the response's own step-finish id (usage key ``opencode:<part id>``): the imported
    # session read back is the same response, not a second one
    key = (u.extra or {}).get(RESPONSE_KEY) if own else None
    own_id = key.split(":", 1)[1] if isinstance(key, str) and key.startswith(f"{name}:prt_") else None
    current["parts"].append({"type": "step-finish", "reason": info["finish"], "tokens": tokens, "cost": cost,
                             "id": ids.make("prt", own_id, ms), "sessionID": session_id, "messageID": info["id"],
                             "_u": response, "_carrier": carrier})


def _close(current: dict[str, Any] | None, ids: _Ids) -> None:
    if current is not None and not any(p["type"] == "step-finish" for p in current["parts"]):
        info = current["info"]
        current["parts"].append({"type": "step-finish", "reason": info["finish"], "tokens": info["tokens"], "cost": 0,
                                 "id": ids.make("prt", None, info["time"]["completed"]), "sessionID": info["sessionID"],
                                 "messageID": info["id"]})
