"""Gemini ``Part`` objects (``text``, ``thought``, ``functionCall``, ``functionResponse``,
``inlineData``, ``fileData``) as canonical blocks: shared by the chat recordings, the
``/chat save`` checkpoints (``saved.py``) and Qwen Code, whose records hold the same parts.

Invariants: never raises on input (a part of unknown shape is an ``Unknown`` block with its
raw JSON); pure functions of the part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from ...model import Attachment, Block, Reasoning, Text, ToolCall, ToolResult, Unknown
from ..base import nonempty_str as _str


def response_output(response: Any) -> tuple[Any, bool | None]:
    """A ``functionResponse.response`` as a tool output: ``output`` or ``error`` text when
    that is all it holds, else the whole object; ``is_error`` when it has an ``error``."""
    if isinstance(response, dict):
        keys = set(response)
        if keys == {"output"}:
            return response["output"], None
        if keys == {"error"}:
            return response["error"], True
        return response, True if "error" in response else None
    return response, None


def part_blocks(part: Any, result_seen: Callable[[str], bool] | None = None) -> tuple[list[Block], list[str]]:
    """Blocks for one Gemini part, and the call ids of function responses skipped as
    already stored (``result_seen``)."""
    if not isinstance(part, dict):
        return [Unknown(source_type="part", raw=part)], []
    if isinstance(part.get("text"), str):
        if part.get("thought"):
            extra = {k: v for k, v in part.items() if k not in ("text", "thought")}
            return [Reasoning(text=part["text"], extra=extra or None)], []
        extra = {k: v for k, v in part.items() if k != "text"}
        return [Text(text=part["text"], extra=extra or None)], []
    if isinstance(part.get("functionCall"), dict):
        fc = part["functionCall"]
        return [ToolCall(call_id=_str(fc.get("id")) or "", name=_str(fc.get("name")) or "", input=fc.get("args"))], []
    if isinstance(part.get("functionResponse"), dict):
        fr = part["functionResponse"]
        cid = _str(fr.get("id")) or ""
        if result_seen is not None and cid and result_seen(cid):
            return [], [cid]
        output, is_error = response_output(fr.get("response"))
        extra = {"name": fr["name"]} if _str(fr.get("name")) else None
        return [ToolResult(call_id=cid, output=output, is_error=is_error, extra=extra)], []
    if isinstance(part.get("inlineData"), dict):
        d = part["inlineData"]
        return [Attachment(media_type=_str(d.get("mimeType")), data=_str(d.get("data")))], []
    if isinstance(part.get("fileData"), dict):
        d = part["fileData"]
        return [Attachment(media_type=_str(d.get("mimeType")), uri=_str(d.get("fileUri")))], []
    return [Unknown(source_type=next(iter(part), "part"), raw=part)], []


def fold_result_images(blocks: list[Block]) -> list[Block]:
    """Inline data parts that follow a function response (an image a tool returned) belong
    to that result: its output becomes the canonical list ``[text?, {"type": "image",
    "attachment": k}...]`` referring to the Attachment blocks that follow it (as Claude
    Code results are stored)."""
    out: list[Block] = []
    i = 0
    while i < len(blocks):
        b = blocks[i]
        j = i + 1
        while j < len(blocks) and isinstance(blocks[j], Attachment):
            j += 1
        if isinstance(b, ToolResult) and j > i + 1:
            items: list[Any] = []
            if isinstance(b.output, str) and b.output:
                items.append({"type": "text", "text": b.output})
            elif b.output not in (None, ""):
                items.append({"type": "text", "text": orjson.dumps(b.output).decode()})
            items += [{"type": "image", "attachment": k} for k in range(j - i - 1)]
            out.append(ToolResult(call_id=b.call_id, output=items, is_error=b.is_error, extra=b.extra))
            out.extend(blocks[i + 1:j])
        else:
            out.extend(blocks[i:j])
        i = j
    return out
