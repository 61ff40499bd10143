"""GitHub Copilot CLI sessions (``~/.copilot/session-state/<uuid>/events.jsonl`` and the
``workspace.yaml`` beside it; 0.0.3xx: the flat ``session-state/<uuid>.jsonl``).

0.0.3xx (recorded with 0.0.370) writes the same events to the flat file, fewer of them:
``session.start`` without ``context`` or ``selectedModel`` (the model comes with the
``session.model_change`` a resume writes), no usage records, no ``reasoningText``; its
``session.info`` and ``session.truncation`` are metadata. ``copilot -p`` of that release
writes no session; a ``-p --resume`` appends only ``session.resume`` and the model.

Format (checked with Copilot CLI 1.0.102; its own JSON schema is
``schemas/session-events.schema.json`` in the package): one event per line,
``{"type", "data", "id", "timestamp", "parentId"}``, append-only; a resume appends a
``session.resume`` event to the same file.

Invariants of this module (each is tested on real recordings):

* **Thread** = ``session.start``'s ``sessionId`` (the folder's uuid). ``session.start`` and
  ``session.resume`` give cwd, git root, branch and repository, the selected model and the
  client version as metadata; a later cwd is kept as ``metadata.lastCwd``.
* **Content.** ``user.message`` keeps ``content`` (what the user typed), never
  ``transformedContent`` (the harness's copy with the time and reminders in front of it;
  it stays in the stored line). ``assistant.message`` becomes one message: its
  ``reasoningText`` (with ``reasoningOpaque``/``encryptedContent`` when present), its
  ``content`` text and one tool call per ``toolRequests`` item, in that order.
  ``tool.execution_complete`` becomes a ``tool`` message with the result: ``result.content``
  (the text the model gets; for a failed call ``error.message``), ``isError`` = not
  ``success``, the shell's exit code, ``error`` and ``result.detailedContent`` in the block's
  extra. A result with ``binaryResultsForLlm`` (images) is given Claude Code's shape: the
  output is a list, the text then ``{"type": "image", "attachment": k}`` per item, and one
  ``Attachment`` block per item follows the result (``callId`` in its extra).
  ``tool.execution_start`` repeats the
  request (``DUPLICATE``).
* **Images and other binary results** (1.0.102, the view tool on a PNG): the bytes come once,
  base64, in a ``session.binary_asset`` event (``assetId`` ``sha256:<hex of the bytes>``),
  just before the ``tool.execution_complete`` whose ``binaryResultsForLlm`` names the asset.
  A user message's ``blob`` attachment (a pasted image) names its asset the same way (by
  the schema; no recording has one yet); its other attachments (files, selections, GitHub
  references) are ``Unknown`` blocks.
  The asset yields a ``BlobRow``; the result's ``Attachment`` names the blob by
  ``extra.blobSha256`` (the archive gives it the bytes when read), so no parser state holds
  an image. An item with inline ``data`` keeps it; one whose bytes were left out
  (``omittedReason``) is an attachment without bytes.
* **The system prompt** (``system.message``) is metadata: its role, length and sha256 go in
  ``metadata.systemPrompt``; the text stays in the stored line.
* **Usage.** ``session.usage_record`` comes just before the ``assistant.message`` of the
  same ``apiCallId``: it yields a ``UsageRow`` keyed ``copilot:<session>:<apiCallId>`` at
  once, and the assistant message yields the same key again naming itself as the carrier
  (the later line wins). Copilot's ``inputTokens`` are the whole prompt, cache reads
  included (recorded against the mock: prompt_tokens 586 with 293 cached is inputTokens
  586, cacheReadTokens 293), so the stored ``inputTokens`` is ``input - cacheRead - cacheWrite``;
  ``outputTokens`` include reasoning. The vendor record stays in ``usage.extra["vendor"]``;
  ``extra["planCovered"]`` is true when the request went through a Copilot plan (not
  ``isByok``), whose price is the plan's, not the token price.
* **Usage without usage records** (1.0.20 and 1.0.34-1.0.60 log no
  ``session.usage_record``; recorded with 1.0.40): a response's ``assistant.message``
  carries only ``data.outputTokens`` (no ``apiCallId``, no ``model``), and
  ``session.shutdown`` carries ``modelMetrics`` (per model: ``requests.count``,
  ``inputTokens`` with the cache reads in it, ``outputTokens``, ``cacheReadTokens``,
  ``cacheWriteTokens``, ``reasoningTokens``). An assistant message with ``outputTokens`` and no
  usage record yields its response's ``UsageRow`` (output only, keyed by its ``apiCallId``,
  else its event id). Each shutdown adds the part of its totals that no response row holds
  yet (inputs, cache reads and writes, output the messages did not log: Copilot logs no
  per-response input before usage records) to the model's last response, as that
  response's key again (the later line wins; ``usage.extra["shutdownRest"]`` says what was
  added), so responses stay responses; with no response of that model, a row of its own
  keyed ``copilot:<session>:shutdown:<event id>:<model>``. Whether a shutdown's totals
  carry the earlier ones: 1.0.102 keeps them over a resume (``requests.count`` 1, then 2),
  1.0.40 restarts them (1, then 1); totals whose ``requests.count`` did not grow by the
  responses since the last shutdown are compared with the figures since it. **Once per response:**
  the usage records, the messages' output tokens and the remainders counted so far are
  kept per model in the state (``counted``), so in a file with usage records (1.0.61+)
  the shutdown adds nothing, and the archive's totals are the file's totals.
* **Subagents** (the ``task`` tool; recorded in copilot-1.0.102/agent). An event with a
  top-level ``agentId`` (absent for the main agent) belongs to the child thread
  ``<session>/agent-<agentId>`` (``parentThreadId`` the session): its prompt, system
  prompt, model, messages and usage. ``subagent.started`` gives the child its title (the
  task's description) and ``metadata.spawnCallId`` (the ``task`` call, resolved to the
  child's origin message); ``subagent.completed`` is metadata.
* **Bookkeeping** events (turn boundaries, shutdown accounting, tool progress, hooks,
  permissions...) are ``SKIPPED`` or ``METADATA``; an event type this version does not
  know is an ``UNKNOWN`` report. Resumable, deterministic, never raises on input.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    JsonObject,
    Message,
    Provenance,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    Unknown,
    Usage,
)
from ..base import claim_emitted
from ..base import nonempty_str as _str
from ..base import (
    decode_object,
    DUPLICATE,
    INVALID,
    METADATA,
    PARSE_ERROR,
    SKIPPED,
    UNKNOWN,
    WARNING,
    BlobRow,
    MessageRow,
    Report,
    Row,
    SourceInfo,
    ThreadFact,
    UsageRow,
    stable_id,
)

NAME = "copilot"
PENDING_CAP = 32  # usage records waiting for their assistant.message
AGENTS_CAP = 64  # subagent ids remembered (an older one is announced again: the same fact)
MODELS_CAP = 8  # models whose counted usage (and last response) the state keeps
# the figures of a usage record / modelMetrics entry kept per model (``counted``)
FIGURES = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "reasoningTokens")
ASSET_ID = re.compile(r"sha256:([0-9a-f]{64})")


def _snippet(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)[:2000].decode("utf-8", "replace")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def neutral_usage(u: JsonObject) -> Usage:
    """Copilot's usage record in the neutral buckets (see the module docstring)."""
    inp, cr, cw = _int(u.get("inputTokens")), _int(u.get("cacheReadTokens")), _int(u.get("cacheWriteTokens"))
    extra: JsonObject = {"vendor": u}
    if u.get("isByok") is False:
        extra["planCovered"] = True
    return Usage(
        input_tokens=None if inp is None else max(inp - (cr or 0) - (cw or 0), 0),
        output_tokens=_int(u.get("outputTokens")),
        cache_read_tokens=cr,
        cache_write_tokens=cw,
        reasoning_tokens=_int(u.get("reasoningTokens")),
        extra=extra,
    )


