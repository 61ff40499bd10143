"""Scripted mock model servers for the real vendor CLIs: the Anthropic Messages API (Claude
Code) and the OpenAI Responses API (Codex), both streaming Server-Sent Events.

Invariants:

* Loopback only: the servers bind 127.0.0.1 on a port the OS picks (port 0).
* Bounded: a server stops by itself ``max_seconds`` after it started, and on ``stop()`` /
  leaving its ``with`` block; its thread is a daemon, so a crashed test never hangs.
* Every request is logged (path, query, parsed JSON body) in arrival order, for assertions.
* Replies are a pure function of the request body and the scenario script: the reply is
  chosen by the *key* (a substring of the latest human prompt in the request) and the
  *step* (how many tool-result rounds follow that prompt). So a resumed session or a
  subagent (whose first prompt is the parent's Agent tool input) gets the right reply
  without any server-side session state, and ids in replies are deterministic.
* Requests that are not part of the agent loop (Claude Code's title / topic requests: no
  ``tools`` in the body) get a plain text reply and are logged like the others.

A scripted reply is a list of vendor-neutral parts (:class:`Text`, :class:`Thinking`,
:class:`Tool`, :class:`WebSearchCall`) rendered to each API's event stream.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union
from urllib.parse import parse_qs, urlsplit

# ---------------------------------------------------------------- scripted reply parts


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Thinking:
    """Claude ``thinking`` (with a signature) / Codex ``reasoning`` (summary text)."""

    text: str
    signature: str = "c2VzaC1hcmNoaXZlLW1vY2stc2lnbmF0dXJl"  # base64 of a fixed string


@dataclass(frozen=True)
class Tool:
    """A tool call. ``input`` is a dict (function arguments) or, for Codex freeform
    custom tools such as ``apply_patch``, a raw string."""

    name: str
    input: Any


@dataclass(frozen=True)
class WebSearchCall:
    """A server-side web search (Responses ``web_search_call``); Codex only."""

    query: str


Part = Union[Text, Thinking, Tool, WebSearchCall]
Reply = list[Part]


@dataclass
class Script:
    """Replies by prompt key and step. ``turns[key][step]`` answers the request whose latest
    human prompt contains ``key`` after ``step`` tool-result rounds. Past the end of a list,
    and for prompts matching no key, the reply is ``Text(default)``."""

    turns: dict[str, list[Reply]] = field(default_factory=dict)
    default: str = "Done."
    side_reply: str = "Mock session"  # for requests without tools (titles, topics)

    def reply(self, prompt: str, step: int) -> tuple[str, Reply]:
        for key, replies in self.turns.items():
            if key in prompt:
                if step < len(replies):
                    return key, replies[step]
                return key, [Text(self.default)]
        return "", [Text(self.default)]


def _ident(*parts: object) -> str:
    """Deterministic ids: the same request gets the same ids, in every run."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:24]


# ---------------------------------------------------------------- server base


@dataclass
class LoggedRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    t: float
    usage: Any = None  # the usage the mock answered with (Gemini and chat-completions mocks)


class _Handler(BaseHTTPRequestHandler):
    server: "_HTTPServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep test output clean; the request log is the record

    def _read_body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Content-Encoding") == "zstd":
            import zstandard

            raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        elif self.headers.get("Content-Encoding") == "gzip":
            import gzip

            raw = gzip.decompress(raw)
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}

    def _handle(self) -> None:
        parts = urlsplit(self.path)
        body = self._read_body() if self.command in ("POST", "PUT", "PATCH") else None
        req = LoggedRequest(self.command, parts.path, parse_qs(parts.query), body, time.time())
        mock = self.server.mock
        with mock.lock:
            mock.requests.append(req)
        status, headers, payload = mock.respond(req)
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    mock: "MockServer"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # clients drop keep-alive connections when they exit; that is not a test failure
        pass


