"""The file paths a tool call names, and what it did to each: the default reading behind
``Adapter.touched_paths`` (``archive/file_index.py`` stores what it yields).

Invariants:

* Pure: a tool's name, its neutral kind (the adapter's ``tool_kinds``) and its input (a JSON
  value, or the raw text of a freeform call) in; ``(path, action)`` pairs out, paths as the
  call wrote them (relative ones are joined to the session's cwd by the caller). Actions:
  ``read``, ``created``, ``changed``, ``deleted``, ``named`` (the call names the file but
  what it did is not known: a search, an unknown tool).
* Patch headers decide their own action whatever the tool: ``*** Add File:`` created,
  ``*** Delete File:`` deleted, ``*** Update File:`` changed, ``*** Move to:`` created (the
  file it moves from is deleted): a rename is two touches. ``--- /dev/null`` means created.
* Shell commands are read conservatively (``shell_paths``): only the arguments of a short
  list of commands whose meaning is certain (``cat``, ``rm``, ``mv``, ``sed -i``, an output
  redirection, ...), only tokens that look like a path (no variables, globs or options),
  and a command that does not parse (``shlex``) names nothing. A missed path is better than
  a wrong one.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from collections.abc import Iterator
from typing import Any

import orjson

PATH_KEYS = ("file_path", "path", "filePath", "filepath", "notebook_path", "absolute_path", "filename", "file",
             "target_file", "source", "destination")  # fmt: skip
LIST_KEYS = ("paths", "files", "file_paths")
KIND_ACTIONS = {"edit": "changed", "read": "read"}
_PATCH_HEADER = re.compile(
    r"^(?:(\*\*\* (?:Add|Update|Delete) File: |\*\*\* Move to: )|(\+\+\+ (?:b/)?|--- (?:a/)?))(\S.*?)\s*$", re.MULTILINE
)
_HEADER_ACTIONS = {"*** Add File: ": "created", "*** Update File: ": "changed", "*** Delete File: ": "deleted",
                   "*** Move to: ": "created"}  # fmt: skip

# shell commands whose file arguments are certain; the action each does to them
_READERS = {"cat", "head", "tail", "less", "more", "wc", "nl", "bat", "diff", "stat", "file", "md5sum", "sha256sum"}
_DELETERS = {"rm", "unlink", "shred"}
_CREATORS = {"touch"}
_OPS = {"|", "||", "&&", ";", "&", "(", ")"}
_WORTH_PARSING = re.compile(r"[<>]|(?:^|[\s;&|(/])(?:" + "|".join(sorted(_READERS | _DELETERS | _CREATORS | {"mv", "cp", "sed"}))
                            + r")(?=\s|$)")
_SAFE_TOKEN = re.compile(r"^[\w@%+=:,./~ -]+$")  # a space: the token was quoted
# shlex's quotes, escape and comment character: a command without them is split by _PLAIN_TOKEN
_SHLEX_SPECIAL = re.compile(r"[\'\"\\#]")
_PLAIN_TOKEN = re.compile(r"[;&|()<>]+|[^ \t\r\n;&|()<>]+")


def patch_paths(text: str) -> Iterator[tuple[str, str]]:
    """The files a patch (an apply_patch envelope, a unified diff) names, with its action."""
    updating: str | None = None  # an Update File header, until we know whether a Move to follows
    for m in _PATCH_HEADER.finditer(text):
        envelope, diff, path = m.group(1), m.group(2), m.group(3)
        if envelope == "*** Move to: " and updating:
            yield updating, "deleted"
            updating = None
            yield path, "created"
            continue
        if updating:
            yield updating, "changed"
            updating = None
        if envelope == "*** Update File: ":
            updating = path
        elif envelope:
            yield path, _HEADER_ACTIONS[envelope]
        elif path == "/dev/null" or diff.startswith("---"):
            continue  # the "+++" line names the file
        else:
            # a "--- /dev/null" right before: the file is new
            prev = text.rfind("\n", 0, max(m.start() - 1, 0))
            line = text[prev + 1 : m.start()].strip()
            yield path, "created" if line == "--- /dev/null" else "changed"
    if updating:
        yield updating, "changed"


def json_paths(value: Any) -> Iterator[str]:
    """The file paths named by the usual keys of a tool call's JSON input."""
    if not isinstance(value, dict):
        return
    for k in PATH_KEYS:
        v = value.get(k)
        if isinstance(v, str) and v.strip() and "\n" not in v:
            yield v.strip()
    for k in LIST_KEYS:
        v = value.get(k)
        if isinstance(v, list):
            yield from (p.strip() for p in v if isinstance(p, str) and p.strip() and "\n" not in p)
    edits = value.get("edits")
    if isinstance(edits, list):  # several files in one call
        for e in edits:
            yield from json_paths(e)


def _pathlike(tok: str) -> bool:
    return bool(_SAFE_TOKEN.match(tok)) and not tok.startswith("-") and tok not in (".", "..", "/dev/null") \
        and not tok.startswith("/dev/") and ("/" in tok or "." in tok.lstrip("."))  # fmt: skip


def shell_tokens(command: str) -> list[str]:
    """The command's words and operators as ``shlex`` (POSIX, ``;&|()<>`` as punctuation,
    split on whitespace) gives them; ValueError when a quote or an escape is left open.
    A command without quotes, escapes or comments (most of them) is split by one regular
    expression to the same tokens: ``shlex`` reads a character at a time in Python."""
    if _SHLEX_SPECIAL.search(command) is None:
        return _PLAIN_TOKEN.findall(command)
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    return list(lex)


