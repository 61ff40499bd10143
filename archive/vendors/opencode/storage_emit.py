"""``emit --to opencode --client-version 1.x`` for a release before 1.2: the session written
as the JSON storage of 1.0-1.1 (``storage.py`` reads it), which ``opencode --session ID``
of that release resumes (checked with 1.1.65, ``tests/test_clients_opencode_legacy.py``).

Invariants:

* Built from the import document ``emit.emit_session`` writes (the same messages, parts,
  ids, usage and emit marks), one file per session, message and part, each as the client
  writes it (``JSON.stringify(value, null, 2)``): nothing is dropped that the import
  document keeps.
* The session goes under the project ``global``: the project 1.0-1.1 gives a folder outside
  a git repository. A session emitted for a folder inside one is resumed from a folder
  outside it (or moved under ``storage/session/<root commit>/`` by hand); the report says so.
* Releases before 1.0 (0.1.x, 0.5.x: ``project/<p>/storage/session/...``) are refused: no
  emitter writes their layouts.
"""

from __future__ import annotations

import orjson

from ..base import EmitError, EmitResult, command

PROJECT = "global"


def storage_release(version: str | None) -> bool:
    """Is ``version`` a release that keeps the JSON storage (before 1.2)? Releases before
    1.0 raise ``EmitError`` (their layouts are not written)."""
    if not version:
        return False
    try:
        major, minor = (int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    if major == 0:
        raise EmitError(f"OpenCode {version}: sessions of releases before 1.0 are not written (their JSON layout "
                        "is read only); emit for 1.0-1.1 or 1.2 and later")
    return major == 1 and minor < 2


def _json(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2)


def to_storage(result: EmitResult) -> EmitResult:
    """The import document ``result`` holds, rewritten as ``storage/...`` files."""
    (path,) = list(result.files)
    doc = orjson.loads(result.files[path])
    del result.files[path]
    info = dict(doc["info"])
    sid = info["id"]
    info["projectID"] = PROJECT
    result.files[f"storage/session/{PROJECT}/{sid}.json"] = _json(info)
    for m in doc["messages"]:
        minfo = m["info"]
        result.files[f"storage/message/{sid}/{minfo['id']}.json"] = _json(minfo)
        for p in m["parts"]:
            result.files[f"storage/part/{minfo['id']}/{p['id']}.json"] = _json(p)
    result.count(f"project: written under '{PROJECT}' (resume it from a folder outside a git repository)")
    cwd = info.get("directory")
    run = command("opencode", "--session", sid)
    result.resume_hint = f"cd {command(cwd)} && {run}" if cwd else run
    return result