class CopilotParser:
    """Feeds events.jsonl lines; see the module docstring for what each event becomes."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source
        s = state or {}
        self.emitted: JsonObject = s.get("emitted", {})  # base.claim_emitted's held message
        self.session: str | None = s.get("session")
        self.cwd: str | None = s.get("cwd")
        self.model: str | None = s.get("model")
        self.turn: str | None = s.get("turn")
        self.pending: dict[str, JsonObject] = s.get("pending", {})  # apiCallId -> usage record
        self.facts: JsonObject = s.get("facts", {})
        self.agents: list[str] = s.get("agents", [])  # subagent ids announced as threads
        # model -> {"total": FIGURES counted, "since": those since the last shutdown, "n":
        # responses since it, "requests": its requests.count, "last": the last response}
        self.counted: dict[str, JsonObject] = s.get("counted", {})

    def state(self) -> JsonObject:
        return {"emitted": self.emitted, "session": self.session, "cwd": self.cwd, "model": self.model, "turn": self.turn,
                "pending": self.pending, "facts": self.facts, "agents": self.agents, "counted": self.counted}

    def tally(self, model: str) -> JsonObject:
        t = self.counted.pop(model, None) or {"total": [0] * len(FIGURES), "since": [0] * len(FIGURES), "n": 0,
                                               "requests": 0}  # fmt: skip
        self.counted[model] = t  # the latest used last: the oldest is forgotten first
        while len(self.counted) > MODELS_CAP:
            del self.counted[next(iter(self.counted))]
        return t

    def count(self, model: str | None, u: JsonObject, response: bool = True) -> None:
        """Adds a counted response's (or a remainder's) figures to ``model``'s tally."""
        t = self.tally(model or "")
        for i, k in enumerate(FIGURES):
            v = _int(u.get(k)) or 0
            t["total"][i] += v
            t["since"][i] += v
        t["n"] += 1 if response else 0

    def _session(self) -> str:
        if self.session is None:
            # no session.start before content (a trimmed file): the folder's uuid, else a stand-in
            parts = self.source.path.replace("\\", "/").split("/")
            folder = parts[-2] if len(parts) >= 2 else ""
            flat = parts[-1].removesuffix(".jsonl")  # 0.0.3xx: session-state/<uuid>.jsonl
            self.session = (folder if len(folder) == 36 else flat if len(flat) == 36
                            else "copilot-" + stable_id(self.source.source_id, "session"))
        return self.session

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        d = decode_object(line)
        if not isinstance(d, dict):
            return iter(() if d is None else [d])
        return iter(list(claim_emitted(d, self._dispatch(d), self.emitted)))

    def _dispatch(self, d: JsonObject) -> Iterator[Row]:
        kind = d.get("type")
        data = d.get("data")
        if not isinstance(kind, str):
            yield Report(INVALID, "event without type", _snippet(d))
            return
        if not isinstance(data, dict):
            yield Report(INVALID, f"{kind}: data is not an object", _snippet(d))
            return
        handler = HANDLERS.get(kind)
        if handler is not None:
            if d.get("agentId") is not None:
                yield from self.thread_of(d)[1]
            yield from handler(self, d, data)
        elif kind in SKIPPED_EVENTS:
            yield Report(SKIPPED, kind)
        elif kind in METADATA_EVENTS:
            yield Report(METADATA, kind, _snippet(data)[:500])
        else:
            yield Report(UNKNOWN, f"event type {kind}", _snippet(d))

    # -- rows

    def fact(self, key: str, value: Any, thread: str | None = None) -> Iterator[Row]:
        """``metadata.<key>`` of the session, or of a subagent's ``thread``, once per value."""
        tid = thread or self._session()
        seen = key if tid == self._session() else f"{tid} {key}"
        if value is None or self.facts.get(seen) == value:
            return
        self.facts[seen] = value
        if seen != key:  # a subagent's facts, a bounded few (the main session's stay)
            agents = [k for k in self.facts if " " in k]
            for old in agents[: max(len(agents) - 4 * AGENTS_CAP, 0)]:
                del self.facts[old]
        yield ThreadFact(tid, {"metadata": {key: value}})

    def thread_of(self, d: JsonObject) -> tuple[str, list[Row]]:
        """The thread of an event: the session's, or a subagent's for events that carry an
        ``agentId`` (the schema's sub-agent instance id), announced once as a child thread."""
        agent = _str(d.get("agentId"))
        if agent is None:
            return self.session or self._session(), []
        sid = self._session()
        tid = f"{sid}/agent-{agent}"
        if agent in self.agents:
            return tid, []
        self.agents.append(agent)
        del self.agents[:-AGENTS_CAP]
        return tid, [ThreadFact(tid, {"parentThreadId": sid, "agentId": agent, "createdAt": _str(d.get("timestamp"))})]

    def message(self, d: JsonObject, role: str, blocks: list[Block], extra: JsonObject) -> MessageRow:
        eid = _str(d.get("id")) or stable_id(_snippet(d))
        sid = self._session()
        tid, _ = self.thread_of(d)
        return MessageRow(Message(
            id=stable_id(NAME, sid, eid), thread_id=tid, role=role, ts=_str(d.get("timestamp")),
            content=tuple(blocks), turn_id=self.turn,
            provenance=Provenance(NAME, session_id=sid, source_id=eid),
            extra={"copilotType": d.get("type"), **extra},
        ))

    def usage_key(self, api_call: str) -> str:
        return f"{NAME}:{self._session()}:{api_call}"