def shell_paths(command: str) -> Iterator[tuple[str, str]]:
    """The files a shell command certainly reads, writes or deletes (see the module's rules)."""
    if not command or len(command) > 4000 or "$(" in command or "`" in command or "<<" in command:
        return
    if not _WORTH_PARSING.search(command):
        return  # most commands name no command of the lists and no redirection: shlex costs ~1 ms
    yield from _shell_paths(command)


@functools.lru_cache(maxsize=1024)
def _shell_paths(command: str) -> tuple[tuple[str, str], ...]:
    # pure, and agents run the same commands again and again (a test, a build, a cat)
    return tuple(_parse_shell(command))


def _parse_shell(command: str) -> Iterator[tuple[str, str]]:
    try:
        tokens = shell_tokens(command)
    except ValueError:
        return
    words: list[str] = []
    i = 0
    while i <= len(tokens):
        tok = tokens[i] if i < len(tokens) else None
        if tok is None or tok in _OPS:
            yield from _command_paths(words)
            words = []
        elif tok in (">", ">>") and i + 1 < len(tokens):
            target = tokens[i + 1]
            if _pathlike(target):
                yield target, "changed"
            i += 1
        elif tok == "<" and i + 1 < len(tokens):
            if _pathlike(tokens[i + 1]):
                yield tokens[i + 1], "read"
            i += 1
        elif tok in ("<", ">", ">>") or (tok.startswith((">", "<")) and set(tok) <= set("<>&")):
            i += 1  # 2>&1 and friends: the next token is not a file argument
        else:
            words.append(tok)
        i += 1


def _command_paths(words: list[str]) -> Iterator[tuple[str, str]]:
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # FOO=bar cmd
    while words and words[0] in ("sudo", "command", "time", "nohup"):
        words = words[1:]
    if not words:
        return
    cmd, args = words[0].rsplit("/", 1)[-1], words[1:]
    if any(a in ("-r", "-R", "--recursive") for a in args) and cmd in ("cat", "wc", "diff"):
        return
    files = [a for a in args if _pathlike(a)]
    if cmd in _READERS:
        if cmd in ("head", "tail"):  # -n 20: the count is not a file
            files = [a for a in files if not a.isdigit()]
        yield from ((f, "read") for f in files)
    elif cmd in _DELETERS:
        yield from ((f, "deleted") for f in files)
    elif cmd in _CREATORS:
        yield from ((f, "created") for f in files)
    elif cmd == "mv" and len(files) == 2 and len(args) == 2:
        yield files[0], "deleted"
        yield files[1], "created"
    elif cmd == "cp" and len(files) == 2 and len(args) == 2:
        yield files[0], "read"
        yield files[1], "created"
    elif cmd == "sed" and args:
        in_place = any(a == "-i" or a.startswith("-i") for a in args)
        script_given = any(a in ("-e", "-f") for a in args)
        rest = [a for a in args if not a.startswith("-")]
        if not script_given and rest:
            rest = rest[1:]  # the script
        yield from ((f, "changed" if in_place else "read") for f in rest if _pathlike(f))


_SHELL_KEYS = ('"command"', '"cmd"')
_VALUE_KEYS = tuple(f'"{k}"' for k in (*PATH_KEYS, *LIST_KEYS, "edits", "patch", "input", "diff", "patchText"))
_ESCAPED_LETTER = re.compile(r"\\u00[4-7][0-9a-fA-F]")


def may_name_paths(kind: str | None, raw: str) -> bool:
    """False when ``default_touched_paths(kind, raw)`` certainly yields nothing, read from
    the raw text without parsing it (most calls: a search, a web fetch, a todo list): a JSON
    object on one line with none of the keys it reads paths from. A patch header needs a
    line of its own, a key is written as it is spelled unless its letters are escaped."""
    if not raw.lstrip().startswith("{") or "\n" in raw or _ESCAPED_LETTER.search(raw):
        return True
    return any(k in raw for k in (_SHELL_KEYS if kind == "shell" else _VALUE_KEYS))


def default_touched_paths(kind: str | None, value: Any) -> Iterator[tuple[str, str]]:
    """The reading every adapter gets unless it says otherwise: patches by their headers,
    shell commands by ``shell_paths``, the usual path keys with the action of the tool's
    kind (``edit`` changed, ``read`` read, anything else named)."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except ValueError:
            yield from patch_paths(value)  # a freeform call: the input is the patch itself
            return
    if isinstance(value, str):  # a freeform call stored as a JSON string (Codex custom_tool_call)
        yield from patch_paths(value)
        return
    if not isinstance(value, dict):
        return
    if kind == "shell":
        cmd = value.get("command") or value.get("cmd")
        if isinstance(cmd, list):  # Codex's argv form: ["bash", "-lc", "..."]
            cmd = cmd[-1] if len(cmd) >= 3 and cmd[-2] in ("-lc", "-c") else shlex.join(str(c) for c in cmd)
        if isinstance(cmd, str):
            # the command's own folder (Codex "workdir", others "cwd"), when it names one
            wd = value.get("workdir") or value.get("cwd") or value.get("directory")
            for p, a in shell_paths(cmd):
                yield (posixpath.join(wd, p) if isinstance(wd, str) and wd.startswith("/") else p), a
        return
    action = KIND_ACTIONS.get(kind or "", "named")
    seen: set[str] = set()
    for k in ("patch", "input", "diff", "patchText"):
        v = value.get(k)
        if isinstance(v, str) and "\n" in v:
            for p, a in patch_paths(v):
                seen.add(p)
                yield p, a
    for p in json_paths(value):
        if p not in seen:
            seen.add(p)
            yield p, action
