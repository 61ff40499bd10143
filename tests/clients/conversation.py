"""One normalised view of a conversation, from three places: what Claude Code sends to the
Anthropic Messages API, what Codex sends to the Responses API, and a canonical thread
(archive.model messages). Comparing two of them is how the harness checks that a client
resumed exactly the history we recorded, archived or emitted.

A conversation is a list of :class:`Turn` ``(role, kind, name, value)``:

==============  ============  ==========  ==========================================
kind            role          name        value
==============  ============  ==========  ==========================================
``text``        user/assist.  None        the text
``reasoning``   assistant     None        thinking text / reasoning summary (or None)
``tool_call``   assistant     tool name   input: dict (JSON arguments) or str (freeform)
``tool_result`` tool          None        output as text (images as ``[image <type>]``)
``image``       user          None        media type
``web_search``  assistant     None        the query
==============  ============  ==========  ==========================================

Invariants:

* Client-injected context is not conversation: Claude ``<system-reminder>`` blocks, Codex
  developer messages and ``<environment_context>``-style user messages, and canonical
  ``system`` messages are left out by every reader the same way.
* Reading never raises on unknown shapes: an unknown block becomes kind ``unknown`` with
  its type as the name, so a format change shows up as a diff, not as a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple


class Turn(NamedTuple):
    role: str
    kind: str
    name: str | None
    value: Any


Conversation = list[Turn]

# Text the clients add to user messages as context (not typed by the user).
CONTEXT_PREFIXES = (
    "<system-reminder>",
    "<environment_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<apps_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<session_context>",
    # a background task's result, written by the harness (Claude Code sends it inside a
    # system-reminder; its transcript line starts with the tag itself)
    "<task-notification>",
)


def is_context(text: str) -> bool:
    return text.lstrip().startswith(CONTEXT_PREFIXES)


def _maybe_json(value: Any) -> Any:
    """Tool inputs are compared as JSON values; Codex sends function arguments as a string."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def output_text(output: Any) -> str:
    """A tool output as text: strings as they are, content lists joined by newlines, images
    as ``[image <media type>]``, anything else as compact JSON."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = []
        for c in output:
            if not isinstance(c, dict):
                parts.append(str(c))
                continue
            t = c.get("type")
            if t in ("text", "input_text", "output_text"):
                parts.append(c.get("text", ""))
            elif t == "image":
                parts.append(f"[image {(c.get('source') or {}).get('media_type')}]")
            elif t == "input_image":
                parts.append(f"[image {_data_url_type(c.get('image_url'))}]")
            else:
                parts.append(json.dumps(c, sort_keys=True))
        return "\n".join(parts)
    return json.dumps(output, sort_keys=True)


def _data_url_type(url: Any) -> str | None:
    if isinstance(url, str) and url.startswith("data:"):
        return url[5:].split(";", 1)[0]
    return None


# ---------------------------------------------------------------- Anthropic Messages API


# Claude Code 2.1.332 sends context that arrives while a tool runs (a background task's
# notification) inside the tool result's text, after two newlines; its transcript keeps
# that context as an attachment line of its own
_TRAILING_REMINDERS = re.compile(r"(?:\n\n<system-reminder>.*?</system-reminder>)+$", re.S)


def _strip_reminders(text: str) -> str:
    return _TRAILING_REMINDERS.sub("", text)


def from_anthropic(body: dict[str, Any]) -> Conversation:
    """The conversation in one Messages API request body (``messages``; ``system`` is context)."""
    out: Conversation = []
    for m in body.get("messages") or []:
        role = m.get("role", "?")
        content = m.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for b in content or []:
            out.extend(_anthropic_block(role, b))
    return out


def _anthropic_block(role: str, b: dict[str, Any]) -> list[Turn]:
    t = b.get("type")
    if t == "text":
        text = b.get("text", "")
        return [] if is_context(text) else [Turn(role, "text", None, text)]
    if t == "thinking":
        return [Turn("assistant", "reasoning", None, b.get("thinking") or None)]
    if t == "redacted_thinking":
        return [Turn("assistant", "reasoning", None, None)]
    if t == "tool_use":
        return [Turn("assistant", "tool_call", b.get("name"), b.get("input"))]
    if t == "tool_result":
        content = b.get("content")
        if isinstance(content, list):
            # a reminder as a text part of its own; Claude (2.1.332) ends the text part before
            # it with a newline at that seam
            kept: list[Any] = []
            for c in content:
                if isinstance(c, dict) and c.get("type") == "text" and is_context(c.get("text", "")):
                    if kept and isinstance(kept[-1], dict) and kept[-1].get("type") == "text" and kept[-1].get("text", "").endswith("\n"):
                        kept[-1] = {**kept[-1], "text": kept[-1]["text"][:-1]}
                    continue
                kept.append(c)
            content = kept
        return [Turn("tool", "tool_result", None, _strip_reminders(output_text(content)))]
    if t == "image":
        return [Turn(role, "image", None, (b.get("source") or {}).get("media_type"))]
    return [Turn(role, "unknown", str(t), None)]


# ---------------------------------------------------------------- OpenAI Responses API


def from_responses(body: dict[str, Any]) -> Conversation:
    """The conversation in one Responses API request body (``input``; ``instructions`` and
    developer messages are context)."""
    out: Conversation = []
    for it in body.get("input") or []:
        out.extend(_responses_item(it))
    return out


def _responses_item(it: dict[str, Any]) -> list[Turn]:
    t = it.get("type", "message")
    if t == "message":
        role = it.get("role", "?")
        if role in ("developer", "system"):
            return []
        content = it.get("content")
        if isinstance(content, str):
            content = [{"type": "input_text", "text": content}]
        out = []
        for c in content or []:
            ct = c.get("type")
            if ct in ("input_text", "output_text", "text"):
                if not is_context(c.get("text", "")):
                    out.append(Turn(role, "text", None, c.get("text", "")))
            elif ct == "input_image":
                out.append(Turn(role, "image", None, _data_url_type(c.get("image_url"))))
            else:
                out.append(Turn(role, "unknown", str(ct), None))
        return out
    if t == "reasoning":
        summary = "\n".join(s.get("text", "") for s in it.get("summary") or [])
        return [Turn("assistant", "reasoning", None, summary or None)]
    if t == "function_call":
        return [Turn("assistant", "tool_call", it.get("name"), _maybe_json(it.get("arguments")))]
    if t == "custom_tool_call":
        return [Turn("assistant", "tool_call", it.get("name"), it.get("input"))]
    if t in ("function_call_output", "custom_tool_call_output"):
        return [Turn("tool", "tool_result", None, output_text(it.get("output")))]
    if t == "web_search_call":
        return [Turn("assistant", "web_search", None, (it.get("action") or {}).get("query"))]
    return [Turn("?", "unknown", str(t), None)]


# ---------------------------------------------------------------- Gemini API (Gemini CLI)


def from_gemini(body: dict[str, Any]) -> Conversation:
    """The conversation in one ``generateContent`` request body (``contents``;
    ``systemInstruction`` and the ``<session_context>`` user content are context)."""
    out: Conversation = []
    for c in body.get("contents") or []:
        role = "assistant" if c.get("role") == "model" else "user"
        for p in c.get("parts") or []:
            if not isinstance(p, dict):
                out.append(Turn(role, "unknown", "part", None))
            elif isinstance(p.get("text"), str):
                if p.get("thought"):
                    out.append(Turn("assistant", "reasoning", None, p["text"] or None))
                elif not is_context(p["text"]):
                    out.append(Turn(role, "text", None, p["text"]))
            elif isinstance(p.get("functionCall"), dict):
                out.append(Turn("assistant", "tool_call", p["functionCall"].get("name"), p["functionCall"].get("args")))
            elif isinstance(p.get("functionResponse"), dict):
                resp = p["functionResponse"].get("response")
                if isinstance(resp, dict) and set(resp) in ({"output"}, {"error"}):
                    resp = next(iter(resp.values()))
                out.append(Turn("tool", "tool_result", None, output_text(resp)))
            elif isinstance(p.get("inlineData"), dict):
                mime = p["inlineData"].get("mimeType")
                if out and out[-1].kind == "tool_result" and role == "user":
                    # an image a tool returned follows its function response (Gemini CLI)
                    prev = out.pop()
                    out.append(prev._replace(value="\n".join(([prev.value] if prev.value else []) + [f"[image {mime}]"])))
                else:
                    out.append(Turn(role, "image", None, mime))
            else:
                out.append(Turn(role, "unknown", next(iter(p), "part"), None))
    return out


# ---------------------------------------------------------------- OpenAI Chat Completions API (Qwen Code, pi, Copilot CLI)

# Copilot CLI (1.0.102) puts the time in front of every prompt it sends (transformedContent)
_COPILOT_DATETIME = re.compile(r"^<current_datetime>[^<]*</current_datetime>\n\n")


def _chat_content(role: str, content: Any) -> list[Turn]:
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    out = []
    for c in content or []:
        ct = c.get("type") if isinstance(c, dict) else None
        if ct == "text":
            text = _COPILOT_DATETIME.sub("", c.get("text", ""))
            if not is_context(text):
                out.append(Turn(role, "text", None, text))
        elif ct == "image_url":
            out.append(Turn(role, "image", None, _data_url_type((c.get("image_url") or {}).get("url"))))
        else:
            out.append(Turn(role, "unknown", str(ct), None))
    return out


PI_TOOL_IMAGES = "Attached image(s) from tool result:"
PI_IMAGE_ONLY = "(see attached image)"
OPENCODE_TOOL_MEDIA = "Attached media from tool result:"  # OpenCode 1.18, a provider without media in tool results


def _pi_tool_images(out: Conversation, content: Any) -> bool:
    """pi (openai-completions) sends a tool result's images as a user message right after
    the tool messages (text ``PI_TOOL_IMAGES``, then the images), and the tool message's
    text as ``PI_IMAGE_ONLY`` when the result had no text: put them back into the results
    they came from, as ``output_text`` writes an image. True when ``content`` was that.
    OpenCode does the same with ``OPENCODE_TOOL_MEDIA`` (an image-only result's text empty)."""
    if not (isinstance(content, list) and content and isinstance(content[0], dict)
            and content[0].get("text") in (PI_TOOL_IMAGES, OPENCODE_TOOL_MEDIA) and out and out[-1].kind == "tool_result"):
        return False
    images = [f"[image {_data_url_type((c.get('image_url') or {}).get('url'))}]" for c in content[1:]
              if isinstance(c, dict) and c.get("type") == "image_url"]
    first = len(out)
    while first > 0 and out[first - 1].kind == "tool_result":
        first -= 1
    targets = [i for i in range(first, len(out)) if out[i].value == PI_IMAGE_ONLY] or [len(out) - 1]
    for n, i in enumerate(targets):
        mine = images[n:n + 1] if n < len(targets) - 1 else images[n:]
        text = "" if out[i].value == PI_IMAGE_ONLY else out[i].value
        out[i] = out[i]._replace(value="\n".join(([text] if text else []) + mine))
    return True


_QWEN_IMAGE = re.compile(r"^\[image: ([^\]]+)\]$")


def _qwen_image_placeholders(out: Conversation, content: Any) -> bool:
    """Qwen Code 0.24.4, model without vision: a tool's image goes as ``[image: <type>]``
    user text right after the tool message; it belongs to that result. True when
    ``content`` was that (and was put back into the result)."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}] if content else []
    placeholders = [_QWEN_IMAGE.match(c.get("text", "")) for c in content or [] if isinstance(c, dict)]
    if not (out and out[-1].kind == "tool_result" and placeholders and all(placeholders)):
        return False
    prev = out.pop()
    marks = [f"[image {p.group(1)}]" for p in placeholders if p]
    out.append(prev._replace(value="\n".join(([prev.value] if prev.value else []) + marks)))
    return True


def from_chat(body: dict[str, Any]) -> Conversation:
    """The conversation in one Chat Completions request body (``messages``; ``system`` and
    ``developer`` messages are context). Reasoning sent back (``reasoning_content``, pi)
    comes before the message's text, as the model produced it."""
    out: Conversation = []
    for m in body.get("messages") or []:
        role = m.get("role", "?")
        if role in ("system", "developer"):
            continue
        if role == "user" and (_pi_tool_images(out, m.get("content")) or _qwen_image_placeholders(out, m.get("content"))):
            continue
        if role == "tool":
            out.append(Turn("tool", "tool_result", None, output_text(m.get("content"))))
            continue
        if role == "assistant":
            for key in ("reasoning_content", "reasoning", "reasoning_text"):
                if isinstance(m.get(key), str) and m[key]:
                    out.append(Turn("assistant", "reasoning", None, m[key]))
                    break
        out.extend(_chat_content(role, m.get("content")))
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append(Turn("assistant", "tool_call", fn.get("name"), _maybe_json(fn.get("arguments"))))
    return out


# ---------------------------------------------------------------- canonical thread


def from_canonical(messages: Iterable[Any]) -> Conversation:
    """The conversation in canonical messages (``archive.model.Message``, or their dicts)."""
    from archive import model as m

    out: Conversation = []
    for msg in messages:
        if isinstance(msg, dict):
            msg = m.Message.from_dict(msg)
        if msg.role == "system":
            continue
        blocks = list(msg.content)
        consumed: set[int] = set()
        for i, b in enumerate(blocks):
            if i in consumed:
                continue
            if isinstance(b, m.Text):
                if not is_context(b.text):
                    out.append(Turn("assistant" if msg.role == "assistant" else "user", "text", None, b.text))
            elif isinstance(b, m.Reasoning):
                out.append(Turn("assistant", "reasoning", None, b.text or None))
            elif isinstance(b, m.ToolCall):
                out.append(Turn("assistant", "tool_call", b.name, _maybe_json(b.input)))
            elif isinstance(b, m.ToolResult):
                output = b.output
                if isinstance(output, list):
                    # Images inside a result are stored as the Attachment blocks that follow
                    # it, referenced by {"type": "image", "attachment": k} (claude_code.py).
                    following = [j for j in range(i + 1, len(blocks)) if isinstance(blocks[j], m.Attachment)]
                    resolved = []
                    for item in output:
                        k = item.get("attachment") if isinstance(item, dict) else None
                        if isinstance(k, int) and k < len(following):
                            consumed.add(following[k])
                            att = blocks[following[k]]
                            resolved.append({"type": "image", "source": {"media_type": att.media_type}})  # type: ignore[union-attr]
                        else:
                            resolved.append(item)
                    output = resolved
                out.append(Turn("tool", "tool_result", None, output_text(output)))
            elif isinstance(b, m.Attachment):
                out.append(Turn("user", "image", None, b.media_type))
            elif isinstance(b, m.WebSearch):
                out.append(Turn("assistant", "web_search", None, b.query))
            # FileChange is derived from a tool call and Unknown is not sent to a model
    return out


# ---------------------------------------------------------------- comparing


def project(conv: Sequence[Turn], kinds: Iterable[str] = ("text", "tool_call", "tool_result"),
            names: bool = True, values: bool = True) -> Conversation:
    """A coarser view for comparisons across vendors (tool names and inputs differ there)."""
    keep = set(kinds)
    return [Turn(t.role, t.kind, t.name if names else None, t.value if values else None) for t in conv if t.kind in keep]


def diff(expected: Sequence[Turn], actual: Sequence[Turn]) -> str:
    """A readable, line-per-turn unified diff ('' when equal)."""
    import difflib

    def lines(conv: Sequence[Turn]) -> list[str]:
        return [json.dumps(list(t), sort_keys=True, default=str)[:400] for t in conv]

    return "\n".join(difflib.unified_diff(lines(expected), lines(actual), "expected", "actual", lineterm=""))


def assert_same(expected: Sequence[Turn], actual: Sequence[Turn]) -> None:
    if list(expected) != list(actual):
        raise AssertionError("conversations differ:\n" + diff(expected, actual))


def to_json(conv: Sequence[Turn]) -> list[list[Any]]:
    return [list(t) for t in conv]


def from_json(data: list[list[Any]]) -> Conversation:
    return [Turn(*t) for t in data]


def reply_turns(reply: Sequence[Any]) -> Conversation:
    """A mock's scripted reply as turns (what the client will store after the request)."""
    from .mock_servers import Text, Thinking, Tool, WebSearchCall

    out: Conversation = []
    for p in reply:
        if isinstance(p, Text):
            out.append(Turn("assistant", "text", None, p.text))
        elif isinstance(p, Thinking):
            out.append(Turn("assistant", "reasoning", None, p.text))
        elif isinstance(p, Tool):
            out.append(Turn("assistant", "tool_call", p.name, p.input))
        elif isinstance(p, WebSearchCall):
            out.append(Turn("assistant", "web_search", None, p.query))
    return out