def _context_facts(p: CopilotParser, data: JsonObject, first: bool) -> Iterator[Row]:
    ctx = data.get("context") if isinstance(data.get("context"), dict) else {}
    cwd = _str(ctx.get("cwd"))
    if first or p.cwd is None:
        p.cwd = cwd or p.cwd
        if cwd:
            yield from p.fact("cwd", cwd)
    elif cwd and cwd != p.cwd:
        yield from p.fact("lastCwd", cwd)
    for src, key in (("gitRoot", "gitRoot"), ("branch", "gitBranch"), ("repository", "gitRepository"),
                     ("headCommit", "gitCommit")):
        yield from p.fact(key, _str(ctx.get(src)))
    model = _str(data.get("selectedModel"))
    if model:
        p.model = model
        yield from p.fact("model", model)


def _session_start(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    sid = _str(data.get("sessionId"))
    if sid is None:
        yield Report(INVALID, "session.start without sessionId", _snippet(data))
        return
    if p.session is not None and p.session != sid:
        yield Report(INVALID, "a second session.start", _snippet(data))
        return
    p.session = sid
    fields: JsonObject = {"createdAt": _str(data.get("startTime")) or _str(d.get("timestamp"))}
    meta = {k: data[src] for src, k in (("copilotVersion", "version"), ("producer", "producer"))
            if isinstance(data.get(src), str)}
    if meta:
        fields["metadata"] = meta
    yield ThreadFact(sid, {k: v for k, v in fields.items() if v is not None})
    yield from _context_facts(p, data, first=True)


def _session_resume(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    rows = list(_context_facts(p, data, first=False))
    yield from rows
    yield Report(METADATA, "session.resume", _str(data.get("resumeTime")))


def _model_change(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    model = _str(data.get("newModel")) or _str(data.get("model"))
    tid = p.thread_of(d)[0]
    if model and tid != p._session():  # a subagent's model: its thread's, not the session's
        yield from p.fact("model", model, tid)
    elif model:
        p.model = model
        yield from p.fact("model", model)
    yield Report(METADATA, "session.model_change", _snippet(data)[:500])


def _title(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    title = _str(data.get("title"))
    if title:
        yield ThreadFact(p._session(), {"title": title})
    yield Report(METADATA, str(d.get("type")), title)


def _system_message(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    content = data.get("content")
    text = content if isinstance(content, str) else _snippet(content)
    info = {"role": data.get("role"), "chars": len(text),
            "sha256": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}
    yield from p.fact("systemPrompt", info, p.thread_of(d)[0])  # a subagent has its own
    yield Report(METADATA, "system.message", _snippet(info))


def _user_message(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    content = data.get("content")
    blocks: list[Block] = [Text(content)] if isinstance(content, str) else [Unknown(source_type="content", raw=content)]
    for att in data.get("attachments") or []:
        if isinstance(att, dict) and att.get("type") == "blob":  # a pasted image: bytes, or a binary asset
            blocks.append(_binary_result(att, None))
        else:  # files, folders, selections, GitHub references: what the prompt pointed at
            blocks.append(Unknown(source_type="copilot:attachment", raw=att))
    p.turn = _str(data.get("interactionId")) or _str(d.get("id"))
    extra = {k: v for k, v in data.items() if k not in ("content", "transformedContent", "attachments")}
    yield p.message(d, "user", blocks, extra)


def _assistant_message(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    blocks: list[Block] = []
    reasoning = data.get("reasoningText")
    rx = {k: data[k] for k in ("reasoningOpaque", "encryptedContent") if data.get(k) is not None}
    if isinstance(reasoning, str) and reasoning or rx:
        blocks.append(Reasoning(text=reasoning if isinstance(reasoning, str) and reasoning else None, extra=rx or None))
    content = data.get("content")
    if isinstance(content, str) and content:
        blocks.append(Text(content))
    for req in data.get("toolRequests") or []:
        if isinstance(req, dict) and _str(req.get("toolCallId")) and isinstance(req.get("name"), str):
            x = {k: v for k, v in req.items() if k not in ("toolCallId", "name", "arguments")}
            blocks.append(ToolCall(req["toolCallId"], req["name"], req.get("arguments"), extra=x or None))
        else:
            blocks.append(Unknown(source_type="copilot:toolRequest", raw=req))
    extra = {k: v for k, v in data.items()
             if k not in ("content", "toolRequests", "reasoningText", "reasoningOpaque", "encryptedContent")}
    model = _str(data.get("model")) or p.model
    if model:
        extra["model"] = model
    row = p.message(d, "assistant", blocks, extra)
    yield row
    m = row.message
    ts = _str(d.get("timestamp"))
    # the usage record of this response (kept in the state until now) names its carrier
    api_call = _str(data.get("apiCallId"))
    rec = p.pending.pop(api_call, None) if api_call else None
    if isinstance(rec, dict) and api_call:
        yield UsageRow(p.usage_key(api_call), m.thread_id, neutral_usage(rec), m.id, _str(rec.get("model")), ts)
        p.tally(_str(rec.get("model")) or "")["last"] = {"key": p.usage_key(api_call), "message": m.id,
                                                         "thread": m.thread_id, "ts": ts, "vendor": rec}
    elif _int(data.get("outputTokens")) is not None:
        # 1.0.20, 1.0.34-1.0.60: no usage record, the message logs its output tokens only;
        # the shutdown's modelMetrics give the rest (see the module docstring)
        u = {"outputTokens": data["outputTokens"]}
        key = p.usage_key(api_call or m.provenance.source_id or m.id)
        p.count(model, u)
        p.tally(model or "")["last"] = {"key": key, "message": m.id, "thread": m.thread_id, "ts": ts, "vendor": u}
        yield UsageRow(key, m.thread_id, neutral_usage(u), m.id, model, ts)


def _usage_record(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    u = data.get("usage")
    if not isinstance(u, dict):
        yield Report(INVALID, "session.usage_record without usage", _snippet(data))
        return
    api_call = _str(u.get("apiCallId")) or _str(d.get("id")) or ""
    yield UsageRow(p.usage_key(api_call), p.thread_of(d)[0], neutral_usage(u), None, _str(u.get("model")),
                   _str(d.get("timestamp")))
    if api_call not in p.pending:  # a record written again for the same call counts once
        p.count(_str(u.get("model")), u)
    p.pending[api_call] = u
    while len(p.pending) > PENDING_CAP:
        del p.pending[next(iter(p.pending))]


def _tool_complete(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    result = data.get("result") if isinstance(data.get("result"), dict) else {}
    error = data.get("error")
    if "content" in result:
        output: Any = result["content"]
    elif isinstance(error, dict) and isinstance(error.get("message"), str):
        output = error["message"]  # what the model is told of a failed call
    else:
        output = error if error is not None else (result or None)
    x: JsonObject = {}
    shell = data.get("shellExecution")
    if isinstance(shell, dict) and isinstance(shell.get("exitCode"), int):
        x["exitCode"] = shell["exitCode"]
    for k in ("detailedContent", "contents"):
        if k in result:
            x[k] = result[k]
    if error is not None:
        x["error"] = error
    success = data.get("success")
    call_id = str(data.get("toolCallId") or "")
    binary = result.get("binaryResultsForLlm")
    after = [_binary_result(item, call_id) for item in binary] if isinstance(binary, list) else []
    if binary is not None and not isinstance(binary, list):
        x["binaryResultsForLlm"] = binary
    if after:  # as Claude Code's images in a result: text, then a placeholder per attachment
        kinds = [item.get("type") if isinstance(item, dict) and isinstance(item.get("type"), str) else "binary"
                 for item in binary]  # fmt: skip
        output = [*([{"type": "text", "text": output}] if isinstance(output, str) else [] if output is None else [output]),
                  *({"type": k, "attachment": i} for i, k in enumerate(kinds))]  # fmt: skip
    block = ToolResult(call_id, output, (not success) if isinstance(success, bool) else None, extra=x or None)
    extra = {k: v for k, v in data.items() if k not in ("toolCallId", "result", "success", "error", "shellExecution",
                                                         "toolTelemetry")}
    yield p.message(d, "tool", [block, *after], extra)


def _shutdown(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    """The part of ``modelMetrics`` no response row holds yet, per model (see the module
    docstring): nothing in a file whose usage records counted every response."""
    yield Report(METADATA, "session.shutdown", _snippet(data)[:500])
    metrics = data.get("modelMetrics")
    models = {k: v for k, v in metrics.items() if isinstance(v, dict) and isinstance(v.get("usage"), dict)
              } if isinstance(metrics, dict) else {}  # fmt: skip
    if len(models) == 1:  # responses counted under another name (a message without its model)
        (only,) = models
        mine = p.tally(only)
        for other in [k for k in p.counted if k != only]:
            t = p.counted.pop(other)
            for k in ("total", "since"):
                mine[k] = [a + b for a, b in zip(mine[k], t[k])]
            mine["n"] += t["n"]
    eid = _str(d.get("id")) or stable_id(_snippet(data))
    for model, entry in models.items():
        usage = entry["usage"]
        figures = [_int(usage.get(k)) or 0 for k in FIGURES]
        t = p.tally(model)
        requests = _int((entry.get("requests") or {}).get("count")) if isinstance(entry.get("requests"), dict) else None
        # 1.0.102 carries the totals over a resume (requests 1, then 2); 1.0.40 restarts them
        # (requests 1, then 1): totals that did not grow by the responses since the last
        # shutdown are that process's, to compare with what came since
        if requests is not None:
            cumulative = requests >= t["requests"] + t["n"]
        else:
            cumulative = all(f >= c for f, c in zip(figures, t["total"]))
        base = t["total"] if cumulative else t["since"]
        rest = {k: max(f - c, 0) for k, f, c in zip(FIGURES, figures, base)}
        t["requests"] = requests if requests is not None else t["requests"] + t["n"]
        if not any(rest[k] for k in FIGURES[:4]):
            continue
        p.count(model, rest, response=False)
        last = t.get("last")
        if last is None:  # no response of this model to carry it
            yield UsageRow(p.usage_key(f"shutdown:{eid}:{model}"), p._session(), neutral_usage(rest), None, model,
                           _str(d.get("timestamp")))
            continue
        # added to the last response of the model (the same key: the later line wins), so
        # that the rest is one more figure of a response, not a response of its own
        vendor = last["vendor"]
        added = last["added"] = {k: (last.get("added") or {}).get(k, 0) + rest[k] for k in FIGURES}
        usage = neutral_usage({**vendor, **{k: (_int(vendor.get(k)) or 0) + added[k] for k in FIGURES}})
        extra = {**(usage.extra or {}), "vendor": vendor, "shutdownRest": added}
        yield UsageRow(last["key"], last["thread"], dataclasses.replace(usage, extra=extra), last["message"], model,
                       last["ts"])
    for t in p.counted.values():
        t["since"], t["n"] = [0] * len(FIGURES), 0


def _subagent_started(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    """The subagent thread's title (the task's description) and the call that spawned it
    (``spawnCallId``, which ingest resolves to the thread's origin message)."""
    tid = p.thread_of(d)[0]
    if tid == p._session():
        yield Report(METADATA, "subagent.started", _snippet(data)[:500])  # no agentId: nothing to name
        return
    fields: JsonObject = {}
    title = _str(data.get("agentDescription")) or _str(data.get("agentDisplayName"))
    if title:
        fields["title"] = title
    meta = {k: data[k] for k in ("agentName", "agentDisplayName", "agentType", "executionMode") if _str(data.get(k))}
    if _str(data.get("toolCallId")):
        meta["spawnCallId"] = data["toolCallId"]
    if _str(data.get("model")):
        meta["model"] = data["model"]
    if meta:
        fields["metadata"] = meta
    yield ThreadFact(tid, fields)


def _binary_result(item: Any, call_id: str | None) -> Block:
    """A ``binaryResultsForLlm`` item, or a user message's ``blob`` attachment (a pasted
    image; ``call_id`` None): a reference to a ``session.binary_asset`` (the blob of that
    sha256), inline base64 ``data``, or a marker whose bytes were left out."""
    if not isinstance(item, dict):
        return Unknown(source_type="copilot:binaryResult", raw=item)
    x: JsonObject = {k: v for k, v in item.items() if k not in ("type", "mimeType", "data", "assetId")}
    if item.get("type") not in ("image", "blob" if call_id is None else "image"):
        x["kind"] = item.get("type")
    asset = item.get("assetId")
    m = ASSET_ID.fullmatch(asset) if isinstance(asset, str) else None
    if m:
        x["blobSha256"] = m.group(1)
    elif asset is not None:
        x["assetId"] = asset
    if call_id is not None:
        x["callId"] = call_id
    data = item.get("data") if isinstance(item.get("data"), str) else None
    if data is None and "data" in item:
        x["data"] = item["data"]
    return Attachment(media_type=_str(item.get("mimeType")), data=data, extra=x)


def _binary_asset(p: CopilotParser, d: JsonObject, data: JsonObject) -> Iterator[Row]:
    """The bytes of an image (or other binary) a tool gave the model, stored once by
    sha256; the ``tool.execution_complete`` after it names them."""
    b64 = data.get("data")
    try:
        raw = base64.b64decode(b64, validate=True) if isinstance(b64, str) else None
    except (binascii.Error, ValueError):
        raw = None
    if raw is None:
        yield Report(INVALID, "session.binary_asset without base64 data", _snippet({k: v for k, v in data.items()
                                                                                  if k != "data"}))  # fmt: skip
        return
    yield BlobRow(raw, _str(data.get("mimeType")))
    asset = data.get("assetId")
    m = ASSET_ID.fullmatch(asset) if isinstance(asset, str) else None
    actual = hashlib.sha256(raw).hexdigest()
    if m is None or m.group(1) != actual:
        yield Report(WARNING, "session.binary_asset", f"sha256 of the bytes is {actual}, not the asset id {asset!r}")


Handler = Callable[[CopilotParser, JsonObject, JsonObject], Iterator[Row]]
HANDLERS: dict[str, Handler] = {
    "session.start": _session_start,
    "session.resume": _session_resume,
    "session.model_change": _model_change,
    "session.title_changed": _title,
    "system.message": _system_message,
    "user.message": _user_message,
    "assistant.message": _assistant_message,
    "session.usage_record": _usage_record,
    "tool.execution_complete": _tool_complete,
    "session.binary_asset": _binary_asset,
    "subagent.started": _subagent_started,
    "session.shutdown": _shutdown,
    "tool.execution_start": lambda p, d, data: iter([Report(DUPLICATE, "tool.execution_start",
                                                            "the call is the assistant message's toolRequests item")]),
    "assistant.reasoning": lambda p, d, data: iter([Report(DUPLICATE, "assistant.reasoning",
                                                           "reasoningText of the assistant message")]),
}
# bookkeeping the model never sees
SKIPPED_EVENTS = {
    "assistant.turn_start", "assistant.turn_end", "assistant.message_start", "assistant.message_delta",
    "assistant.streaming_delta", "assistant.reasoning_delta", "assistant.tool_call_delta", "assistant.idle",
    "assistant.intent", "assistant.usage", "assistant.turn_retry", "session.idle", "tool.execution_progress",
    "tool.execution_partial_result", "tool.shell_output", "hook.start", "hook.progress", "hook.end",
    "permission.requested", "permission.completed", "session.usage_checkpoint", "session.usage_info",
    "session.quota_observation", "session.background_tasks_changed", "session.tools_updated",
    "session.skills_loaded", "session.mcp_servers_loaded", "session.mcp_server_tools_loaded",
    "session.mcp_server_status_changed", "session.extensions_loaded", "session.custom_agents_updated",
    "model.call_start", "model.call_finished", "model.call_final_result", "pending_messages.modified",
    "commands.changed", "capabilities.changed", "session.workspace_file_changed", "session.todos_changed",
}
# session facts kept in the stored line (accounting, compaction, errors, subagents...)
METADATA_EVENTS = {
    "session.error", "session.warning", "session.info", "session.compaction_start",
    "session.compaction_complete", "session.truncation", "session.context_changed", "session.mode_changed",
    "session.plan_changed", "session.snapshot_rewind", "session.handoff", "session.task_complete",
    "session.permissions_changed", "session.session_limits_changed", "model.call_failure", "abort",
    "agent.interrupted", "subagent.completed", "subagent.failed", "subagent.selected",
    "subagent.deselected", "subagent.configured", "skill.invoked", "instruction_discovered", "checkpoint",
}


def parse_workspace_yaml(text: str) -> JsonObject:
    """The top-level ``key: scalar`` pairs of Copilot's workspace.yaml (a flat mapping of
    strings, numbers and booleans, as 1.0.102 writes it); other lines are left out."""
    out: JsonObject = {}
    for line in text.splitlines():
        if not line or line[0] in " \t#-" or ":" not in line:
            continue
        key, _, raw = line.partition(":")
        value = raw.strip()
        if value.startswith("'") and value.endswith("'") and len(value) >= 2:
            out[key] = value[1:-1].replace("''", "'")
        elif value.startswith('"') and value.endswith('"') and len(value) >= 2:
            try:
                out[key] = orjson.loads(value)
            except orjson.JSONDecodeError:
                out[key] = value[1:-1]
        elif value in ("true", "false"):
            out[key] = value == "true"
        elif value in ("", "null", "~"):
            out[key] = None
        elif value.lstrip("-").isdigit():
            out[key] = int(value)
        else:
            out[key] = value
    return out


class WorkspaceParser:
    """``<session>/workspace.yaml``: a snapshot rewritten in place (cwd, git root, branch,
    name, summary count); each version is a generation fed as one line."""

    def __init__(self, source: SourceInfo, state: JsonObject | None = None) -> None:
        self.source = source

    def state(self) -> JsonObject:
        return {}

    def feed(self, offset: int, line: bytes) -> Iterator[Row]:
        try:
            doc = parse_workspace_yaml(line.decode("utf-8"))
        except UnicodeDecodeError as e:
            yield Report(PARSE_ERROR, "workspace.yaml is not UTF-8", str(e))
            return
        parts = self.source.path.replace("\\", "/").split("/")
        sid = _str(doc.get("id")) or (parts[-2] if len(parts) >= 2 else None)
        if not sid:
            yield Report(INVALID, "workspace.yaml without id")
            return
        meta = {k: doc[src] for src, k in (("cwd", "cwd"), ("git_root", "gitRoot"), ("branch", "gitBranch"),
                                           ("repository", "gitRepository"), ("summary", "summary"))
                if isinstance(doc.get(src), str)}
        fields: JsonObject = {}
        if isinstance(doc.get("name"), str) and doc["name"]:
            fields["title"] = doc["name"]
        if meta:
            fields["metadata"] = meta
        if fields:
            yield ThreadFact(sid, fields)
        yield Report(METADATA, "workspace.yaml", _snippet(doc))