class MockServer:
    """Base: a threaded HTTP server on 127.0.0.1:0 with a request log and a deadline."""

    def __init__(self, script: Script | None = None, max_seconds: float = 300.0) -> None:
        self.script = script or Script()
        self.requests: list[LoggedRequest] = []
        self.lock = threading.Lock()
        self.max_seconds = max_seconds
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    # lifecycle ------------------------------------------------------------

    def start(self) -> "MockServer":
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.mock = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        # the deadline: a forgotten server must not outlive its test run
        self._timer = threading.Timer(self.max_seconds, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def __enter__(self) -> "MockServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # requests -------------------------------------------------------------

    def respond(self, req: LoggedRequest) -> tuple[int, dict[str, str], bytes]:
        raise NotImplementedError

    def model_requests(self) -> list[LoggedRequest]:
        """Requests of the agent loop (they carry tools), in arrival order."""
        raise NotImplementedError

    def clear(self) -> None:
        with self.lock:
            self.requests.clear()

    @staticmethod
    def _json(status: int, obj: Any) -> tuple[int, dict[str, str], bytes]:
        return status, {"Content-Type": "application/json"}, json.dumps(obj).encode()

    @staticmethod
    def _sse(events: list[tuple[str, dict[str, Any]]]) -> tuple[int, dict[str, str], bytes]:
        out = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
        return 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, out.encode()


# ---------------------------------------------------------------- Anthropic Messages API


def _anthropic_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def anthropic_prompt_and_step(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The latest human prompt (a user message without tool results) and the number of
    tool-result rounds after it."""
    prompt, step = "", 0
    for m in messages:
        if m.get("role") != "user":
            continue
        content = m.get("content")
        has_result = isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )
        if has_result:
            step += 1
        else:
            prompt, step = _anthropic_text(content), 0
    return prompt, step


class AnthropicMock(MockServer):
    """POST /v1/messages (stream or not); anything else: 404, logged."""

    model = "claude-mock-1"

    def model_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.path == "/v1/messages" and isinstance(r.body, dict) and r.body.get("tools")]

    def reply_for(self, body: dict[str, Any]) -> tuple[str, str, int, Reply]:
        """(key, prompt, step, reply) for a request body: the scripted answer."""
        if body.get("tools"):
            prompt, step = anthropic_prompt_and_step(body.get("messages") or [])
            key, reply = self.script.reply(prompt, step)
            return key, prompt, step, reply
        return "side", "", 0, [Text(self.script.side_reply)]

    def respond(self, req: LoggedRequest) -> tuple[int, dict[str, str], bytes]:
        if req.method != "POST" or req.path != "/v1/messages" or not isinstance(req.body, dict):
            return self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": req.path}})
        body = req.body
        messages = body.get("messages") or []
        key, prompt, step, reply = self.reply_for(body)
        msg_id = "msg_" + _ident("anthropic", key, step, prompt, len(messages))
        blocks = self._blocks(reply, msg_id)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        usage = {"input_tokens": 10 + len(json.dumps(messages)) // 40, "output_tokens": 5 + len(json.dumps(blocks)) // 4,
                 "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if not body.get("stream"):
            return self._json(200, {"id": msg_id, "type": "message", "role": "assistant", "model": body.get("model") or self.model,
                                    "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage})
        events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": body.get("model") or self.model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}})]
        for i, b in enumerate(blocks):
            events.extend(self._block_events(i, b))
        events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                         "usage": {"output_tokens": usage["output_tokens"]}}))
        events.append(("message_stop", {"type": "message_stop"}))
        return self._sse(events)

    @staticmethod
    def _blocks(reply: Reply, msg_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for i, p in enumerate(reply):
            if isinstance(p, Text):
                out.append({"type": "text", "text": p.text})
            elif isinstance(p, Thinking):
                out.append({"type": "thinking", "thinking": p.text, "signature": p.signature})
            elif isinstance(p, Tool):
                out.append({"type": "tool_use", "id": "toolu_" + _ident(msg_id, i), "name": p.name, "input": p.input})
            else:
                raise ValueError(f"the Anthropic mock cannot send {p!r}")
        return out

    @staticmethod
    def _block_events(i: int, b: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        def delta(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
            return "content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}

        ev: list[tuple[str, dict[str, Any]]] = []
        if b["type"] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            # two deltas, so the client's accumulation is exercised
            half = len(b["text"]) // 2
            ev += [delta({"type": "text_delta", "text": b["text"][:half]}), delta({"type": "text_delta", "text": b["text"][half:]})]
        elif b["type"] == "thinking":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i,
                                               "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
            ev += [delta({"type": "thinking_delta", "thinking": b["thinking"]}), delta({"type": "signature_delta", "signature": b["signature"]})]
        elif b["type"] == "tool_use":
            ev.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}}))
            js = json.dumps(b["input"])
            half = len(js) // 2
            ev += [delta({"type": "input_json_delta", "partial_json": js[:half]}), delta({"type": "input_json_delta", "partial_json": js[half:]})]
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        return ev


# ---------------------------------------------------------------- OpenAI Responses API

_TOOL_OUTPUT_TYPES = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output", "mcp_tool_call_output"}


def _responses_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def responses_prompt_and_step(items: list[dict[str, Any]]) -> tuple[str, int]:
    """The latest user message's text and the number of tool-output rounds after it (a
    round is a run of consecutive output items, since one response may call several tools)."""
    prompt, step, prev_output = "", 0, False
    for it in items:
        t = it.get("type", "message")
        if t == "message" and it.get("role") == "user":
            prompt, step, prev_output = _responses_text(it), 0, False
        elif t in _TOOL_OUTPUT_TYPES:
            if not prev_output:
                step += 1
            prev_output = True
        else:
            prev_output = False
    return prompt, step


class ResponsesMock(MockServer):
    """POST /v1/responses (SSE); GET /v1/models answers an empty list; else 404, logged."""

    def model_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.path.endswith("/responses") and isinstance(r.body, dict) and r.body.get("tools")]

    def reply_for(self, body: dict[str, Any]) -> tuple[str, str, int, Reply]:
        """(key, prompt, step, reply) for a request body: the scripted answer."""
        if body.get("tools"):
            prompt, step = responses_prompt_and_step(body.get("input") or [])
            key, reply = self.script.reply(prompt, step)
            return key, prompt, step, reply
        return "side", "", 0, [Text(self.script.side_reply)]

    def respond(self, req: LoggedRequest) -> tuple[int, dict[str, str], bytes]:
        if req.method == "GET" and req.path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [], "models": []})
        if req.method != "POST" or not req.path.endswith("/responses") or not isinstance(req.body, dict):
            return self._json(404, {"error": {"message": f"no route {req.path}", "type": "invalid_request_error"}})
        body = req.body
        items = body.get("input") or []
        key, prompt, step, reply = self.reply_for(body)
        resp_id = "resp_" + _ident("responses", key, step, prompt, len(items))
        out_items = [self._item(p, resp_id, i) for i, p in enumerate(reply)]
        usage = {"input_tokens": 10 + len(json.dumps(items)) // 40, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 5 + len(json.dumps(out_items)) // 4, "output_tokens_details": {"reasoning_tokens": 3},
                 "total_tokens": 0}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        req.usage = usage
        model = body.get("model", "mock")
        base = {"id": resp_id, "object": "response", "created_at": 1767225600, "model": model}
        events: list[tuple[str, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": {**base, "status": "in_progress", "output": []}})]
        for i, it in enumerate(out_items):
            events.extend(self._item_events(i, it))
        events.append(("response.completed", {"type": "response.completed", "response": {
            **base, "status": "completed", "output": out_items, "usage": usage}}))
        return self._sse(events)

    @staticmethod
    def _item(p: Part, resp_id: str, i: int) -> dict[str, Any]:
        ident = _ident(resp_id, i)
        if isinstance(p, Text):
            return {"type": "message", "id": "msg_" + ident, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": p.text, "annotations": []}]}
        if isinstance(p, Thinking):
            return {"type": "reasoning", "id": "rs_" + ident, "summary": [{"type": "summary_text", "text": p.text}],
                    "encrypted_content": p.signature}
        if isinstance(p, Tool):
            if isinstance(p.input, str):  # freeform custom tool (apply_patch)
                return {"type": "custom_tool_call", "id": "ctc_" + ident, "status": "completed", "call_id": "call_" + ident,
                        "name": p.name, "input": p.input}
            return {"type": "function_call", "id": "fc_" + ident, "status": "completed", "call_id": "call_" + ident,
                    "name": p.name, "arguments": json.dumps(p.input)}
        if isinstance(p, WebSearchCall):
            return {"type": "web_search_call", "id": "ws_" + ident, "status": "completed",
                    "action": {"type": "search", "query": p.query}}
        raise ValueError(p)

    @staticmethod
    def _item_events(i: int, it: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        ev: list[tuple[str, dict[str, Any]]] = []
        if it["type"] == "message":
            text = it["content"][0]["text"]
            ev.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                      "item": {**it, "status": "in_progress", "content": []}}))
            half = len(text) // 2
            for piece in (text[:half], text[half:]):
                ev.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": it["id"],
                                                          "output_index": i, "content_index": 0, "delta": piece}))
        elif it["type"] == "reasoning":
            ev.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i,
                                                      "item": {**it, "summary": []}}))
            ev.append(("response.reasoning_summary_text.delta", {"type": "response.reasoning_summary_text.delta",
                                                                 "item_id": it["id"], "output_index": i, "summary_index": 0,
                                                                 "delta": it["summary"][0]["text"]}))
        else:
            ev.append(("response.output_item.added", {"type": "response.output_item.added", "output_index": i, "item": it}))
        ev.append(("response.output_item.done", {"type": "response.output_item.done", "output_index": i, "item": it}))
        return ev


# ---------------------------------------------------------------- Gemini API (Gemini CLI)


def _gemini_text(parts: Any) -> str:
    return "\n".join(p.get("text", "") for p in parts or [] if isinstance(p, dict) and isinstance(p.get("text"), str)
                     and not p.get("thought"))


def gemini_prompt_and_step(contents: list[dict[str, Any]]) -> tuple[str, int]:
    """The latest user text (a user content without function responses) and the number of
    function-response rounds after it."""
    prompt, step = "", 0
    for c in contents:
        if c.get("role") != "user":
            continue
        parts = c.get("parts") or []
        if any(isinstance(p, dict) and "functionResponse" in p for p in parts):
            step += 1
        else:
            prompt, step = _gemini_text(parts), 0
    return prompt, step


class GeminiMock(MockServer):
    """``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (and ``:generateContent``,
    ``:countTokens``); else 404, logged. Usage reports a cached part (``cachedContentTokenCount``,
    inside ``promptTokenCount`` as Gemini counts it) and the thinking tokens apart."""

    def model_requests(self) -> list[LoggedRequest]:
        return [r for r in self.requests if r.path.endswith(":streamGenerateContent") and isinstance(r.body, dict)
                and r.body.get("tools")]

    def reply_for(self, body: dict[str, Any]) -> tuple[str, str, int, Reply]:
        if body.get("tools"):
            prompt, step = gemini_prompt_and_step(body.get("contents") or [])
            key, reply = self.script.reply(prompt, step)
            return key, prompt, step, reply
        cfg = body.get("generationConfig") or {}
        if cfg.get("responseMimeType") == "application/json":  # next-speaker and similar checks
            return "side", "", 0, [Text(json.dumps({"next_speaker": "user", "reasoning": "The answer is complete."}))]
        return "side", "", 0, [Text(self.script.side_reply)]

    @staticmethod
    def usage(contents: Any, parts: list[dict[str, Any]]) -> dict[str, int]:
        prompt = 100 + len(json.dumps(contents)) // 40
        thoughts = sum(len(p.get("text", "")) // 4 + 1 for p in parts if p.get("thought"))
        cand = 5 + len(json.dumps([p for p in parts if not p.get("thought")])) // 4
        cached = prompt // 2
        out = {"promptTokenCount": prompt, "candidatesTokenCount": cand, "cachedContentTokenCount": cached,
               "totalTokenCount": prompt + cand + thoughts}
        if thoughts:
            out["thoughtsTokenCount"] = thoughts
        return out

    def respond(self, req: LoggedRequest) -> tuple[int, dict[str, str], bytes]:
        path = req.path
        model = path.rsplit("/", 1)[-1].split(":", 1)[0]
        if req.method != "POST" or not isinstance(req.body, dict) or ":" not in path:
            return self._json(404, {"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}})
        body = req.body
        if path.endswith(":countTokens"):
            return self._json(200, {"totalTokens": 10 + len(json.dumps(body)) // 40})
        contents = body.get("contents") or []
        key, prompt, step, reply = self.reply_for(body)
        resp_id = _ident("gemini", key, step, prompt, len(contents))
        parts: list[dict[str, Any]] = []
        for p in reply:
            if isinstance(p, Text):
                parts.append({"text": p.text})
            elif isinstance(p, Thinking):
                parts.append({"text": p.text, "thought": True})
            elif isinstance(p, Tool):
                parts.append({"functionCall": {"name": p.name, "args": p.input}})
            else:
                raise ValueError(f"the Gemini mock cannot send {p!r}")
        usage = self.usage(contents, parts)
        req.usage = usage
        final = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "STOP", "index": 0}],
                 "usageMetadata": usage, "modelVersion": model, "responseId": resp_id}
        if path.endswith(":generateContent"):
            final["candidates"][0]["content"]["parts"] = parts
            return self._json(200, final)
        if not path.endswith(":streamGenerateContent"):
            return self._json(404, {"error": {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}})
        chunks: list[dict[str, Any]] = []
        for part in parts:
            pieces = [part]
            if "text" in part and len(part["text"]) > 1:  # two chunks, so the client's accumulation is exercised
                half = len(part["text"]) // 2
                pieces = [{**part, "text": part["text"][:half]}, {**part, "text": part["text"][half:]}]
            for piece in pieces:
                chunks.append({"candidates": [{"content": {"role": "model", "parts": [piece]}, "index": 0}],
                               "modelVersion": model, "responseId": resp_id})
        chunks.append(final)
        out = "".join(f"data: {json.dumps(c)}\r\n\r\n" for c in chunks)
        return 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, out.encode()


# ---------------------------------------------------------------- OpenAI Chat Completions API
# (Qwen Code, pi, GitHub Copilot CLI)


def _chat_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict) and isinstance(c.get("text"), str))


OPENCLAW_CONTEXT = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"


def chat_prompt_and_step(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The latest user message's text and the number of tool-result rounds after it (a
    round is a run of consecutive ``tool`` messages, since one response may call several)."""
    prompt, step, prev_tool = "", 0, False
    for m in messages:
        role = m.get("role")
        if role == "user" and _chat_text(m.get("content")).startswith(OPENCLAW_CONTEXT):
            continue  # context OpenClaw (2026.9) adds after the prompt on every request
        if role == "user":
            prompt, step, prev_tool = _chat_text(m.get("content")), 0, False
        elif role == "tool":
            if not prev_tool:
                step += 1
            prev_tool = True
        else:
            prev_tool = False
    return prompt, step


class ChatCompletionsMock(MockServer):
    """POST .../chat/completions (SSE when ``stream``, else one JSON); GET .../models lists
    the model names the clients are configured with; anything else: 404, logged.

    Reasoning goes out as ``delta.reasoning_content`` (the field OpenAI-compatible servers
    such as DeepSeek and vLLM use; Qwen Code, pi and Copilot CLI read it). Usage comes in a
    last chunk with empty ``choices`` (``stream_options.include_usage``), always sent, with
    half the prompt reported as cached (a part of ``prompt_tokens``, as OpenAI counts it).
    A request asking for JSON (``response_format``: Qwen Code's next-speaker check) gets
    that verdict; other side requests (titles, summaries) get the script's side reply."""

    models = ("mock-model", "m", "gpt-4.1")

    def model_requests(self) -> list[LoggedRequest]:
        """Requests of the agent loop: with tools, answering a scripted prompt. Qwen Code's
        background helpers (the memory-extraction subagent, 0.24.4) send tools too, but
        their prompts match no key of the script."""
        return [r for r in self.requests if r.path.endswith("/chat/completions") and isinstance(r.body, dict)
                and r.body.get("tools") and self.reply_for(r.body)[0]]

    def reply_for(self, body: dict[str, Any]) -> tuple[str, str, int, Reply]:
        if body.get("tools"):
            prompt, step = chat_prompt_and_step(body.get("messages") or [])
            key, reply = self.script.reply(prompt, step)
            return key, prompt, step, reply
        fmt = body.get("response_format") or {}
        if fmt.get("type") in ("json_object", "json_schema"):
            return "side", "", 0, [Text(json.dumps({"next_speaker": "user", "reasoning": "The answer is complete."}))]
        return "side", "", 0, [Text(self.script.side_reply)]

    def respond(self, req: LoggedRequest) -> tuple[int, dict[str, str], bytes]:
        if req.method == "GET" and req.path.endswith("/models"):
            return self._json(200, {"object": "list", "data": [
                {"id": m, "object": "model", "created": 1767225600, "owned_by": "mock"} for m in self.models]})
        if req.method != "POST" or not req.path.endswith("/chat/completions") or not isinstance(req.body, dict):
            return self._json(404, {"error": {"message": f"no route {req.path}", "type": "invalid_request_error"}})
        body = req.body
        messages = body.get("messages") or []
        key, prompt, step, reply = self.reply_for(body)
        cid = "chatcmpl-" + _ident("chat", key, step, prompt, len(messages))
        model = body.get("model") or "mock-model"
        text = "".join(p.text for p in reply if isinstance(p, Text))
        reasoning = "".join(p.text for p in reply if isinstance(p, Thinking))
        calls = [{"id": "call_" + _ident(cid, i), "type": "function",
                  "function": {"name": p.name, "arguments": json.dumps(p.input)}}
                 for i, p in enumerate(reply) if isinstance(p, Tool)]
        if any(not isinstance(p, (Text, Thinking, Tool)) for p in reply):
            raise ValueError(f"the chat completions mock cannot send {reply!r}")
        prompt_tokens = 100 + len(json.dumps(messages)) // 40
        reasoning_tokens = len(reasoning) // 4 + 1 if reasoning else 0
        completion = 5 + len(text) // 4 + len(json.dumps(calls)) // 4 + reasoning_tokens
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion,
                 "total_tokens": prompt_tokens + completion,
                 "prompt_tokens_details": {"cached_tokens": prompt_tokens // 2},
                 "completion_tokens_details": {"reasoning_tokens": reasoning_tokens}}
        req.usage = usage
        finish = "tool_calls" if calls else "stop"
        base = {"id": cid, "object": "chat.completion.chunk", "created": 1767225600, "model": model}
        if not body.get("stream"):
            msg: dict[str, Any] = {"role": "assistant", "content": text or None}
            if reasoning:
                msg["reasoning_content"] = reasoning
            if calls:
                msg["tool_calls"] = calls
            return self._json(200, {**base, "object": "chat.completion",
                                    "choices": [{"index": 0, "message": msg, "finish_reason": finish}], "usage": usage})
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        if reasoning:
            half = len(reasoning) // 2
            deltas += [{"reasoning_content": reasoning[:half]}, {"reasoning_content": reasoning[half:]}]
        if text:
            half = len(text) // 2
            deltas += [{"content": text[:half]}, {"content": text[half:]}]
        for i, c in enumerate(calls):
            args = c["function"]["arguments"]
            half = len(args) // 2
            deltas.append({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                           "function": {"name": c["function"]["name"], "arguments": args[:half]}}]})
            deltas.append({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]})
        chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        chunks.append({**base, "choices": [], "usage": usage})
        out = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}, out.encode()
