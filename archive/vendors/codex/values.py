"""Small stateless helpers of the Codex parser: timestamps, hashes, patches, content blocks,
usage vectors (``parse.py`` re-exports them)."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from typing import Any

import orjson

from ...model import (
    Attachment,
    Block,
    JsonObject,
    Text,
    Unknown,
    Usage,
)
from ..base import nonempty_str as _str
from ..base import (
    stable_id,
)


# ---------------------------------------------------------------- small helpers

MAX_USER_ITEMS = 8
# event_msg types after which a held user_message can no longer get its item
_SETTLING_EVENTS = {"task_complete", "turn_complete", "turn_aborted", "entered_review_mode", "exited_review_mode",
                    "agent_message", "agent_reasoning", "exec_command_begin", "exec_command_end", "patch_apply_end",
                    "user_message"}


# Harness-written text that Codex puts into user/developer messages (0.3x-0.171).
INJECTED_PREFIXES = (
    "<environment_context",
    "<user_instructions",
    "# AGENTS.md instructions",
    "<permissions instructions",
    "<skills_instructions",
    "<INSTRUCTIONS>",
    "<collaboration_mode",
    "<personality",
    "<apps_instructions",
    "<turn_aborted",
    "<user_shell_command",
)

_TS_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")

_PATCH_FILE_RE = re.compile(r"^\*\*\* (Add|Delete|Update) File: (.+)$")


def _prompt_hash(text: str) -> str:
    return stable_id(" ".join(text.split()), length=16)


def _settles_held(d: JsonObject) -> bool:
    """Does this line show that the held user_message event has no response_item twin?
    (The model answered, the turn ended, a new session starts.) A user_message event or a
    user item settle it themselves."""
    kind = d.get("type")
    payload = d.get("payload") if isinstance(d.get("payload"), dict) else d
    sub = payload.get("type") if isinstance(payload, dict) else None
    if kind == "session_meta" or (kind is None and "id" in d and "timestamp" in d):
        return True
    if kind == "event_msg":
        return sub in _SETTLING_EVENTS and sub != "user_message"
    if kind == "response_item" or (kind != "event_msg" and "payload" not in d and isinstance(kind, str)):
        return not (sub == "message" and payload.get("role") in ("user", "developer", "system"))
    return False


def _valid_ts(value: Any) -> str | None:
    return value if isinstance(value, str) and _TS_RE.match(value) else None


def _parse_ts(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _dumps(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _snippet(value: Any) -> str:
    """The start of a record for a report; a cut inside a UTF-8 sequence is replaced."""
    return _dumps(value)[:2000].decode("utf-8", "replace")


def _content_hash(payload: JsonObject) -> str:
    # Volatile bookkeeping (ids, status, G3 metadata) is left out so a replayed copy of an
    # item hashes like the original.
    core = {
        k: v
        for k, v in payload.items()
        if k not in ("id", "status", "metadata", "internal_chat_message_metadata_passthrough")
    }
    return hashlib.sha256(_dumps(core)).hexdigest()[:16]


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _item_turn_id(payload: JsonObject) -> str | None:
    for key in ("internal_chat_message_metadata_passthrough", "metadata"):
        sub = payload.get(key)
        if isinstance(sub, dict) and _str(sub.get("turn_id")):
            return str(sub["turn_id"])
    return None


def _is_injected(role: str, payload: JsonObject, texts: list[str]) -> bool:
    if role in ("developer", "system"):
        return True
    passthrough = payload.get("internal_chat_message_metadata_passthrough")
    if isinstance(passthrough, dict):
        for meta in passthrough.get("content_item_metadata") or []:
            prov = meta.get("provenance") if isinstance(meta, dict) else None
            if isinstance(prov, dict) and prov.get("type") == "harness":
                return True
    first = texts[0].lstrip() if texts else ""
    return bool(first) and first.startswith(INJECTED_PREFIXES)


def parse_patch(patch: str) -> list[tuple[str, str, str, str | None]]:
    """(op, path, section text, move path) for each file of an apply_patch text."""
    files: list[tuple[str, str, list[str], str | None]] = []
    for line in patch.splitlines():
        m = _PATCH_FILE_RE.match(line)
        if m:
            files.append((m.group(1).lower(), m.group(2).strip(), [line], None))
            continue
        if line.startswith("*** End Patch") or line.startswith("*** Begin Patch"):
            continue
        if files:
            op, path, lines, move = files[-1]
            if line.startswith("*** Move to: "):
                move = line[len("*** Move to: ") :].strip()
            lines.append(line)
            files[-1] = (op, path, lines, move)
    return [(op, path, "\n".join(lines), move) for op, path, lines, move in files]


def _patch_from_call(name: str, payload: JsonObject, args: Any) -> str | None:
    """The apply_patch text of a custom tool call, a function call or a shell command."""
    if name == "apply_patch":
        if isinstance(payload.get("input"), str):
            return str(payload["input"])
        if isinstance(args, dict):
            for key in ("input", "patch"):
                if isinstance(args.get(key), str):
                    return str(args[key])
        if isinstance(args, str):
            return args
    if name in ("shell", "container.exec", "local_shell", "shell_command", "exec_command") and isinstance(args, dict):
        command = args.get("command", args.get("cmd"))
        # G1 shell: ["apply_patch", "<patch>"]; older models: bash -lc "apply_patch <<'EOF' ..."
        if isinstance(command, list) and len(command) >= 2 and command[0] in ("apply_patch", "applypatch"):
            return str(command[1]) if isinstance(command[1], str) else None
        text = command[-1] if isinstance(command, list) and command and isinstance(command[-1], str) else command
        if isinstance(text, str) and "apply_patch" in text and "*** Begin Patch" in text:
            start = text.index("*** Begin Patch")
            end = text.find("*** End Patch", start)
            return text[start : end + len("*** End Patch")] if end >= 0 else text[start:]
    return None


def _output_meta(output: Any) -> tuple[Any, JsonObject]:
    """The tool output as stored, plus exit code / duration when Codex wrote them."""
    extra: JsonObject = {}
    parsed = _maybe_json(output) if isinstance(output, str) and output.startswith("{") else None
    if isinstance(parsed, dict) and isinstance(parsed.get("metadata"), dict):
        meta = parsed["metadata"]
        if isinstance(meta.get("exit_code"), int):
            extra["exitCode"] = meta["exit_code"]
        if isinstance(meta.get("duration_seconds"), (int, float)):
            extra["durationSeconds"] = meta["duration_seconds"]
    elif isinstance(output, str):
        # shell_command (0.6x): "Exit code: 1\nWall time: ..."; unified exec (0.17x):
        # "...Process exited with code 0"
        m = re.search(r"^(?:Exit code: |Process exited with code )(-?\d+)$", output, re.M)
        if m:
            extra["exitCode"] = int(m.group(1))
    return output, extra


def _image_block(url: Any, extra: JsonObject | None = None) -> Block:
    extra = dict(extra or {})
    if isinstance(url, str) and url.startswith("data:"):
        header, _, data = url.partition(",")
        media = header[5:].split(";")[0] or None
        if ";base64" in header:
            return Attachment(media_type=media, data=data, extra=extra or None)
        return Attachment(media_type=media, uri=url, extra=extra or None)
    if isinstance(url, str) and url:
        return Attachment(uri=url, extra=extra or None)
    extra["imageUrl"] = url
    return Attachment(extra=extra)


def _content_blocks(content: Any) -> list[Block]:
    blocks: list[Block] = []
    if isinstance(content, str):
        return [Text(content)]
    if not isinstance(content, list):
        return [Unknown(source_type=type(content).__name__, raw=content)] if content is not None else []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text"):
            extra = {k: v for k, v in part.items() if k not in ("type", "text") and v not in (None, [])}
            if kind != "input_text":
                extra["codexType"] = kind
            blocks.append(Text(str(part.get("text", "")), extra=extra or None))
        elif kind == "input_image":
            extra = {"detail": part["detail"]} if part.get("detail") is not None else None
            blocks.append(_image_block(part.get("image_url"), extra))
        else:
            blocks.append(Unknown(source_type=str(kind), raw=part))
    return blocks


_CUM_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "cache_write_input_tokens")


def _neutral(vendor: JsonObject) -> Usage:
    """Codex's figures in the neutral buckets. Codex counts cached input (and cache writes,
    where a provider reports them) inside ``input_tokens``: the fresh input is what is left
    (never below 0); ``output_tokens`` already include reasoning. The vendor's own figures
    stay in ``extra["vendor"]``."""

    def num(key: str) -> int | None:
        v = vendor.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    inp, cached, written = num("input_tokens"), num("cached_input_tokens"), num("cache_write_input_tokens")
    return Usage(
        input_tokens=None if inp is None else max(inp - (cached or 0) - (written or 0), 0),
        output_tokens=num("output_tokens"),
        cache_read_tokens=cached,
        cache_write_tokens=written,
        reasoning_tokens=num("reasoning_output_tokens"),
        extra={"vendor": vendor},
    )


def _usage_of(d: Any) -> Usage | None:
    return _neutral(d) if isinstance(d, dict) else None


def _cum(d: Any) -> list[int] | None:
    if not isinstance(d, dict) or not isinstance(d.get("input_tokens"), int):
        return None
    return [int(d.get(k) or 0) for k in _CUM_KEYS]


def _usage_from_vector(v: list[int], with_cache_write: bool) -> Usage:
    """One response's usage from the difference of two running totals."""
    keys = _CUM_KEYS if with_cache_write else _CUM_KEYS[:4]
    return _neutral(dict(zip(keys, v)))
