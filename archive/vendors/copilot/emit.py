"""Canonical threads -> a GitHub Copilot CLI session (as 1.0.102 writes and resumes it).

``session-state/<uuid>/events.jsonl`` and ``workspace.yaml``. Events: ``session.start``
(cwd, model, client version); per user prompt a ``user.message`` (``transformedContent``
is the prompt itself: the harness's time stamp is not invented); per model response
``assistant.turn_start``, ``session.usage_record`` (when the response has usage),
``assistant.message`` (``reasoningText``, text, ``toolRequests``) and
``assistant.turn_end``; per tool result ``tool.execution_complete``. Ids are UUIDs derived
from the thread id; every event's ``parentId`` is the event before it. Everything dropped
or changed is counted in ``EmitResult.counts`` under its reason:

* system messages have no place (Copilot writes its own ``system.message``);
* Copilot never sends reasoning back to a model: reasoning is kept as ``reasoningText``;
* a tool output's images (Claude Code's attachments, Codex's ``input_image`` data URLs,
  Copilot's own) are written as Copilot writes a view of a PNG: the bytes once per session
  in a ``session.binary_asset`` event (``assetId`` ``sha256:<hex>``) just before the
  ``tool.execution_complete``, whose ``result.binaryResultsForLlm`` names them, and
  ``result.content`` holds the output's text parts. Copilot 1.0.102 with a BYOK model
  sends the model that text only (its own view of a PNG: "Viewed image file
  successfully."), so the image is in the session but not in what a resumed session sends;
  other output items are serialised to text; an error result is written with
  ``success: false`` and its output as ``error.message``;
* usage is written in Copilot's convention (``inputTokens`` include cache reads and
  writes); a usage record from Copilot itself keeps its other fields.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import orjson

from ...model import Attachment, JsonObject, Message, Reasoning, Text, Thread, ToolCall, ToolResult
from ..base import CHILD_THREADS_NOT_WRITTEN, EmitOptions, EmitResult, MessageStream, command, emitted_response, mark_record, output_image
from .parse import NAME

EMIT_CLIENT_VERSION = "1.0.102"


def _parse_ts(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _fmt_ts(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def uuid4_from(seed: str) -> str:
    """A version-4-shaped UUID, deterministic from ``seed``."""
    b = bytearray(hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()[:16])
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def resume_hint(session_id: str) -> str:
    return command("copilot", f"--resume={session_id}")


def _yaml_str(value: str) -> str:
    """A single-quoted YAML scalar."""
    return "'" + value.replace("'", "''").replace("\n", " ") + "'"


def _split_output(output: Any, attachments: Sequence[Attachment]) -> tuple[Any, list[tuple[JsonObject, int | None]]]:
    """A list output's images (with their bytes), each with the index of its attachment
    when it is a placeholder, and the output without them (text parts joined)."""
    if not isinstance(output, list):
        return output, []
    images: list[tuple[JsonObject, int | None]] = []
    rest = []
    for item in output:
        image = output_image(item, attachments)
        if image is None:
            rest.append(item)
        else:
            k = item.get("attachment") if isinstance(item, dict) else None
            images.append((image, k if isinstance(k, int) else None))
    if not images:
        return output, []
    if all(isinstance(p, dict) and p.get("type") in ("text", "input_text") and isinstance(p.get("text"), str)
           for p in rest):  # fmt: skip
        return "\n".join(p["text"] for p in rest), images
    return rest, images


def _output_text(output: Any) -> tuple[str, bool]:
    if isinstance(output, str):
        return output, False
    if output is None:
        return "", False
    if isinstance(output, list) and all(isinstance(p, dict) and isinstance(p.get("text"), str) for p in output):
        return "\n".join(p["text"] for p in output), True
    return orjson.dumps(output).decode(), True


def _model_of(m: Message) -> str | None:
    model = (m.extra or {}).get("model")
    return model if isinstance(model, str) else None


class _Emitter:
    def __init__(self, thread: Thread, messages: Iterable[Message], options: EmitOptions) -> None:
        self.thread = thread
        self.messages = MessageStream(messages)
        self.options = options
        self.result = EmitResult()
        meta = thread.metadata or {}
        created = _parse_ts(thread.created_at) or self.messages.first(lambda m: _parse_ts(m.ts))
        self.created = created or datetime(1970, 1, 1, tzinfo=timezone.utc)
        self.clock = self.created
        self.id = options.session_id or uuid4_from(f"sesh-archive:copilot:{thread.id}")
        self.cwd = str(options.cwd or meta.get("cwd") or "/")
        model = options.model or meta.get("model") or self.messages.first(_model_of)
        self.model = model if isinstance(model, str) else "gpt-4.1"
        self.parent: str | None = None
        self.n = 0
        self.interaction: str | None = None
        self.turn = 0
        self.open_calls: dict[str, str] = {}  # call id -> tool name
        self.assets: set[str] = set()  # asset ids written (a session holds each once)
        self.title: str | None = thread.title
        # the emit mark of the events being written (base.mark_record): message, response
        self.current: tuple[str | None, str | None] = (None, None)

    def count(self, reason: str, n: int = 1) -> None:
        self.result.count(reason, n)

    def _write(self, line: bytes) -> None:
        self.out.write(line + b"\n")

    def event(self, kind: str, data: JsonObject, ts: str | None) -> str:
        self.n += 1
        eid = uuid4_from(f"{self.id}:event:{self.n}")
        when = _parse_ts(ts)
        self.clock = when if when is not None and when > self.clock else self.clock + timedelta(milliseconds=1)
        record = {"type": kind, "data": data, "id": eid, "timestamp": _fmt_ts(self.clock), "parentId": self.parent}
        first = self.thread.id if self.n == 1 else None
        self._write(orjson.dumps(mark_record(record, self.current[0], first, self.current[1])))
        self.parent = eid
        return eid

    def emit(self) -> EmitResult:
        self.out = self.result.files.open(f"session-state/{self.id}/events.jsonl")
        git = self.thread.metadata or {}
        context: JsonObject = {"cwd": self.cwd}
        for src, key in (("gitRoot", "gitRoot"), ("gitBranch", "branch"), ("gitRepository", "repository")):
            if isinstance(git.get(src), str):
                context[key] = git[src]
        if "branch" not in context and self.options.git_branch:
            context["branch"] = self.options.git_branch
        self.event("session.start", {
            "sessionId": self.id, "version": 1, "producer": "copilot-agent",
            "copilotVersion": self.options.client_version or EMIT_CLIENT_VERSION,
            "startTime": _fmt_ts(self.created), "selectedModel": self.model, "context": context,
        }, _fmt_ts(self.created))
        if self.thread.parent_thread_id:
            self.count("thread: parentThreadId not representable (emitted as a standalone session)")
        for m in self.messages:
            self.current = (m.id, emitted_response(m))
            self.emit_message(m)
        self.current = (None, None)
        self.end_turn(None)
        self.result.files[f"session-state/{self.id}/workspace.yaml"] = self.workspace()
        self.result.thread_id = self.id
        self.result.resume_hint = resume_hint(self.id)
        return self.result

    def workspace(self) -> bytes:
        stamp = _fmt_ts(self.created)
        lines = [f"id: {self.id}", f"cwd: {self.cwd}", "client_name: github/cli"]
        if self.title:
            lines.append(f"name: {_yaml_str(self.title)}")
        lines += ["user_named: false", "summary_count: 0", "fork_count: 0", f"created_at: {stamp}",
                  f"updated_at: {_fmt_ts(self.clock)}"]
        return ("\n".join(lines) + "\n").encode()

    def end_turn(self, ts: str | None) -> None:
        if self.interaction is not None and self.turn_open:
            self.event("assistant.turn_end", {"turnId": str(self.turn)}, ts)
            self.turn += 1
        self.turn_open = False

    turn_open = False

    def emit_message(self, m: Message) -> None:
        if m.role == "system":
            self.count("message: system message dropped (Copilot writes its own system prompt)")
            return
        results = [b for b in m.content if isinstance(b, ToolResult)]
        for b in results:
            self.tool_result(b, m)
        # a result's images (Claude Code's attachments) go with it
        ids = {b.call_id for b in results}
        rest = [b for b in m.content if not isinstance(b, ToolResult)
                and not (isinstance(b, Attachment) and (b.extra or {}).get("callId") in ids)]  # fmt: skip
        if not rest:
            return
        if m.role == "assistant":
            self.assistant(m, rest)
        elif m.role == "user":
            self.user(m, rest)
        else:
            self.count(f"message: {m.role} blocks without a tool result dropped", len(rest))

    def user(self, m: Message, blocks: list[Any]) -> None:
        texts = [b.text for b in blocks if isinstance(b, Text)]
        dropped = len(blocks) - len(texts)
        if dropped:
            self.count("user: non-text block not representable, dropped", dropped)
        if not texts:
            return
        self.end_turn(m.ts)
        if not self.title:
            self.title = texts[0][:80]
        self.interaction = uuid4_from(f"{self.id}:interaction:{self.n}")
        self.turn = 0
        text = "\n\n".join(texts)
        self.event("user.message", {"content": text, "transformedContent": text,
                                    "messageId": uuid4_from(f"{self.id}:message:{self.n}"),
                                    "interactionId": self.interaction, "turnId": str(self.turn)}, m.ts)

    def assistant(self, m: Message, blocks: list[Any]) -> None:
        own = m.provenance is not None and m.provenance.provider == NAME
        self.end_turn(m.ts)
        if self.interaction is None:
            self.interaction = uuid4_from(f"{self.id}:interaction:{self.n}")
        self.event("assistant.turn_start", {"turnId": str(self.turn), "interactionId": self.interaction}, m.ts)
        self.turn_open = True
        text: list[str] = []
        reasoning: list[str] = []
        requests: list[JsonObject] = []
        extra: JsonObject = {}
        for b in blocks:
            if isinstance(b, Text):
                text.append(b.text)
            elif isinstance(b, Reasoning):
                if b.text and self.options.reasoning == "summary":
                    reasoning.append(b.text)
                    if not own:
                        self.count("reasoning: kept as reasoningText (Copilot does not send it back to a model)")
                else:
                    self.count("reasoning: dropped (redacted, or reasoning=drop)")
                for k in ("reasoningOpaque", "encryptedContent"):
                    if own and b.extra and isinstance(b.extra.get(k), str):
                        extra[k] = b.extra[k]
            elif isinstance(b, ToolCall):
                self.open_calls[b.call_id] = b.name
                req: JsonObject = {"toolCallId": b.call_id, "name": b.name,
                                   "arguments": b.input if b.input is not None else {}, "type": "function"}
                if own and b.extra:
                    req.update({k: v for k, v in b.extra.items() if k not in req})
                requests.append(req)
            else:
                self.count(f"assistant: {getattr(b, 'TYPE', type(b).__name__)} block not representable, dropped")
        x = m.extra or {}
        api_call = x["apiCallId"] if own and isinstance(x.get("apiCallId"), str) else uuid4_from(f"{self.id}:call:{self.n}")
        model = x["model"] if isinstance(x.get("model"), str) else self.model
        if m.usage is not None:
            self.usage_record(m, api_call, model, own)
        data: JsonObject = {"messageId": uuid4_from(f"{self.id}:message:{self.n}"), "model": model,
                            "content": "".join(text), "toolRequests": requests,
                            "interactionId": self.interaction, "turnId": str(self.turn)}
        if reasoning:
            data["reasoningText"] = "\n\n".join(reasoning)
        data.update(extra)
        data["apiCallId"] = api_call
        self.event("assistant.message", data, m.ts)

    def usage_record(self, m: Message, api_call: str, model: str, own: bool) -> None:
        u = m.usage
        assert u is not None
        vendor = (u.extra or {}).get("vendor")
        cr, cw = u.cache_read_tokens or 0, u.cache_write_tokens or 0
        rec: JsonObject = dict(vendor) if own and isinstance(vendor, dict) else {"model": model, "cost": 0.0}
        rec.update({"inputTokens": (u.input_tokens or 0) + cr + cw, "outputTokens": u.output_tokens or 0,
                    "cacheReadTokens": cr, "cacheWriteTokens": cw, "reasoningTokens": u.reasoning_tokens or 0,
                    "apiCallId": api_call})
        if not own:
            self.count("usage: written as session.usage_record from message usage")
        self.event("session.usage_record", {"usage": rec}, m.ts)

    def tool_result(self, b: ToolResult, m: Message) -> None:
        if b.call_id not in self.open_calls:
            self.count("tool_result: no matching tool call, dropped")
            return
        self.open_calls.pop(b.call_id)
        attachments = [a for a in m.content if isinstance(a, Attachment) and (a.extra or {}).get("callId") == b.call_id]
        text_output, images = _split_output(b.output, attachments)
        if images and b.is_error:
            self.count("tool_result: images of a failed call dropped (Copilot keeps them on a result)", len(images))
            images = []
        binary = [self.binary_asset(image, attachments[k] if k is not None else None, m.ts) for image, k in images]
        output, changed = _output_text(text_output)
        if changed:
            self.count("tool_result: output serialised to text")
        data: JsonObject = {"toolCallId": b.call_id, "model": self.model, "interactionId": self.interaction,
                            "turnId": str(self.turn), "success": not b.is_error}
        if b.is_error:
            # Copilot tells the model error.message of a failed call (result is for success)
            data["error"] = {"message": output}
        else:
            data["result"] = {"content": output}
            if binary:
                data["result"]["binaryResultsForLlm"] = binary
        exit_code = (b.extra or {}).get("exitCode")
        if isinstance(exit_code, int):
            data["shellExecution"] = {"exitCode": exit_code}
        self.event("tool.execution_complete", data, m.ts)

    def binary_asset(self, image: JsonObject, att: Attachment | None, ts: str | None) -> JsonObject:
        """A tool output's image: its ``session.binary_asset`` event (once per session), and
        the reference ``binaryResultsForLlm`` holds."""
        data = image["data"]
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raw = data.encode()
        asset = "sha256:" + hashlib.sha256(raw).hexdigest()
        ref: JsonObject = {"type": "image", "assetId": asset, "mimeType": image.get("mimeType") or "image/png",
                           "byteLength": len(raw)}
        x = (att.extra or {}) if att is not None else {}
        for k in ("description", "metadata"):  # Copilot's own, read back
            if x.get(k) is not None:
                ref[k] = x[k]
        if asset not in self.assets:
            self.assets.add(asset)
            self.event("session.binary_asset", {"assetId": asset, "type": "image", "mimeType": ref["mimeType"],
                                                "byteLength": len(raw), "data": data,
                                                **({"description": ref["description"]} if "description" in ref else {})},
                       ts)  # fmt: skip
            self.count("tool_result: image written as session.binary_asset (Copilot sends a BYOK model the text only)")
        return ref


def emit_session(thread: Thread, messages: Iterable[Message], children: Sequence[Any], options: EmitOptions) -> EmitResult:
    """A Copilot CLI session folder for ``thread``'s messages; see the module docstring."""
    emitter = _Emitter(thread, messages, options)
    if children:
        emitter.count(CHILD_THREADS_NOT_WRITTEN, len(children))
    return emitter.emit()
